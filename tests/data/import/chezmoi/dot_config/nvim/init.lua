vim.g.mapleader = " "
vim.opt.number = true
vim.opt.expandtab = true
require("plugins")
