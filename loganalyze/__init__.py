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

from loganalyze.errors import LoganalyzeError
from loganalyze.ingest import ingest
from loganalyze.query import query
from loganalyze.run import Run, open_run
from parsers.userformat import load_formats

__all__ = ["LoganalyzeError", "Run", "ingest", "load_formats", "open_run", "query"]
__version__ = "0.1.0"
