"""The commands that take tables out of the store: `query` (SQL) and `export` (files)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from loganalyze.cli.common import STORE, complete_runs
from loganalyze.labels import parse_labels
from loganalyze.store import open_store


@click.command()
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

    fmt = export.result_format(out_format, output)
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


@click.command("export")
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
