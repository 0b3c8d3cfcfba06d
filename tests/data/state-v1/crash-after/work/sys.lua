local ME, GRP = sys.user.name, sys.user.group
defaults { file = { owner = ME, group = GRP, mode = "0644" } }
file { path = "~/a.txt", content = "a v2\n" }
file { path = "~/d/f.txt", content = "f v2\n", mode = "0640" }
file { path = "~/n/new.txt", content = "new\n" }
file { path = "~/hand.txt", content = "managed\n" }
exec { name = "enable", provider = "shell", command = "touch ~/.enabled",
       creates = "~/.enabled", undo = "rm -f ~/.enabled" }
env { EDITOR = "nvim" }
sys.bind {
  id = "bound",
  inputs = { path = sys.path("~/bound") },
  create = function(inputs, ctx)
    ctx:exec { bin = "/bin/sh", args = { "-c", 'echo bound > "$1"', "sh", inputs.path } }
    return { path = inputs.path }
  end,
  destroy = function(outputs, ctx)
    ctx:exec { bin = "/bin/rm", args = { "-f", outputs.path } }
  end,
}
archive {
  name = sys.path("~/dl/app.tar.gz"), url = "file://" .. sys.path("~/.archive-src/app.tar.gz"),
  checksum = "f1dd38f14a43802054465a155f7ef2f31293721807131701dc63718767a97d69", extract_parent = sys.path("~/opt"), creates = sys.path("~/opt/app/bin/app"),
  owner = ME, group = GRP,
}
package {
  name = "hello", version = "1.0", strip_components = 1, bin = { "bin/hello" },
  source = lib.fetchUrl { url = "file:///tmp/syslua-state-v1-fixture-9c41e7-pkg/hello-1.0.tar.gz", sha256 = "6725a72972d615bd369dbd22ad55f32b29291052c9d5214ab2501d57f64e5c7a" },
}
