vim.opt.number = true
vim.opt.expandtab = true
