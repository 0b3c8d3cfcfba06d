vim.opt.number = true
vim.opt.expandtab = true
vim.opt.shiftwidth = 2
