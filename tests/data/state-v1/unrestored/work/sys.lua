local ME, GRP = sys.user.name, sys.user.group
defaults { file = { owner = ME, group = GRP, mode = "0644" } }
file { path = "~/keep.txt", content = "keep\n" }
file { path = "~/u/a.txt", content = "managed a\n" }
file { path = "~/u/b.txt", content = "managed b\n" }
exec { name = "break", provider = "shell", depends_on = { "file#~/u/a.txt", "file#~/u/b.txt" }, command = "rm -r ~/u && echo in the way > ~/u && exit 1" }
