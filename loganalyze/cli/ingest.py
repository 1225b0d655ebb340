"""`loganalyze ingest`: log files into the run store."""

from __future__ import annotations

import click

from loganalyze.cli.common import STORE, fmt_option
from loganalyze.escape import one_line, terminal
from loganalyze.ingestion import ingest as do_ingest
from loganalyze.ingestion.executors import EXECUTORS
from loganalyze.labels import parse_labels
from loganalyze.progress import ProgressBar
from loganalyze.render import print_json, render_ingest
from loganalyze.store import open_store


@click.command()
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

    PATHS are server logs (SGLang, vLLM), NCCL logs or benchmark outputs, plain (UTF-8 or
    UTF-16), .gz, .zst, .xz or .bz2; a folder stands for every file below it (unpack a .zip or
    .tar archive into one); '-' reads standard input;
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
    for src in result.sources:
        if src.bad_utf8:
            click.echo(f"loganalyze: warning: {terminal(one_line(src.path))}: {src.bad_utf8} bytes were not valid UTF-8 and were "
                       "replaced", err=True)
