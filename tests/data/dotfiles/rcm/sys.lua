-- rcm's layout, as `rcup` links it: NAME is ~/.NAME; tag-git/ is used (TAGS="git"
-- in rcrc); host-laptop/ only on the machine called laptop.
for _, name in ipairs { "zshrc", "vimrc", "aliases" } do
  file { path = "~/." .. name, source = name, link = true }
end
file { path = "~/.gitconfig", source = "tag-git/gitconfig", link = true }
file { path = "~/.config/git", source = "tag-git/config/git", link = true }
if sys.facts.hostname == "laptop" then
  file { path = "~/.xprofile", source = "host-laptop/xprofile", link = true }
end
