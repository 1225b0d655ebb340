"""Remove what log collectors wrap around a server's own lines.

kubectl --timestamps, docker compose, journald/syslog and process prefixes such as
`(EngineCore_DP0 pid=12) ` sit in front of the format a parser knows. They are removed
here, once, for every format; their timestamp is kept for lines that have none of their
own, and the process name is kept because it tells engine from API server.
"""

from __future__ import annotations

import polars as pl

from loganalyze.formats.prefix import prefix_groups

MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"

# Each wrapper: a named-group pattern anchored at the line start. Groups other than
# `body` become columns. Order matters: outermost first.
# The same stamp starts a container runtime's own log file (CRI: containerd, CRI-O; what
# /var/log/containers/*.log holds on a Kubernetes node): `<stamp> stdout|stderr F|P <line>`.
KUBECTL = (r"^(?P<k8s_date>\d{4}-\d\d-\d\d)T(?P<k8s_time>\d\d:\d\d:\d\d(?:\.\d{1,6})?)\d*(?:Z|[+-]\d\d:?\d\d)? "
           r"(?:(?:stdout|stderr) [FP] )?(?P<body>.*)$")
# docker's json-file driver (`/var/lib/docker/containers/<id>/<id>-json.log`): one JSON
# object per line, the line itself in `log` (escaped, its newline kept), the time in `time`.
DOCKER_JSON = r'^\{\s*"log"\s*:\s*"'
# docker compose: `service-1  | ` (v2), `service_1  | ` (v1); or the container's own name
# where one is set (`sglang  | `), taken only in front of what starts a log record (a
# bracket, a date, a level), so a table row without outer pipes (`synchronous   | 0.47 | ...`)
# is not taken for one.
COMPOSE = r"^[A-Za-z0-9_.-]+[-_]\d+\s+\| (?P<body>.*)$"
RECORD = r"(?:\[|\(|\d{4}-\d\d-\d\d|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\b)"
NAMED_COMPOSE = rf"^[A-Za-z0-9_.-]+\s+\| (?P<body>{RECORD}.*)$"
SYSLOG = rf"^(?P<sys_mon>{MONTHS}) (?P<sys_day>[ \d]\d) (?P<sys_time>\d\d:\d\d:\d\d) \S+ [^\s:\[]+(?:\[\d+\])?: (?P<body>.*)$"
MPIRUN = r"^\[\d+,\d+\]<(?:stdout|stderr)>:(?P<body>.*)$"
# `mpirun --tag-output` tags each piece of output a rank writes, not each line: where a
# program prints a row in pieces (nccl-tests: the size columns, then the out-of-place and
# the in-place columns), the tags land inside the row (`sum  -1[0]    1626.5  0.64 ...`).
# On a line that starts with a tag, a later `[1,0]<stdout>:` is always one; a bare `[0]`
# only where it is glued to the end of a token and a number follows, since NCCL's own
# `0[0] -> 1[1]` and `[0] NCCL INFO` name ranks and devices.
TAGGED = r"^\[\d+(?:,\d+)?\]"
INNER_TAG = r"\[\d+,\d+\]<(?:stdout|stderr)>:|(?P<before>\S)\[\d+\](?P<after>\s+[-+]?\d)"
# A ticket's markup in front of a wrapped line (`> `, `**`, a backtick of inline code:
# sglang/108; MPI's tags quoted, `> [0]    1048576 ...`), peeled only where a wrapper follows
# it: elsewhere the format's leader peeling takes it (loganalyze/formats/leader.py).
WRAPPED = (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|[A-Za-z0-9_.-]+(?:[-_]\d+)?\s+\| "
           rf"|(?:{MONTHS}) [ \d]\d \d\d:\d\d:\d\d |\[\d+,\d+\]<std|\[\d+\]\s")
MARKUP = rf"^(?:> ?|\*\*|`{{1,3}})+(?P<body>(?:{WRAPPED}).*)$"
# A wrapped line indented where it was pasted (a list item's code block: `        [1,0]<stdout>:
# ...`, nccl/281 of hold-out 15): the indentation goes where a wrapper that only a collector
# prints follows it (an MPI tag, an ISO or syslog stamp); not before other text, where
# indentation is the line's own (a traceback's frames, a table row).
INDENTED = rf"^\s+(?P<body>(?:\[\d+,\d+\]<std|\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d|(?:{MONTHS}) [ \d]\d \d\d:\d\d:\d\d ).*)$"
# A multi-node launcher's label for the host or rank a line came from: pdsh and DeepSpeed's
# launcher (`node1: `, `10.0.0.1: `), `srun --label` (`0: `), torchrun's `--tee` (`[default0]:`).
# A label is a host's name only if it holds a digit (`Error: `, `Throughput: ` are messages),
# and it is peeled only where it is one (`_unlabel`), so that a message that merely looks
# like a label stays whole.
HOST_LABEL = r"(?:\[default\d+\]:|(?:\d{1,4}|\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z][\w.-]*\d[\w.-]*):(?: |$))"
HOSTED = rf"^{HOST_LABEL}(?P<body>.*)$"
NCCL_HEAD = r"[\w.-]+:\d+:\d+ \["  # NCCL's own `node1:1234:1234 [0] `
# nccl-tests puts the host's name in its own failure line (`node01: Test NCCL failure ...`):
# that label is the message's, and stays.
OWN_LABEL = rf"^{HOST_LABEL}Test (?:NCCL |CUDA )?failure "
# An actor's name may hold its own brackets, two deep: `(ActorWorker(actor_infer-0) pid=33521, ip=10.0.0.1) `,
# Ray Data's `(MapWorker(MapBatches(vLLMEngineActor)) pid=1202, ip=10.0.0.1) `.
PROCESS = r"^\((?P<process>(?:[^()]|\((?:[^()]|\([^()]*\))*\))*?pid=\d+[^()]*)\) (?P<body>.*)$"
# How each wrapper starts (the tests below, and PROCESS's bracket): a line that starts
# with none of them has no wrapper, so a batch with no such line skips every pattern.
ANY_START = (
    rf'^(?:\{{\s*"log"|\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d|[A-Za-z0-9_.-]+(?:[-_]\d+)?\s+\| |(?:{MONTHS}) [ \d]\d \d\d:\d\d:\d\d '
    rf"|\[\d+(?:,\d+)?\]|\(|> ?|\*\*|`|{HOST_LABEL}|\s+\[\d+,\d+\]<std|\s+\d{{4}}-\d\d-\d\dT|\s+(?:{MONTHS}) )"
)


def _peel(frame: pl.DataFrame, pattern: str, extra: list[str]) -> pl.DataFrame:
    """Apply one wrapper pattern: rows that match lose the wrapper, others stay as they are.

    The groups are those of `pattern`, found without capturing the rest of the line (the
    body is what follows the wrapper; see loganalyze.formats.prefix.prefix_groups).
    """
    groups = prefix_groups(pattern.replace("(?P<body>", "(?P<msg>"), frame["text"]).alias("_groups")
    fields = pl.col("_groups").struct
    cols = [fields.field("msg").alias("_body")] + [fields.field(g).alias(g) for g in extra]
    out = frame.with_columns(groups).with_columns(cols).drop("_groups")
    return out.with_columns(text=pl.coalesce("_body", "text")).drop("_body")


def _untag(frame: pl.DataFrame, tagged: pl.Series) -> pl.DataFrame:
    """The `tagged` lines without the MPI tags inside them (see INNER_TAG); `raw` keeps them."""
    at = (tagged & frame["text"].str.contains(INNER_TAG)).arg_true()
    if not at.len():
        return frame
    clean = frame["text"].gather(at).str.replace_all(INNER_TAG, "${before}${after}")
    return frame.with_columns(frame["text"].clone().scatter(at, clean))


def _docker_json(frame: pl.DataFrame) -> pl.DataFrame:
    """docker json-file lines as the line they hold, its time in front as kubectl puts it (the
    KUBECTL wrapper then keeps it as the wrapper's timestamp); other lines unchanged."""
    text = frame["text"]
    held = text.str.json_path_match("$.log").str.strip_suffix("\n").str.strip_suffix("\r")
    time = text.str.json_path_match("$.time")
    line = pl.select(pl.when(time.is_not_null()).then(time + " " + held).otherwise(held)).to_series()
    is_json = text.str.contains(DOCKER_JSON) & held.is_not_null()
    return frame.with_columns(text=pl.when(is_json).then(line).otherwise(text))


def _unlabel(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with launchers' host labels (HOST_LABEL) taken off where they are labels:
    on half of the batch's lines or more, a label that starts two lines or more (a launcher labels
    every line a host prints), or one in front of a record's start."""
    label = frame["text"].str.extract(f"^({HOST_LABEL})")
    if label.null_count() == frame.height:
        return frame
    repeated = label.is_duplicated()
    starts = frame["text"].str.contains(rf"^{HOST_LABEL}(?:{RECORD}|{NCCL_HEAD})")
    mostly = label.null_count() <= frame.height / 2
    own = frame["text"].str.contains(OWN_LABEL)
    take = label.is_not_null() & ~own & (mostly | repeated | starts)
    if not take.any():
        return frame
    peeled = _peel(frame, HOSTED, [])
    return frame.with_columns(text=pl.when(take).then(peeled["text"]).otherwise(frame["text"]))


def unwrap(frame: pl.DataFrame, year: int) -> pl.DataFrame:
    """Return the frame with `text` unwrapped plus `wrap_ts` (Datetime) and `process` columns.

    `year` completes syslog timestamps, which print none.
    """
    if frame.height == 0:
        return frame.with_columns(wrap_ts=pl.lit(None, pl.Datetime("us")), process=pl.lit(None, pl.String))
    if not frame["text"].str.contains(ANY_START).any():
        return frame.with_columns(process=pl.lit(None, pl.String), wrap_ts=pl.lit(None, pl.Datetime("us")))
    out = _docker_json(frame) if frame["text"].str.contains(DOCKER_JSON).any() else frame
    if out["text"].str.contains(r"^(?:> ?|\*\*|`)").any():
        out = _peel(out, MARKUP, [])
    if out["text"].str.contains(rf"^\s+(?:\[\d+,\d+\]<std|\d{{4}}-\d\d-\d\dT|(?:{MONTHS}) )").any():
        out = _peel(out, INDENTED, [])
    text = out["text"]
    if text.str.contains(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d").any():
        out = _peel(out, KUBECTL, ["k8s_date", "k8s_time"])
    else:
        out = out.with_columns(k8s_date=pl.lit(None, pl.String), k8s_time=pl.lit(None, pl.String))
    out = _unlabel(out)
    if out["text"].str.contains(r"^[A-Za-z0-9_.-]+[-_]\d+\s+\| ").any():
        out = _peel(out, COMPOSE, [])
    elif out["text"].str.contains(rf"^[A-Za-z0-9_.-]+\s+\| {RECORD}").any():
        out = _peel(out, NAMED_COMPOSE, [])
    if out["text"].str.contains(rf"^(?:{MONTHS}) [ \d]\d \d\d:\d\d:\d\d ").any():
        out = _peel(out, SYSLOG, ["sys_mon", "sys_day", "sys_time"])
    else:
        out = out.with_columns(sys_mon=pl.lit(None, pl.String), sys_day=pl.lit(None, pl.String),
                               sys_time=pl.lit(None, pl.String))
    tagged = out["text"].str.contains(TAGGED)
    if out["text"].str.contains(r"^\[\d+,\d+\]<std").any():
        out = _peel(out, MPIRUN, [])
    if tagged.any():
        out = _untag(out, tagged)
    out = _peel(out, PROCESS, ["process"])
    k8s = (pl.col("k8s_date") + " " + pl.col("k8s_time")).str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False)
    sys = (
        pl.lit(str(year)) + " " + pl.col("sys_mon") + " " + pl.col("sys_day").str.strip_chars() + " " + pl.col("sys_time")
    ).str.to_datetime("%Y %b %d %H:%M:%S", strict=False)
    return out.with_columns(wrap_ts=pl.coalesce(k8s, sys).dt.cast_time_unit("us")).drop(
        "k8s_date", "k8s_time", "sys_mon", "sys_day", "sys_time"
    )
