-- ripgrep: ripgrep recursively searches directories for a regex pattern (MIT, https://github.com/BurntSushi/ripgrep).
-- Release URLs and SHA-256 checksums are the published ones (facts, not code).
-- Use: require("pkgs.cli.ripgrep").setup{ version = "15.1.0" }

return require("pkgs.lib.release").define {
  name = "ripgrep",
  default = "15.1.0",
  bin = { "rg" },
  strip_components = 1,
  releases = {
    ["15.1.0"] = {
      ["aarch64-darwin"] = { format = "tar.gz", sha256 = "378e973289176ca0c6054054ee7f631a065874a352bf43f0fa60ef079b6ba715",
        url = "https://github.com/BurntSushi/ripgrep/releases/download/15.1.0/ripgrep-15.1.0-aarch64-apple-darwin.tar.gz" },
      ["x86_64-darwin"] = { format = "tar.gz", sha256 = "64811cb24e77cac3057d6c40b63ac9becf9082eedd54ca411b475b755d334882",
        url = "https://github.com/BurntSushi/ripgrep/releases/download/15.1.0/ripgrep-15.1.0-x86_64-apple-darwin.tar.gz" },
      ["x86_64-linux"] = { format = "tar.gz", sha256 = "1c9297be4a084eea7ecaedf93eb03d058d6faae29bbc57ecdaf5063921491599",
        url = "https://github.com/BurntSushi/ripgrep/releases/download/15.1.0/ripgrep-15.1.0-x86_64-unknown-linux-musl.tar.gz" },
      ["x86_64-windows"] = { format = "zip", sha256 = "124510b94b6baa3380d051fdf4650eaa80a302c876d611e9dba0b2e18d87493a",
        url = "https://github.com/BurntSushi/ripgrep/releases/download/15.1.0/ripgrep-15.1.0-x86_64-pc-windows-msvc.zip" },
    },
  },
}
