"""What every vLLM line shares: the header in front of its message (the prefix that parsing
splits off, the stamp detection and version hints look for, where a record starts inside a
glued line), a header for sample lines, and the constructor of event kinds."""

from __future__ import annotations

from loganalyze.formats.spec import LineKind

LEVEL = "DEBUG|INFO|WARNING|ERROR|CRITICAL"
PREFIX = (
    r"^(?:[ \t│]*(?:\((?P<process>[^()]*?pid=\d+[^()]*)\) )?"
    # (the clock without its seconds where a paste or a logging config dropped them: vllm/231 of hold-out 14)
    rf"(?:(?P<level>{LEVEL}) (?P<ts>\d\d-\d\d \d\d:\d\d(?::\d\d)?) \[?[\w./-]+?\.py:\d+\](?: |$)"
    rf"|(?P<ts__2>\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d)(?:[,.]\d+)? - [\w.]+ - (?P<level__2>{LEVEL}) - ))?"
    r"(?:\[rank(?P<rank>\d+)\]: ?)?"
    r"(?P<msg>.*?)(?: \([\w.]+\.py:\d+\))?[ \t│]*$"
)

H = "INFO 08-11 10:45:20 [api_server.py:1755] "  # a header for samples written from a format string

# The default header, for detection and version hints: before 0.8 no `[` before the file.
STAMP = rf"^\s*(?:│ )?(?:\([^()]*pid=\d+[^()]*\) )?(?:{LEVEL}) \d\d-\d\d \d\d:\d\d(?::\d\d)? "
HEADER = STAMP + r"\[?[\w./-]+?\.py:\d+\] "

# What starts a record anywhere in a line (loganalyze/formats/glued.py): the header (level, month-day
# clock, file:line) with or without a stats message after it, or a stats message glued on
# without its header. A process tag in front of a header goes with it (loganalyze/formats/glued.py).
STATS_START = r"(?:Engine \d+: )?Avg prompt throughput: "
RECORD_HEADER = rf"(?:{LEVEL}) \d\d-\d\d \d\d:\d\d:\d\d \[?[\w./-]+?\.py:\d+\] "
RECORD_START = rf"{RECORD_HEADER}(?:{STATS_START})?|{STATS_START}"


def event(name: str, needle, pattern: str | None, severity: str, samples: tuple[str, ...], **kw) -> LineKind:
    """An `events` kind whose named groups go to `fields`, with a fixed severity."""
    return LineKind(
        name=name, table="events", needle=needle, pattern=pattern, pack="fields", message=True,
        const={"severity": severity}, samples=samples, **kw,
    )

