-- jq: Command-line JSON processor (MIT, https://github.com/jqlang/jq).
-- Release URLs and SHA-256 checksums are the published ones (facts, not code).
-- Use: require("pkgs.cli.jq").setup{ version = "1.7.1" }

return require("pkgs.lib.release").define {
  name = "jq",
  default = "1.7.1",
  strip_components = 0,
  releases = {
    ["1.7.1"] = {
      ["aarch64-darwin"] = { format = "binary", sha256 = "0bbe619e663e0de2c550be2fe0d240d076799d6f8a652b70fa04aea8a8362e8a",
        url = "https://github.com/jqlang/jq/releases/download/jq-1.7.1/jq-macos-arm64" },
      ["x86_64-darwin"] = { format = "binary", sha256 = "4155822bbf5ea90f5c79cf254665975eb4274d426d0709770c21774de5407443",
        url = "https://github.com/jqlang/jq/releases/download/jq-1.7.1/jq-macos-amd64" },
      ["x86_64-linux"] = { format = "binary", sha256 = "5942c9b0934e510ee61eb3e30273f1b3fe2590df93933a93d7c58b81d19c8ff5",
        url = "https://github.com/jqlang/jq/releases/download/jq-1.7.1/jq-linux-amd64" },
      ["x86_64-windows"] = { format = "binary", sha256 = "7451fbbf37feffb9bf262bd97c54f0da558c63f0748e64152dd87b0a07b6d6ab",
        url = "https://github.com/jqlang/jq/releases/download/jq-1.7.1/jq-windows-amd64.exe" },
    },
  },
}
