local ME, GRP = sys.user.name, sys.user.group
defaults { file = { owner = ME, group = GRP, mode = "0644" } }
file { path = "~/small.txt", content = "small v3\n" }
file { path = "~/copied.txt", source = "src/copied.txt", mode = "0600" }
file { path = "~/big.bin", source = "src/big.bin" }
file { path = "~/tree", source = "src/tree", dir_mode = "0750" }
file { path = "~/linked.txt", source = "src/linked.txt", link = true }
file { path = "~/sym", ensure = "link", target = "~/small.txt" }
file { path = "~/.bashrc", content = "export EDITOR=vim\n" }
file { path = "~/old-dir", ensure = "absent", force = true }
file { path = "~/made-dir", ensure = "directory", mode = "0700" }
exec { name = "notify", provider = "shell", command = "echo notified > ~/.notified", creates = "~/.notified" }
env { EDITOR = "nvim" }
