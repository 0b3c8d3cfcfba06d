-- install.conf.yaml, entry for entry.
-- create:
file { path = "~/.cache/zsh", ensure = "directory" }
file { path = "~/projects", ensure = "directory" }
-- link: a file is one link; a directory (kitty) and a glob (bin/*) are link trees:
-- real directories, a link per file
file { path = "~/.vimrc", source = "vimrc", link = true }
file { path = "~/.zshrc", source = "zshrc", link = true }
file { path = "~/.gitconfig", source = "gitconfig", link = true }
file { path = "~/.config/kitty", source = "config/kitty", link = true }
file { path = "~/.local/bin", source = "bin", link = true }
-- clean: a link that leaves this file is removed by the next apply
-- shell: the submodule update stays a command you run after a clone
