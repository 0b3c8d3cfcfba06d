#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: syslua contributors
# MIT License (see the repository's LICENSE)

"""Run syslua on a host and map its machine output (`--json`, format 1) onto
Ansible's conventions: changed, failed, check mode and diff mode."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: syslua
short_description: Converge a host with syslua, plan it, or roll it back
version_added: "0.1.0"
description:
  - Runs the C(sys) command of L(syslua,https://github.com/syslua/syslua), a declarative
    system manager, on the target host and reports its result the Ansible way.
  - With I(state=applied) it runs C(sys plan --json), then C(sys apply --json). The task
    is C(changed) only when items changed. An apply is atomic; when an item fails, syslua
    rolls the host back, and the task fails with syslua's message and says so.
  - In check mode it only runs C(sys plan --json) and reports C(changed) when the plan
    has changes. With I(state=planned) it returns the plan, changes nothing and reports
    C(changed=false), in check mode or not.
  - In diff mode (C(--diff)) the file content changes of the plan are returned as
    Ansible diffs, one per file, with the file's path as the header.
  - With I(state=rolled_back) it runs C(sys rollback) to I(snapshot) (default the
    snapshot before the current one); in check mode C(sys rollback --noop).
  - The config is a path on the target; push it first, for example with
    M(ansible.builtin.copy) or M(ansible.builtin.git).
  - syslua's machine output is documented field by field in the repository's
    C(docs/json.md).
options:
  config:
    description:
      - Path on the target of the config to apply (a C(sys.lua), C(init.lua) or YAML
        manifest), or of a directory holding C(sys.lua).
      - Without it syslua uses its defaults, C(./sys.lua) then C(~/.config/syslua/sys.lua),
        then the config of the current snapshot.
      - Not used with I(state=rolled_back).
    type: path
  state:
    description:
      - C(applied) converges the host to the config.
      - C(planned) only plans, and returns the plan.
      - C(rolled_back) returns the host to I(snapshot).
    type: str
    choices: [applied, planned, rolled_back]
    default: applied
  snapshot:
    description:
      - With I(state=rolled_back), the snapshot id or tag to return to. Default is the
        snapshot before the current one. The C(snapshot) return value of an earlier
        run gives the id.
    type: str
  facts:
    description:
      - Extra facts for the config, each passed as C(--fact key=value). Nested
        dictionaries become dotted keys, so C(site) holding C(dc=fra1) is passed as C(--fact site.dc=fra1).
      - The config reads them as C(sys.facts).
    type: dict
    default: {}
  jobs:
    description:
      - Parallel workers for the apply or rollback (C(--jobs)).
    type: int
  executable:
    description:
      - The C(sys) command to run, a name looked up in C(PATH) or an absolute path
        (for example a virtualenv's C(bin/sys)).
    type: str
    default: sys
  environment:
    description:
      - Extra environment variables for C(sys), for example C(SYSLUA_ROOT) to keep
        syslua's state elsewhere.
    type: dict
    default: {}
notes:
  - Supports check mode and diff mode.
  - A run that finds the state lock held by another syslua run fails at once and names
    that run's pid; nothing is changed.
requirements:
  - syslua (the C(sys) command) on the target host.
author:
  - syslua contributors
"""

EXAMPLES = r"""
- name: Push the config
  ansible.builtin.copy:
    src: config/
    dest: ~/.config/syslua/
    mode: preserve

- name: Converge the host
  syslua.syslua.syslua:
    config: ~/.config/syslua/sys.lua
    facts:
      role: web
      site:
        dc: fra1
  register: converged

- name: Only look at what would change (also what check mode does)
  syslua.syslua.syslua:
    config: ~/.config/syslua/sys.lua
    state: planned
  register: plan

- name: Return to the snapshot the first task left
  syslua.syslua.syslua:
    state: rolled_back
    snapshot: "{{ converged.snapshot }}"

- name: syslua installed in a virtualenv, its state kept elsewhere
  syslua.syslua.syslua:
    config: /srv/config/sys.lua
    executable: /opt/syslua/bin/sys
    environment:
      SYSLUA_ROOT: /var/lib/syslua
    jobs: 8
"""

RETURN = r"""
snapshot:
  description:
    - The id of the snapshot the host is at after the run (what I(state=rolled_back)
      takes as I(snapshot)). In check mode and with I(state=planned), the current one.
  returned: always
  type: str
  sample: 20261126-001820-5869
counts:
  description:
    - With I(state=applied) or I(state=rolled_back) outside check mode, the items per
      status of the run (C(changed), C(unchanged), C(failed), C(skipped), C(noop)).
    - In check mode and with I(state=planned), the items per decision of the plan
      (C(create), C(update), C(run), C(remove), C(unchanged), C(fail), C(noop), C(edited)).
  returned: always
  type: dict
  sample: {"changed": 2, "unchanged": 5, "failed": 0, "skipped": 0, "noop": 0}
failures:
  description: The items that failed, each with its C(id) and syslua's C(message).
  returned: always
  type: list
  elements: dict
  sample: [{"id": "exec#migrate", "message": "exit code 3: table exists"}]
plan:
  description:
    - The plan, as C(sys plan --json) prints it under C(plan) (C(changes), C(counts),
      C(items), C(removals), C(waves)); see C(docs/json.md). Not returned by
      I(state=rolled_back).
  returned: when state is applied or planned
  type: dict
rolled_back:
  description: Whether a failed run was undone by syslua.
  returned: always
  type: bool
holder_pid:
  description: The pid of the syslua run that holds the state lock.
  returned: when the lock is held by another run
  type: int
  sample: 25816
"""

import json
import os
import re

from ansible.module_utils.basic import AnsibleModule

LOCK_HELD = 3
USAGE = 2
FAILED = 1
INTERRUPTED = 130
INTERNAL = 70


def fact_args(facts, prefix=""):
    """--fact key=value pairs; nested dicts become dotted keys."""
    args = []
    for key in sorted(facts):
        value = facts[key]
        name = "%s%s" % (prefix, key)
        if isinstance(value, dict):
            args.extend(fact_args(value, name + "."))
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            value = json.dumps(value)
        args.extend(["--fact", "%s=%s" % (name, value)])
    return args


def error_text(stderr):
    """syslua's message from stderr: its `Error:` line and what follows."""
    text = stderr.strip()
    at = text.find("Error: ")
    if at >= 0:
        text = text[at + len("Error: "):]
    return text or "no message"


class Syslua(object):
    def __init__(self, module):
        self.module = module
        p = module.params
        executable = p["executable"]
        if "/" not in executable:
            found = module.get_bin_path(executable)
            if found is None:
                module.fail_json(
                    msg="the syslua command %r was not found in PATH on this host; "
                    "install syslua, or set executable to its path" % executable,
                    changed=False,
                    rolled_back=False,
                )
            executable = found
        elif not os.access(executable, os.X_OK):
            module.fail_json(
                msg="the syslua command %s is not executable on this host" % executable,
                changed=False,
                rolled_back=False,
            )
        self.executable = executable
        self.environ = dict((k, str(v)) for k, v in (p["environment"] or {}).items())
        self.environ.setdefault("NO_COLOR", "1")
        self.facts = fact_args(p["facts"] or {})

    def run(self, *args):
        argv = [self.executable] + list(args)
        rc, out, err = self.module.run_command(argv, environ_update=self.environ, check_rc=False)
        return rc, out, err

    def fail(self, what, rc, err, **extra):
        """A run that ended before syslua had a result to report (no summary)."""
        result = dict(changed=False, rolled_back=False, rc=rc, stderr=err, **extra)
        if rc == LOCK_HELD:
            holder = re.search(r"pid (\d+)", err)
            if holder:
                result["holder_pid"] = int(holder.group(1))
            said = error_text(err).splitlines()[0]
            holder_said = said.split("state lock: ", 1)[-1]
            self.module.fail_json(
                msg="%s: another syslua run holds the state lock on this host: %s; "
                "nothing was changed" % (what, holder_said),
                **result
            )
        if rc == INTERNAL:
            self.module.fail_json(msg="%s: internal error in syslua: %s" % (what, error_text(err)), **result)
        if rc == INTERRUPTED:
            self.module.fail_json(msg="%s was interrupted; the host was rolled back" % what, **result)
        self.module.fail_json(
            msg="%s failed (exit %d): %s; nothing was changed" % (what, rc, error_text(err)), **result
        )

    def plan(self, config):
        args = ["plan", "--json"] + self.facts
        if config:
            args.append(config)
        rc, out, err = self.run(*args)
        try:
            data = json.loads(out)
        except ValueError:
            data = None
        # Exit 1 with a plan: items marked `!` (or edits) that `sys apply` would
        # refuse; the plan is still reported, with its failures.
        if rc != 0 and not (rc == 1 and isinstance(data, dict) and "plan" in data):
            self.fail("sys plan", rc, err)
        if data is None:
            self.module.fail_json(msg="sys plan --json printed no JSON", stdout=out, stderr=err, changed=False)
        return data

    def events(self, what, rc, out, err):
        """The events of `sys apply/rollback --json`, and its summary (None without one)."""
        events = []
        for line in out.splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
        summary = None
        for event in events:
            if event.get("event") == "summary":
                summary = event
        # A summary that only names why the run stopped before planning (a
        # config error, the lock): reported as a run without a result.
        if summary is None or (
            summary.get("result") == "refused"
            and summary.get("refused", "edited_paths") not in ("edited_paths", "cannot_apply")
        ):
            self.fail(what, rc, err)
        return events, summary

    def current(self):
        rc, out, err = self.run("history", "--json")
        if rc != 0:
            return None
        try:
            rows = json.loads(out)
        except ValueError:
            return None
        for row in rows:
            if row.get("current"):
                return row.get("id")
        return None


def patched(before, diff):
    """Apply a unified diff (as `sys plan` makes them) to `before`; None when it
    does not fit (the file changed since, or the diff is not a text diff)."""
    lines = diff.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    hunks = []
    header = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
    for line in lines:
        m = header.match(line)
        if m:
            start, count = int(m.group(1)), int(m.group(2) or "1")
            hunks.append((start - 1 if count else start, []))
        elif hunks and line.startswith("\\"):
            body = hunks[-1][1]
            if body and body[-1][1].endswith("\n"):
                body[-1] = (body[-1][0], body[-1][1][:-1])
        elif hunks and line[:1] in (" ", "-", "+"):
            hunks[-1][1].append((line[0], line[1:] + "\n"))
        elif hunks:
            return None
    if not hunks:
        return None
    old = before.splitlines(True)
    new = []
    at = 0
    for start, body in hunks:
        if start < at or start > len(old):
            return None
        new.extend(old[at:start])
        at = start
        for tag, text in body:
            if tag in (" ", "-"):
                if at >= len(old) or old[at] != text:
                    return None
                at += 1
            if tag in (" ", "+"):
                new.append(text)
    new.extend(old[at:])
    return "".join(new)


def ansible_diffs(plan):
    """The plan's file diffs as Ansible diffs: before/after with the path as
    header where the file can be read, else syslua's diff as it is."""
    diffs = []
    for entry in plan.get("items", []) + plan.get("removals", []):
        diff = entry.get("diff")
        if not diff:
            continue
        label = entry.get("label") or entry.get("id")
        one = {"before_header": label, "after_header": label}
        ident = entry.get("id", "")
        kind, _, key = ident.partition("#")
        after = None
        if kind == "file" and diff != "Binary files differ" and key.startswith("/"):
            before = ""
            if os.path.lexists(key):
                try:
                    with open(key, "rb") as f:
                        before = f.read().decode("utf-8", "replace")
                except (IOError, OSError):
                    before = None
            if before is not None:
                after = patched(before, diff)
        if after is not None:
            one["before"], one["after"] = before, after
        else:
            one["prepared"] = diff if diff.endswith("\n") else diff + "\n"
        diffs.append(one)
    return diffs


def failure_message(summary, verb):
    failures = summary.get("failures") or []
    said = "; ".join("%s: %s" % (f.get("id"), f.get("message")) for f in failures)
    if summary.get("error"):
        said = "%s; %s" % (summary["error"], said) if said else summary["error"]
    if summary.get("result") == "interrupted":
        head = "syslua %s was interrupted" % verb
    else:
        head = "syslua %s failed: %s" % (verb, said or "see stderr")
    if summary.get("restore_failed"):
        return head + ". Rolling back failed too: the host is NOT as it was; run `sys status` on it"
    not_undone = summary.get("not_undone") or []
    if not_undone:
        return head + ". The host was rolled back, except commands that cannot be undone: " + ", ".join(not_undone)
    return head + ". The host was rolled back: System unchanged."


def main():
    module = AnsibleModule(
        argument_spec=dict(
            config=dict(type="path"),
            state=dict(type="str", default="applied", choices=["applied", "planned", "rolled_back"]),
            snapshot=dict(type="str"),
            facts=dict(type="dict", default={}),
            jobs=dict(type="int"),
            executable=dict(type="str", default="sys"),
            environment=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    p = module.params
    state = p["state"]
    if p["snapshot"] and state != "rolled_back":
        module.fail_json(msg="snapshot is used with state=rolled_back only", changed=False)
    if p["jobs"] is not None and p["jobs"] < 1:
        module.fail_json(msg="jobs must be at least 1", changed=False)
    sys_ = Syslua(module)
    jobs = ["--jobs", str(p["jobs"])] if p["jobs"] else []

    if state == "rolled_back":
        args = ["rollback", "--json"] + jobs
        if module.check_mode:
            args.append("--noop")
        if p["snapshot"]:
            args.append(p["snapshot"])
        rc, out, err = sys_.run(*args)
        events, summary = sys_.events("sys rollback", rc, out, err)
        counts = summary.get("counts") or {}
        result = dict(
            counts=counts,
            failures=summary.get("failures") or [],
            rolled_back=bool(summary.get("rolled_back")),
            rc=rc,
        )
        if rc != 0 or summary.get("result") != "ok":
            module.fail_json(msg=failure_message(summary, "rollback"), changed=False, snapshot=sys_.current(), **result)
        if module.check_mode:
            changed = counts.get("noop", 0) > 0 or counts.get("changed", 0) > 0
            module.exit_json(changed=changed, snapshot=sys_.current(), **result)
        module.exit_json(
            changed=counts.get("changed", 0) > 0, snapshot=summary.get("snapshot") or sys_.current(), **result
        )

    config = p["config"]
    if config and not os.path.exists(config):
        module.fail_json(msg="config %s does not exist on this host" % config, changed=False, rolled_back=False)
    data = sys_.plan(config)
    plan = data.get("plan", {})
    diff = ansible_diffs(plan) if module._diff else None
    if state == "planned" or module.check_mode:
        result = dict(
            plan=plan,
            counts=plan.get("counts", {}),
            failures=[
                {"id": e.get("id"), "message": e.get("message")}
                for e in plan.get("items", []) + plan.get("removals", [])
                if e.get("action") == "fail"
            ],
            snapshot=sys_.current(),
            rolled_back=False,
        )
        if diff is not None:
            result["diff"] = diff
        changed = bool(plan.get("changes")) if state == "applied" else False
        module.exit_json(changed=changed, **result)

    args = ["apply", "--json"] + jobs + sys_.facts
    if config:
        args.append(config)
    rc, out, err = sys_.run(*args)
    events, summary = sys_.events("sys apply", rc, out, err)
    counts = summary.get("counts") or {}
    result = dict(
        plan=plan,
        counts=counts,
        failures=summary.get("failures") or [],
        rolled_back=bool(summary.get("rolled_back")),
        rc=rc,
    )
    if summary.get("result") == "refused" and summary.get("refused") == "cannot_apply":
        module.fail_json(
            msg="syslua refused to apply: %d item(s) cannot be applied on this host: %s; nothing "
            "was changed"
            % (
                len(summary.get("cannot_apply") or []),
                "; ".join(
                    "%s: %s" % (e.get("label", ""), e.get("message", ""))
                    for e in summary.get("cannot_apply") or []
                ),
            ),
            changed=False,
            snapshot=sys_.current(),
            cannot_apply=summary.get("cannot_apply") or [],
            **result
        )
    if summary.get("result") == "refused" and summary.get("refused", "edited_paths") == "edited_paths":
        edited = summary.get("edited") or []
        module.fail_json(
            msg="syslua refused to overwrite %d file(s) edited by hand on this host since the last "
            "apply: %s; nothing was changed (keep the edits with `sys add`, or overwrite them with "
            "`sys apply --force`)" % (len(edited), ", ".join(e.get("label", "") for e in edited)),
            changed=False,
            snapshot=sys_.current(),
            edited=edited,
            **result
        )
    if rc != 0 or summary.get("result") != "ok":
        module.fail_json(
            msg=failure_message(summary, "apply"),
            changed=bool(summary.get("restore_failed") or summary.get("not_undone")),
            snapshot=sys_.current(),
            stderr=err,
            **result
        )
    if diff is not None:
        result["diff"] = diff
    changed = counts.get("changed", 0) > 0
    module.exit_json(changed=changed, snapshot=summary.get("snapshot") or sys_.current(), **result)


if __name__ == "__main__":
    main()
