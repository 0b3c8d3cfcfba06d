"""Expr-language expressions in `{{ }}` / `${ }` (issue 13 part 3, SPEC section 5).

The evaluator (`syslua/eval/expr/`) is pure, so most cases are tables run
against fixed roots; placeholders in text go through `template.render`; the
rest runs the real CLI on YAML manifests, templated files and sys.lua, and
checks what is written, what the error says, and that nothing is written on
error. The CCM-style manifests in tests/data/ccm/expr-*.yaml are run as
their headers say.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import HEADER, ok, out, put, tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syslua.eval import expr, template
from syslua.eval.expr import Env, ExprError
from syslua.eval.template import Roots, TemplateError

FACTS: dict[str, Any] = {
    "role": "web",
    "cores": 8,
    "ratio": 1.5,
    "laptop": True,
    "nothing": None,
    "host": {"info": {"hostname": "box.example", "platformFamily": "debian"}},
    "net": {"interfaces": [{"name": "lo", "mtu": 65536}, {"name": "eth0", "mtu": 1500}]},
    "disks": ["sda", "sdb", "sdc"],
    "dotted.key": "escaped",
}
DATA: dict[str, Any] = {
    "port": 8080,
    "name": "  Nginx  ",
    "items": [{"name": "alpha", "n": 1}, {"name": "beta", "n": 2}],
    "list": [3, 1, 2],
    "words": ["b", "a", "b"],
    "map": {"b": 2, "a": 1},
    "empty": "",
    "json": '{"a": [1, 2], "b": null}',
}
ENVIRON = {"HOME": "/home/ada", "SHELL": "/bin/zsh"}


def env(**kw: Any) -> Env:
    return Env(roots={"facts": FACTS, "data": DATA, "env": ENVIRON}, **kw)


def ev(text: str, **kw: Any) -> Any:
    return expr.evaluate(text, env(**kw))


def same(got: Any, want: Any) -> bool:
    """Equal and of the same type, all the way down (1 is not 1.0 nor True)."""
    if type(got) is not type(want):
        return False
    if isinstance(want, list):
        return len(got) == len(want) and all(same(g, w) for g, w in zip(got, want, strict=True))
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k]) for k in want)
    if isinstance(want, float) and want != want:
        return got != got
    return bool(got == want)


# (expression, value)
VALUES: list[tuple[str, Any]] = [
    # literals
    ("42", 42),
    ("4.5", 4.5),
    (".5", 0.5),
    ("1e3", 1000.0),
    ("1_000", 1000),
    ("0x1F", 31),
    ("'single'", "single"),
    ('"double"', "double"),
    ('"tab\\tnew\\nline \\u00e9"', "tab\tnew\nline é"),
    ("'it\\'s'", "it's"),
    ("`raw \\n`", "raw \\n"),
    ("true", True),
    ("false", False),
    ("nil", None),
    ("[1, 'a', [true]]", [1, "a", [True]]),
    ("[]", []),
    ("{a: 1, 'b c': 2, \"d\": [3]}", {"a": 1, "b c": 2, "d": [3]}),
    ("{}", {}),
    # variables, member and index access
    ("Facts.role", "web"),
    ("Facts.host.info.hostname", "box.example"),
    ("Facts['host']['info'].platformFamily", "debian"),
    ("Facts.disks[0]", "sda"),
    ("Facts.disks[-1]", "sdc"),
    ("Facts.net.interfaces[1].name", "eth0"),
    ("Data.port", 8080),
    ("Data.missing", None),
    ("Data.missing?.deeper", None),
    ("Data?.port", 8080),
    ("Environ.HOME", "/home/ada"),
    ("Environ['SHELL']", "/bin/zsh"),
    ("Facts.disks[1:]", ["sdb", "sdc"]),
    ("Facts.disks[:1]", ["sda"]),
    ("'hello'[1:3]", "el"),
    ("'hello'[0]", "h"),
    # arithmetic
    ("1 + 2", 3),
    ("1 + 2.5", 3.5),
    ("5 - 7", -2),
    ("3 * 4", 12),
    ("7 / 2", 3.5),
    ("8 / 2", 4.0),
    ("10 % 3", 1),
    ("-7 % 3", -1),
    ("2 ** 10", 1024.0),
    ("2 ^ 3", 8.0),
    ("(-8) ** 0.5", math.nan),
    ("9223372036854775806 + 1", 9223372036854775807),
    ("-3", -3),
    ("+3", 3),
    ("--3", 3),
    ("'ab' + \"cd\"", "abcd"),
    ("[1] + [2, 3]", [1, 2, 3]),
    ("Data.port + 1", 8081),
    # precedence and associativity
    ("1 + 2 * 3", 7),
    ("(1 + 2) * 3", 9),
    ("10 - 4 - 3", 3),
    ("2 * 3 % 4", 2),
    ("2 ** 3 ** 2", 512.0),
    ("-2 ** 2", -4.0),
    ("1 + 2 == 3", True),
    ("1 < 2 == true", True),
    ("true || false && false", True),
    ("(true || false) && false", False),
    ("not true == false", True),
    ("!true || true", True),
    ("1 + 2 > 2 ? 'yes' : 'no'", "yes"),
    ("false ? 1 : true ? 2 : 3", 2),
    ("nil ?? 1 + 1", 2),
    ("Data.missing ?? 'x' + 'y'", "xy"),
    ("1..3", [1, 2, 3]),
    ("1 + 1..2 + 2", [2, 3, 4]),
    # comparison
    ("1 == 1.0", True),
    ("1 != 2", True),
    ("'a' == 'a'", True),
    ("'a' == 1", False),
    ("nil == nil", True),
    ("Data.missing == nil", True),
    ("[1, [2]] == [1, [2]]", True),
    ("{a: 1} == {a: 1}", True),
    ("true == 1", False),
    ("2 < 3", True),
    ("3 <= 3", True),
    ("4 > 3.5", True),
    ("3 >= 4", False),
    ("'abc' < 'abd'", True),
    # logic
    ("true and false", False),
    ("true && true", True),
    ("false or true", True),
    ("false || false", False),
    ("not false", True),
    ("!true", False),
    ("false and Data.missing.deeper", False),
    ("true or Data.missing.deeper", True),
    # in, contains, startsWith, endsWith, matches
    ("'sda' in Facts.disks", True),
    ("'sdz' in Facts.disks", False),
    ("2 in [1, 2.0]", True),
    ("'port' in Data", True),
    ("'nope' in Data", False),
    ("'sdz' not in Facts.disks", True),
    ("'box.example' contains 'x.e'", True),
    ("'box' not contains 'z'", True),
    ("Facts.role startsWith 'we'", True),
    ("Facts.role endsWith 'eb'", True),
    ("'eth0' matches '^eth[0-9]+$'", True),
    ("'lo' matches '^eth'", False),
    # ternary and ??
    ("Facts.laptop ? 'laptop' : 'server'", "laptop"),
    ("Data.port > 1024 ? Data.port : 80", 8080),
    ("Data.missing ?? 'default'", "default"),
    ("Data.missing.deeper.still ?? 'default'", "default"),
    ("Data.port ?? 1", 8080),
    ("Data.empty ?? 'x'", ""),
    ("Facts.nothing ?? false", False),
    # lookup() with GJSON paths
    ("lookup('facts.role')", "web"),
    ('lookup("facts.host.info.hostname")', "box.example"),
    ("lookup('facts.net.interfaces.#')", 2),
    ("lookup('facts.net.interfaces.1.name')", "eth0"),
    ("lookup('facts.net.interfaces.#.name')", ["lo", "eth0"]),
    ("lookup('facts.net.interfaces.#.mtu')", [65536, 1500]),
    ("lookup('facts.disks.#')", 3),
    ("lookup('data.items.0.name')", "alpha"),
    ("lookup('data.items.#')", 2),
    ("lookup('data.map.*')", 2),
    ("lookup('data.ma?.a')", 1),
    ("lookup('facts.dotted\\\\.key')", "escaped"),
    ("lookup('env.HOME')", "/home/ada"),
    ("lookup('environ.SHELL')", "/bin/zsh"),
    ("lookup('data.missing', 'dflt')", "dflt"),
    ("lookup('data.missing', 5)", 5),
    ("lookup('data.missing', [1])", [1]),
    ("lookup('data.missing', nil)", None),
    ("lookup('data.missing', null)", None),
    ("lookup('facts.nothing', 'x')", None),
    ("lookup('facts.disks.9', 'none')", "none"),
    ("lookup('data.port', 1) + 1", 8081),
    ("lookup('data.' + 'port')", 8080),
    ("lookup('facts.cores') * 2", 16),
    ("lookup('facts.ratio')", 1.5),
    ("lookup('facts')['role']", "web"),
    # strings
    ("upper('abc')", "ABC"),
    ("lower('ABC')", "abc"),
    ("trim(Data.name)", "Nginx"),
    ("trim('xxhixx', 'x')", "hi"),
    ("trimLeft('  a ')", "a "),
    ("trimRight('  a ')", "  a"),
    ("trimPrefix('v1.2', 'v')", "1.2"),
    ("trimPrefix('1.2', 'v')", "1.2"),
    ("trimSuffix('app.conf', '.conf')", "app"),
    ("split('a,b,c', ',')", ["a", "b", "c"]),
    ("split('a,b,c', ',', 2)", ["a", "b,c"]),
    ("split('abc', '')", ["a", "b", "c"]),
    ("splitAfter('a,b', ',')", ["a,", "b"]),
    ("join(['a', 'b'], '-')", "a-b"),
    ("join(['a', 'b'])", "ab"),
    ("join([1, true, nil], ',')", "1,true,"),
    ("replace('a-b-c', '-', '+')", "a+b+c"),
    ("repeat('ab', 3)", "ababab"),
    ("indexOf('hello', 'l')", 2),
    ("lastIndexOf('hello', 'l')", 3),
    ("indexOf('hello', 'z')", -1),
    ("hasPrefix('nginx.conf', 'nginx')", True),
    ("hasSuffix('nginx.conf', '.yaml')", False),
    ("contains('nginx.conf', 'x.c')", True),
    ("toBase64('hi')", "aGk="),
    ("fromBase64('aGk=')", "hi"),
    ("'Nginx' | lower()", "nginx"),
    ("Data.name | trim() | upper()", "NGINX"),
    ("'a,b' | split(',')", ["a", "b"]),
    # conversion
    ("len('hello')", 5),
    ("len(Facts.disks)", 3),
    ("len(Data.map)", 2),
    ("string(42)", "42"),
    ("string(1.5)", "1.5"),
    ("string(true)", "true"),
    ("string([1, 'a'])", '[1, "a"]'),
    ("int('42')", 42),
    ("int(3.9)", 3),
    ("int(7)", 7),
    ("float('2.5')", 2.5),
    ("float(2)", 2.0),
    ("type(1)", "int"),
    ("type(1.0)", "float"),
    ("type('')", "string"),
    ("type([])", "array"),
    ("type({})", "map"),
    ("type(nil)", "nil"),
    ("type(true)", "bool"),
    ("toJSON({b: 1, a: [true]})", '{\n  "a": [\n    true\n  ],\n  "b": 1\n}'),
    ("toJSON('x')", '"x"'),
    ("fromJSON(Data.json)", {"a": [1, 2], "b": None}),
    ("fromJSON('3')", 3),
    ("fromJSON(toJSON(Data.map))", {"a": 1, "b": 2}),
    # numbers
    ("abs(-4)", 4),
    ("abs(-1.5)", 1.5),
    ("ceil(1.2)", 2.0),
    ("floor(1.8)", 1.0),
    ("round(2.5)", 3.0),
    ("round(-2.5)", -3.0),
    ("round(1e400)", math.inf),
    ("floor(-1e400)", -math.inf),
    ("min(3, 1, 2)", 1),
    ("max(3, 1, 2)", 3),
    ("min(Data.list)", 1),
    ("max([1.5, 2])", 2),
    ("sum(Data.list)", 6),
    ("mean([1, 2])", 1.5),
    ("median([3, 1, 2])", 2.0),
    # arrays and maps
    ("keys(Data.map)", ["b", "a"]),
    ("sort(keys(Data.map))", ["a", "b"]),
    ("values(Data.map)", [2, 1]),
    ("first(Facts.disks)", "sda"),
    ("last(Facts.disks)", "sdc"),
    ("first([])", None),
    ("take(Facts.disks, 2)", ["sda", "sdb"]),
    ("reverse([1, 2, 3])", [3, 2, 1]),
    ("sort(Data.list)", [1, 2, 3]),
    ("sort(Data.list, 'desc')", [3, 2, 1]),
    ("uniq(Data.words)", ["b", "a"]),
    ("flatten([1, [2, [3]]])", [1, 2, 3]),
    ("concat([1], [2], [])", [1, 2]),
    ("get(Data.map, 'a')", 1),
    ("get(Data.map, 'z')", None),
    ("get(Facts.disks, 5)", None),
    ("toPairs({a: 1})", [["a", 1]]),
    ("fromPairs([['a', 1]])", {"a": 1}),
    # predicates: `#` is the element, `.x` a field of it
    ("filter(Data.list, # > 1)", [3, 2]),
    ("map(Data.list, # * 10)", [30, 10, 20]),
    ("map(Data.items, .name)", ["alpha", "beta"]),
    ("map(Data.items, #.n + 1)", [2, 3]),
    ("all(Data.list, # > 0)", True),
    ("any(Data.list, # > 2)", True),
    ("none(Data.list, # > 5)", True),
    ("one(Data.list, # == 1)", True),
    ("count(Data.items, .n > 1)", 1),
    ("find(Data.items, .n == 2).name", "beta"),
    ("find(Data.items, .n == 9)", None),
    ("findIndex(Data.list, # == 2)", 2),
    ("findLast(Data.list, # < 3)", 2),
    ("findLastIndex(Data.list, # > 5)", -1),
    ("sortBy(Data.items, .n, 'desc')[0].name", "beta"),
    ("groupBy(Data.words, #)", {"b": ["b", "b"], "a": ["a"]}),
    ("map(filter(1..6, # % 2 == 0), # * #)", [4, 16, 36]),
    ("map([[1, 2], [3]], len(#))", [2, 1]),
]


@pytest.mark.parametrize("text,value", VALUES, ids=[t for t, _ in VALUES])
def test_value(text, value):
    got = ev(text)
    assert same(got, value), f"{text} gave {got!r}, expected {value!r}"


def test_now_is_the_current_time():
    before = dt.datetime.now(dt.UTC)
    got = ev("now()")
    assert isinstance(got, dt.datetime) and got.tzinfo is not None
    assert before <= got <= dt.datetime.now(dt.UTC)
    assert ev("now() < now()") in (True, False)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT.*", template.render("{{ now() }}", ROOTS_LUA))
    # as a whole value too: a time is not data a manifest can hold
    assert isinstance(template.render("{{ now() }}", ROOTS_CCM, typed=True), str)


def test_missing_keys_read_as_empty_without_strict():
    assert expr.evaluate("lookup('data.nope')", env(missing_ok=True)) == ""


# (expression, error message)
ERRORS: list[tuple[str, str]] = [
    # syntax
    ("1 +", "syntax error: unexpected end of the expression"),
    ("(1", "syntax error: expected `)`, found end of the expression"),
    ("1 2", "syntax error: unexpected `2` at position 3"),
    ("[1, 2", "syntax error: expected `,`, found end of the expression"),
    ("{a 1}", "syntax error: expected `:`, found `1` at position 4"),
    ("'open", "syntax error: unterminated string starting at position 1"),
    ("a @ b", "syntax error: unexpected character '@' at position 3"),
    ("'\\q'", "syntax error: invalid escape \\q in a string"),
    ("upper('a',)", "syntax error: expected an argument, found `)` at position 11"),
    ("", "syntax error: empty expression"),
    ("Facts.", "syntax error: expected a field name, found end of the expression"),
    ("1 ? 2", "syntax error: expected `:`, found end of the expression"),
    ("'a' | 'b'", "syntax error: `|` must be followed by a function call, e.g. `x | upper()`"),
    (
        "Facts.role.Upper()",
        "methods are not supported (`.Upper(...)`); use a function such as `upper(x)`",
    ),
    # names
    ("facts.role", "unknown name facts (did you mean Facts?)"),
    (
        "HOME",
        "unknown name HOME (the variables are Facts, Data and Environ; call lookup('...') for a path)",
    ),
    (
        "true ? 1 : Nope",
        "unknown name Nope (the variables are Facts, Data and Environ; call lookup('...') for a path)",
    ),
    ("nosuch(1)", "unknown function nosuch()"),
    ("jet('motd.jet')", "jet() (Jet templates) is not supported by syslua"),
    ("template('x.templ')", "template() (nested templates) is not supported by syslua"),
    ("kvGet('bucket', 'key')", "kvGet() (NATS key-value lookups) is not supported by syslua"),
    (
        "#",
        "`#` and `.field` (the current element) only exist inside a predicate such as filter(list, # > 1)",
    ),
    # lookup
    ("lookup('data.nope')", "lookup('data.nope'): no such key"),
    ("lookup('facts.net.interfaces.5.name')", "lookup('facts.net.interfaces.5.name'): no such key"),
    (
        "lookup('secrets.x')",
        "lookup('secrets.x'): unknown root `secrets` (use facts., data. or env.)",
    ),
    ("lookup(1)", "lookup() needs a string path, got int"),
    ("lookup()", "lookup() takes 1 to 2 argument(s), got 0"),
    (
        "lookup('facts.net.interfaces.#(name==\"lo\")')",
        'GJSON queries and modifiers (`#(name=="lo")`) are not supported',
    ),
    # types
    ("1 + 'a'", "invalid operation: int + string"),
    ("'a' - 'b'", "invalid operation: string - string"),
    ("1.5 % 2", "invalid operation: float % int (% needs ints)"),
    ("1 % 0", "integer divide by zero"),
    ("'a' < 1", "invalid operation: string < int"),
    ("1 and true", "`and` needs a bool, got int (1)"),
    ("not 'x'", '`not` needs a bool, got string ("x")'),
    ("nil ? 1 : 2", "`?:` needs a bool, got nil (null)"),
    ("-'a'", "unary - needs a number, got string"),
    ("1 in 'abc'", "`in` needs an array or a map on the right, got string"),
    ("1 contains 'a'", "`contains` needs two strings, got int and string"),
    (
        "'a' matches '('",
        'invalid regular expression "(": missing ), unterminated subpattern at position 0',
    ),
    (
        "Data.missing.deeper",
        "cannot read .deeper of nil (use ?. or ?? for a value that may be missing)",
    ),
    ("Facts.disks[7]", "index 7 out of range (length 3)"),
    ("Facts.disks['a']", "an index of array must be an int, got string"),
    ("Facts.role.x", "cannot read field x of string"),
    ("upper(1)", "upper() argument 1 must be string, got int"),
    ("upper()", "upper() takes 1 argument(s), got 0"),
    ("int('x1')", 'int() cannot convert "x1"'),
    ("len(1)", "len() needs a string, array or map, got int"),
    (
        "fromJSON('{')",
        "fromJSON(): invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
    ),
    ("filter(Data.list)", "filter() takes a list and a predicate, e.g. filter(list, # > 0)"),
    ("filter(Data.list, #)", "the predicate of filter() needs a bool, got int (3)"),
    ("map(1, #)", "map() needs an array, got int"),
    ("min()", "min() needs at least one number"),
    ("sort([1, 'a'])", "sort() needs an array of numbers or of strings"),
    ("'x' * 3", "invalid operation: string * int"),
    ("1..100000000", "range too long"),
    ("9223372036854775807 + 1", "integer overflow in +"),
    ("3037000500 * 3037000500", "integer overflow in *"),
    ("2 ** 5000", "exponent too large"),
    ("repeat('ab', 100000000)", "value too large"),
]


@pytest.mark.parametrize("text,message", ERRORS, ids=[t or "empty" for t, _ in ERRORS])
def test_error(text, message):
    with pytest.raises(ExprError) as info:
        ev(text)
    assert str(info.value) == message


def test_deep_nesting_is_an_error_not_a_crash():
    with pytest.raises(ExprError, match="nested too deeply"):
        ev("(" * 5000 + "1" + ")" * 5000)


def test_unknown_names_are_errors_even_in_a_branch_not_taken():
    with pytest.raises(ExprError, match="unknown function nosuch"):
        ev("false ? nosuch() : 1")
    with pytest.raises(ExprError, match="unknown name Nope"):
        ev("true || Nope")


def test_no_python_escapes():
    """Nothing in an expression reaches Python objects or code."""
    for text in (
        "Facts.__class__",
        "''.__class__",
        "Data['__class__']",
        "__import__('os')",
        "eval('1')",
        "exec('1')",
        "open('/etc/passwd')",
    ):
        try:
            value = ev(text)
        except ExprError:
            continue
        assert value is None, text


# ---------------------------------------------------------------------------
# readFile() / file()
# ---------------------------------------------------------------------------


def test_read_file_is_relative_to_the_base_dir_and_recorded(tmp_path):
    put(tmp_path / "sub" / "motd.txt", "hello\n")
    reads: list[str] = []
    e = env(base_dir=str(tmp_path), reads=reads)
    assert expr.evaluate("readFile('sub/motd.txt')", e) == "hello\n"
    assert expr.evaluate("file('./sub/../sub/motd.txt') + '!'", e) == "hello\n!"
    assert expr.evaluate(f"readFile('{tmp_path}/sub/motd.txt')", e) == "hello\n"
    assert reads == [str(tmp_path / "sub" / "motd.txt")]


@pytest.mark.parametrize(
    "text,message",
    [
        ("readFile('nope.txt')", "readFile(): file not found: {d}/nope.txt"),
        ("file('.')", "file(): cannot read {d}: Is a directory"),
        ("readFile(1)", "readFile() argument 1 must be string, got int"),
    ],
)
def test_read_file_errors(tmp_path, text, message):
    with pytest.raises(ExprError) as info:
        expr.evaluate(text, env(base_dir=str(tmp_path)))
    assert str(info.value) == message.format(d=tmp_path)


def test_read_file_is_not_available_in_hierarchy_data(tmp_path):
    with pytest.raises(ExprError) as info:
        expr.evaluate("readFile('x')", env(files=False))
    assert (
        str(info.value) == "readFile() is not available here (hierarchy data may only use lookup())"
    )


# ---------------------------------------------------------------------------
# placeholders in text
# ---------------------------------------------------------------------------

ROOTS_LUA = Roots(facts=FACTS, data=DATA, env=ENVIRON)
ROOTS_CCM = Roots(facts=FACTS, data=DATA, env=ENVIRON, ccm=True)


@pytest.mark.parametrize(
    "text,found",
    [
        ("a {{ x }} b", ["x"]),
        ("${x}", ["x"]),
        ("{{x}}{{y}}", ["x", "y"]),
        ("{{ '}}' + \"}}\" }}", ["'}}' + \"}}\""]),
        ("${ {a: {b: 1}}.a.b }", ["{a: {b: 1}}.a.b"]),
        ("${ '}' }", ["'}'"]),
        ("$${build:x:out} and $$${y}", []),
        ("${{ x }}", ["x"]),
        ("{{ unclosed", []),
        ("${ unclosed", []),
        ("{{ 'unclosed }}", []),
        ("plain $HOME {x}", []),
        ("{{ a }}\n{{ b }}", ["a", "b"]),
    ],
)
def test_placeholders(text, found):
    assert [inner for _, _, inner in template.placeholders(text)] == found


# (text, rendered in a CCM manifest)
RENDER: list[tuple[str, str]] = [
    ("port={{ Data.port + 1 }}", "port=8081"),
    ("{{ Facts.role }}-${ upper(Facts.role) }", "web-WEB"),
    ("x=${ 1 + 1 }", "x=2"),
    ("{{ 7 / 2 }} {{ 8 / 2 }} {{ 2 ** 3 }}", "3.5 4 8"),
    ("{{ true }} {{ nil }} {{ [1, 'a'] }} {{ {b: 1, a: 2} }}", 'true  [1, "a"] {"a": 2, "b": 1}'),
    ("a ${{ 'b' }}", "a $b"),
    ("keep $${env:HOME} and $$${x}", "keep $${env:HOME} and $$${x}"),
    ("{{ \"${HOME}\" }} {{ '{{ x }}' }}", "${HOME} {{ x }}"),
    ("no placeholders at all", "no placeholders at all"),
]


@pytest.mark.parametrize("text,rendered", RENDER, ids=[t for t, _ in RENDER])
def test_render_in_a_ccm_manifest(text, rendered):
    assert template.render(text, ROOTS_CCM) == rendered


@pytest.mark.parametrize(
    "text,value",
    [
        ("{{ Data.port + 1 }}", 8081),
        ("  ${ Data.port > 1 }  ", True),
        ("{{ Data.list }}", [3, 1, 2]),
        ("{{ Data.map }}", {"b": 2, "a": 1}),
        ("{{ nil }}", None),
        ("{{ 1.5 * 2 }}", 3.0),
        ("{{ 1 }}{{ 2 }}", "12"),
        ("v{{ 1 }}", "v1"),
    ],
)
def test_typed_values_keep_their_type(text, value):
    assert same(template.render(text, ROOTS_CCM, typed=True), value)


@pytest.mark.parametrize(
    "text,message",
    [
        ("{{ Nope }}", '`Nope`: unknown name Nope (to write ${Nope} itself: {{ "${Nope}" }})'),
        ("echo ${HOME}", '`HOME`: unknown name HOME (to write ${HOME} itself: {{ "${HOME}" }})'),
        (
            "{{ x.y }}",
            "`x.y`: unknown name x (the variables are Facts, Data and Environ; call lookup('...') for a path)",
        ),
        (
            "{{ .Values.x }}",
            "`.Values.x`: `#` and `.field` (the current element) only exist inside a predicate such as filter(list, # > 1)",
        ),
        ("${PWD##*/}", "`PWD##*/`: syntax error: unexpected `#` at position 4"),
        ("{{ lookup('data.nope') }}", "lookup('data.nope'): no such key"),
        ('{{ lookup("data.nope") }}', "`lookup(\"data.nope\")`: lookup('data.nope'): no such key"),
        (
            "{{ upper(lookup('data.nope')) }}",
            "`upper(lookup('data.nope'))`: lookup('data.nope'): no such key",
        ),
        ("{{ jet('x') }}", "`jet('x')`: jet() (Jet templates) is not supported by syslua"),
        ("{{ }}", "syntax error: empty expression"),
    ],
)
def test_nothing_is_left_literal_in_a_ccm_manifest(text, message):
    with pytest.raises(TemplateError) as info:
        template.render(text, ROOTS_CCM)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "text,rendered",
    [
        # ours: they name Facts/Data/Environ or call a known function
        ("{{ upper(Facts.role) }}", "WEB"),
        ("${ Environ.HOME }/bin", "/home/ada/bin"),
        ("{{ Data.port > 80 ? 'high' : 'low' }}", "high"),
        ("{{ lookup('facts.net.interfaces.#') }} nics", "2 nics"),
        # a dotfile's own text: kept
        (
            "${HOME} ${PWD##*/} ${x:-y} {{ .Values.x }} {{ x }}",
            "${HOME} ${PWD##*/} ${x:-y} {{ .Values.x }} {{ x }}",
        ),
        ("{{ upper }} {{ nosuch(1) }}", "{{ upper }} {{ nosuch(1) }}"),
        ("$${build:x:out}", "$${build:x:out}"),
        # a shell quote inside ${...} does not hide a later expression
        ("X=${foo:-it's} '\nY={{ Facts.role }}\n", "X=${foo:-it's} '\nY=web\n"),
    ],
)
def test_lua_content_renders_only_our_expressions(text, rendered):
    assert template.render(text, ROOTS_LUA) == rendered


def test_lua_content_errors_in_our_expressions_are_reported():
    with pytest.raises(TemplateError, match="syntax error"):
        template.render("{{ upper(Facts.role }}", ROOTS_LUA)
    with pytest.raises(TemplateError, match="not supported by syslua"):
        template.render("{{ kvGet('a', 'b') }}", ROOTS_LUA)


# ---------------------------------------------------------------------------
# the real CLI
# ---------------------------------------------------------------------------

OWNED = (
    "- defaults: {owner: \"{{ lookup('facts.user.name') }}\", "
    'group: "{{ lookup(\'facts.user.group\') }}", mode: "0644"}'
)


def yaml_manifest(sysenv: Any, name: str, body: str) -> Path:
    return sysenv.write(name, textwrap.dedent(body).lstrip("\n"), dedent=False)


def test_a_yaml_manifest_applies_expressions(sysenv):
    yaml_manifest(
        sysenv,
        "site.yaml",
        """
        data:
          port: 8080
          users: [ada, bob]
        ccm:
          resources:
            - file:
                OWNED
                - "${ Environ.HOME }/{{ lower('ETC') }}/app.conf":
                    content: |
                      port={{ Data.port + 1 }}
                      users={{ join(Data.users, ",") }} ({{ lookup("data.users.#") }})
                      role={{ Facts.role ?? "none" }}
                      admin={{ "ada" in Data.users ? "yes" : "no" }}
        """.replace("OWNED", OWNED),
    )
    p = sysenv.run("apply", "site.yaml", "--fact", "role=web")
    ok(p)
    assert (sysenv.home / "etc" / "app.conf").read_text() == (
        "port=8081\nusers=ada,bob (2)\nrole=web\nadmin=yes\n"
    )


def test_typed_data_handed_to_an_apply_child(sysenv):
    yaml_manifest(
        sysenv,
        "child.yaml",
        """
        ccm:
          resources:
            - file:
                OWNED
                - "${ Environ.HOME }/child.txt":
                    content: "{{ type(Data.n) }} {{ type(Data.names) }} {{ Data.n * 2 }} {{ Data.names[1] }}\\n"
        """.replace("OWNED", OWNED),
    )
    yaml_manifest(
        sysenv,
        "site.yaml",
        """
        data:
          names: [a, b]
        ccm:
          resources:
            - apply:
                name: child.yaml
                data:
                  n: "{{ 20 + 1 }}"
                  names: "{{ Data.names }}"
        """,
    )
    ok(sysenv.run("apply", "site.yaml"))
    assert (sysenv.home / "child.txt").read_text() == "int array 42 b\n"


BAD_YAML = [
    (
        'content: "{{ Nope.x }}"',
        "`Nope.x`: unknown name Nope (the variables are Facts, Data and Environ; call lookup('...') for a path)",
    ),
    ('content: "{{ upper( }}"', "`upper(`: syntax error: unexpected end of the expression"),
    ('content: "{{ nosuch(1) }}"', "`nosuch(1)`: unknown function nosuch()"),
    (
        "content: \"{{ jet('a.jet') }}\"",
        "`jet('a.jet')`: jet() (Jet templates) is not supported by syslua",
    ),
    (
        "content: \"{{ kvGet('b', 'k') }}\"",
        "`kvGet('b', 'k')`: kvGet() (NATS key-value lookups) is not supported by syslua",
    ),
    (
        "content: \"{{ template('x.templ') }}\"",
        "`template('x.templ')`: template() (nested templates) is not supported by syslua",
    ),
    (
        'content: "${HOME}/x"',
        '`HOME`: unknown name HOME (to write ${HOME} itself: {{ "${HOME}" }})',
    ),
    ("content: \"{{ lookup('data.nope') }}\"", "lookup('data.nope'): no such key"),
    # a readFile() of a file that is not there is for the run to find: its
    # template is rendered when the resource runs (tests/test_ccm_parity.py)
]


@pytest.mark.parametrize("command", ["plan", "apply"])
@pytest.mark.parametrize("prop,message", BAD_YAML, ids=[m[:40] for _, m in BAD_YAML])
def test_bad_expressions_in_a_yaml_manifest(sysenv, command, prop, message):
    put(sysenv.home / "keep.txt", "mine\n")
    yaml_manifest(
        sysenv,
        "site.yaml",
        """
        ccm:
          resources:
            - file:
                - defaults: {owner: root, group: root, mode: "0644"}
                - "{{ Environ.HOME }}/ok.txt":
                    content: "fine"
                - "{{ Environ.HOME }}/keep.txt":
                    PROP
        """.replace("PROP", prop),
    )
    before = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run(command, "site.yaml")
    assert p.returncode == 2, out(p)
    assert f"site.yaml:7: file: {message.replace('{work}', str(sysenv.work))}" in p.stderr, out(p)
    assert "Traceback" not in out(p)
    assert (tree(sysenv.home), tree(sysenv.root)) == before


def test_bad_expression_in_a_pre_message_and_in_hierarchy(sysenv):
    yaml_manifest(sysenv, "a.yaml", 'ccm:\n  pre_message: "hi {{ Nope }}"\n')
    p = sysenv.run("plan", "a.yaml")
    assert (
        p.returncode == 2 and "a.yaml:2: ccm.pre_message: `Nope`: unknown name Nope" in p.stderr
    ), out(p)
    yaml_manifest(sysenv, "b.yaml", "hierarchy:\n  order: ['x:{{ readFile(\"f\") }}']\n")
    p = sysenv.run("plan", "b.yaml")
    assert p.returncode == 2, out(p)
    assert (
        'b.yaml:2: hierarchy.order: `readFile("f")`: readFile() is not available here '
        "(hierarchy data may only use lookup())"
    ) in p.stderr, out(p)


def test_read_file_is_relative_to_the_manifest_and_a_config_input(sysenv):
    put(sysenv.work / "conf" / "motd.txt", "hello from beside the manifest\n")
    yaml_manifest(
        sysenv,
        "conf/site.yaml",
        """
        ccm:
          resources:
            - file:
                - defaults: {owner: "{{ lookup('facts.user.name') }}", group: "{{ lookup('facts.user.group') }}", mode: "0644"}
                - "{{ Environ.HOME }}/motd":
                    content: "{{ upper(readFile('motd.txt')) }}"
        """,
    )
    ok(sysenv.run("apply", "conf/site.yaml"))
    assert (sysenv.home / "motd").read_text() == "HELLO FROM BESIDE THE MANIFEST\n"
    assert str(sysenv.work / "conf" / "motd.txt") in sysenv.run("snapshot", "show").stdout


def test_a_templated_file_in_a_yaml_manifest_sees_its_data(sysenv):
    put(
        sysenv.work / "app.tmpl",
        "port={{ Data.port * 2 }} n={{ lookup('data.hosts.#') }} {{ upper(Facts.role) }}\n",
    )
    yaml_manifest(
        sysenv,
        "site.yaml",
        """
        data:
          port: 4000
          hosts: [a, b, c]
        ccm:
          resources:
            - file:
                - defaults: {owner: "{{ lookup('facts.user.name') }}", group: "{{ lookup('facts.user.group') }}", mode: "0644"}
                - "{{ Environ.HOME }}/app.conf":
                    source: app.tmpl
                    template: true
        """,
    )
    ok(sysenv.run("apply", "site.yaml", "--fact", "role=db"))
    assert (sysenv.home / "app.conf").read_text() == "port=8000 n=3 DB\n"


@pytest.mark.parametrize("command", ["plan", "apply"])
def test_a_bad_expression_in_a_templated_file_of_a_yaml_manifest(sysenv, command):
    put(sysenv.work / "app.tmpl", "ok={{ 1 }}\nshell=${HOME}\n")
    put(sysenv.home / "app.conf", "before\n")
    yaml_manifest(
        sysenv,
        "site.yaml",
        """
        ccm:
          resources:
            - file:
                - defaults: {owner: root, group: root, mode: "0644"}
                - "{{ Environ.HOME }}/app.conf":
                    source: app.tmpl
                    template: true
        """,
    )
    before = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run(command, "site.yaml")
    assert p.returncode == 2, out(p)
    assert (
        f"site.yaml:5: file ~/app.conf: {sysenv.work}/app.tmpl: "
        '`HOME`: unknown name HOME (to write ${HOME} itself: {{ "${HOME}" }})'
    ) in p.stderr, out(p)
    assert (tree(sysenv.home), tree(sysenv.root)) == before


def test_a_templated_file_in_lua_renders_expressions_and_keeps_shell_text(sysenv):
    put(
        sysenv.work / "dot" / "rc",
        'export ROLE={{ upper(Facts.role) }} N={{ len(Data.xs ?? []) }}\ncd "${HOME}" # ${PWD##*/}\n',
    )
    sysenv.write(
        "sys.lua", HEADER + 'file { path = "~/.rc", source = "dot/rc", template = true }\n'
    )
    ok(sysenv.run("apply", "--fact", "role=web"))
    assert (sysenv.home / ".rc").read_text() == 'export ROLE=WEB N=0\ncd "${HOME}" # ${PWD##*/}\n'


@pytest.mark.parametrize("command", ["plan", "apply"])
def test_a_bad_expression_in_a_templated_file_in_lua(sysenv, command):
    put(sysenv.work / "dot" / "rc", "x={{ upper(Facts.role, 1) }}\n")
    put(sysenv.home / ".rc", "before\n")
    sysenv.write(
        "sys.lua", HEADER + 'file { path = "~/.rc", source = "dot/rc", template = true }\n'
    )
    before = tree(sysenv.home), tree(sysenv.root)
    p = sysenv.run(command, "--fact", "role=web")
    assert p.returncode == 2, out(p)
    assert (
        f"sys.lua:3: file ~/.rc: {sysenv.work}/dot/rc: `upper(Facts.role, 1)`: "
        "upper() takes 1 argument(s), got 2"
    ) in p.stderr, out(p)
    assert (tree(sysenv.home), tree(sysenv.root)) == before


def test_read_file_in_lua_content_is_relative_to_the_config_and_an_input(sysenv):
    put(sysenv.work / "conf" / "banner.txt", "banner\n")
    sysenv.write(
        "conf/sys.lua",
        HEADER + 'file { path = "~/motd", content = "{{ upper(readFile(\'banner.txt\')) }}" }\n',
    )
    ok(sysenv.run("apply", "conf/sys.lua"))
    assert (sysenv.home / "motd").read_text() == "BANNER\n"
    assert str(sysenv.work / "conf" / "banner.txt") in sysenv.run("snapshot", "show").stdout


def test_lua_inline_content_expressions(sysenv):
    body = (
        'file { path = "~/motd", content = "{{ Facts.role | upper() }} has '
        "{{ lookup('facts.n', 0) + 1 }} ${HOME}\" }\n"
    )
    sysenv.write("sys.lua", HEADER + body)
    ok(sysenv.run("apply", "--fact", "role=web"))
    assert (sysenv.home / "motd").read_text() == "WEB has 1 ${HOME}"


# ---------------------------------------------------------------------------
# any text: a value or an ExprError, never another exception
# ---------------------------------------------------------------------------

_PIECES = [
    *[
        "0",
        "1",
        "2.5",
        "'a'",
        '"b"',
        "`",
        "nil",
        "true",
        "false",
        "Facts",
        "Data",
        "Environ",
        "#",
        ".",
        "?.",
        "[",
        "]",
        "(",
        ")",
        "{",
        "}",
        ",",
        ":",
        "?",
        "??",
        "|",
        "..",
        "**",
        "^",
    ],
    *[
        "+",
        "-",
        "*",
        "/",
        "%",
        "==",
        "!=",
        "<",
        ">",
        "<=",
        ">=",
        "&&",
        "||",
        "!",
        "and",
        "or",
        "not",
        "in",
        "contains",
        "startsWith",
        "endsWith",
        "matches",
    ],
    *[
        "lookup('facts.disks.#')",
        "upper(",
        "len(",
        "map(",
        "filter(",
        "split(",
        "int(",
        "float(",
        "toJSON(",
        "fromJSON(",
        "keys(",
    ],
    *[
        ".role",
        ".disks",
        ".host",
        ".info",
        "x",
        "-1",
        "0x1F",
        "1e400",
        "-0",
        "'\\u00e9'",
        "'",
        "'",
        "\\",
    ],
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES), max_size=12).map(" ".join))
def test_any_text_gives_a_value_or_an_expr_error(text):
    try:
        ev(text)
    except ExprError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_any_characters_give_a_value_or_an_expr_error(text):
    try:
        ev(text)
    except ExprError:
        pass
