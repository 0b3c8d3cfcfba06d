-- The stow packages of this repository, as `stow nvim git bash bin fun desktop`
-- installs them. A folder is a link tree: real directories, a link per file.
file { path = "~/.config/nvim", source = "nvim/.config/nvim", link = true, ignore = { "README.md" } }
file { path = "~/.config/git", source = "git/.config/git", link = true }
file { path = "~/.bashrc", source = "bash/.bashrc", link = true }
file { path = "~/.bash_profile", source = "bash/.bash_profile", link = true }
-- two packages share ~/.local/bin: a tree each
file { path = "~/.local/bin", source = "bin/.local/bin", link = true }
file { path = "~/.local/bin", source = "fun/.local/bin", link = true }
file { path = "~/.local/share/applications", source = "desktop/.local/share/applications", link = true }
