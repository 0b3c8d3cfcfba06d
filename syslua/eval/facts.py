"""Facts about the machine and the user running `sys`, handed to configs as `sys.*`.

The short names (`sys.os`, `sys.arch`, `sys.platform`, `sys.hostname`,
`sys.user`) sit beside CCM's names (`facts.host.info.hostname`, ...), so
existing CCM manifests resolve as they are. User facts come from
`<config dir>/facts.json` or `facts.yaml`, from `--facts FILE` (YAML or
JSON, CCM's flag) and from `--fact k=v` (dotted keys make nested tables),
each merged over the ones before.
"""

from __future__ import annotations

import grp
import json
import os
import pwd
from functools import cache
from pathlib import Path
from typing import Any

from syslua.errors import UsageError
from syslua.paths import home

_ARCH = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "armv8": "aarch64"}


def _os_release() -> dict[str, str]:
    info: dict[str, str] = {}
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            for line in f:
                key, sep, value = line.strip().partition("=")
                if sep:
                    info[key] = value.strip().strip('"')
    except OSError:
        pass
    return info


# a word in the firmware's vendor or product name -> the hypervisor's name
_HYPERVISORS = {
    "kvm": "kvm",
    "qemu": "kvm",
    "vmware": "vmware",
    "virtualbox": "vbox",
    "innotek": "vbox",
    "xen": "xen",
}


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _virtualization() -> tuple[str, str]:
    """(system, role) under the names CCM's `host.info.virtualizationSystem`
    and `virtualizationRole` use: a container first (docker, podman, lxc, as
    their marker files or process 1's environment say), then a hypervisor
    the firmware names; ("", "") when nothing says (bare metal, or unknown)."""
    if os.path.exists("/.dockerenv"):
        return "docker", "guest"
    if os.path.exists("/run/.containerenv"):
        return "podman", "guest"
    init_env = _read("/proc/1/environ").split("\0")
    for kind in ("lxc", "docker", "podman"):
        if f"container={kind}" in init_env:
            return kind, "guest"
    cgroup = _read("/proc/self/cgroup")
    for kind in ("docker", "lxc"):
        if f"/{kind}" in cgroup:
            return kind, "guest"
    dmi = "/sys/class/dmi/id"
    firmware = (_read(f"{dmi}/sys_vendor") + " " + _read(f"{dmi}/product_name")).lower()
    for word, kind in _HYPERVISORS.items():
        if word in firmware:
            return kind, "guest"
    return "", ""


@cache
def _static_facts() -> dict[str, Any]:
    """Facts that do not change during one process."""
    uname = os.uname()  # cheaper than importing platform and socket
    system = uname.sysname.lower()
    machine = uname.machine.lower()
    arch = _ARCH.get(machine, machine)
    hostname = uname.nodename
    uid, gid = os.getuid(), os.getgid()
    try:
        pw = pwd.getpwuid(uid)
        name, shell = pw.pw_name, pw.pw_shell
    except KeyError:
        name, shell = str(uid), ""
    try:
        group = grp.getgrgid(gid).gr_name
    except KeyError:
        group = str(gid)
    release = _os_release()
    virt_system, virt_role = _virtualization()
    distro = release.get("ID", system)
    family = (release.get("ID_LIKE", "").split() or [distro])[0]
    user = {"name": name, "uid": uid, "gid": gid, "group": group, "home": "", "shell": shell}
    return {
        "os": system,
        "arch": arch,
        "platform": f"{arch}-{system}",
        "hostname": hostname,
        "user": user,
        "host": {
            "info": {
                "hostname": hostname,
                "os": system,
                "platform": distro,
                "platformFamily": family,
                "platformVersion": release.get("VERSION_ID", ""),
                "kernelVersion": uname.release,
                "kernelArch": machine,
                "virtualizationSystem": virt_system,
                "virtualizationRole": virt_role,
            }
        },
    }


def machine_facts() -> dict[str, Any]:
    """Facts about the machine and the user; `user.home` is read from $HOME each time."""
    facts = dict(_static_facts())
    facts["user"] = {**facts["user"], "home": home()}
    return facts


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    for part in parts[:-1]:
        nxt = target.get(part)
        if not isinstance(nxt, dict):
            nxt = target[part] = {}
        target = nxt
    target[parts[-1]] = value


def parse_fact_args(args: list[str]) -> dict[str, Any]:
    """`--fact k=v` options (dotted keys nest) as a dict."""
    out: dict[str, Any] = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or not key or any(not p for p in key.split(".")):
            raise UsageError(f"--fact expects key=value, got `{arg}`")
        _set_dotted(out, key, value)
    return out


def user_facts(config_dir: Path) -> dict[str, Any]:
    """Facts the user keeps in `facts.json` / `facts.yaml` in the config dir."""
    json_file = config_dir / "facts.json"
    if json_file.is_file():
        try:
            data = json.loads(json_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise UsageError(f"cannot read user facts {json_file}: {e}") from e
        return data if isinstance(data, dict) else {}
    for name in ("facts.yaml", "facts.yml"):
        yaml_file = config_dir / name
        if yaml_file.is_file():
            import yaml

            try:
                data = yaml.safe_load(yaml_file.read_text(encoding="utf-8"))
            except (OSError, yaml.YAMLError) as e:
                raise UsageError(f"cannot read user facts {yaml_file}: {e}") from e
            return data if isinstance(data, dict) else {}
    return {}


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def read_facts_file(path: Path) -> dict[str, Any]:
    """`--facts FILE`: a map of facts in JSON (when the text is a JSON
    object, as CCM tells them apart) or YAML."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise UsageError(f"--facts: cannot read {path}: {reason}") from None
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as e:
            raise UsageError(f"--facts: {path}: invalid JSON: {e}") from None
    else:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"{path}:{mark.line + 1}" if mark else str(path)
            problem = getattr(e, "problem", None) or str(e)
            raise UsageError(f"--facts: {where}: invalid YAML: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"--facts: {path} must be a map of fact names to values")
    return {str(k): v for k, v in data.items()}


def _merge_file_facts(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """A facts file over the facts, as CCM merges it: maps merged, lists joined."""
    out = dict(base)
    for key, value in extra.items():
        old = out.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            out[key] = _merge_file_facts(old, value)
        elif isinstance(value, list) and isinstance(old, list):
            out[key] = old + value
        else:
            out[key] = value
    return out


def gather(
    config_dir: Path, cli_facts: dict[str, Any], file_facts: dict[str, Any] | None = None
) -> dict[str, Any]:
    """All facts: machine facts, then user facts, then `--facts FILE`, then
    `--fact` (later wins)."""
    facts = _deep_merge(machine_facts(), user_facts(config_dir))
    if file_facts:
        facts = _merge_file_facts(facts, file_facts)
    return _deep_merge(facts, cli_facts)


CORE = ("os", "arch", "platform", "hostname", "user")
