return {
  { "kylechui/nvim-surround", event = "VeryLazy", opts = {} },
  { "numToStr/Comment.nvim", keys = { "gc", "gcc" }, opts = {} },
}
