require("opts")
vim.cmd.colorscheme("habamax")
