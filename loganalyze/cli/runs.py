"""The commands on the store's runs: `runs` lists them, `show` one, `rm` removes one, `check`
reads every table file against the catalog."""

from __future__ import annotations

import sys

import click

import loganalyze
from loganalyze.cli.common import STORE, complete_runs, fmt_option
from loganalyze.render import print_json, render_runs, render_show
from loganalyze.store import open_store


@click.command()
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
    from loganalyze.runs import select_runs

    s = open_store(store)
    listing = {"store": str(s.root), "runs": select_runs(s.runs(), since, engine)}
    if out_format == "json":
        print_json(listing)
    else:
        click.echo(render_runs(listing))


@click.command()
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


@click.command("rm")
@click.argument("run", shell_complete=complete_runs)
@STORE
@click.option("-y", "--yes", is_flag=True, help="Remove without asking.")
def rm(run, store, yes):
    """Remove a run from the store: its catalog entry first, then its table files.

    \b
    Example:
      loganalyze rm run42 --yes
    """
    from loganalyze.runs import remove_run

    s = open_store(store)
    info = s.run(run)
    if not yes:
        lines = sum(src.get("lines", 0) for src in info["sources"])
        click.confirm(f"remove run {run} ({len(info['sources'])} source(s), {lines:,} lines) from {s.root}?",
                      abort=True)
    remove_run(run, s)
    click.echo(f"removed run {run}")


@click.command("check")
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
