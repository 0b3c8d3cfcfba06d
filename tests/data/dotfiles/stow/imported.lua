-- What `sys import stow .` writes for this repository (by hand, in its
-- shape): each package, whole, as a link tree into the home, with stow's
-- default ignore list. The packages share ~/.config and ~/.local: their
-- trees merge.
local stow_ignore = {
  ".stow-local-ignore", ".gitignore", ".gitmodules", "*~", "#*#", ".#*",
  "/README*", "/LICENSE*", "/COPYING",
}
file { path = "~", source = "bash", link = true, ignore = stow_ignore } -- package bash
file { path = "~", source = "bin", link = true, ignore = stow_ignore } -- package bin
file { path = "~", source = "desktop", link = true, ignore = stow_ignore } -- package desktop
file { path = "~", source = "fun", link = true, ignore = stow_ignore } -- package fun
file { path = "~", source = "git", link = true, ignore = stow_ignore } -- package git
file { path = "~", source = "nvim", link = true, ignore = stow_ignore } -- package nvim
