"""loganalyze: from LLM inference server logs to root causes.

The library does the work; the `loganalyze` command is a thin layer over it.

    import loganalyze as la
    result = la.ingest(["server.log"], run="run42")
    run = la.open_run("run42")
    run.table("stats").collect()
"""

from loganalyze.errors import LoganalyzeError
from loganalyze.ingest import ingest
from loganalyze.run import Run, open_run

__all__ = ["LoganalyzeError", "Run", "ingest", "open_run"]
__version__ = "0.1.0"
