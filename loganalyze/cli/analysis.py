"""The commands that analyse runs: `metrics`, `diagnose` (with its CI and deployment gates),
`compare`, `report`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

import loganalyze
from loganalyze.cli.common import STORE, fmt_option
from loganalyze.metrics import compute as compute_metrics
from loganalyze.regression import gate
from loganalyze.render import metrics_csv, print_json, render_findings_md, render_findings_text, render_metrics
from loganalyze.store import open_store


@click.command("metrics")
@click.argument("run")
@STORE
@fmt_option("text", "json", "csv")
@click.option("--no-redact", is_flag=True, help="Keep secrets (API keys, tokens, passwords) in the output.")
def metrics_cmd(run, store, out_format, no_redact):
    """Compute the run's metrics, grouped by family (concurrency, speculative, ...).

    \b
    Example:
      loganalyze metrics run42 --format json | jq .concurrency.cap
    """
    r = loganalyze.open_run(run, open_store(store))
    families = compute_metrics(r)
    if out_format == "json":
        print_json({"run": run, **{name: fam.to_dict() for name, fam in families.items()}}, redact=not no_redact)
    elif out_format == "csv":
        click.echo(metrics_csv(families, redact=not no_redact))
    else:
        click.echo(render_metrics(run, families, redact=not no_redact))


@click.command()
@click.argument("run")
@STORE
@click.option("--baseline", default=None, help="A run to compare against (e.g. the same server without speculation).")
@fmt_option("text", "json", "md")
@click.option("--fail-on", type=click.Choice(["warning", "critical"]), default=None,
              help="Exit 1 when a finding of this severity or worse exists (for CI).")
@click.option("--max-regression", default=None, metavar="PCT",
              help="With --baseline: exit 1 when throughput or latency is worse than the baseline by more than "
                   "PCT (e.g. 5%%): a deployment gate.")
@click.option("--no-redact", is_flag=True, help="Keep secrets (API keys, tokens, passwords) in the output.")
def diagnose(run, store, baseline, out_format, fail_on, max_regression, no_redact):
    """Find the root causes of slowness in a run, ranked by estimated impact.

    Each finding has an id, a severity, a verdict with numbers, evidence (file:line and
    the line) and the flag to change.

    \b
    Example:
      loganalyze diagnose run42
      loganalyze diagnose run42 --format json --fail-on critical   # CI gate
      loganalyze diagnose new --baseline old --max-regression 5%   # deployment gate
    """
    s = open_store(store)
    r = loganalyze.open_run(run, s)
    base = loganalyze.open_run(baseline, s) if baseline else None
    result = gate(r, base, fail_on, max_regression)
    if out_format == "json":
        print_json({"run": run, "baseline": baseline, "findings": [f.to_dict() for f in result.findings],
                    **({"regressions": result.regressions} if max_regression else {})}, redact=not no_redact)
    elif out_format == "md":
        click.echo(render_findings_md(run, result.findings, redact=not no_redact))
    else:
        click.echo(render_findings_text(run, result.findings, redact=not no_redact))
    for w in result.regressions:
        click.echo(f"loganalyze: regression: {w['metric']} {w['run']:,.1f} vs {w['baseline']:,.1f} in {baseline} "
                   f"({w['regression']:.0%} worse, limit {max_regression})", err=True)
    if result.failed:
        sys.exit(1)


@click.command()
@click.argument("runs", nargs=-1, required=True)
@STORE
@fmt_option("text", "md", "json", "csv")
@click.option("--no-redact", is_flag=True, help="Keep secrets (API keys, tokens, passwords) in the output.")
def compare(runs, store, out_format, no_redact):
    """Compare runs side by side: one row per run, deltas against the first.

    Engine, version, speculative settings, concurrency cap, single-stream and peak output
    throughput (with the concurrency of the peak) from the benchmark sweep, accept length
    and rate, TTFT and TPOT (p50 / p99) at the peak.

    \b
    Example:
      loganalyze compare vllm-baseline sglang-base sglang-eagle3
      loganalyze compare base eagle3 --format csv > compare.csv
    """
    from loganalyze.compare import compare as compare_runs
    from loganalyze.redact import redact_frame
    from loganalyze.render import render_compare_md, render_compare_text

    s = open_store(store)
    frame = compare_runs([loganalyze.open_run(r, s) for r in runs])
    if out_format == "json":
        print_json({"runs": list(runs), "rows": frame.to_dicts()}, redact=not no_redact)
    elif out_format == "csv":
        click.echo((frame if no_redact else redact_frame(frame)).write_csv(), nl=False)
    elif out_format == "md":
        click.echo(render_compare_md(frame, redact=not no_redact))
    else:
        click.echo(render_compare_text(frame, redact=not no_redact))


@click.command()
@click.argument("runs", nargs=-1, required=True)
@STORE
@click.option("--baseline", default=None, help="A run to diagnose against, shown as a column to compare with.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="File to write (.html, or .md for Markdown).")
@click.option("--format", "out_format", type=click.Choice(["html", "md"]), default=None,
              help="Output format [default: md for a .md file, else html].")
@click.option("--no-redact", is_flag=True, help="Keep secrets (API keys, tokens, passwords) in the report.")
def report(runs, store, baseline, output, out_format, no_redact):
    """Write one self-contained report: verdict, findings with evidence, charts, tables.

    Several RUNS make a comparison. The HTML file loads nothing from the network (the
    chart library is inlined), so it can be attached to a ticket; Markdown has the same
    content without charts, for GitHub or Jira.

    \b
    Example:
      loganalyze report run42 -o run42.html
      loganalyze report eagle3 base vllm --baseline base -o compare.html
    """
    from loganalyze.export import write_text
    from loganalyze.report import build_report

    s = open_store(store)
    fmt = out_format or ("md" if output.suffix.lower() == ".md" else "html")
    text = build_report([loganalyze.open_run(r, s) for r in runs],
                        loganalyze.open_run(baseline, s) if baseline else None, fmt=fmt, redact=not no_redact)
    write_text(output, text)
    click.echo(f"wrote {output} ({len(text.encode()):,} bytes, {fmt})")
