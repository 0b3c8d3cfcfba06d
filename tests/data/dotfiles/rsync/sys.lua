-- home/ is a mirror of ~ (./sync copies it there with rsync): each file a copy,
-- each folder a copied tree.
file { path = "~/.bashrc", source = "home/.bashrc" }
file { path = "~/.profile", source = "home/.profile" }
file { path = "~/.inputrc", source = "home/.inputrc" }
file { path = "~/.xinitrc", source = "home/.xinitrc" }
file { path = "~/.config/htop", source = "home/.config/htop" }
file { path = "~/.ssh", source = "home/.ssh", dir_mode = "0700" }
file { path = "~/bin", source = "home/bin" }
