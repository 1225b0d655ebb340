"""The report and secret redaction: log text escaped, secrets gone from every output, no
network reference, charts that really render in a browser, example reports kept fresh."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import loganalyze as la
from loganalyze.cli import main
from loganalyze.metrics.base import Family
from loganalyze.redact import redact, redact_expr, redact_frame, redact_obj
from loganalyze.report import build_report
from loganalyze.report import charts
from loganalyze.report.model import template_expr

from conftest import ROOT

CHROMIUM = Path("/usr/bin/chromium")
REPORTS = ROOT / "reports"

PAYLOADS = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')

# Letters only, so that with --no-redact they survive the digit masking of unparsed templates.
SECRETS = {
    "api_key= in server args": "PLANTEDapikeyVALUE",
    "user:password@ in a URL (drafter path)": "PLANTEDurlPASSWORD",
    "--api-key flag": "PLANTEDcliKEY",
    "Hugging Face token": "hf_PLANTEDhuggingfaceTOKENabcdefgh",
    "OpenAI-style key": "sk-PLANTEDopenaiKEYabcdefghij",
    "*_TOKEN= environment": "PLANTEDenvTOKEN",
    "*_PASSWORD= environment": "PLANTEDenvPASSWORD",
    "*_SECRET= environment": "PLANTEDenvSECRET",
    "*_KEY= environment": "PLANTEDenvKEY",
    "Authorization: Bearer": "PLANTEDbearerTOKEN",
    "user:password@ in a URL": "PLANTEDurlPASS",
    "AWS access key": "AKIAPLANTEDAWSKEYABC",
}


def planted_log(path: Path) -> Path:
    """An SGLang log at a concurrency cap of 48 whose lines carry every kind of secret and HTML payload."""
    lines = [
        "[2026-03-03 09:12:41] server_args=ServerArgs(model_path='<script>alert(1)</script>', "
        "api_key='PLANTEDapikeyVALUE', tp_size=8, max_running_requests=48, speculative_algorithm='EAGLE3', "
        "speculative_draft_model_path='https://bob:PLANTEDurlPASSWORD@models.example/drafter', "
        "speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4)",
        "python -m sglang.launch_server --api-key PLANTEDcliKEY --hf-token hf_PLANTEDhuggingfaceTOKENabcdefgh",
        "export OPENAI_API_KEY=sk-PLANTEDopenaiKEYabcdefghij HF_TOKEN=PLANTEDenvTOKEN",
        "env DB_PASSWORD=PLANTEDenvPASSWORD MY_SECRET=PLANTEDenvSECRET WANDB_KEY=PLANTEDenvKEY",
        "curl -H 'Authorization: Bearer PLANTEDbearerTOKEN' https://alice:PLANTEDurlPASS@api.example/v1",
        "aws configure AKIAPLANTEDAWSKEYABC",
        *PAYLOADS,
    ]
    for i in range(30):
        queue = 80 if i % 3 else 0
        lines.append(f"[2026-03-03 09:50:{i:02d} TP0] Decode batch, #running-req: 48, #token: 40145, token usage: "
                     f"0.17, accept len: 1.7{i % 10}, accept rate: 0.43, cuda graph: True, gen throughput "
                     f"(token/s): 39{i % 10}.85, #queue-req: {queue}, {' '.join(PAYLOADS)}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def planted(tmp_path, ingest_one):
    _, run = ingest_one(planted_log(tmp_path / "planted.log"), name="planted")
    return run


def cli(run: la.Run, *args: str) -> str:
    result = CliRunner().invoke(main, [*args, "--store", str(run.store.root)], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.output


def outside_code(markdown: str) -> str:
    """Markdown with fenced blocks and code spans removed: what a renderer would treat as markup."""
    text = re.sub(r"^(```|~~~~)\n.*?^\1$", "", markdown, flags=re.S | re.M)
    return re.sub(r"``.*?``|`[^`\n]*`", "", text)


# (a) log text is escaped

def without_scripts(page: str) -> str:
    """The page less its <script> elements (the Vega bundle holds tags of its own, in JS strings)."""
    return re.sub(r"<script\b.*?</script>", "", page, flags=re.S)


def test_log_text_is_escaped_in_the_html(planted):
    page = build_report([planted], None)
    for payload in PAYLOADS:
        assert payload not in page
        assert html.escape(payload, quote=True) in page  # shown as text, in evidence and config
    markup = without_scripts(page)
    assert "<img" not in markup and "<script" not in markup


def test_log_text_is_literal_in_markdown(planted):
    text = build_report([planted], None, fmt="md")
    assert PAYLOADS[0] in text  # inside the evidence block, where Markdown shows it as written
    markup = outside_code(text)
    assert not re.search(r"(?<!\\)<(script|img)", markup)  # escaped as \<script elsewhere


# (b) secrets appear in no output

def test_redact_each_kind_plain_and_vectorised():
    text = planted_log(Path(tempfile.mkdtemp()) / "x.log").read_text()
    clean = redact(text)
    for kind, secret in SECRETS.items():
        assert secret in text
        assert secret not in clean, kind
    frame = pl.DataFrame({"line": text.splitlines(), "n": range(len(text.splitlines()))})
    assert redact_frame(frame)["line"].to_list() == clean.splitlines()
    assert pl.select(redact_expr(pl.lit(text))).item() == clean
    assert redact_obj({"k": [text], "n": 1}) == {"k": [clean], "n": 1}


@pytest.mark.parametrize("line", [
    "[2026-08-14 14:02:47 TP0] Decode batch, #running-req: 3, #token: 266624, token usage: 0.43, accept len: 1.67",
    "--max-total-tokens 1000 --speculative-num-draft-tokens 4 --tokenizer-path /models/x",
    "---------------Inter-token Latency----------------",
    "INFO: 127.0.0.1:42472 - \"POST /v1/completions HTTP/1.1\" 200 OK",
    "max_total_num_tokens=234094, chunked_prefill_size=8192, max_prefill_tokens=16384",
])
def test_redact_leaves_ordinary_lines_alone(line):
    assert redact(line) == line


def test_redaction_is_stable():
    once = redact("a --api-key=x1 and api_key='y2' Authorization: Bearer z3")
    assert redact(once) == once and "REDACTED]" not in once


def test_no_secret_in_any_output(planted, tmp_path):
    outputs = {f"show {f}": cli(planted, "show", "planted", "--format", f) for f in ("text", "json")}
    outputs |= {f"diagnose {f}": cli(planted, "diagnose", "planted", "--format", f) for f in ("text", "json", "md")}
    outputs |= {f"metrics {f}": cli(planted, "metrics", "planted", "--format", f) for f in ("text", "json", "csv")}
    outputs |= {f"compare {f}": cli(planted, "compare", "planted", "--format", f) for f in ("text", "md", "json", "csv")}
    for table in ("config", "stats", "unparsed"):
        outputs |= {f"query {table} {f}": cli(planted, "query", f"SELECT * FROM {table}", "--format", f)
                    for f in ("table", "json", "csv")}
    for fmt in ("html", "md"):
        target = tmp_path / f"r.{fmt}"
        cli(planted, "report", "planted", "-o", str(target))
        outputs[f"report {fmt}"] = target.read_text()
    for name, text in outputs.items():
        leaked = [kind for kind, secret in SECRETS.items() if secret in text]
        assert not leaked and "PLANTED" not in text, f"{name} leaks {leaked}"
    assert "REDACTED" in outputs["show text"] and "REDACTED" in outputs["report html"]


def test_no_redact_keeps_secrets(planted, tmp_path):
    target = tmp_path / "r.md"
    cli(planted, "report", "planted", "-o", str(target), "--no-redact")
    assert "PLANTEDurlPASSWORD" in target.read_text()  # so the test above is not vacuous
    assert "PLANTEDurlPASSWORD" in cli(planted, "diagnose", "planted", "--no-redact", "--format", "json")


def test_unparsed_templates_mask_numbers_after_redacting():
    frame = pl.DataFrame({"text": ["req 123 at 0xdeadBEEF id 9f86d081884c7d65 key sk-abc123def456ghi789jkl"]})
    assert frame.select(template_expr(pl.col("text"), redact=True)).item() == "req # at # id # key REDACTED"


# (c) nothing loads from the network

def test_csp_and_no_external_references(planted):
    page = build_report([planted], None)
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp and "default-src &#x27;none&#x27;" in csp.group(1) and "http" not in csp.group(1)
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert "<link" not in page and "@import" not in page
    assert page.count("window.vegaEmbed=") == 1 and page.count("vegaEmbed(el") == 1  # one bundle, one loop


def test_chart_data_is_downsampled():
    n = 500_000
    timeline = pl.DataFrame({
        "ts": pl.datetime_range(pl.datetime(2026, 1, 1), pl.datetime(2026, 1, 1) + pl.duration(seconds=n - 1), "1s",
                                eager=True),
        "line_no": range(n), "running": [48] * n, "queued": [i % 80 for i in range(n)],
        "token_usage": [0.5] * n, "gen_throughput": [900.0] * n, "retracted": [int(i % 100_000 == 0) for i in range(n)],
    })
    fam = Family("concurrency", {"cap": 48, "cap_source": "config"}, {"timeline": timeline})
    for draw in (charts.running_vs_cap, charts.kv_usage, charts.gen_throughput):
        spec = charts.spec(draw(fam))
        assert len(spec) < 80_000, draw.__name__
    assert '"retracted"' in charts.spec(charts.kv_usage(fam))


def test_absent_families_draw_nothing(planted):
    empty = Family("concurrency", {}, {})
    assert all(kind.draw(empty) is None for kind in charts.PER_RUN + charts.COMPARED)


def test_report_command_infers_markdown_from_suffix(planted, tmp_path):
    out = cli(planted, "report", "planted", "-o", str(tmp_path / "x.md"))
    assert "md" in out and (tmp_path / "x.md").read_text().startswith("# loganalyze report: planted")


# (d) a real browser renders every chart

def dump_dom(page: Path, screenshot: Path | None = None) -> str:
    """Headless Chromium's DOM after the scripts ran (and a screenshot, when asked)."""
    profile = tempfile.mkdtemp()
    base = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
            "--virtual-time-budget=10000", "--hide-scrollbars"]
    try:
        if screenshot:
            subprocess.run(base + ["--window-size=1200,5200", f"--screenshot={screenshot}", page.as_uri()],
                           capture_output=True, timeout=120, check=True)
        return subprocess.run(base + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120,
                              check=True).stdout
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def rendered_charts(dom: str) -> dict[str, str]:
    """Each chart's id -> '' when it drew an SVG with marks, else what is wrong."""
    out = {}
    for match in re.finditer(r'id="(chart-\d+)"', dom):
        block = dom[match.start():dom.find("</figure>", match.start())]
        problems = [what for what, ok in (
            ("no svg", 'role="graphics-document"' in block),
            ("no marks", bool(re.search(r'class="mark-(?:line|area|rect|symbol) role-mark[^>]*>\s*<path[^>]*\bd="M',
                                        block))),
            ("not rendered", 'data-rendered="true"' in dom[match.start() - 200:match.start() + 200]),
            ("error text", "chart-error" not in block and "failed to render" not in block),
        ) if not ok]
        out[match.group(1)] = ", ".join(problems)
    return out


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium absent (apt-get install chromium; CI installs it)")
def test_browser_renders_every_chart(planted, tmp_path):
    page = tmp_path / "planted.html"
    page.write_text(build_report([planted], None))
    dom = dump_dom(page)
    results = rendered_charts(dom)
    assert len(results) >= 4 and not any(results.values()), results
    assert html.escape(PAYLOADS[0]) in dom and "<img src=\"x\"" not in dom


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium absent (apt-get install chromium; CI installs it)")
def test_browser_renders_the_example_comparison():
    """The three-run comparison holds every chart the single-run example has, and more."""
    page = REPORTS / "reference-comparison.html"
    if not page.exists():
        pytest.skip(f"{page} not built (make reports)")
    dom = dump_dom(page, REPORTS / "reference-comparison.png")  # the screenshot is kept, gitignored
    results = rendered_charts(dom)
    assert results and not any(results.values()), results


# example reports: fresh and deterministic

def load_builder():
    sys.path.insert(0, str(REPORTS))
    try:
        import build
    finally:
        sys.path.remove(str(REPORTS))
    return build


def test_example_reports_are_fresh(tmp_path):
    """A rebuild from the fixtures with today's code gives the committed reports, byte for byte."""
    build = load_builder()
    missing = [f for files in build.RUNS.values() for f in files if not (ROOT / f).exists()]
    if missing:
        pytest.skip(f"reference fixtures missing: {missing}")
    for fresh in build.build(out_dir=tmp_path):
        committed = REPORTS / fresh.name
        assert committed.exists(), f"{committed} missing: run `make reports`"
        assert committed.read_bytes() == fresh.read_bytes(), \
            f"{committed.name} is stale (fixtures or loganalyze changed its content): run `make reports` and commit reports/"


def test_report_is_deterministic(planted):
    assert build_report([planted], None) == build_report([planted], None)
    assert json.dumps(build_report([planted], None, fmt="md")) == json.dumps(build_report([planted], None, fmt="md"))
