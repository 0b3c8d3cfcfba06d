-- What `sys import dotbot install.conf.yaml` writes for this repository (by
-- hand, in its shape).
-- create: (dotbot's mode, 0777)
file { path = "~/.cache/zsh", ensure = "directory", mode = "0777" }
file { path = "~/projects", ensure = "directory", mode = "0777" }
-- link:
file { path = "~/.vimrc", source = "vimrc", link = true }
file { path = "~/.zshrc", source = "zshrc", link = true }
file { path = "~/.gitconfig", source = "gitconfig", link = true }
file { path = "~/.config/kitty", source = "config/kitty", link = true } -- create: true
file { path = "~/.local/bin", source = "bin", link = true } -- glob: bin/*, create: true
-- clean: ['~']: syslua removes what it managed
-- shell: git submodule update --init --recursive (run by hand after a clone)
