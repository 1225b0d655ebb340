"""The `loganalyze` command: a thin click layer over the library.

Each command calls one public function and prints its result as text or JSON. Errors
the user can fix (LoganalyzeError) become one line on stderr and exit code 2 (common.py).
The commands are grouped by what they work on: ingest.py, runs.py (the store's runs),
analysis.py (metrics, findings, comparisons, reports), tables.py (query, export),
fleet.py, formats.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

import loganalyze
from loganalyze.cli import analysis, fleet, ingest, runs, tables
from loganalyze.cli import formats as format_commands
from loganalyze.cli.common import Group


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


for command in (ingest.ingest, runs.runs, runs.show, analysis.metrics_cmd, analysis.diagnose, analysis.compare,
                analysis.report, runs.check_cmd, tables.query, tables.export_cmd, runs.rm, fleet.fleet,
                format_commands.formats_cmd):
    main.add_command(command)
