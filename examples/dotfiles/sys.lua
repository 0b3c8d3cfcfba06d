-- A dotfiles repository run by syslua: shell rc files, a Neovim config,
-- scripts for ~/bin and a git config whose email depends on the machine.
--
-- The files sit here as they sit in a home directory (.bashrc at the top,
-- .config/nvim below), so the repository reads like the result.
-- Try it without touching your real home:
--   d=$(mktemp -d); mkdir $d/home
--   HOME=$d/home SYSLUA_ROOT=$d/state sys plan examples/dotfiles
--   HOME=$d/home SYSLUA_ROOT=$d/state sys apply examples/dotfiles
-- A file already in ~ where this puts one is taken over: its original is
-- kept, and `sys destroy` puts it back.

-- No owner, group or mode below: under the home, files are yours, a copy
-- keeps the mode its source has here, and directories are 0755.

-- Shell: copies. The repository is the source of truth; a change made in ~
-- (say, an installer appending to ~/.bashrc) is caught: `sys plan` marks it
-- edited and `sys apply` will not overwrite it until you choose between
-- `sys add ~/.bashrc` (keep it here) and `sys apply --force` (drop it).
for _, name in ipairs { ".bashrc", ".zshrc", ".aliases" } do
  file { path = "~/" .. name, source = name }
end

-- Neovim: the whole tree in one line, as symlinks (GNU stow's way), because
-- this config is edited from inside the editor and those edits belong in
-- the repository. Directories stay real, so plugins can write beside them.
file {
  path = "~/.config/nvim", source = ".config/nvim", link = true,
  ignore = { "README.md", "*.sw[op]" },  -- notes for people; vim swap files
}

-- Scripts: a copied tree. A script whose execute bit git keeps (100755)
-- stays executable (a declared mode gets x wherever it has r). Delete a
-- script here and the next apply removes it from ~/bin.
file { path = "~/bin", source = "bin" }

-- Git: a template. Each {{ lookup(...) }} is filled in when the config is
-- read. The email is the fact `git.email`, or the home address when this
-- machine has none: on the work laptop, ~/.config/syslua/facts.json holds
-- { "git": { "email": "ada@work.example" } }. `sys add` refuses this file,
-- since ~/.gitconfig is only a rendering: edit .gitconfig here instead.
file { path = "~/.gitconfig", source = ".gitconfig", template = true }
