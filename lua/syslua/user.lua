-- syslua.user: the name some of the original's configs use for syslua.users.
return require("syslua.users")
