"""loganalyze: from LLM inference server logs to root causes.

The library does the work; the `loganalyze` command is a thin layer over it.

    import loganalyze as la
    result = la.ingest(["server.log"], run="run42")
    run = la.open_run("run42")
    run.table("stats").collect()
    run.diagnose()                      # findings; run.metrics(), run.charts(), run.report("r.html")
    la.query("SELECT run, max(running) FROM stats GROUP BY run").collect()
    la.load_formats(["my_formats/"])    # user-defined formats (docs/formats.md)

docs/python-api.md has a worked session.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from loganalyze.errors import LoganalyzeError
from loganalyze.ingestion import ingest
from loganalyze.query import query
from loganalyze.api import Run, open_run
from loganalyze.version import __version__

if TYPE_CHECKING:
    from loganalyze.formats.definition import UserFormat

__all__ = ["LoganalyzeError", "Run", "ingest", "load_formats", "open_run", "query"]


def load_formats(paths: Iterable[str | Path] | None = None) -> list[UserFormat]:
    """Load and install format definitions (files, or folders of *.toml/*.json; default
    $LOGANALYZE_FORMATS) for the rest of the process; see docs/formats.md.

    A function here rather than an import, because loganalyze.formats.userformat imports this package.
    """
    from loganalyze.formats.userformat import load_formats as load

    return load(paths)
