-- fd: A simple, fast and user-friendly alternative to find (MIT, https://github.com/sharkdp/fd).
-- Release URLs and SHA-256 checksums are the published ones (facts, not code).
-- Use: require("pkgs.cli.fd").setup{ version = "10.2.0" }

return require("pkgs.lib.release").define {
  name = "fd",
  default = "v10.2.0",
  bin = { "fd" },
  strip_components = 1,
  releases = {
    ["v10.2.0"] = {
      ["aarch64-darwin"] = { format = "tar.gz", sha256 = "ae6327ba8c9a487cd63edd8bddd97da0207887a66d61e067dfe80c1430c5ae36",
        url = "https://github.com/sharkdp/fd/releases/download/v10.2.0/fd-v10.2.0-aarch64-apple-darwin.tar.gz" },
      ["x86_64-darwin"] = { format = "tar.gz", sha256 = "991a648a58870230af9547c1ae33e72cb5c5199a622fe5e540e162d6dba82d48",
        url = "https://github.com/sharkdp/fd/releases/download/v10.2.0/fd-v10.2.0-x86_64-apple-darwin.tar.gz" },
      ["x86_64-linux"] = { format = "tar.gz", sha256 = "d9bfa25ec28624545c222992e1b00673b7c9ca5eb15393c40369f10b28f9c932",
        url = "https://github.com/sharkdp/fd/releases/download/v10.2.0/fd-v10.2.0-x86_64-unknown-linux-musl.tar.gz" },
      ["x86_64-windows"] = { format = "zip", sha256 = "92ac9e6b0a0c6ecdab638ffe210dc786403fff4c66373604cf70df27be45e4fe",
        url = "https://github.com/sharkdp/fd/releases/download/v10.2.0/fd-v10.2.0-x86_64-pc-windows-msvc.zip" },
    },
  },
}
