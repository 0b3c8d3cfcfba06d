local opt = vim.opt

opt.number = true
opt.relativenumber = true
opt.signcolumn = "yes"
opt.cursorline = true

opt.expandtab = true
opt.shiftwidth = 2
opt.tabstop = 2
opt.smartindent = true

opt.ignorecase = true
opt.smartcase = true

opt.undofile = true
opt.splitright = true
opt.splitbelow = true
opt.scrolloff = 6
opt.termguicolors = true
opt.clipboard = "unnamedplus"
