"""`loganalyze fleet`: many servers at once."""

from __future__ import annotations

import click

from loganalyze.cli.common import STORE, fmt_option
from loganalyze.labels import parse_labels
from loganalyze.render import print_json
from loganalyze.store import open_store


@click.group()
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
