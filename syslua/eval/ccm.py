"""Read a CCM-format YAML manifest into raw declarations.

Steps, in the order `load` takes them:
1. Parse the YAML, remembering the line of every mapping (for messages)
   (`_read_document`).
2. Resolve data: `data`, then `hierarchy.order` entries rendered against the
   facts and matched against `overrides` by exact key, merged `first` (the
   first matching override block wins, shallowly) or `deep` (all matching
   blocks, maps merged recursively and lists concatenated); then the
   `data` handed down by an `apply` parent, deep-merged on top.
   The `# @require` / `# @validate` annotations of `data` are checked
   against the result (`eval/data_annotations.py`). Then the `ccm` section
   and its `pre_message` / `post_message` (`_ccm_section`, `_messages`).
3. Expand `ccm.resources` in both forms (a map with `name`, or a list of
   `{name: props}` entries with an optional `defaults` entry for that list),
   rendering `{{ expr }}` / `${ expr }` templates (Expr language, `template.py`)
   (`_Resources.add`, `_expand`). A property whose template reads a file
   (`file()`, `readFile()`) is rendered when the resource runs, after the
   resources before it (`template.defer`); its name and references are not.
4. Common properties CCM gives every resource: `control` (`if`/`unless`
   expressions: a resource whose control says no is not declared at all, and
   is listed as skipped by control), `alias` (another name for `require` and
   `subscribe` in the same manifest), `source` over `content` (with a
   warning) (`_Resources._declare`).
5. Order: each resource gets `after` = the resource written before it, so
   a manifest runs in the order written, and `fail_on_error` (false unless
   `ccm.fail_on_error` is true): whether the rest still starts after a failure.
   References are resolved once every resource is read (`_Resources.finish`).

A `.json` manifest is the same document written in JSON.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syslua import registry
from syslua.errors import ConfigError, Source
from syslua.eval import template
from syslua.eval.constants import FROM_DEFAULTS, KEYS
from syslua.eval.lua import RawDeclaration
from syslua.paths import abbreviate

_CONTROL = {"if", "unless"}
_REFERENCES = ("require", "depends_on", "subscribe")


def declared_as(type_: str) -> str:
    """The kind a CCM resource type declares, from the registry: CCM's
    `package` is an OS package (apt, dnf), `os_package` in syslua, whose own
    `package` is a tool in its store."""
    return registry.ccm_types().get(type_, type_)


_TOP = {"data", "hierarchy", "overrides", "ccm"}
_CCM = {"resources", "pre_message", "post_message", "fail_on_error"}


class _LineDict(dict):  # type: ignore[type-arg]
    """A YAML mapping that remembers its line and the line of each key."""

    line = 0
    key_lines: dict = {}  # type: ignore[type-arg]


def _line_of(mapping: Any, key: Any, default: int = 1) -> int:
    return getattr(mapping, "key_lines", {}).get(key, getattr(mapping, "line", default))


def _loader() -> Any:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def construct_map(loader: Any, node: Any) -> Any:
        data = _LineDict()
        data.line = node.start_mark.line + 1
        data.key_lines = {}
        for key_node, _ in node.value:
            data.key_lines[key_node.value] = key_node.start_mark.line + 1
        yield data
        data.update(loader.construct_mapping(node, deep=True))

    def construct_int(loader: Any, node: Any) -> Any:
        # `mode: 0644` must stay the octal text the author wrote, not YAML 1.1's 420.
        text = loader.construct_scalar(node)
        if len(text) > 1 and text[0] == "0" and text[1] not in "xX":
            return text
        if ":" in text:  # YAML 1.1's base 60 (`1:20` is 80); text in YAML 1.2, as in CCM
            return text
        return yaml.SafeLoader.construct_yaml_int(loader, node)

    def construct_bool(loader: Any, node: Any) -> Any:
        # CCM reads YAML 1.2 (goccy/go-yaml): only true/false are booleans;
        # YAML 1.1's yes/no/on/off/y/n are plain text there, so they are here.
        text = loader.construct_scalar(node)
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        return text

    Loader.add_constructor("tag:yaml.org,2002:map", construct_map)
    Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
    Loader.add_constructor("tag:yaml.org,2002:bool", construct_bool)
    return Loader


def _expr_text(value: Any) -> str:
    """A value as the expression language writes it (`nil`, `"web"`, `[1, 2]`), not Python's repr."""
    if value is None:
        return "nil"
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def deep_merge(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for k, v in b.items():
            out[k] = deep_merge(out[k], v) if k in out else copy.deepcopy(v)
        return out
    if isinstance(a, list) and isinstance(b, list):
        return a + b
    return copy.deepcopy(b)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def resolve_data(
    doc: dict[str, Any],
    facts: dict[str, Any],
    extra: dict[str, Any],
    where: Source,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """CCM/tinyhiera data resolution (see module docstring). An expression that
    cannot be evaluated is an error at the line of its data key, its
    `hierarchy.order` or its override block (`where` when lines are unknown)."""
    # CCM allows only lookup() and the language's own functions here, no files.
    environ = dict(os.environ) if env is None else env
    roots = template.Roots(facts=facts, env=environ, files=False, ccm=True)
    base = _data(doc, roots, where)
    strategy = _merge_strategy(doc, where)
    for block in _matching_overrides(doc, roots, where):
        if strategy == "first":
            base = {**base, **block}
            break
        base = deep_merge(base, block)
    return deep_merge(base, extra) if extra else base


def _at(where: Source, mapping: Any, key: Any) -> Source:
    """Where `key` of `mapping` is written (`where` when lines are unknown)."""
    return Source(where.file, _line_of(mapping, key, where.line))


def _data(doc: dict[str, Any], roots: template.Roots, where: Source) -> dict[str, Any]:
    """`data`, its templates rendered."""
    data = doc.get("data") or {}
    if not isinstance(data, dict):
        raise ConfigError("`data` must be a map of names to values", _at(where, doc, "data"))
    base: dict[str, Any] = {}
    for name, value in data.items():
        try:
            base[str(name)] = template.render_deep(_plain(value), roots, strict=False)
        except template.TemplateError as e:
            raise ConfigError(f"data.{name}: {e}", _at(where, data, name)) from None
    return base


def _merge_strategy(doc: dict[str, Any], where: Source) -> str:
    """`hierarchy.merge` (first or deep), once `hierarchy` is known to be well formed."""
    hierarchy = doc.get("hierarchy") or {}
    if not isinstance(hierarchy, dict):
        raise ConfigError(
            "`hierarchy` must be a map with `order` and `merge`", _at(where, doc, "hierarchy")
        )
    order = hierarchy.get("order", ["default"])
    if not isinstance(order, list) or not all(isinstance(o, str) for o in order):
        raise ConfigError(
            "`hierarchy.order` must be a list of strings", _at(where, hierarchy, "order")
        )
    strategy = str(hierarchy.get("merge") or "first").lower()
    if strategy not in ("first", "deep"):
        raise ConfigError(
            f"`hierarchy.merge` must be first or deep, got {strategy}",
            _at(where, hierarchy, "merge"),
        )
    return strategy


def _matching_overrides(
    doc: dict[str, Any], roots: template.Roots, where: Source
) -> Iterator[dict[str, Any]]:
    """The `overrides` blocks that the `hierarchy.order` entries name, rendered,
    in that order; each is rendered only when it is asked for."""
    hierarchy = doc.get("hierarchy") or {}
    overrides = doc.get("overrides") or {}
    for entry in hierarchy.get("order", ["default"]):
        try:
            key, matched = _render_entry(entry, roots)
        except template.TemplateError as e:
            raise ConfigError(f"hierarchy.order: {e}", _at(where, hierarchy, "order")) from None
        if not matched or (key == "data" and "data" in doc):
            continue
        block = overrides.get(key) if isinstance(overrides, dict) else None
        if not isinstance(block, dict):
            continue
        try:
            rendered = template.render_deep(_plain(block), roots, strict=False)
        except template.TemplateError as e:
            raise ConfigError(f"overrides.{key}: {e}", _at(where, overrides, key)) from None
        yield rendered


def _render_entry(entry: str, roots: template.Roots) -> tuple[str, bool]:
    """Render one `hierarchy.order` entry; it matches when any lookup in it is non-empty."""
    found = template.expressions(entry, roots)
    if not found:
        return entry, bool(entry)
    parts, at, matched = [], 0, False
    for start, end, inner in found:
        value = template.evaluate(inner, roots, strict=False)
        matched = matched or value not in (None, "")
        parts += [entry[at:start], "" if value is None else str(value)]
        at = end
    return "".join(parts) + entry[at:], matched


def _parse_json(text: str, path: Path) -> Any:
    """A JSON manifest. JSON is YAML too, and the YAML reader remembers lines
    for messages: its reading is used when it means the same as JSON's."""
    import json

    import yaml

    try:
        doc = json.loads(text)
    except ValueError as e:
        line = getattr(e, "lineno", None)
        msg = getattr(e, "msg", str(e))
        raise ConfigError(
            f"invalid JSON: {msg}", Source(str(path), line) if line else None
        ) from None
    try:
        with_lines = yaml.load(text, Loader=_loader())
    except yaml.YAMLError:
        return doc
    return with_lines if _plain(with_lines) == doc else doc


def load(
    path: Path,
    *,
    facts: dict[str, Any],
    data: dict[str, Any],
    seq_start: int = 0,
    warnings: list[str] | None = None,
    skipped: list[tuple[str, str, Source]] | None = None,
    inputs: list[str] | None = None,
    scope: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    dotenv: str | None = None,
    hiera: Path | None = None,
) -> tuple[list[RawDeclaration], list[tuple[str, str]]]:
    """Declarations of a CCM manifest, and its pre/post messages. What is
    worth a warning is added to `warnings`; resources that their `control`
    leaves unmanaged to `skipped`, as (subject, reason, where). Files that
    expressions read (`readFile()`) are added to `inputs`; `scope`, the roots
    of templates rendered later (`template: true` sources), gets the
    manifest's resolved data. `env` is `Environ` (the process environment
    with `dotenv`, the `.env` file read into it); `hiera`, a data file
    (`--hiera FILE`) resolved against the facts and merged over the
    manifest's own data, under the `data` an `apply` parent hands down."""
    warnings = warnings if warnings is not None else []
    env = dict(os.environ) if env is None else env
    text, doc = _read_document(path)
    resolved = resolve_data(doc, facts, {}, Source(str(path), 1), env)
    if hiera is not None:
        resolved = deep_merge(resolved, hiera_data(hiera, facts, env))
    if data:
        resolved = deep_merge(resolved, data)
    if path.suffix != ".json":
        _check_annotations(text, resolved, path, warnings)
    if scope is not None:
        scope["data"] = resolved
    roots = template.Roots(
        facts=facts,
        data=resolved,
        env=env,
        base_dir=str(path.parent),
        reads=inputs,
        ccm=True,
        dotenv=dotenv,
    )
    ccm = _ccm_section(doc, path)
    messages = _messages(ccm, doc, roots, path)
    entries = _resource_list(ccm, path)
    fail_on_error = _fail_on_error(ccm, path)
    resources = _Resources(path, roots, fail_on_error, seq_start, warnings, skipped)
    for entry in entries:
        resources.add(entry, getattr(entry, "line", getattr(ccm, "line", 1)))
    return resources.finish(), messages


def hiera_data(path: Path, facts: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """The data of a hiera file (`--hiera FILE`: `data`, `hierarchy`,
    `overrides`, YAML or JSON), resolved against the facts."""
    from syslua.errors import UsageError

    if not path.is_file():
        raise UsageError(f"--hiera: cannot read {path}: no such file")
    text, doc = _read_document(path, top=_TOP - {"ccm"})
    resolved = resolve_data(doc, facts, {}, Source(str(path), 1), env)
    if path.suffix != ".json":
        notes: list[str] = []
        _check_annotations(text, resolved, path, notes)
    return resolved


def _read_document(path: Path, top: set[str] = _TOP) -> tuple[str, dict[str, Any]]:
    """The manifest's text, and its document: a map of the top-level keys CCM knows."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from e
    doc = _parse_json(text, path) if path.suffix == ".json" else _parse_yaml(text, path)
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ConfigError(
            "a YAML manifest must be a map with data, hierarchy, overrides and ccm",
            Source(str(path), 1),
        )
    for key in doc:
        if key not in top:
            expected = ", ".join(k for k in ("data", "hierarchy", "overrides", "ccm") if k in top)
            raise ConfigError(
                f"unknown top-level key `{key}` (expected {expected})",
                Source(str(path), _line_of(doc, key)),
            )
    return text, doc


def _parse_yaml(text: str, path: Path) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=_loader())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = Source(str(path), mark.line + 1) if mark else None
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(f"invalid YAML: {problem}", where) from None


def _ccm_section(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    """`ccm`: a map of the keys CCM knows."""
    ccm = doc.get("ccm")
    if ccm is None:
        ccm = {}
    if not isinstance(ccm, dict):
        raise ConfigError(
            "`ccm` must be a map with `resources`", Source(str(path), _line_of(doc, "ccm"))
        )
    for key in ccm:
        if key == "resources_jet_file":
            raise ConfigError(
                "`ccm.resources_jet_file` (resources generated by a Jet template) is not "
                "supported by syslua; list the resources under `ccm.resources`",
                Source(str(path), _line_of(ccm, key)),
            )
        if key not in _CCM:
            raise ConfigError(
                f"unknown key `ccm.{key}` (expected {', '.join(sorted(_CCM))})",
                Source(str(path), _line_of(ccm, key)),
            )
    return ccm


def _messages(
    ccm: dict[str, Any], doc: dict[str, Any], roots: template.Roots, path: Path
) -> list[tuple[str, str]]:
    """`ccm.pre_message` and `ccm.post_message`, rendered, as (kind, text)."""
    messages = []
    for kind in ("pre_message", "post_message"):
        if ccm.get(kind):
            try:
                messages.append((kind, str(template.render(str(ccm[kind]), roots))))
            except template.TemplateError as e:
                where = Source(str(path), _line_of(ccm, kind, _line_of(doc, "ccm")))
                raise ConfigError(f"ccm.{kind}: {e}", where) from None
    return messages


def _resource_list(ccm: dict[str, Any], path: Path) -> list[Any]:
    resources = ccm.get("resources") or []
    if not isinstance(resources, list):
        raise ConfigError(
            "`ccm.resources` must be a list", Source(str(path), getattr(ccm, "line", 1))
        )
    return resources


def _fail_on_error(ccm: dict[str, Any], path: Path) -> bool:
    fail_on_error = ccm.get("fail_on_error", False)
    if not isinstance(fail_on_error, bool):
        raise ConfigError(
            "`ccm.fail_on_error` must be true or false",
            Source(str(path), _line_of(ccm, "fail_on_error")),
        )
    return fail_on_error


@dataclass
class _Resources:
    """The declarations of one manifest's resources, in the order written, and
    what their references are resolved against once all are read."""

    path: Path
    roots: template.Roots
    fail_on_error: bool
    seq: int  # the last declaration's number
    warnings: list[str]
    skipped: list[tuple[str, str, Source]] | None
    decls: list[RawDeclaration] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # "type#alias" -> "type#name"
    alias_lines: dict[str, Source] = field(default_factory=dict)
    unmanaged: set[str] = field(default_factory=set)  # resources their `control` left out
    # each resource's first declaration, in order, and its repeated ones
    heads: dict[str, RawDeclaration] = field(default_factory=dict)
    repeats: list[tuple[str, RawDeclaration]] = field(default_factory=list)

    def add(self, entry: Any, line: int) -> None:
        """One entry of `ccm.resources`: `- type: {name: ...}` or `- type: [...]`."""
        where = Source(str(self.path), line)
        if not isinstance(entry, dict) or len(entry) != 1:
            raise ConfigError(
                "each resource must be a map with exactly one type, e.g. `- file: {...}`", where
            )
        ((type_, body),) = entry.items()
        supported = registry.ccm_types()
        if type_ not in supported:
            raise ConfigError(
                f"resource type `{type_}` is not supported (supported: {', '.join(supported)})",
                where,
            )
        for props, props_line in _expand(type_, body, where):
            self._declare(type_, props, Source(str(self.path), props_line))

    def _declare(self, type_: str, props: dict[str, Any], src: Source) -> None:
        """One resource: rendered, left out if its `control` says so, else declared."""
        declared = declared_as(str(type_))
        control = _unwrapped(props.pop("control", None))
        alias = _unwrapped(props.pop("alias", None))
        try:
            rendered = _render_props(type_, KEYS[declared], props, self.roots)
            if alias is not None:
                alias = template.render_deep(alias, self.roots, typed=False)
        except template.TemplateError as e:
            raise ConfigError(f"{type_}: {e}", src) from None
        name = _unwrapped(rendered.get(KEYS[declared]))
        subject = f"{type_} {name}"
        ident = f"{declared}#{name}"
        if control is not None:
            reason = _control(control, self.roots, src, subject)
            if reason is not None:
                self._leave_out(type_, declared, name, alias, reason, src)
                return
        if alias is not None:
            self._alias(type_, alias, ident, subject, src)
        _source_wins(type_, rendered, src, subject, self.warnings)
        rendered["fail_on_error"] = self.fail_on_error
        self.seq += 1
        decl = RawDeclaration(type=declared, props=rendered, source=src, seq=self.seq, prio=None)
        if ident not in self.heads:  # a repeated resource merges with the first: no cycle
            if self.heads:
                rendered["after"] = [next(reversed(self.heads))]
            self.heads[ident] = decl
        else:
            self.repeats.append((ident, decl))
        self.decls.append(decl)

    def _leave_out(
        self, type_: str, declared: str, name: Any, alias: Any, reason: str, src: Source
    ) -> None:
        """A resource its `control` leaves unmanaged: listed as skipped, and
        what requires it (also by its alias) is met."""
        if self.skipped is not None:
            # shown like the plan's items: a path in the home as ~/...
            shown = abbreviate(name) if isinstance(name, str) else name
            # and named by its syslua type, as the plan names the item
            self.skipped.append((f"{declared} {shown}", reason, src))
        self.unmanaged.add(f"{declared}#{name}")
        if isinstance(alias, str) and alias:
            self.aliases.setdefault(f"{type_}#{alias}", f"{declared}#{name}")

    def _alias(self, type_: str, alias: Any, ident: str, subject: str, src: Source) -> None:
        if not isinstance(alias, str) or not alias:
            raise ConfigError(f"{subject}: `alias` must be a non-empty string", src)
        ref = f"{type_}#{alias}"
        if ref in self.alias_lines:
            raise ConfigError(
                f"{subject}: alias `{alias}` is already used by another {type_} "
                f"(at {self.alias_lines[ref]})",
                src,
            )
        self.aliases[ref], self.alias_lines[ref] = ident, src

    def finish(self) -> list[RawDeclaration]:
        """The declarations, their references resolved, in the order to run."""
        left_out = self.unmanaged - set(self.heads)
        for decl in self.decls:
            _resolve_aliases(decl.props, self.aliases)
            _drop_unmanaged(decl.props, left_out)
            _drop_foreign_subscriptions(decl, self.warnings)
        _order_with_requires(self.heads, self.repeats)
        return self.decls


def _refs(props: dict[str, Any]) -> list[str]:
    """The resources a declaration requires or subscribes to."""
    out: list[str] = []
    for key in _REFERENCES:
        value = _unwrapped(props.get(key))
        out += [value] if isinstance(value, str) else [r for r in value or () if isinstance(r, str)]
    return out


def _order_with_requires(
    heads: dict[str, RawDeclaration], repeats: list[tuple[str, RawDeclaration]]
) -> None:
    """Chain the manifest's resources one after another, in the order written,
    except that a resource comes after what it requires or subscribes to in
    this manifest even when that is written later: what it needs is moved
    to just before it (in the order written). So each resource
    still runs after the one before it, none in parallel. Without such a
    forward reference this is the written order; with a cycle it is left as
    written, for the DAG to report. `heads` are the first declarations of
    each resource (which carry `after`), `repeats` the later ones."""
    written = list(heads)
    index = {ident: n for n, ident in enumerate(written)}
    needs: dict[str, set[str]] = {ident: set() for ident in written}
    for ident, decl in [*heads.items(), *repeats]:
        needs[ident] |= {r for r in _refs(decl.props) if r in index and r != ident}
    if all(index[r] < index[i] for i, rs in needs.items() for r in rs):
        return  # nothing reaches forward: the written order stands
    order: list[str] = []
    state: dict[str, int] = {}  # 1: its requirements are being placed, 2: placed
    for start in written:
        stack = [(start, iter(sorted(needs[start], key=index.__getitem__)))]
        state.setdefault(start, 1)
        if state[start] == 2:
            continue
        while stack:
            ident, todo = stack[-1]
            for r in todo:
                if state.get(r) == 1:
                    return  # a cycle: the DAG reports it
                if r not in state:
                    state[r] = 1
                    stack.append((r, iter(sorted(needs[r], key=index.__getitem__))))
                    break
            else:
                stack.pop()
                state[ident] = 2
                order.append(ident)
    for n, ident in enumerate(order):
        props = heads[ident].props
        if n:
            props["after"] = [order[n - 1]]
        else:
            props.pop("after", None)


def _drop_unmanaged(props: dict[str, Any], unmanaged: set[str]) -> None:
    """A `require` or `subscribe` naming a resource that `control` leaves
    unmanaged is met, as in CCM (a skipped resource did not fail, and never
    changes): the reference is dropped, so the resource still runs."""
    if not unmanaged:
        return
    for key in _REFERENCES:
        value: Any = props.get(key)
        wrapped = isinstance(value, dict) and "__syslua_prio" in value
        inner = value["__syslua_v"] if wrapped else value
        if isinstance(inner, str):
            inner = [inner]
        if not isinstance(inner, list):
            continue
        kept = [r for r in inner if r not in unmanaged]
        if len(kept) != len(inner):
            props[key] = {**value, "__syslua_v": kept} if wrapped else kept


def _unwrapped(value: Any) -> Any:
    """A value as written, whether or not it came from a `defaults` entry."""
    if isinstance(value, dict) and "__syslua_prio" in value:
        return value["__syslua_v"]
    return value


def _control(control: Any, roots: dict[str, Any], src: Source, subject: str) -> str | None:
    """None when the resource is managed; else why not (`if` false, `unless` true).
    Managed when `if` (if given) is true and `unless` (if given) is false, as in CCM."""
    if not isinstance(control, dict) or not control:
        raise ConfigError(f"{subject}: `control` must be a map with `if` and/or `unless`", src)
    for key in control:
        if key not in _CONTROL:
            raise ConfigError(
                f"{subject}: unknown key `control.{key}` (expected if, unless)",
                Source(src.file, _line_of(control, key, src.line)),
            )
    results = {}
    for key in ("if", "unless"):
        if key in control:
            where = Source(src.file, _line_of(control, key, src.line))
            results[key] = _condition(control[key], roots, where, f"{subject}: control.{key}")
    if results.get("if") is False:
        return f"if: {_written(control['if'])} is false"
    if results.get("unless") is True:
        return f"unless: {_written(control['unless'])} is true"
    return None


def _written(expr: Any) -> str:
    """A control value as the manifest wrote it (`true`, not Python's True)."""
    return _expr_text(expr) if isinstance(expr, bool) else str(expr)


def _condition(expr: Any, roots: dict[str, Any], where: Source, what: str) -> bool:
    """A control expression; true or false.

    CCM evaluates `if` / `unless` as one bare Expr expression
    (`lookup("facts.host.info.os") == "linux"`), so that is how it is read:
    a map literal or a `}}` inside it is just part of the expression. A value
    written as one whole `{{ expr }}` / `${ expr }` placeholder is accepted too
    (syslua's extension: CCM would not parse it)."""
    if isinstance(expr, bool):
        return expr
    if not isinstance(expr, str) or not expr.strip():
        raise ConfigError(f"{what} must be an expression giving true or false", where)
    text = expr.strip()
    found = template.expressions(text, roots) if text.startswith(("{{", "${")) else []
    if len(found) == 1 and found[0][:2] == (0, len(text)):
        text = found[0][2]
    try:
        value = template.evaluate(text, roots)
    except template.TemplateError as e:
        raise ConfigError(f"{what}: {e}", where) from None
    if not isinstance(value, bool):
        raise ConfigError(
            f"{what}: the expression `{expr}` must give true or false, got {_expr_text(value)}",
            where,
        )
    return value


def _source_wins(
    type_: str, props: dict[str, Any], src: Source, subject: str, warnings: list[str]
) -> None:
    """CCM takes `source` when a resource gives both `source` and `content`."""
    if "source" not in props:
        return
    dropped = [k for k in ("content", "contents") if k in props]
    for key in dropped:
        del props[key]
    if dropped:
        warnings.append(f"{src}: {subject}: both `source` and `{dropped[0]}` given; `source` wins")


def _reference(ref: str, aliases: dict[str, str]) -> str:
    """The item a CCM reference names: an alias's resource, and CCM's type
    names as syslua declares them (`package#nginx` is `os_package#nginx`)."""
    ref = aliases.get(ref, ref)
    type_, sep, name = ref.partition("#")
    return f"{declared_as(type_)}#{name}" if sep else ref


def _resolve_aliases(props: dict[str, Any], aliases: dict[str, str]) -> None:
    """`require: [file#conf]` where `conf` is the alias of a file of this manifest,
    and `package#x` where a `package` of CCM is syslua's `os_package`."""
    for key in _REFERENCES:
        value = props.get(key)
        if value is None:
            continue
        wrapped = isinstance(value, dict) and "__syslua_prio" in value
        inner = value["__syslua_v"] if wrapped else value
        if isinstance(inner, str):
            inner = _reference(inner, aliases)
        elif isinstance(inner, list):
            inner = [_reference(r, aliases) if isinstance(r, str) else r for r in inner]
        props[key] = {**value, "__syslua_v": inner} if wrapped else inner


def _drop_foreign_subscriptions(decl: RawDeclaration, warnings: list[str]) -> None:
    """A `subscribe` to a type syslua does not have (`service#nginx`) names
    nothing that can be declared: CCM accepts it, so it is dropped with a
    warning, as a subscribe to an undeclared resource is (manifest/merge.py)."""
    value: Any = decl.props.get("subscribe")
    wrapped = isinstance(value, dict) and "__syslua_prio" in value
    inner = value["__syslua_v"] if wrapped else value
    refs = [inner] if isinstance(inner, str) else inner
    if not isinstance(refs, list):
        return
    keep = []
    for ref in refs:
        if isinstance(ref, str) and "#" in ref and ref.partition("#")[0] not in KEYS:
            warnings.append(
                f"{decl.source}: {decl.type} {decl.props.get(KEYS[decl.type])}: `subscribe` "
                f"names {ref}, which is not declared; it will never trigger"
            )
        else:
            keep.append(ref)
    if len(keep) != len(refs):
        decl.props["subscribe"] = {**value, "__syslua_v": keep} if wrapped else keep


def _check_annotations(text: str, data: dict[str, Any], path: Path, warnings: list[str]) -> None:
    """`# @require` and `# @validate` in `data:`, against the resolved data."""
    if "@" not in text:
        return
    from syslua.eval import data_annotations as annotations

    found = annotations.read(text)
    if not found:
        return
    notes, errors = annotations.check(found, data)
    warnings.extend(f"{path.name}: {n}" for n in notes)
    if errors:
        line, message = errors[0]
        raise ConfigError(message, Source(str(path), line))


def _expand(type_: str, body: Any, where: Source) -> list[tuple[dict[str, Any], int]]:
    """Both resource forms, as (props, line) with the key under the type's key name."""
    key = KEYS[declared_as(type_)]
    if isinstance(body, dict):
        props = _plain(body)
        if "name" not in props and key not in props:
            raise ConfigError(
                f"{type_}: `name` is required",
                Source(where.file, getattr(body, "line", where.line)),
            )
        if key != "name" and "name" in props:
            props[key] = props.pop("name")
        return [(props, getattr(body, "line", where.line))]
    if not isinstance(body, list):
        raise ConfigError(
            f"{type_}: expected a map with `name`, or a list of `name: {{...}}` entries", where
        )
    defaults: dict[str, Any] = {}
    entries: list[tuple[str, dict[str, Any], int]] = []
    for item in body:
        line = getattr(item, "line", where.line)
        if not isinstance(item, dict) or len(item) != 1:
            raise ConfigError(
                f"{type_}: each entry must be a single `name: {{...}}` map",
                Source(where.file, line),
            )
        ((name, props),) = item.items()
        props = _plain(props or {})
        if not isinstance(props, dict):
            raise ConfigError(f"{type_} {name}: properties must be a map", Source(where.file, line))
        if name == "defaults":
            if defaults:
                raise ConfigError(
                    f"{type_}: only one `defaults` entry is allowed per list",
                    Source(where.file, line),
                )
            defaults = props
            continue
        entries.append((str(name), props, line))
    out = []
    for name, props, line in entries:
        merged: dict[str, Any] = {
            k: {"__syslua_prio": FROM_DEFAULTS, "__syslua_v": v}
            for k, v in defaults.items()
            if k not in props
        }
        merged.update(props)
        merged.pop("name", None)
        merged[key] = name
        out.append((merged, line))
    return out


# Properties rendered at evaluation even when they read a file: what names
# the resource, and what orders it.
_NOW = {"require", "depends_on", "subscribe", "after", "before", "notify"}


def _render_props(
    type_: str, key: str, props: dict[str, Any], roots: template.Roots
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in props.items():
        wrapped = isinstance(v, dict) and "__syslua_prio" in v
        inner = v["__syslua_v"] if wrapped else v
        if k == "data" and type_ == "apply":
            inner = template.render_deep(inner, roots, typed=True)
        elif k == key or k in _NOW:
            inner = template.render_deep(inner, roots, typed=False)
        else:
            inner = _render_or_defer(inner, roots)
        out[k] = {"__syslua_prio": v["__syslua_prio"], "__syslua_v": inner} if wrapped else inner
    return out


def _render_or_defer(value: Any, roots: template.Roots) -> Any:
    """A property's value rendered, its texts that read files left to be
    rendered when the resource runs (`template.defer`)."""
    if isinstance(value, str):
        if template.defers(value, roots):
            return template.defer(value, roots)
        return template.render(value, roots)
    if isinstance(value, dict):
        return {
            template.render(k, roots) if isinstance(k, str) else k: _render_or_defer(v, roots)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_render_or_defer(v, roots) for v in value]
    return value
