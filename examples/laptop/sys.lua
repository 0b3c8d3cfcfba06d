-- A laptop described in Lua: shell rc files, git config, an editor config
-- directory, environment variables, a one-time setup command and a child
-- manifest. Try it without touching your real home:
--   d=$(mktemp -d); mkdir $d/home
--   HOME=$d/home SYSLUA_ROOT=$d/state sys plan examples/laptop/sys.lua

-- Under the home a file needs no owner, group or mode: it is yours, 0644
-- for inline content, its source's mode for a copy, 0755 for a directory.

-- Shell: zsh and bash read the same aliases.
local aliases = sys.readFile("dotfiles/aliases.sh")
local zshrc = file { path = "~/.zshrc", content = aliases .. "\nsource ~/.config/syslua-example/prompt.zsh\n" }
file { path = "~/.bashrc", content = aliases, mode = "0600" }

-- Git: the identity comes from data with a fallback, so a work machine can override it.
require("modules.git").setup { name = "Ada Lovelace", email = "ada@example.org" }

-- Editor: a directory with its init file copied from this repository.
local nvim = file { path = "~/.config/nvim", ensure = "directory" }
file { path = "~/.config/nvim/init.lua", source = "dotfiles/init.lua", depends_on = { nvim } }

-- Environment: PATH entries merge by priority, then the previous $PATH.
env { EDITOR = "nvim", PAGER = "less" }
env { PATH = lib.mkBefore("~/.local/bin") }
env { PATH = "~/bin" }

-- A one-time setup step, skipped once its marker exists; it reruns when .zshrc changes.
file { path = "~/.local", ensure = "directory" }
file { path = "~/.local/state", ensure = "directory" }
exec {
  name = "zsh-cache",
  command = "mkdir -p ~/.local/state/zsh && touch ~/.local/state/zsh/.ready",
  provider = "shell",
  creates = "~/.local/state/zsh/.ready",
  subscribe = { zshrc },
  depends_on = { "file#~/.local/state" },
  undo = "rm -rf ~/.local/state/zsh",
}

-- A child manifest in CCM's YAML format, with data handed down.
apply { name = "prompt.yaml", data = { color = "cyan" } }
