"""One exception type for every problem the user can fix.

The CLI turns it into a one-line message and a non-zero exit; anything else is a bug
and deserves its traceback.
"""


class LoganalyzeError(Exception):
    """A problem with the user's input or store, described in one line."""
