"""What a deployment puts in front of a server's own line: found by shape, for every format.

A format's prefix knows how its release prints a line (`[2026-01-05 10:00:01 TP0] `,
`INFO 01-05 10:00:01 [loggers.py:122] `). Real logs arrive behind other leaders too: a
user's own Python logging format (`2026-01-05 10:00:01,123 - vllm.engine - INFO - `,
`INFO:vllm.engine:`), loguru's `| INFO |`, an MPI launcher's `[0] `, a ticket's `> `
quoting or `**` emphasis, a terminal's `^C` echo, a clock or epoch stamp, tqdm text glued
before a block, a `file.py:N` suffix. The engine peels such a leader off a line where its format's prefix
took nothing (and splits what is left with that prefix again) and off the message the
prefix found, so a known message is known behind any of them. The leader's timestamp
and level are kept.

Only lines whose start is one of these tokens are touched; the rest of a line is never
searched, so a message that merely contains a date stays as it is.
"""

from __future__ import annotations

import polars as pl

MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
LEVELS = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|NOTICE|TRACE"

ISO = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z| ?[+-]\d\d:?\d\d)?"
SLASH_DATE = r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)?"  # Go's log package: 2024/07/12 02:23:54
# TensorRT-LLM's Python logger: `[11/21/2024-10:26:10]`, month first.
US_DATE = r"\d\d/\d\d/\d{4}-\d\d:\d\d:\d\d(?:\.\d+)?"
MONTH_DAY = r"\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?"
SYSLOG = rf"(?:{MONTHS}) [ \d]\d \d\d:\d\d:\d\d"
CLOCK = r"\d\d:\d\d:\d\d(?:[.,]\d+)?"
EPOCH = r"1\d{9}(?:\.\d+)?"
# glog, the C++ libraries' logging (Mooncake's transfer engine, gRPC): a level letter, the
# date as MMDD or, in glog 0.7+, YYYYMMDD, the clock, a thread id and file:line.
GLOG = r"(?P<level__3>[IWEF])(?P<ts__3>(?:\d{4})?\d{4} \d\d:\d\d:\d\d\.\d+) +(?:\d+ +)?[\w./-]+:\d+\] ?"
# Ray's C++ logging (raylet, core_worker, its signal handler's `logging.cc`): the date and
# clock in brackets with a level letter, the process and thread ids, then file.cc:N.
RAY_CPP = rf"\[(?P<ts__4>{ISO}) (?P<level__5>[IWEF]) \d+ \d+\] [\w.-]+\.(?:cc|h):\d+: ?"
STAMP = rf"(?:{ISO}|{SLASH_DATE}|{US_DATE}|{MONTH_DAY}|{SYSLOG}|{CLOCK}|{EPOCH})"
# Bare, epoch seconds need their fraction: a table row starts with ten digits too (nccl-tests' 1073741824).
BARE_STAMP = rf"(?:{ISO}|{SLASH_DATE}|{MONTH_DAY}|{SYSLOG}|{CLOCK}|1\d{{9}}\.\d{{3,}})"

# Separators take one space, so the indentation of a traceback's frames stays the message's.
SEP = r"(?: - | *\| ?| |$)"  # not `:`: uvicorn's `INFO:     ` is a message
BAR = r"\d{1,3}%\|[^|]{0,200}\|[^\[\n]{0,80}\[[^\]\n]{0,120}\]\s*"
COMMENT = "# "  # output kept as comments in a script or a results file
LOGGER_COLON = (r"(?:(?:vllm|sglang|uvicorn|lmcache)(?:\.[a-z_][a-z0-9_]*)+|[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*){2,})"
                r": ")
# One leader token each, with what separates it from the next.
TOKENS = (
    r"\^C",  # the terminal's echo of Ctrl-C, glued before the next line the server prints
    r"> ?",  # quoted in a ticket or mail
    r"\*\*",  # Markdown emphasis
    r"`{1,3}",  # Markdown code quoting: an inline span or a fence glued to the first line
    GLOG,
    RAY_CPP,
    rf"\[(?P<ts>{STAMP})\] ?",  # a bracketed timestamp
    rf"(?P<ts__2>{BARE_STAMP})(?: - | *\| ?|\t| )",  # a bare timestamp
    rf"\[?(?P<level>{LEVELS})\]?{SEP}",
    rf"(?P<level__2>{LEVELS}):[A-Za-z_][\w.]*:",  # Python's basicConfig: INFO:vllm.engine:
    r"\[\d+(?:,\d+)?\](?:<std(?:out|err)>)?:? ?",  # MPI rank tags: [0], [1,0]<stdout>:
    # TensorRT-LLM's loggers: Python's `[TRT-LLM] [I] ` (a level letter), C++'s `[TensorRT-LLM][INFO] `.
    rf"\[TRT-LLM\] ?\[(?P<level__6>[IWEV])\] |\[TensorRT-LLM\](?:\[(?P<level__7>{LEVELS})\])? ?",
    r"\[?(?:(?:DP|TP|EP|PP|ATTN_CP|MOE_DP)\d+ ?)+\] ?",  # SGLang rank tags, leading `[` lost or not
    # A fork's or a user's logger around SGLang's: a pid, then rank tags and file:line in one
    # bracket (`INFO 120984 [ TP0 scheduler.py:3190] `, `INFO 8900 [ DP15 TP15 EP15 x.py:222] `).
    r"(?:\d{1,7} )?\[ ?(?:(?:DP|TP|EP|PP|ATTN_CP|MOE_DP)\d+ )+[\w.-]+\.py:\d+\] ?",
    r"\[[\w./-]+\.py:\d+\] ?|[\w.-]+\.py:\d+\] ?|[\w.-]+\.py:\d+(?: -- | |$)",  # file:line, not a warning's path:line:
    r"[A-Za-z_]\w*(?:\.\w+)+(?: - | *\| ?)",  # a dotted logger name: vllm.engine.metrics -
    # `%(name)s: %(message)s`: a module path, all lower case so that an exception's class
    # (`torch.OutOfMemoryError: `) stays its line's message, and three names deep or a
    # server's own package, so that `socket.timeout: timed out` does too.
    LOGGER_COLON,
    # `%(name)s - %(levelname)s: %(message)s`, evalscope's (`2026-03-17 14:10:22 - evalscope - INFO: `):
    # a level with a colon only behind a logger's name, as uvicorn's padded `INFO:     ` is a message.
    rf"[A-Za-z_][\w-]* - (?P<level__4>{LEVELS}): ",
    r"[A-Za-z_][\w-]* - ",  # an undotted logger name between ` - ` separators
    r"\(\w*(?:\((?:[^()]|\([^()]*\))*\))?\s*pid=\d+[^()]*\) ?",  # a Ray or vLLM process tag, an actor's `(args)` in its name
    r"[A-Za-z_]\w* pid=\d+[^()]*\) ",  # the same, its `(` lost in a paste (vllm/44)
    r"\d{1,7} \[[\w./-]+\.py:\d+\] ?",  # a process id before file:line: `INFO 2193 [scheduler.py:120] `
    BAR,  # a tqdm bar glued before a block
    # A date whose first characters a paste cut off (`025-06-23 18:55:20 TP0] `): its
    # year is lost, so it gives no timestamp.
    r"(?:\d{1,3}-|-)\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:\] ?| )",
)
# For formats whose own lines start with `#` (LogFormat.hash_lines), and inside a message.
LEADER_NO_COMMENT = "^(?:" + "|".join(f"(?:{t})" for t in TOKENS) + ")+"
# A comment mark comes first: after a prefix, `# ` is a message's own (vLLM's `# GPU blocks`).
LEADER = f"^(?:{COMMENT})?" + LEADER_NO_COMMENT[1:-1] + "*"
# What a leader can start with: a batch with no such line skips the leader regex.
# Tight on purpose: it runs on every line, and a line it passes pays for the full leader
# regex (uvicorn's `INFO:     127.0.0.1...`, most lines of a busy vLLM log, must not).
START = (rf"^(?:\^C|>|# |\*\*|`|[IWEF]\d{{4}}|\[|\d\d[-:]\d|\d{{4}}[-/]|\d{{1,3}}-\d\d-|-\d\d-\d\d |1\d{{9}}\.|\d{{1,7}} \[|\d{{1,3}}%\||(?:{MONTHS}) "
         rf"|(?:{LEVELS})(?:[ \]|]|:[A-Za-z_])|[A-Za-z_]\w*(?:\.\w+)+ *[-|]|{LOGGER_COLON}|[A-Za-z_][\w-]* - |\(\w*(?:\((?:[^()]|\([^()]*\))*\))?\s*pid=|[A-Za-z_]\w* pid=\d)")
# Ray's log deduplication ends a line it folded with ` [repeated 4x across cluster]`.
SUFFIX = r"(?:\s+\([\w./-]+\.py:\d+\)|\*\*|`{1,3}| \[repeated \d+x across cluster\])$"
# An indented `function (file.py:N)` and nothing else is a py-spy stack frame, whose
# location is the frame's, not a logging suffix.
PYSPY_FRAME = r"^\s+(?:[A-Za-z_][\w.]*|<\w+>) \([\w./<>-]+\.py:\d+\)$"


def _leads(text: pl.Series, comments: bool) -> tuple[pl.DataFrame, pl.Series]:
    """The leader regex's groups for each line, and its leader ("" where none)."""
    groups = text.str.extract_groups(f"(?P<lead>{LEADER if comments else LEADER_NO_COMMENT})").struct.unnest()
    lead = groups["lead"].fill_null("")
    # A progress bar with nothing after it is the line's message, not its leader.
    alone = strip_suffix(text).str.strip_chars_end().str.len_chars() <= lead.str.strip_chars_end().str.len_chars()
    if alone.any():
        lead = pl.select(pl.when(alone).then(lead.str.replace(f"{BAR}$", "")).otherwise(lead)).to_series()
    return groups, lead


def split(text: pl.Series, comments: bool = True) -> pl.DataFrame:
    """The leader of each line (`lead`, "" where none), its timestamp text and level, and
    the line without it (`rest`); `# ` is a leader only where `comments`."""
    groups, lead = _leads(text, comments)
    return pl.DataFrame({
        "lead": lead,
        "lead_ts": groups["ts"].fill_null(groups["ts__2"]).fill_null(_glog_stamp(groups["ts__3"]))
        .fill_null(groups["ts__4"]),
        "lead_level": groups["level"].fill_null(groups["level__2"]).fill_null(groups["level__3"])
        .fill_null(groups["level__4"]).fill_null(groups["level__5"]).fill_null(groups["level__6"])
        .fill_null(groups["level__7"]).replace(
            {"WARN": "WARNING", "FATAL": "CRITICAL", "I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL",
             "V": "DEBUG"}),
        "rest": strip_suffix(text.str.slice(lead.str.len_chars())),
    })


def _glog_stamp(stamp: pl.Series) -> pl.Series:
    """glog's `20260530 21:16:47.67` or `0530 21:16:47.67` in the shapes parse_stamp reads."""
    return stamp.str.replace(r"^(\d{4})(\d\d)(\d\d) ", "$1-$2-$3 ").str.replace(r"^(\d\d)(\d\d) ", "$1-$2 ")


def strip_suffix(text: pl.Series) -> pl.Series:
    """The lines without a `(file.py:N)`, `**` or Ray's `[repeated Nx across cluster]` at their end."""
    if not (text.str.ends_with(")") | text.str.ends_with("**") | text.str.ends_with("`")
            | text.str.ends_with(" across cluster]")).any():
        return text
    return pl.select(pl.when(text.str.contains(PYSPY_FRAME)).then(text).otherwise(text.str.replace(SUFFIX, ""))
                     ).to_series().alias(text.name)


def peel(text: pl.Series, comments: bool = True) -> pl.Series:
    """Each line without its leader and suffix: what detection reads."""
    at = text.str.contains(START).arg_true()
    if not at.len():
        return strip_suffix(text)
    some = text.gather(at)
    rest = strip_suffix(some.str.slice(_leads(some, comments)[1].str.len_chars()))  # split's `rest`, no more
    return strip_suffix(text).clone().scatter(at, rest)


def peel_both(text: pl.Series) -> dict[bool, pl.Series]:
    """`peel` with comments and without, by `comments`, the leader regex run once over most
    lines: the two differ only on lines that start with `# ` (LEADER is LEADER_NO_COMMENT with
    an optional `# ` in front and `*` for `+`, which match alike where a line has no `# `)."""
    with_comments = peel(text, comments=True)
    at = text.str.starts_with(COMMENT).arg_true()
    if not at.len():
        return {True: with_comments, False: with_comments}
    return {True: with_comments, False: with_comments.clone().scatter(at, peel(text.gather(at), comments=False))}


def parse_stamp(stamp: pl.Expr, year: int, base_date: str) -> pl.Expr:
    """A leader's timestamp text as a Datetime: ISO with or without T, zone or fraction (Go's
    slashed date and TensorRT-LLM's `11/21/2024-10:26:10` too);
    `MM-DD HH:MM:SS` and syslog's `Mon DD HH:MM:SS` in `year`; a clock time on `base_date`;
    epoch seconds. A zone is dropped, as the wrappers drop kubectl's."""
    s = (stamp.str.replace(r"(?:Z| ?[+-]\d\d:?\d\d)$", "").str.replace(",", ".").str.replace("T", " ")
         .str.replace(r"^(\d{4})/(\d\d)/", "$1-$2-").str.replace(r"^(\d\d)/(\d\d)/(\d{4})-", "$3-$1-$2 "))
    full = "%Y-%m-%d %H:%M:%S%.f"
    return pl.coalesce(
        s.str.to_datetime(full, strict=False, time_unit="us"),
        (pl.lit(f"{year}-") + s).str.to_datetime(full, strict=False, time_unit="us"),
        (pl.lit(f"{year} ") + s.str.replace(r"  ", " ")).str.to_datetime("%Y %b %d %H:%M:%S", strict=False,
                                                                        time_unit="us"),
        (pl.lit(f"{base_date} ") + s).str.to_datetime(full, strict=False, time_unit="us"),
        pl.when(s.str.contains(rf"^{EPOCH}$")).then(
            pl.from_epoch((s.cast(pl.Float64, strict=False) * 1e6).cast(pl.Int64), time_unit="us")),
    )
