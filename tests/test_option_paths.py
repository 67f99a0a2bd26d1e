"""Every option (every field of cumtool.request.Request) is declared once, in
cumtool/options.py (an op's own options in its module), with the paths that honour it:
the small and compiled CSV paths (small.options_fit decides for both), the Dask engine and
arrays. A path either honours an option, or hands the run to a path that does, or refuses
it by name; none ignores it. A field added to Request fails
`test_every_field_is_declared_for_every_path` until it is declared, and each declaration
is checked against what the paths and front ends do, so a forgotten option cannot slip
past a deny-list."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from cumtool import engines
from cumtool.columns import parse
from cumtool.errors import UsageError, word
from cumtool.formats.csv import small
from cumtool.ops import KEYWORDS, OPTIONS
from cumtool.ops.decl import Option
from cumtool.options import (
    API_DEFAULTS,
    API_KEYWORDS,
    BY_FIELD,
    FLAGS,
    GENERAL,
    TABLE_ONLY,
    honoured,
    named,
)
from cumtool.request import Request

FIELDS = {f.name for f in dataclasses.fields(Request)}
PLAIN = Request(op="cumsum", input="in.csv")

# Values other than the default where one made from the declaration's type will not do
# (a column selection, a format, a path).
SAMPLES: dict[str, Any] = {
    "reset": parse("flag", "--reset"), "axis": "columns", "encoding": "latin-1",
    "max_record_size": 1 << 20, "comment": "#", "out_encoding": "latin-1",
    "state": "s.json", "sheet": "1", "widen": (1,), "filename_column": "file",
    "by": (parse("store", "--by"),), "period": "month", "time": parse("date", "--time"),
    "columns": (parse("a", "-c"),), "exclude": (parse("b", "--exclude"),),
    "year_start": "04-01",
}


def sample(declared: Option) -> Any:
    """A value of the option other than its default."""
    if declared.name in SAMPLES:
        return SAMPLES[declared.name]
    if declared.is_flag:
        return not declared.default if declared.negates else True
    if declared.choices:
        return next(c for c in reversed(declared.choices) if c != declared.default)
    return {int: 7, float: 1.5}.get(declared.type, "x")


def test_every_field_is_declared_for_every_path() -> None:
    assert set(BY_FIELD) == FIELDS, (
        f"declare {sorted(FIELDS - set(BY_FIELD))} in cumtool/options.py, with the paths "
        f"that honour them; {sorted(set(BY_FIELD) - FIELDS)} are no Request field")
    assert len(BY_FIELD) == len(GENERAL)  # each once
    for declared in GENERAL:
        assert declared.small in ("honours", "hands over", "not its output"), declared.name
        assert declared.dask in ("honours", "refuses"), declared.name
        assert declared.wide in ("honours", "not its output", "refuses"), declared.name


def test_an_ops_option_declares_only_what_its_kernel_does_not_take() -> None:
    """An op's option left undeclared is a parameter of its kernel, which every path
    runs; the others say so (--times: a column the table plan reads; --indices: the
    positions, which the small path does not write)."""
    declared = {flag: (o.small, o.dask, o.wide, o.tables_only) for flag, o in OPTIONS.items()
                if (o.small, o.dask, o.wide, o.tables_only) != (None, None, None, False)}
    assert declared == {"--times": ("hands over", "refuses", "refuses", True),
                        "--indices": ("hands over", None, None, False)}
    assert BY_FIELD["indices"].small == OPTIONS["--indices"].small  # the field it sets


def test_an_option_that_does_not_say_is_honoured_by_no_path() -> None:
    """Forgotten paths are safe: the small path hands over, Dask refuses by name; only an
    op's option is taken as honoured, as a parameter of its kernel."""
    forgotten = Option("--example-flag", help="an example")
    paths = ("small", "dask", "wide")
    assert not any(honoured(forgotten, path) for path in paths)
    keep = dataclasses.replace(BY_FIELD["keep"], small=None, dask=None, wide=None)
    assert not any(honoured(keep, path) for path in paths)
    assert all(honoured(KEYWORDS["span"], path) for path in paths)
    assert not any(honoured(KEYWORDS["times"], path) for path in paths)


@pytest.mark.parametrize("name", sorted(n for n, o in BY_FIELD.items() if o.small == "hands over"))
def test_the_small_path_hands_over_what_it_does_not_honour(name: str) -> None:
    assert small.options_fit(PLAIN)
    given = dataclasses.replace(PLAIN, **{name: sample(BY_FIELD[name])})
    assert BY_FIELD[name] in given.given()
    assert not small.options_fit(given), name


@pytest.mark.parametrize("name", sorted(n for n, o in BY_FIELD.items()
                                        if o.small in ("honours", "not its output")
                                        and n not in ("op", "input", "inputs", "output",
                                                      "from_format", "params")))
def test_the_small_path_takes_what_it_honours(name: str) -> None:
    given = dataclasses.replace(PLAIN, **{name: sample(BY_FIELD[name])})
    assert small.options_fit(given), name


def test_the_small_path_hands_over_an_ops_option_it_does_not_honour() -> None:
    assert small.options_fit(dataclasses.replace(PLAIN, op="ewma", params={"span": 3.0}))
    assert not small.options_fit(dataclasses.replace(PLAIN, op="ewma",
                                                     params={"times": "t"}))


@pytest.mark.parametrize("name", sorted(n for n, o in BY_FIELD.items() if o.dask == "refuses"))
def test_dask_refuses_by_name_what_it_does_not_honour(name: str) -> None:
    values = {name: sample(BY_FIELD[name])}
    if name in ("time", "year_start"):  # each needs --period, which Dask refuses first
        values["period"] = "year"
    if name in ("period", "year_start"):
        values["time"] = SAMPLES["time"]
    request = Request(op="cumsum", input="in.csv", engine="dask", **values)
    flag = {"time": "--period", "year_start": "--period", "axis": "--axis columns"}.get(
        name, BY_FIELD[name].flag)
    with pytest.raises(UsageError) as refused:
        request.check()
    assert refused.value.cli_message().startswith(
        f"{flag} is not supported with --engine dask"), refused.value.cli_message()


def test_dask_refuses_an_ops_option_by_name() -> None:
    request = Request(op="ewma", input="in.csv", engine="dask",
                      params={"times": "t", "halflife": "2 days"})
    with pytest.raises(UsageError) as refused:
        request.check()
    assert refused.value.cli_message() == ("--times is not supported with --engine dask; "
                                           "run it on the local engine (--engine local)")


def test_dask_takes_what_it_honours() -> None:
    for declared in GENERAL:
        if declared.dask == "honours" and declared.flag and declared.small == "honours":
            request = dataclasses.replace(PLAIN, engine="dask",
                                          **{declared.name: sample(declared)})
            engines.check_dask(request)  # no refusal


@pytest.mark.parametrize("declared", [pytest.param(o, id=o.flag) for o in TABLE_ONLY])
def test_arrays_refuse_the_options_of_tables_by_name(declared: Option) -> None:
    values = {declared.name: sample(declared)}
    if declared.name == "period":  # --period needs --time
        values["time"] = SAMPLES["time"]
    request = Request(op="cumsum", input="a.npy", **values)
    with pytest.raises(UsageError) as refused:
        request.check()
    assert refused.value.cli_message() == (f"{word(named(declared), cli=True)} is for "
                                           "tables, not arrays; a.npy is read as npy")


def test_the_api_takes_the_general_options_declared_for_it() -> None:
    """cumtool.scan's keywords, past `data` and `op`, as inspect.signature and help() show
    them: the declared ones (api=True) with their declared defaults, and `to` (what comes
    back); the ops' own come as **params."""
    import cumtool

    parameters = inspect.signature(cumtool.scan).parameters
    keywords = [name for name, p in parameters.items()
                if name not in ("data", "op") and p.kind is not p.VAR_KEYWORD]
    assert sorted(keywords) == sorted([*API_KEYWORDS, "to"])
    assert list(parameters)[:4] == ["data", "op", "axis", "dtype"]  # numpy's order
    assert [p.kind for p in parameters.values()][-1] is inspect.Parameter.VAR_KEYWORD
    doc = inspect.getdoc(cumtool.scan)
    assert doc is not None
    for name in API_KEYWORDS:  # an on/off option is off unless asked for, as on the CLI
        assert parameters[name].default == API_DEFAULTS[name], name
        assert (parameters[name].default is False) == BY_FIELD[name].is_flag, name
        assert f"\n{name}={API_DEFAULTS[name]!r}\n" in doc, name
    assert API_DEFAULTS["axis"] == 0 and API_DEFAULTS["columns"] is None  # the API's own
    assert API_DEFAULTS["overflow"] == BY_FIELD["overflow"].default == "error"


def test_each_request_fields_default_is_its_declarations() -> None:
    """Request's defaults are filled from the declarations (request.DECLARED): the two
    fields that cannot be are `op`, which every run gives, and `params`, a fresh dict."""
    differ = {f.name for f in dataclasses.fields(Request)
              if f.default is not BY_FIELD[f.name].default}
    assert differ == {"op", "params"}
    assert Request(op="cumsum").params == {}
    assert BY_FIELD["op"].default is BY_FIELD["params"].default is None


def test_a_field_or_a_declaration_alone_fails_at_import() -> None:
    """An option declared without its Request field, or a field no option declares, stops
    `import cumtool.request` by name."""
    from cumtool.request import DECLARED, _declared_defaults

    def request_class(names: list[str]) -> type:
        return type("Request", (), {"__annotations__": dict.fromkeys(names, "bool"),
                                    **dict.fromkeys(names, DECLARED)})

    made = _declared_defaults(request_class(list(BY_FIELD)))
    assert made.keep is False and made.axis == "rows"
    with pytest.raises(RuntimeError, match=r"without a Request field: \['keep'\]"):
        _declared_defaults(request_class([n for n in BY_FIELD if n != "keep"]))
    with pytest.raises(RuntimeError, match=r"without a declaration in cumtool/options.py: "
                                           r"\['undeclared_field'\]"):
        _declared_defaults(request_class([*BY_FIELD, "undeclared_field"]))


def test_docs_api_shows_the_signature_of_cumtool_scan() -> None:
    """docs/api.md's first block is the signature: each keyword, in order, with its
    default and kind."""
    from pathlib import Path

    import cumtool

    text = (Path(__file__).parent.parent / "docs" / "api.md").read_text(encoding="utf-8")
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    code = " ".join(line.split("#")[0] for line in block.splitlines())
    namespace: dict[str, Any] = {}
    exec(code.replace("cumtool.scan(", "def shown(", 1) + ": pass", namespace)

    def listed(function: Any) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default)
                for p in inspect.signature(function).parameters.values()]

    assert listed(namespace["shown"]) == listed(cumtool.scan)


@pytest.mark.parametrize(("keywords", "message"), [
    ({"revrse": True}, "scan() got an unexpected keyword argument 'revrse'; did you mean "
                       "reverse=?"),
    ({"group": "k"}, "scan() got an unexpected keyword argument 'group'; did you mean by=?"),
    ({"spn": 3}, "scan() got an unexpected keyword argument 'spn'; did you mean span=?"),
    ({"yearstart": "04-01"}, "scan() got an unexpected keyword argument 'yearstart'; did "
                             "you mean year_start=?"),
    ({"colour": "red"}, "scan() got an unexpected keyword argument 'colour'"),
])
def test_an_unknown_keyword_is_named_with_the_keywords_it_is_close_to(
        keywords: dict[str, Any], message: str) -> None:
    """A usage error (and the TypeError Python raises for an unknown keyword)."""
    import cumtool

    for data in ([1, 2], "no-such-file.csv"):  # before anything is read
        with pytest.raises(UsageError) as refused:
            cumtool.scan(data, "cumsum", **keywords)
        assert isinstance(refused.value, TypeError)
        assert str(refused.value) == message


# A value for each flag that takes one, as typed (the others: 7).
TYPED = {"axis": "columns", "dtype": "float32", "output": "out.csv", "from_format": "tsv",
         "to_format": "parquet", "na": "x,y", "table_rows": "all", "max_record_size": "1M",
         "columns": "a", "exclude": "b", "by": "a", "reset": "a", "time": "a", "x": "a",
         "period": "month", "out_decimal": "comma", "overflow": "wrap", "engine": "dask",
         "wait": "1.5", "precision": "3"}


def _request(invoke: Any, monkeypatch: Any, path: Any, *args: str,
             op: str = "cumsum") -> Request:
    made: list[Request] = []
    monkeypatch.setattr("cumtool.engine.run", made.append)
    result = invoke(op, str(path), *args)
    assert result.exit_code == 0, result.stderr
    (request,) = made
    return request


@pytest.mark.parametrize("declared", [pytest.param(o, id=o.flag) for o in FLAGS])
def test_the_command_line_sets_each_declared_field(declared: Option, invoke: Any,
                                                   monkeypatch: Any, tmp_path: Any) -> None:
    """Each flag reaches its Request field, and that field alone (cli._run builds the
    Request from the declarations), its text read by the declared check."""
    path = tmp_path / "in.csv"
    path.write_text("a,b\n1,2\n")
    plain = _request(invoke, monkeypatch, path)
    args = ([declared.flag] if declared.is_flag
            else [declared.flag, TYPED.get(declared.name, "7")])
    given = _request(invoke, monkeypatch, path, *args)
    changed = [f.name for f in dataclasses.fields(Request)
               if getattr(given, f.name) != getattr(plain, f.name)]
    assert changed == [declared.name], changed


def test_an_ops_option_sets_its_request_field_or_params(invoke: Any, monkeypatch: Any,
                                                        tmp_path: Any) -> None:
    """cli._run: an op's option that is a Request field (--indices) sets the field, the
    others go to Request.params by keyword."""
    path = tmp_path / "in.csv"
    path.write_text("a,b\n1,2\n")
    indexed = _request(invoke, monkeypatch, path, "--indices", op="cummax")
    assert (indexed.indices, dict(indexed.params)) == (True, {})
    assert _request(invoke, monkeypatch, path, op="cummax").indices is False
    smoothed = _request(invoke, monkeypatch, path, "--span", "3", op="ewma")
    assert (smoothed.indices, dict(smoothed.params)) == (False, {
        "span": 3.0, "alpha": None, "com": None, "halflife": None, "adjust": True,
        "times": None})


def test_a_runs_identity_leaves_out_what_is_declared_not_to_change_results() -> None:
    """state._NOT_IN_IDENTITY is derived from the declarations (Option.identity); these
    are the fields it has always left out, so no --state run's identity moves."""
    from cumtool import state

    assert set(state._NOT_IN_IDENTITY) == {
        "state", "wait", "run_id", "progress", "stdout_is_terminal", "batch_rows",
        "table_rows", "precision", "engine", "scheduler", "growing", "notes", "threads",
        "x_format"}
    assert not set(state._NOT_IN_IDENTITY) & set(state._FIELDS_OF_VERSION_2)


@pytest.mark.parametrize(("request_", "identity"), [
    pytest.param(Request(op="cumsum", input="/data/in.csv", output="/data/out.csv",
                         state="s.json"),
                 "983f75fffe1a539087e27471364d1eca707eb3bacbe8eda6a7bb354726ed48bb",
                 id="plain"),
    pytest.param(Request(op="cumsum,cummax", input="/data/in.csv", state="s.json",
                         threads=3, precision=3, x_format="%d", wait=2.0, batch_rows=5,
                         na=("x",), by=(parse("k", "--by"),), period="month",
                         time=parse("d", "--time"), share=True, progress=True),
                 "637bf13af744dc3b97b084f7d876924f2e5416f02ece29421eea333fdfe69e60",
                 id="options"),
    pytest.param(Request(op="ewma", input="/data/in.csv", run_id="r1", growing=True,
                         params={"span": 3.0}),
                 "38d18766c3cd01cc8005af23f30cb0a053d9d4507d7be73bbaa8f04fee9e1c92",
                 id="run-id"),
])
def test_a_runs_identity_is_what_it_was(request_: Request, identity: str) -> None:
    """The identities these runs had before Option.identity: a state saved then still
    knows its retry."""
    from cumtool import state

    assert state._identity(request_, []) == identity


# A value of each table-only keyword of cumtool.scan, as Python passes it.
API_VALUES = {"columns": ["a"], "exclude": ["a"], "by": "a", "reset": "a", "keep": True,
              "share": True, "period": "month"}


@pytest.mark.parametrize("declared", [pytest.param(o, id=o.name) for o in TABLE_ONLY
                                      if o.api])
def test_the_api_refuses_the_options_of_tables_on_an_array_file(declared: Option,
                                                                tmp_path: Any) -> None:
    """cumtool.scan on a .npy file refuses a table's keyword by name, as the command line
    does, instead of scanning the array without it."""
    import numpy as np

    import cumtool

    path = tmp_path / "a.npy"
    np.save(path, np.arange(4.0))
    values = {declared.name: API_VALUES[declared.name]}
    if declared.name == "period":  # period= needs time=
        values["time"] = "a"
    with pytest.raises(UsageError) as refused:
        cumtool.scan(path, "cumsum", **values)
    assert str(refused.value) == (f"{declared.name}= is for tables, not arrays; {path} is "
                                  "read as npy")
