-- Neovim entry point: options first, plugins when the manager is there.
local opt = vim.opt
opt.number = true
opt.relativenumber = true
opt.expandtab = true
opt.shiftwidth = 2
opt.undofile = true
opt.ignorecase = true
opt.smartcase = true

vim.g.mapleader = " "
vim.keymap.set("n", "<leader>w", "<cmd>write<cr>", { desc = "save" })

local ok, lazy = pcall(require, "lazy")
if ok then
  lazy.setup("plugins")
end
