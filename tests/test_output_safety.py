"""Data leaving the store: redacted at every exit (query, export, errors), query confined
to the store and streamed, Markdown escaped, terminal control sequences made visible."""

from __future__ import annotations

import json

import polars as pl
import pytest
from click.testing import CliRunner

from loganalyze.cli import main
from loganalyze.diagnosis.base import Evidence, Finding
from loganalyze.escape import md_code, md_fence, terminal
from loganalyze.render import render_compare_md, render_findings_md, render_findings_text, render_show

from test_report import planted_log


@pytest.fixture
def planted(tmp_path, ingest_one):
    _, run = ingest_one(planted_log(tmp_path / "planted.log"), name="planted")
    return run


def cli(run, *args: str):
    return CliRunner().invoke(main, [*args, "--store", str(run.store.root)])


@pytest.mark.parametrize("sql", [
    "SELECT value AS v FROM config",
    "SELECT concat(key, '=', value) AS kv FROM config",
    "SELECT upper(value) AS v FROM config",
    "SELECT value_num, raw AS r FROM config",
    "SELECT text AS t FROM unparsed",
])
def test_renaming_a_column_does_not_defeat_redaction(planted, sql):
    for fmt in ("table", "csv", "json", "ndjson"):
        out = cli(planted, "query", sql, "--format", fmt)
        assert out.exit_code == 0, out.output
        assert "PLANTED" not in out.output.upper(), (sql, fmt)


def test_a_where_clause_cannot_probe_a_secret(planted):
    probe = "SELECT key FROM config WHERE value LIKE 'PLANTEDapikey%'"
    assert json.loads(cli(planted, "query", probe, "--format", "json").output) == []
    assert json.loads(cli(planted, "query", probe, "--format", "json", "--no-redact").output) == [{"key": "api_key"}]


def test_config_value_of_a_secret_key_is_redacted_and_no_redact_keeps_it(planted):
    sql = "SELECT value FROM config WHERE key = 'api_key' ORDER BY line_no"  # the args dump, the launch command
    assert json.loads(cli(planted, "query", sql, "--format", "json").output) == [{"value": "REDACTED"}] * 2
    assert json.loads(cli(planted, "query", sql, "--format", "json", "--no-redact").output) == \
        [{"value": "PLANTEDapikeyVALUE"}, {"value": "PLANTEDcliKEY"}]


@pytest.mark.parametrize("name", ["config.csv", "config.parquet", "config.json", "config.jsonl"])
def test_export_is_redacted(planted, tmp_path, name):
    out = tmp_path / name
    assert cli(planted, "export", "planted", "--table", "config", "-o", str(out)).exit_code == 0
    frame = pl.read_parquet(out) if name.endswith("parquet") else None
    text = out.read_bytes().decode("utf-8", "replace") if frame is None else str(frame.to_dicts())
    assert "PLANTED" not in text and "REDACTED" in text
    kept = tmp_path / ("kept-" + name)
    assert cli(planted, "export", "planted", "--table", "config", "-o", str(kept), "--no-redact").exit_code == 0
    raw = pl.read_parquet(kept).to_dicts() if name.endswith("parquet") else kept.read_text()
    assert "PLANTEDapikeyVALUE" in str(raw)


def test_error_messages_are_redacted(planted):
    out = cli(planted, "query", "SELECT CAST(text AS INT) FROM unparsed WHERE text LIKE '%api%'")
    assert out.exit_code == 2 and "PLANTED" not in out.output
    out = cli(planted, "query", "SELECT sk_PLANTEDopenaiKEYabcdefghij FROM config WHERE api_key='PLANTEDx'")
    assert out.exit_code == 2 and "PLANTED" not in out.output and len(out.output.strip().splitlines()) == 1


@pytest.mark.parametrize("sql", [
    "SELECT * FROM read_csv('/etc/hostname')",
    "SELECT * FROM READ_PARQUET('http://169.254.169.254/latest/x.parquet')",
    'SELECT * FROM "read_json"(\'/etc/passwd\')',
    "SELECT * FROM read_ipc /* hidden */ ('/tmp/x')",
    "SELECT * FROM stats WHERE source IN (SELECT column_1 FROM read_ndjson('https://example.invalid/x'))",
])
def test_query_cannot_reach_files_or_urls(planted, sql):
    out = cli(planted, "query", sql)
    assert out.exit_code == 2
    assert out.output.startswith("loganalyze: error: query: read_") and "not allowed" in out.output
    assert len(out.output.strip().splitlines()) == 1


def test_a_string_that_looks_like_a_table_function_is_only_a_string(planted):
    out = cli(planted, "query", "SELECT 'read_csv(x)' AS s, count(*) AS n FROM config", "--format", "json")
    assert out.exit_code == 0 and json.loads(out.output)[0]["s"] == "read_csv(x)"


def test_table_view_computes_only_the_rows_it_shows(planted):
    out = cli(planted, "query", "SELECT line_no FROM unparsed UNION ALL SELECT line_no FROM stats")
    assert out.exit_code == 0
    assert "(first 50 rows shown" not in out.output  # 38 rows
    many = cli(planted, "query", "SELECT s.line_no FROM stats s CROSS JOIN stats t")  # 900 rows
    assert "(first 50 rows shown; more with LIMIT/OFFSET" in many.output
    rows = json.loads(cli(planted, "query", "SELECT s.line_no FROM stats s CROSS JOIN stats t", "--format",
                          "json").output)
    assert len(rows) == 900  # json streams every row, in batches


def test_plan_of_the_table_view_is_limited(planted):
    from loganalyze.query import query

    lf = query("SELECT * FROM stats", store=planted.store, redact=True)
    assert "SLICE" in lf.head(51).explain().upper()


# Markdown

HOSTILE_PATH = "logs/a`b|c\n```\n<img src=x onerror=alert(1)>\n~~~~.log"


def finding(**kw) -> Finding:
    base = dict(id="low-acceptance", severity="warning", title="Drafter <img src=x onerror=alert(1)> | mismatch",
                verdict="drafter `AQ`MedAI` does not name target <script>x</script>", impact=0.5,
                impact_text="**bold** [link](http://x)", recommendation="use |a| drafter",
                evidence=[Evidence(HOSTILE_PATH, 7, "text ``` with fence and api_key=PLANTEDk")])
    return Finding(**{**base, **kw})


def test_findings_markdown_escapes_every_value():
    md = render_findings_md("run<b>", [finding()])
    lines = md.splitlines()
    fences = [i for i, line in enumerate(lines) if line and set(line) == {"`"}]
    assert len(fences) == 2 and lines[fences[0]] == lines[fences[1]] == "````"  # longer than the ``` inside
    assert fences[1] == fences[0] + 2  # one evidence line: the path's newline and fence are shown, not obeyed
    outside = "\n".join(lines[:fences[0]] + lines[fences[1] + 1:])
    assert "<img" not in outside.replace("\\<img", "") and "<script" not in outside.replace("\\<script", "")
    assert "\\|" in outside and "**bold**" not in outside and "\\[link\\]" in outside
    assert "PLANTED" not in md and "api_key=REDACTED" in md
    assert "\n```\n<img" not in md  # the newline in the file name is shown, not obeyed


def test_compare_markdown_cells_cannot_split_the_table():
    frame = pl.DataFrame({"run": ["a|b"], "engine": ["sglang\nx"], "version": ["`0.5`"], "speculative": ["<img>"],
                          "cap": [48.0], "single_stream_tok_s": [1.0], "single_stream_delta": [None],
                          "peak_tok_s": [2.0], "peak_c": [8], "peak_delta": [None], "accept_length": [None],
                          "max_accept_length": [None], "accept_rate_low": [None], "accept_rate_high": [None],
                          "ttft_p50_ms": [None], "ttft_p99_ms": [None], "tpot_p50_ms": [None], "tpot_p99_ms": [None]})
    md = render_compare_md(frame)
    header, rule, row = md.splitlines()
    assert row.count("|") - row.count("\\|") == header.count("|")
    assert "\\<img\\>" in row and "sglang\\\\nx" in row


def test_code_spans_survive_any_backticks():
    assert md_code("a``b") == "``` a``b ```"
    assert md_code("x|y", cell=True) == "`x\\|y`"
    assert md_fence(["a ```` b"]) == ["`````", "a ```` b", "`````"]


# Terminal

SEQUENCES = ["\x1b]0;owned\x07", "\x1b]8;;http://evil/\x1b\\click\x1b]8;;\x1b\\", "\x9b2J", "\x1b[2J", "\x07",
             "\u202e"]


def test_terminal_escapes_every_control_sequence():
    for seq in SEQUENCES:
        shown = terminal(f"a{seq}b")
        assert not any(c in shown for c in "\x1b\x9b\x07\u202e"), repr(shown)
    assert terminal("a\tb\nc") == "a\tb\nc"
    assert terminal("\x1b]0;t\x07") == "\\x1b]0;t\\x07"


def test_show_and_diagnose_text_make_controls_visible():
    data = {"run": "r", "sources": [{"path": "x\x1b]0;owned\x07.log", "format": "sglang", "lines": 1,
                                     "sha256": "0" * 64}], "tables": {}, "config": {"model\x9b2J": "m\x1b]8;;x\x1b\\"}}
    for text in (render_show(data), render_findings_text("r", [finding(verdict="v\x1b]0;x\x07")])):
        assert "\x1b" not in text and "\x9b" not in text and "\x07" not in text


def test_show_keeps_metric_keys_that_end_in_token():
    data = {"run": "r", "sources": [], "tables": {},
            "config": {"bucket_time_to_first_token": "[0.001, 0.005]", "hf_token": "hf_abcdefghijklmnopqrstuvwx"}}
    text = render_show(data)
    assert "bucket_time_to_first_token = [0.001, 0.005]" in text and "hf_token = REDACTED" in text


def test_query_table_output_escapes_controls(planted, tmp_path):
    out = cli(planted, "query", "SELECT '\x1b]0;owned\x07' || 'x' AS s FROM config LIMIT 1")
    assert out.exit_code == 0 and "\x1b]0" not in out.output and "\\x1b]0;owned" in out.output


def test_report_markdown_with_a_hostile_file_name(tmp_path, ingest_one):
    import re

    from loganalyze.report import build_report

    name = "evil|na`me <img src=x onerror=alert(1)>\n```\n# heading.log"
    _, run = ingest_one(planted_log(tmp_path / name), name="evil")
    md = build_report([run], None, fmt="md")
    assert "\n# heading" not in md  # the newline in the name is shown as \n, never obeyed
    lines = md.splitlines()
    rows = [i for i, line in enumerate(lines) if line.startswith("| ") and "evil\\|na" in line]
    assert rows
    for i in rows:  # the name's | cannot add a cell: as many cells as the table's header
        top = i
        while lines[top - 1].startswith("|"):
            top -= 1
        assert len(re.findall(r"(?<!\\)\|", lines[i])) == len(re.findall(r"(?<!\\)\|", lines[top])), lines[i]
    blocks = re.sub(r"^(`{3,})\n.*?^\1$", "", md, flags=re.S | re.M)
    spans = re.sub(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", "", blocks)  # a span ends at a run of its own length
    assert not re.search(r"(?<!\\)<img", spans)


def test_fleet_summary_text_escapes_host_names(tmp_path):
    from loganalyze.cli import main as cli_main

    path = planted_log(tmp_path / "planted.log")
    store = str(tmp_path / "s")
    args = ["ingest", str(path), "--store", store, "-q", "--label", "host=h\x1b]0;owned\x07", "--label", "cluster=c"]
    assert CliRunner().invoke(cli_main, args).exit_code == 0
    out = CliRunner().invoke(cli_main, ["fleet", "summary", "--store", store])
    assert out.exit_code == 0 and "\x1b" not in out.output and "h\\x1b]0;owned\\x07" in out.output


def test_show_and_metrics_have_the_same_way_out(planted):
    for args in (["show", "planted"], ["show", "planted", "--format", "json"]):
        # the launch command's `--api-key`, the last value of the key (show prints the last)
        assert "PLANTEDcliKEY" not in cli(planted, *args).output
        assert "PLANTEDcliKEY" in cli(planted, *args, "--no-redact").output
    assert cli(planted, "metrics", "planted", "--no-redact").exit_code == 0
