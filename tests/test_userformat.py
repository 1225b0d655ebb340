"""User-defined formats: the built-in SGLang format as data parses identically, a new
format (llama.cpp example) ingests into its own tables, bad definitions are one line."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace

import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

import loganalyze as la
from loganalyze import formats
from conftest import FIXTURES, SAMPLES
from loganalyze.cli import main
from loganalyze.errors import LoganalyzeError
from loganalyze.formats import dump as dumping, sglang, userformat
from loganalyze.formats.spec import LogFormat, expected
from loganalyze.formats.dump import dump
from loganalyze.formats.samples import run_samples
from loganalyze.formats.userformat import load

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

FORMATS = FIXTURES / "formats"
SGLANG_TOML = FORMATS / "sglang.toml"
LLAMA_TOML = FORMATS / "llamacpp.toml"
LLAMA_LOG = FORMATS / "llamacpp.log"


def without_handlers(fmt):
    """Handlers are functions (compared by behaviour below), everything else by value."""
    return replace(fmt, kinds=tuple(replace(k, handler=None) for k in fmt.kinds))


def expectations(fmt):
    """The values each sample expects (a Sample compares equal to its bare line)."""
    return [expected(s) for k in fmt.kinds for s in k.samples]


def generator():
    spec = importlib.util.spec_from_file_location("generate", FORMATS / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- a built-in format expressed as data ----


def test_sglang_toml_is_current():
    assert SGLANG_TOML.read_text(encoding="utf-8") == generator().render(), \
        "loganalyze/formats/sglang.py changed: run `.venv/bin/python fixtures/formats/generate.py`"


def test_sglang_as_data_is_the_same_declaration():
    data = load(SGLANG_TOML).format
    assert without_handlers(data) == without_handlers(sglang.FORMAT)
    assert expectations(data) == expectations(sglang.FORMAT) and any(expectations(data))
    assert [k.name for k in data.kinds if k.handler] == [
        "server_args", "launch_command", "scheduler_limits", "spec_reset", "running_cap_final",
        "attention_backend", "mem_fraction", "kv_cache_dtype", "chat_template", "other"]


def test_sglang_as_data_checks_its_samples_like_the_builtin():
    data, builtin = run_samples(load(SGLANG_TOML).format), run_samples(sglang.FORMAT)
    assert [c.to_dict() for c in data] == [c.to_dict() for c in builtin]
    decode = next(c for c in data if c.kind == "decode_stats")
    assert decode.problem is None
    assert (decode.fields["running"], decode.fields["tokens"], decode.fields["accept_len"]) == (3, 266624, 1.67)


def test_sglang_as_data_ingests_every_sample_identically(tmp_path):
    logs = sorted((SAMPLES / "sglang").glob("*.log"))
    assert logs, "fixtures/real/sglang holds no logs"
    la.ingest(logs, run="s", store=tmp_path / "builtin")
    userformat.install(load(SGLANG_TOML))
    assert formats.active().formats["sglang"] is not sglang.FORMAT
    la.ingest(logs, run="s", store=tmp_path / "data")
    a, b = la.open_run("s", tmp_path / "builtin"), la.open_run("s", tmp_path / "data")
    assert a.tables() == b.tables() and a.tables()["stats"] > 0 and a.tables()["config"] > 0
    for table in a.tables():
        assert_frame_equal(a.table(table).sort("source", "line_no").collect(),
                           b.table(table).sort("source", "line_no").collect())
    caps = b.table("config").filter(pl.col("key") == "max_running_requests").collect()["value"].to_list()
    assert "48" in caps  # spec_reset's line: the config_value handler


def test_dump_and_load_round_trip_json(tmp_path):
    as_json = tmp_path / "sglang.json"
    as_json.write_text(json.dumps(tomllib.loads(dump(sglang.FORMAT, generator().SGLANG_HANDLERS))))
    assert without_handlers(load(as_json).format) == without_handlers(sglang.FORMAT)
    assert expectations(load(as_json).format) == expectations(sglang.FORMAT)


LINE_FORMATS = [name for name, fmt in formats.FORMATS.items() if isinstance(fmt, LogFormat)]


@pytest.mark.parametrize("name", LINE_FORMATS)
def test_a_dumped_builtin_loads_back_and_parses_its_samples_to_the_same_values(tmp_path, name):
    dumped = CliRunner().invoke(main, ["formats", "--dump", name])
    assert dumped.exit_code == 0, dumped.output
    builtin = formats.FORMATS[name]
    code = [k.name for k in builtin.kinds if dumping.needs_code(k, dumping.DATA_HANDLERS.get(name, {}).get(k.name))]
    header = dumped.output.split("\n\n")[0].splitlines()
    listed = " ".join(line[4:] for line in header if line.startswith("#   ")).split(", ")
    assert listed == (code or [""]), "the header names every kind that needs a handler"
    if len(code) == len(builtin.kinds):  # bench, nccl: every kind computes columns in Python
        assert f"{len(code)} of its {len(code)} kinds need Python handlers" in dumped.output
        return
    path = tmp_path / f"{name}.toml"
    path.write_text(dumped.output)
    checked = CliRunner().invoke(main, ["--formats", str(path), "formats", "--test", str(path), "--format", "json"])
    assert checked.exit_code == 0, checked.output
    want = [c.to_dict() for c in run_samples(builtin) if c.kind not in code]
    assert json.loads(checked.output)["samples"] == want and want
    data = {k.name: k for k in load(path).format.kinds}
    assert [expected(s) for k in builtin.kinds if k.name in data for s in k.samples] == \
        [expected(s) for k in data.values() for s in k.samples]


def test_dump_names_what_has_no_data_form():
    for name, why in (("bench-json", "reads the whole file with Python code"), ("nope", "is not a known format")):
        result = CliRunner().invoke(main, ["formats", "--dump", name])
        assert result.exit_code == 2 and why in result.stderr


def test_check_takes_a_builtin_format_by_name():
    result = CliRunner().invoke(main, ["formats", "--test", "nccl-tests"])
    assert result.exit_code == 0 and result.output.startswith("built-in: format nccl-tests: 25 sample(s), 25 ok")
    assert "ok   avg_busbw: avg_busbw=6.6972" in result.output


def test_dump_refuses_a_handler_it_cannot_name():
    with pytest.raises(LoganalyzeError, match="kind server_args has a Python handler"):
        dump(sglang.FORMAT)


# ---- a new format from a file ----


def test_llamacpp_example_passes_its_check():
    results = run_samples(load(LLAMA_TOML).format)
    assert [(c.kind, c.problem) for c in results] == [
        ("timing", None), ("new_prompt", None), ("request", None), ("listening", None), ("slot_step", None),
        ("slot_step", None)]
    assert results[0].fields == {"eval_ms": 3012.38, "eval_tokens": 128, "prompt_ms": 118.3, "prompt_tokens": 12,
                                 "slot": 0, "task": 0, "total_ms": 3130.68}


def test_llamacpp_example_ingests_into_its_own_tables(tmp_path):
    store = tmp_path / "store"
    result = CliRunner().invoke(main, ["--formats", str(LLAMA_TOML), "ingest", "-q", str(LLAMA_LOG), "--run", "llama",
                                       "--store", str(store), "--format", "json"])
    assert result.exit_code == 0, result.output
    src = json.loads(result.output)["sources"][0]
    assert src["format"] == "llamacpp-example"  # detected, not forced
    assert src["lines_by_table"] == {"events": 9, "llamacpp_tasks": 2, "llamacpp_timings": 8, "requests": 3,
                                     "unparsed": 4}
    run = la.open_run("llama", store)
    timings = run.table("llamacpp_timings").sort("line_no").collect()
    assert timings.select("task", "prompt_tokens", "eval_tokens", "eval_ms").rows() == [
        (0, 12, 128, 3012.38), (129, 534, 256, 6120.5)]
    assert timings["line_no"].to_list() == [9, 20] and timings["kind"].unique().to_list() == ["timing"]
    tasks = run.table("llamacpp_tasks").sort("line_no").collect()
    assert tasks.select("ctx_slot", "prompt_tokens").rows() == [(4096, 12), (4096, 534)]
    requests = run.table("requests").sort("line_no").collect()
    assert requests.select("method", "path", "status").rows() == [
        ("POST", "/completion", 200), ("POST", "/completion", 200), ("GET", "/health", 200)]
    listening = run.table("events").filter(pl.col("kind") == "listening").collect()
    assert json.loads(listening["fields"][0]) == {"url": "http://127.0.0.1:8080"}
    speed = la.query("SELECT task, round(eval_tokens / (eval_ms / 1000), 2) AS tok_s FROM llamacpp_timings "
                     "ORDER BY task", store=store).collect()
    assert speed.rows() == [(0, 42.49), (129, 41.83)]


def test_formats_come_from_the_environment_too(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGANALYZE_FORMATS", str(FORMATS))
    listing = json.loads(CliRunner().invoke(main, ["formats", "--format", "json"]).output)
    by_name = {f["name"]: f for f in listing}
    assert by_name["llamacpp-example"]["source"] == str(LLAMA_TOML)
    assert by_name["sglang"]["source"] == str(SGLANG_TOML)  # a file may patch a built-in format
    assert by_name["vllm"]["source"] == "built-in"
    loaded = la.load_formats()
    assert [u.format.name for u in loaded] == ["llamacpp-example", "sglang"]


def test_formats_lists_releases_kinds_and_samples():
    result = CliRunner().invoke(main, ["formats"])
    assert result.exit_code == 0
    assert "sglang (built-in, releases 0.1 - 0.5.23): SGLang server log" in result.output
    assert "  decode_stats           -> stats      Decode batch, #running-req: 3, #token: 266624" in result.output
    listing = {f["name"]: f for f in json.loads(CliRunner().invoke(main, ["formats", "--format", "json"]).output)}
    assert listing["sglang"]["releases"] == "0.1 - 0.5.23"
    spec_reset = next(k for k in sglang.KINDS if k.name == "spec_reset")
    assert {"name": "spec_reset", "table": "config", "sample": spec_reset.samples[0]} in listing["sglang"]["kinds"]


# ---- checking and rejecting definitions ----


GOOD = """
name = "tiny"
detect = ["^tiny "]
[[kinds]]
name = "count"
table = "events"
needle = "count="
pattern = 'count=(?P<n>\\S+)'
types = { n = "int" }
pack = "fields"
const = { severity = "info" }
samples = ["tiny count=7"]
"""


def write(tmp_path, text: str, name: str = "tiny.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_check_reports_each_kind_of_failure(tmp_path):
    text = GOOD.replace('samples = ["tiny count=7"]', 'samples = ["tiny count=7", "tiny count=x", "tiny other"]')
    text += '[[kinds]]\nname = "shadowed"\ntable = "events"\nneedle = "count="\nsamples = ["count=1"]\n'
    results = run_samples(load(write(tmp_path, text)).format)
    assert [(c.kind, c.problem) for c in results] == [
        ("count", None),
        ("count", "field n: 'x' is not a valid int"),
        ("count", "no kind claims it (the needle, match or pattern does not match)"),
        ("shadowed", "claimed by kind count (listed earlier, or its needle is too broad)"),
    ]
    assert results[0].fields == {"n": 7}


def test_check_asserts_the_values_a_sample_expects(tmp_path):
    samples = ('samples = [{ line = "tiny count=7", expect = { n = 7 } }, { line = "tiny count=8", expect = { n = 9 } }, '
               '{ line = "tiny count=9", expect = {} }, { line = "tiny count=x", expect = { n = 1 } }]')
    fmt = load(write(tmp_path, GOOD.replace('samples = ["tiny count=7"]', samples))).format
    assert expectations(fmt) == [{"n": 7}, {"n": 9}, {}, {"n": 1}]
    assert [c.problem for c in run_samples(fmt)] == [
        None, "field n: expected 9, got 8", "field n: got 9, which the sample does not expect",
        "field n: expected 1, got null"]
    again = load(write(tmp_path, dump(fmt), "again.toml")).format
    assert without_handlers(again) == without_handlers(fmt) and expectations(again) == expectations(fmt)


def test_check_command_exit_codes(tmp_path):
    ok = CliRunner().invoke(main, ["formats", "--test", str(write(tmp_path, GOOD))])
    assert ok.exit_code == 0 and "1 sample(s), 1 ok, 0 failed" in ok.output and "ok   count: n=7" in ok.output
    failing = write(tmp_path, GOOD.replace("count=7", "count=seven"), "failing.toml")
    failed = CliRunner().invoke(main, ["formats", "--test", str(failing), "--format", "json"])
    assert failed.exit_code == 1
    assert json.loads(failed.output)["samples"][0]["problem"] == "field n: 'seven' is not a valid int"
    bad = CliRunner().invoke(main, ["formats", "--test", str(write(tmp_path, "name = 1", "bad.toml"))])
    assert bad.exit_code == 2 and bad.stderr == f"loganalyze: error: {tmp_path / 'bad.toml'}: name: expected a string, got an integer\n"


@pytest.mark.parametrize("change, message", [
    (("needle", "neddle"), "kinds[0].neddle: unknown field (known: name, table, needle,"),
    (("pattern = 'count=(?P<n>\\S+)'", "pattern = 'count=(?P<n>\\S+'"), "kinds.count.pattern: bad regular expression"),
    (('"int"', '"integer"'), "kinds.count.types.n: unknown type 'integer' (types: str, int, float"),
    (('table = "events"', 'table = "evnets"'), "kinds.count.table: no table 'evnets' (tables: "),
    (('pack = "fields"', 'pack = "fields"\nhandler = { name = "magic" }'),
     "kinds.count.handler.name: unknown handler 'magic' (handlers: repr_dump, key_equals_value, config_value, severity_from_level, "
     "command_flags)"),
    (('pack = "fields"', 'pack = "fields"\nhandler = { name = "repr_dump", colour = "red" }'),
     "kinds.count.handler: bad arguments for repr_dump"),
    (('pack = "fields"\n', ''), "kinds.count: column 'n' is not in table events"),
    (('detect = ["^tiny "]', 'detect = []'), "detect: missing: give at least one pattern"),
    (('detect = ["^tiny "]', "detect = [\"^tiny \"]\nprefix = '^(?P<thread>\\w+) (?P<msg>.*)$'"),
     "prefix: group 'thread' would be dropped"),
    (('detect = ["^tiny "]', "detect = [\"^tiny \"]\nprefix = '^(?P<level>\\w+) '"),
     "prefix: needs a (?P<msg>...) group"),
    (('name = "tiny"', 'name = "Tiny Format"'), "name: a format name is 1-64 of a-z 0-9 _ . -"),
    (('samples = ["tiny count=7"]', 'samples = "tiny count=7"'), "kinds.count.samples: expected a list, got a string"),
    (('samples = ["tiny count=7"]', 'samples = [7]'), "kinds.count.samples[0]: expected a line, or { line = ..., "),
    (('samples = ["tiny count=7"]', 'samples = [{ line = "tiny count=7", expected = {} }]'),
     "kinds.count.samples[0].expected: unknown field (known: line, expect)"),
    (('types = { n = "int" }', 'keys = "nope"'), "kinds.count.keys: no keyset 'nope' (keysets: none)"),
    (('samples = ["tiny count=7"]', 'samples = ["tiny count=7"]\n[tables.stats]\nx = "int"'),
     "tables.stats: stats is a built-in table"),
    (('const = { severity = "info" }', 'const = { severity = ["info"] }'),
     "kinds.count.const.severity: expected a string, number or true/false, got a list"),
    (("pattern = 'count=(?P<n>\\S+)'\n", ""), "kinds.count.types: types given but no pattern"),
    (('needle = "count="', 'needle = []'), "kinds.count.needle: empty"),
])
def test_a_bad_definition_is_one_line_naming_file_and_field(tmp_path, change, message):
    assert change[0] in GOOD
    path = write(tmp_path, GOOD.replace(change[0], change[1], 1))
    with pytest.raises(LoganalyzeError) as e:
        load(path)
    assert str(e.value).startswith(f"{path}: {message}"), str(e.value)
    assert "\n" not in str(e.value)


def test_a_definition_that_is_not_a_table(tmp_path):
    with pytest.raises(LoganalyzeError, match=r"list\.json: top level: expected a table, got a list"):
        load(write(tmp_path, "[]", "list.json"))


def test_unreadable_definitions(tmp_path):
    with pytest.raises(LoganalyzeError, match=r"bad\.toml: not valid TOML \(Expected '=' after a key"):
        load(write(tmp_path, "name tiny", "bad.toml"))
    with pytest.raises(LoganalyzeError, match=r"bad\.json: not valid JSON"):
        load(write(tmp_path, "{", "bad.json"))
    with pytest.raises(LoganalyzeError, match=r"tiny\.yaml: a format definition is a \.toml or \.json file"):
        load(write(tmp_path, GOOD, "tiny.yaml"))
    with pytest.raises(LoganalyzeError, match=r"nowhere: no such format file or folder"):
        la.load_formats([tmp_path / "nowhere"])


def test_one_bad_file_installs_nothing(tmp_path):
    write(tmp_path, GOOD, "a.toml")
    write(tmp_path, GOOD.replace('name = "tiny"', 'name = "tiny2"').replace("needle", "neddle"), "b.toml")
    with pytest.raises(LoganalyzeError, match="b.toml: kinds"):
        la.load_formats([tmp_path])
    assert "tiny" not in formats.active().formats
    result = CliRunner().invoke(main, ["--formats", str(tmp_path), "formats"])
    assert result.exit_code == 2 and "b.toml: kinds[0].neddle: unknown field" in result.stderr


def test_a_format_file_changes_the_process_registry_only():
    """Installing goes into formats.active(); the built-in registry stays as it was, and a
    registry put in place for a block (formats.using) does not see what the other holds."""
    tables = dict(formats.BUILTIN.tables)
    la.load_formats([LLAMA_TOML])
    assert "llamacpp-example" in formats.active().formats and "llamacpp-example" not in formats.FORMATS
    assert formats.BUILTIN.tables == tables and set(formats.active().tables) > set(tables)
    assert formats.active().files == {"llamacpp-example": LLAMA_TOML}
    with formats.using(formats.BUILTIN.copy()):
        assert "llamacpp-example" not in formats.active().formats
    assert "llamacpp-example" in formats.active().formats


def test_formats_test_and_its_earlier_name_check_agree():
    """`formats --test` is the flag; `--check`, its earlier name ("check" is now the store's
    command only), still works, says on stderr to use --test, and is left out of --help."""
    new, old = (CliRunner().invoke(main, ["formats", flag, "nccl-tests"]) for flag in ("--test", "--check"))
    assert new.exit_code == old.exit_code == 0 and new.stdout == old.stdout
    assert new.stderr == ""
    assert old.stderr.splitlines() == ["loganalyze: formats --check is deprecated, use --test (the same argument)"]
    assert "--check" not in CliRunner().invoke(main, ["formats", "--help"]).output
