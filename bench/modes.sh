#!/bin/sh
# The modes syslua leaves under $SYSLUA_ROOT after applying a config with a
# 0600 secret (inline and from `source`), a taken-over ~/.ssh key, an exec
# with a secret in its environment, an env variable and a package (whose tree,
# profile and the live env scripts are the only things others may read), under umask 000
# (the umask must not loosen anything). Prints `find -printf '%m %p'`.
#
#   sh bench/modes.sh            (from a checkout; uses $PYTHON or python3)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home/.ssh" "$work/cfg"
printf 'hand-made key\n' > "$work/home/.ssh/id_ed25519"
chmod 600 "$work/home/.ssh/id_ed25519"
printf 'token from a source file\n' > "$work/cfg/token.txt"
mkdir -p "$work/pkg/hello-1.0/bin"
printf '#!/bin/sh\necho hello\n' > "$work/pkg/hello-1.0/bin/hello"
chmod 755 "$work/pkg/hello-1.0/bin/hello"
tar -C "$work/pkg" -czf "$work/hello-1.0.tar.gz" hello-1.0
sum=$(sha256sum "$work/hello-1.0.tar.gz" | cut -d' ' -f1)
cat > "$work/cfg/sys.lua" <<LUA
local ME, GRP = sys.user.name, sys.user.group
defaults { file = { owner = ME, group = GRP, mode = "0644" } }
file { path = "~/.secret", content = "s3cret\n", mode = "0600" }
file { path = "~/.token", source = "$work/cfg/token.txt", mode = "0600" }
file { path = "~/.ssh/id_ed25519", content = "managed key\n", mode = "0600" }
exec { name = "login", environment = { "API_TOKEN=s3cret" }, command = "true" }
env { EDITOR = "vi" }
package { name = "hello", version = "1.0", strip_components = 1, bin = { "bin/hello" },
          source = lib.fetchUrl { url = "file://$work/hello-1.0.tar.gz", sha256 = "$sum" } }
LUA
umask 000
HOME="$work/home" SYSLUA_ROOT="$work/root" NO_COLOR=1 PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" \
  "$python" -m syslua apply "$work/cfg/sys.lua" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
cd "$work/root"
find . -printf '%m %p\n' | sort -k2 | sed "s|^\([0-7]*\) \./|\1 \$SYSLUA_ROOT/|; s|^\([0-7]*\) \.$|\1 \$SYSLUA_ROOT|"
