"""One exception type for every problem the user can fix.

The CLI turns it into a one-line message and a non-zero exit; anything else is a bug
and deserves its traceback.
"""


class LoganalyzeError(Exception):
    """A problem with the user's input or store, described in one line."""


class UnknownFormat(LoganalyzeError):
    """A file whose format no known format recognises: in a many-file ingest it is skipped
    with this reason, not fatal (unless --strict, or nothing else was ingested)."""
