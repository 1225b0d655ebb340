"""The `loganalyze` command: a thin click layer over the library.

Each command calls one public function and prints its result as text or JSON. Errors
the user can fix (LoganalyzeError) become one line on stderr and exit code 2.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

import loganalyze
from loganalyze.errors import LoganalyzeError
from loganalyze.ingestion import ingest as do_ingest
from loganalyze.ingestion.executors import EXECUTORS
from loganalyze.labels import parse_labels
from loganalyze.progress import ProgressBar
from loganalyze.diagnosis import diagnose as run_diagnosis
from loganalyze.metrics import compute as compute_metrics
from loganalyze.regression import failed, parse_limit, regressions
from loganalyze.render import (metrics_csv, print_json, render_findings_md, render_findings_text, render_ingest,
                               render_metrics, render_runs, render_show)
from loganalyze.store import open_store

STORE = click.option("--store", default=None,
                     help="Run store: a folder or s3://bucket/prefix (default: $LOGANALYZE_STORE, else "
                          "~/.local/share/loganalyze).")


def fmt_option(*choices: str):
    return click.option("--format", "out_format", type=click.Choice(choices), default=choices[0],
                        show_default=True, help="Output format.")


def fail(message: str) -> None:
    """One line on stderr, secrets redacted and control characters made visible, and exit 2."""
    from loganalyze.escape import one_line, terminal
    from loganalyze.redact import redact

    click.echo(f"loganalyze: error: {terminal(one_line(redact(message)))}", err=True)
    sys.exit(2)


class Group(click.Group):
    """Every failure is one line on stderr and exit 2, never a traceback: LoganalyzeError,
    click's usage errors (a bad option value) and, unless $LOGANALYZE_TRACEBACK is set
    (the tests set it, so that a bug shows its traceback there), any other exception,
    reported as an internal error."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as e:
            where = f"{e.ctx.command_path} --help" if e.ctx else "loganalyze --help"
            fail(f"{e.format_message()} (see {where})")
        except click.ClickException as e:
            click.echo(f"loganalyze: error: {e.format_message()}", err=True)
            sys.exit(e.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except LoganalyzeError as e:
            fail(str(e))
        except BrokenPipeError:
            ctx.exit(0)
        except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt):
            raise
        except Exception as e:
            if os.environ.get("LOGANALYZE_TRACEBACK"):
                raise
            fail(f"internal error ({type(e).__name__}: {e}); please report it, with the command "
                 "(LOGANALYZE_TRACEBACK=1 shows the traceback)")


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(loganalyze.__version__, prog_name="loganalyze")
@click.option("--formats", multiple=True, envvar="LOGANALYZE_FORMATS", type=click.Path(exists=True, path_type=Path),
              help="Format definitions to load: a .toml/.json file or a folder of them; repeatable "
                   "[default: $LOGANALYZE_FORMATS, ':'-separated]. See docs/formats.md.")
@click.option("--s3-endpoint", envvar="LOGANALYZE_S3_ENDPOINT", default=None,
              help="Endpoint of an S3-compatible object store for s3:// stores and inputs (MinIO, Ceph, ...) "
                   "[default: $LOGANALYZE_S3_ENDPOINT, else $AWS_ENDPOINT_URL, else AWS].")
def main(formats, s3_endpoint) -> None:
    """Find why an LLM inference deployment is slow, from its logs.

    \b
    loganalyze ingest server.log bench.jsonl --run run42   # logs -> Parquet run store
    loganalyze diagnose run42                              # root causes, with evidence
    loganalyze report run42 -o run42.html                  # one self-contained HTML file
    """
    loganalyze.load_formats(formats)
    if s3_endpoint:  # read where stores are opened, Ray workers included (they inherit the environment)
        os.environ["LOGANALYZE_S3_ENDPOINT"] = s3_endpoint


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--run", "run", default=None, help="Run to add to (default: a new run<N>).")
@STORE
@click.option("--as", "as_format", default=None, help="Force the input format instead of detecting it.")
@click.option("--year", type=click.IntRange(1970, 9999), default=None,
              help="Year for logs whose timestamps print none (vLLM), 1970-9999.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("--executor", type=click.Choice(EXECUTORS), default="local", show_default=True,
              help="Where files are parsed: here, one after another, or as Ray tasks, one per file "
                   "(pip install 'loganalyze[ray]'; $RAY_ADDRESS, else a local cluster).")
@click.option("--engine", "old_executor", type=click.Choice(EXECUTORS), default=None, hidden=True,
              help="Deprecated name of --executor.")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE",
              help="Label every source (repeatable): cluster=a, host=b, ... become query columns and "
                   "name servers in `fleet summary`.")
@click.option("--strict", is_flag=True, help="Fail when any file is of no known format (default: skip it and say so).")
@fmt_option("text", "json")
def ingest(paths, run, store, as_format, year, quiet, executor, old_executor, labels, strict, out_format):
    """Parse log files into the run store.

    PATHS are server logs (SGLang, vLLM), NCCL logs or benchmark outputs, plain, .gz or
    .zst; a folder stands for every file below it; '-' reads standard input;
    s3://bucket/key names objects, and quoted globs ('s3://logs/2026-11-29/**/*.log.gz')
    are expanded. A file of no known format, or of which its format reads no line (a README,
    a script), is skipped and listed with the reason (exit 0 unless nothing was ingested;
    --strict makes it an error). Every line ends in a typed table
    or, with its line number, in `unparsed`; the counts are printed. Ingesting the same
    file into the same run again adds nothing. Many files are committed 1,000 at a time
    (or 1 GiB): if the ingest stops part-way, the same command with --run adds the rest.
    Concurrent ingests into one store are safe: a local store is locked, an s3:// store's
    catalog is written conditionally (If-Match), which the object store must support (AWS
    S3 and moto do); otherwise serialise the writers yourself.

    \b
    Example:
      loganalyze ingest server.log nccl.log --run run42
      loganalyze ingest run42/ --run run42          # a folder of logs and client outputs
      kubectl logs sglang-0 | loganalyze ingest - --run prod
      loganalyze ingest 's3://logs/2026-11-29/**/*.log.gz' --store s3://fleet/store --executor ray
    """

    if old_executor:  # users' scripts have it; "engine" now means the inference engine only
        click.echo("loganalyze: --engine is deprecated, use --executor (the same values)", err=True)
        executor = old_executor
    bar = ProgressBar(enabled=not quiet and executor == "local")
    result = do_ingest(paths, run=run, store=open_store(store), as_format=as_format, year=year, progress=bar.update,
                       executor=executor, labels=parse_labels(labels), strict=strict)
    bar.close()
    if out_format == "json":
        print_json(result.to_dict())
    else:
        click.echo(render_ingest(result))
    from loganalyze.escape import one_line, terminal

    for src in result.sources:
        if src.bad_utf8:
            click.echo(f"loganalyze: warning: {terminal(one_line(src.path))}: {src.bad_utf8} bytes were not valid UTF-8 and were "
                       "replaced", err=True)


@main.command()
@STORE
@fmt_option("text", "json")
@click.option("--since", type=click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"]), default=None,
              help="Only runs created at or after this date or time (UTC).")
@click.option("--engine", default=None, help="Only runs with a source in this format (sglang, vllm, nccl, bench, ...).")
def runs(store, out_format, since, engine):
    """List the runs in the store, and where the store is.

    \b
    Example:
      loganalyze runs --format json
      loganalyze runs --since 2025-06-01 --engine vllm
    """
    from loganalyze.catalog import select_runs

    s = open_store(store)
    listing = {"store": str(s.root), "runs": select_runs(s.runs(), since, engine)}
    if out_format == "json":
        print_json(listing)
    else:
        click.echo(render_runs(listing))


@main.command()
@click.argument("run")
@STORE
@fmt_option("text", "json")
@click.option("--no-redact", is_flag=True, help="Keep secrets (API keys, tokens, passwords) in the output.")
def show(run, store, out_format, no_redact):
    """Show a run: its sources, table sizes and configuration.

    \b
    Example:
      loganalyze show run42 --format json | jq .config.max_running_requests
    """
    r = loganalyze.open_run(run, open_store(store))
    data = {"run": run, "sources": r.info["sources"], "tables": r.tables(), "config": r.config()}
    if out_format == "json":
        print_json(data, redact=not no_redact)
    else:
        click.echo(render_show(data, redact=not no_redact))


@main.command("metrics")
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


@main.command()
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
    if max_regression and not base:
        raise LoganalyzeError("--max-regression needs --baseline RUN")
    limit = parse_limit(max_regression) if max_regression else None
    computed = compute_metrics(r)
    base_computed = compute_metrics(base) if base else None
    findings = run_diagnosis(r, base, computed, base_computed)
    worse = regressions(computed, base_computed, limit) if limit is not None else []
    if out_format == "json":
        print_json({"run": run, "baseline": baseline, "findings": [f.to_dict() for f in findings],
                    **({"regressions": worse} if max_regression else {})}, redact=not no_redact)
    elif out_format == "md":
        click.echo(render_findings_md(run, findings, redact=not no_redact))
    else:
        click.echo(render_findings_text(run, findings, redact=not no_redact))
    for w in worse:
        click.echo(f"loganalyze: regression: {w['metric']} {w['run']:,.1f} vs {w['baseline']:,.1f} in {baseline} "
                   f"({w['regression']:.0%} worse, limit {max_regression})", err=True)
    if failed(findings, fail_on, worse):
        sys.exit(1)


@main.command()
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


@main.command()
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


@main.command("check")
@click.option("--repair", is_flag=True, help="Remove what cannot be read (damaged sources whole) and say what was lost.")
@STORE
@fmt_option("text", "json")
def check_cmd(repair, store, out_format):
    """Check the store: every table file read in full against the catalog.

    Exit 1 when something is damaged (and not repaired). Leftovers of an interrupted
    ingest are listed; the next ingest or --repair removes them.

    \b
    Example:
      loganalyze check
      loganalyze check --repair --format json
    """
    from loganalyze.check import check as check_store

    result = check_store(open_store(store), repair=repair)
    if out_format == "json":
        print_json(result.to_dict())
    else:
        from loganalyze.escape import terminal
        from loganalyze.redact import redact

        click.echo(terminal(redact(result.text())))  # input paths come from the catalog
    sys.exit(0 if result.ok else 1)


def complete_runs(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of run names, from the store given on the command line so far."""
    try:
        return sorted(r for r in open_store(ctx.params.get("store")).runs() if r.startswith(incomplete))
    except LoganalyzeError:
        return []


@main.command()
@click.argument("sql")
@click.option("--run", "runs", multiple=True, shell_complete=complete_runs,
              help="Only this run (repeatable) [default: every run].")
@STORE
@click.option("--format", "out_format", type=click.Choice(["table", "csv", "json", "ndjson", "parquet"]), default=None,
              help="Output format [default: from the -o extension, else table].")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the result to this file instead of standard output.")
@click.option("--where", "where", multiple=True, metavar="COLUMN=VALUE",
              help="Only sources with this partition value (repeatable): date=2026-11-29, cluster=a, host=b, "
                   "engine=vllm or another label; prunes files before reading.")
@click.option("--no-redact", is_flag=True, help="Keep secrets (API keys, tokens, passwords) in the result.")
def query(sql, runs, store, out_format, output, where, no_redact):
    """Run SQL (polars SQL) over the store's tables.

    Tables: stats, config, events, requests, unparsed, spec and the tables formats add
    (nccl_links, bench, ...), each holding every selected run, with a `run` column and
    the partition columns date, cluster, host, engine (and other --label keys). Only
    what the query needs is read; with -o FILE.parquet, .csv or .jsonl the result streams
    to the file, and csv, json and ndjson stream to standard output; `table` shows the
    first 50 rows (only those are computed): use LIMIT/OFFSET, or another format, for more.
    The query reads the store only: table functions that open files or URLs (read_csv,
    read_parquet, ...) are refused. Secrets in strings (API keys, tokens, passwords) are
    redacted before the query sees them, unless --no-redact.

    \b
    Example:
      loganalyze query "SELECT run, max(running) AS peak FROM stats GROUP BY run"
      loganalyze query "SELECT key, value FROM config WHERE key LIKE 'spec%'" --run run42
      loganalyze query "SELECT * FROM events WHERE severity = 'critical'" -o critical.csv
    """
    from loganalyze import export
    from loganalyze.escape import terminal
    from loganalyze.query import query as run_query

    fmt = out_format or (export.format_of(output) if output else None) or "table"
    if fmt == "parquet" and output is None:
        raise LoganalyzeError("parquet is binary: write it to a file with -o FILE.parquet")
    result = run_query(sql, runs, open_store(store), where=parse_labels(where), redact=not no_redact)
    if output is not None and fmt != "table":
        export.write(result, output, fmt)
        click.echo(f"wrote {output} ({fmt})", err=True)
    elif output is not None:
        export.write_text(output, export.table_text(result) + "\n")
    elif fmt == "table":
        click.echo(terminal(export.table_text(result)))
    else:
        sys.stdout.flush()
        export.stream(result, fmt, sys.stdout.buffer, for_terminal=sys.stdout.isatty())


@main.command("export")
@click.argument("run", shell_complete=complete_runs)
@click.option("--table", "tables", multiple=True,
              help="Table to export (repeatable) [default: every table the run has rows in].")
@STORE
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="A file (.parquet, .csv, .json, .jsonl: one table) or a folder (one file per table).")
@click.option("--format", "out_format", type=click.Choice(["parquet", "csv", "json", "ndjson"]), default=None,
              help="Format of the files in a folder [default: parquet]; a file's extension decides its own.")
@click.option("--no-redact", is_flag=True, help="Keep secrets (API keys, tokens, passwords) in the files.")
def export_cmd(run, tables, store, output, out_format, no_redact):
    """Write a run's tables to Parquet, CSV or JSON files.

    CSV cells hold lists and structs (the `extra` column, say) as JSON text. Secrets in
    strings (API keys, tokens, passwords) are redacted unless --no-redact.

    \b
    Example:
      loganalyze export run42 -o run42/                  # run42/stats.parquet, run42/config.parquet, ...
      loganalyze export run42 --table stats -o stats.csv
    """
    from loganalyze.export import export_run

    for path in export_run(run, output, tables, out_format, open_store(store), redact=not no_redact):
        click.echo(f"wrote {path}")


@main.command("rm")
@click.argument("run", shell_complete=complete_runs)
@STORE
@click.option("-y", "--yes", is_flag=True, help="Remove without asking.")
def rm(run, store, yes):
    """Remove a run from the store: its catalog entry first, then its table files.

    \b
    Example:
      loganalyze rm run42 --yes
    """
    from loganalyze.catalog import remove_run

    s = open_store(store)
    info = s.run(run)
    if not yes:
        lines = sum(src.get("lines", 0) for src in info["sources"])
        click.confirm(f"remove run {run} ({len(info['sources'])} source(s), {lines:,} lines) from {s.root}?",
                      abort=True)
    remove_run(run, s)
    click.echo(f"removed run {run}")


@main.group()
def fleet():
    """Many servers at once: runs ingested with --label cluster=a --label host=b."""


@fleet.command("summary")
@STORE
@click.option("--since", default="1d", show_default=True, help="Runs created since: 30m, 12h, 1d, 2w or a date (UTC).")
@click.option("--where", "where", multiple=True, metavar="COLUMN=VALUE",
              help="Only sources with this partition value (repeatable), e.g. cluster=a.")
@fmt_option("text", "json")
def fleet_summary(store, since, where, out_format):
    """List the servers with findings, worst first.

    A server is a source's cluster and host labels (without a host label, the file name
    up to its first dot: logs/<day>/<cluster>/<host>.log.gz); each is diagnosed on its
    own logs.

    \b
    Example:
      loganalyze fleet summary --since 1d --store s3://fleet/store
      loganalyze fleet summary --since 2026-11-29 --where cluster=a --format json
    """
    from loganalyze.fleet import parse_since, render_summary, summary
    from loganalyze.escape import terminal
    from loganalyze.redact import redact

    data = summary(open_store(store), parse_since(since), parse_labels(where))
    if out_format == "json":
        print_json(data)
    else:
        click.echo(terminal(redact(render_summary(data))))  # host names come from labels and file names


@main.command("formats")
@click.option("--check", "check_target", metavar="FILE|NAME", default=None,
              help="Test a format file, or a known format by name, against its own samples instead; exit 1 if "
                   "one fails.")
@click.option("--dump", "dump_name", metavar="NAME", default=None,
              help="Write the built-in format NAME as a format file (TOML) to stdout instead: a starting point for "
                   "your own. Kinds that need Python handlers are in it commented out.")
@fmt_option("text", "json")
def formats_cmd(check_target, dump_name, out_format):
    """List the formats loganalyze reads: releases covered, line kinds, a sample of each.

    A format can be added without code, as a TOML or JSON file (docs/formats.md); load
    it with --formats or $LOGANALYZE_FORMATS. --check parses each sample line of a format
    with the whole format: it must be claimed by its own kind and yield its fields (the
    values a sample declares, exactly).

    \b
    Example:
      loganalyze formats
      loganalyze formats --check my_server.toml
      loganalyze formats --check vllm
      loganalyze formats --dump sglang > my_sglang.toml
      loganalyze --formats my_formats/ ingest server.log
    """
    from loganalyze import formatinfo

    if check_target is not None and dump_name is not None:
        raise LoganalyzeError("--check and --dump are separate commands: give one")
    if dump_name is not None:
        click.echo(formatinfo.dump_builtin(dump_name), nl=False)
        return
    if check_target is None:
        listing = formatinfo.describe()
        if out_format == "json":
            print_json(listing)
        else:
            click.echo(formatinfo.render_formats(listing))
        return
    label, name, results = formatinfo.check_target(check_target)
    if out_format == "json":
        print_json({"file": label, "format": name, "samples": [r.to_dict() for r in results]})
    else:
        click.echo(formatinfo.render_check(label, name, results))
    sys.exit(1 if any(r.problem for r in results) else 0)


if __name__ == "__main__":
    sys.exit(main())
