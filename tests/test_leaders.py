"""A known line is known behind any leader: every sample line of every kind, wrapped in the
prefixes and suffixes real deployments and tickets put around it, gives the fields the bare
line gives, and detection picks the same format (loganalyze/formats/leader.py, loganalyze/wrappers.py).

Collectors (kubectl, compose, journald, MPI, Ray, ticket quoting) wrap the whole line, the
server's own header included. A user's own logging configuration replaces the header: those
styles wrap the message, the line less what the format's prefix takes.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import loganalyze as la
from loganalyze import formats
from loganalyze.diagnosis import diagnose
from loganalyze.reader import common_indent
from loganalyze.wrappers import unwrap
from loganalyze.formats.parse import parse
from loganalyze.formats.prefix import prefix_groups
from loganalyze.formats.spec import Context, LogFormat

AROUND_LINE = {
    "kubectl": "2026-01-05T10:00:01.123456Z {}",
    "compose": "server-1  | {}",
    "compose-v1": "vllm_1  | {}",
    "journald": "Jan  5 10:00:01 host1 python[1234]: {}",
    "mpi-tag": "[1,0]<stdout>:{}",
    "mpi-rank": "[0] {}",
    "ray": "(RayWorkerWrapper pid=1234) {}",
    "ray-lost-paren": "_AsyncLLMEngine pid=1974) {}",  # its `(` lost in a paste (vllm/44)
    "ray-actor-args": "(ActorWorker(actor_infer-0) pid=33521, ip=10.0.0.1) {}",  # an actor's name with its args
    "quoted": "> {}",
    "ctrl-c": "^C{}",  # the terminal's echo of Ctrl-C before the next line (vllm/142)
    "emphasis": "**{}**",
    "kubectl+compose+quoted": "2026-01-05T10:00:01Z server-1  | > {}",
    "file-suffix": "{} (scheduler.py:1558)",
    "backtick": "`{}`",  # inline code in a ticket
    "quoted+compose": "> server-1  | {}",  # the ticket's markup outside the collector's (sglang/108)
    "backtick+compose": "`server-1  | {}",
    "cri": "2026-01-05T10:00:01.123456789Z stdout F {}",  # a Kubernetes node's /var/log/containers file
    "pdsh": "node1: {}",  # pdsh and DeepSpeed's multi-node launcher
    "pdsh-ip": "10.0.0.1: {}",
    "srun-label": "0: {}",  # srun --label
    "torchrun-tee": "[default0]:{}",  # torchrun --tee
    # docker's json-file driver: the line escaped inside JSON, its newline kept
    "docker-json": lambda line: json.dumps({"log": line + "\n", "stream": "stderr", "time": "2026-01-05T10:00:01.12Z"}),
}
# `{level}` is the level the line's own header gave (INFO where it gave none).
AROUND_MESSAGE = {
    "python-logger": "2026-01-05 10:00:01 - vllm.engine - {level} - {}",
    "python-comma-file": "2026-01-05 10:00:01,123 {level} loggers.py:122] {}",
    "python-basic": "{level}:vllm.engine:{}",
    "loguru": "2026-01-05 10:00:01.123 | {level:<8} | {}",
    "iso-zone": "2026-01-05T10:00:01+00:00 {level} {}",
    "month-day": "01-05 10:00:01 {level} {}",
    "clock": "[10:00:01] {level} {}",
    "epoch": "1736071201.123 {level} {}",
    "lost-bracket": "2026-01-05 10:00:01 TP0] {}",  # SGLang's header pasted without its `[`
    "python-bracket-logger": "2026-01-05 10:00:01,123 [{level}] app.serving.worker: {}",  # sglang/101
    "go-log": "2026/01/05 10:00:01 {level} {}",  # Go's log package's stamp (bench/214: a Go load tester)
    "pid-rank-bracket": "2026-01-05 10:00:01.123 {level} 120984 [ TP0 scheduler.py:3190] {}",  # a fork's logger
}
# Styles that mean something else to a format: NCCL reads `[0] NCCL INFO` as cudaDev 0, and
# only SGLang prints the rank tags whose bracket a paste loses.
NOT_FOR = {"nccl": {"mpi-rank"}, "vllm": {"lost-bracket"}, "nccl-tests": {"lost-bracket"}, "bench": {"lost-bracket"},
           "client-log": {"lost-bracket"}}
# Where a line came from and how it was printed, not what it says.
PLACE = {"ts", "level", "process", "raw", "line_no", "source", "rank", "gpu", "host", "pid", "tid"}
SEPARATOR = "-- next sample --"
CTX = dict(year=2026, base_date="2026-01-01")

FORMATS = [f for f in formats.FORMATS.values() if isinstance(f, LogFormat)]


def _around_message(fmt: LogFormat, style: str, line: str) -> str:
    """`line` with its own header replaced by the header of `style`."""
    groups = prefix_groups(fmt.prefix, pl.Series([unwrap_one(line)])).struct
    msg = groups.field("msg")[0]
    names = groups.fields
    level = next((groups.field(n)[0] for n in names if n.split("__")[0] == "level" and groups.field(n)[0]), None)
    tag = next((t for t in ("NCCL", "CCOM") if msg is not None and f"{t} {msg}" in line), None)
    if tag:  # NCCL's tag (Neuron's CCOM) is its record's own word, not the header's
        msg = f"{tag} {msg}"
    return AROUND_MESSAGE[style].format(line if msg is None else msg, level=level or "INFO")


def _around_line(style: str, line: str) -> str:
    wrap = AROUND_LINE[style]
    return wrap.format(line) if isinstance(wrap, str) else wrap(line)


def unwrap_one(line: str) -> str:
    return unwrap(pl.DataFrame({"raw": [line]}).with_columns(text=pl.col("raw")), 2026)["text"][0]


def _cases(fmt: LogFormat) -> list[tuple[str, str, list[str]]]:
    """(kind, style, lines) for every sample of every kind in every style, "bare" included."""
    out = []
    for kind in fmt.kinds:
        for sample in kind.samples:
            lines = sample.split("\n")
            out.append((kind.name, "bare", lines))
            skip = NOT_FOR.get(fmt.name, set())
            out += [(kind.name, style, [_around_line(style, x) for x in lines]) for style in AROUND_LINE if style not in skip]
            out += [(kind.name, style, [_around_message(fmt, style, x) for x in lines])
                    for style in AROUND_MESSAGE if style not in skip]
    return out


def _parse_all(fmt: LogFormat, cases: list[tuple[str, str, list[str]]]) -> dict[int, dict[str, pl.DataFrame]]:
    """Rows by case. The cases of a kind that carries state (cumulative counters) or takes
    the lines after it (a traceback's frames, a banner) are parsed each on its own; the
    others as one log, a separator line between cases."""
    own = {k.name for k in fmt.kinds if k.carry or k.continuation}
    alone = [i for i, c in enumerate(cases) if c[0] in own]
    out = {}
    for i in alone:
        got = _parse_log(fmt, [cases[i]])
        if got:
            out[i] = got[0]
    together = [i for i in range(len(cases)) if i not in set(alone)]
    got = _parse_log(fmt, [cases[i] for i in together])
    out.update({together[j]: rows for j, rows in got.items()})
    return out


def _parse_log(fmt: LogFormat, cases: list[tuple[str, str, list[str]]]) -> dict[int, dict[str, pl.DataFrame]]:
    """The cases as one log (a separator line between them), parsed once; rows by case."""
    text, case_of = [], []
    for i, (_, _, lines) in enumerate(cases):
        text += lines + [SEPARATOR]
        case_of += [i] * (len(lines) + 1)
    raw = pl.DataFrame({"line_no": range(1, len(text) + 1), "raw": text}, schema={"line_no": pl.Int64, "raw": pl.String})
    frame = unwrap(raw.with_columns(text=pl.col("raw")), 2026)
    got = parse(fmt, frame, Context(source="s", **CTX))
    which = pl.DataFrame({"line_no": range(1, len(text) + 1), "__case": case_of})
    out: dict[int, dict[str, pl.DataFrame]] = {}
    for table, df in got.tables.items():
        df = df.join(which, on="line_no")
        keep = sorted(c for c in df.columns if c not in PLACE and not c.endswith("_right"))
        for (case,), part in df.partition_by("__case", as_dict=True).items():
            out.setdefault(case, {})[table] = part.select(keep).drop("__case")
    return out


def _show(rows: dict[str, pl.DataFrame]) -> str:
    return "; ".join(f"{t}: {df.to_dicts()}" for t, df in rows.items())[:400]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_every_sample_parses_the_same_behind_every_leader(fmt):
    cases = _cases(fmt)
    rows = _parse_all(fmt, cases)
    bare = {cases[i][0] + "\n".join(cases[i][2]): i for i, c in enumerate(cases) if c[1] == "bare"}
    wrong = []
    start = None
    for i, (kind, style, lines) in enumerate(cases):
        if style == "bare":
            start = i
            continue
        want, got = rows.get(start, {}), rows.get(i, {})
        if want.keys() != got.keys() or any(not want[t].equals(got[t]) for t in want):
            wrong.append(f"{kind} / {style}: {lines[0][:120]}\n  bare: {_show(want)}\n  got:  {_show(got)}")
    assert bare and not wrong, f"{len(wrong)} wrapped samples parse differently:\n" + "\n".join(wrong[:30])


@pytest.mark.parametrize("style", [*AROUND_LINE, *AROUND_MESSAGE])
def test_detection_sees_the_format_behind_every_leader(style):
    """Each format's samples, wrapped, are still detected as that format."""
    for fmt in FORMATS:
        lines = [x for k in fmt.kinds for s in k.samples for x in s.split("\n")]
        if style in AROUND_MESSAGE:
            lines = [_around_message(fmt, style, x) for x in lines]
        else:
            lines = [_around_line(style, x) for x in lines]
        raw = pl.DataFrame({"raw": lines}).with_columns(text=pl.col("raw"))
        bare = formats.detect(unwrap(pl.DataFrame({"raw": [x for k in fmt.kinds for s in k.samples for x in s.split("\n")]})
                                     .with_columns(text=pl.col("raw")), 2026)["text"])[0]
        found = formats.detect(unwrap(raw, 2026)["text"])[0]
        assert found is bare, f"{fmt.name} samples behind {style!r} detected as {found and found.name}"


def test_a_compose_container_name_is_peeled_only_in_front_of_a_record():
    """`container_name: sglang` makes compose print `sglang  | ` (sglang/89); a table row
    without outer pipes looks the same up to its first cell, and stays as it is."""
    lines = ["sglang  | [2025-06-05 15:08:56 TP0] Prefill batch. #new-seq: 3, #new-token: 15000",
             "vllm-server  | INFO 01-05 10:00:01 [api_server.py:1] Started", "synchronous   | 0.47 | 12.1"]
    got = unwrap(pl.DataFrame({"text": lines}), 2026)["text"].to_list()
    assert got == ["[2025-06-05 15:08:56 TP0] Prefill batch. #new-seq: 3, #new-token: 15000",
                   "INFO 01-05 10:00:01 [api_server.py:1] Started", "synchronous   | 0.47 | 12.1"]


def test_a_level_with_a_colon_is_a_leader_only_behind_a_logger_name():
    """evalscope's `%(asctime)s - %(name)s - %(levelname)s: %(message)s` (bench/102); uvicorn's
    padded `INFO:     ` and a bare `CRITICAL: ` stay their lines' messages."""
    from loganalyze.formats.leader import split
    got = split(pl.Series(["2026-03-17 14:10:22 - evalscope - INFO: Processing[parallel_10_number_30] 100%| 30/30",
                           "INFO:     127.0.0.1:50312 - \"GET /health HTTP/1.1\" 200 OK",
                           "CRITICAL: something"]))
    assert got.select("lead_ts", "lead_level", "rest").rows()[0] == (
        "2026-03-17 14:10:22", "INFO", "Processing[parallel_10_number_30] 100%| 30/30")
    assert got["lead"].to_list()[1:] == ["", ""]


REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
ONE_OF_EACH = [
    "sglang/06_v0.4.4_largest-len-trailing-comma-drain.log",
    "vllm/164_v1-lmcache-offline-hit-tokens-0-storing-kv-glued-after-tqdm.log",
    "nccl/99_gdr-disabled-no-module-all-hcas-2nodes-1gpu-net-ib-send-receive.log",
    "nccl/119_nccl-tests-headerless-rows-redop-none-2mb-to-2gb-busbw-185.log",
    "bench/03_vllm-bench-serve-1-failed-of-1000.log",
]


def _read(path: Path, store: Path) -> tuple:
    src = la.ingest([path], run="r", store=store).sources[0]
    found = [f.id for f in diagnose(la.open_run("r", store))]
    return src.format, src.lines_by_table, found


@pytest.mark.parametrize("name", ONE_OF_EACH)
def test_a_log_pasted_indented_reads_as_the_log(name, tmp_path):
    """Inside a Markdown list item or an editor's selection, every line of a paste shares
    leading spaces or a tab: the file is read as if they were not there (loganalyze/reader.py)."""
    bare = _read(REAL / name, tmp_path / "bare")
    lines = (REAL / name).read_text(encoding="utf-8").splitlines()
    for n, indent in enumerate(["    ", "\t", "  "]):
        shifted = tmp_path / f"shifted{n}.log"
        shifted.write_text("\n".join(indent + line if line.strip() else line for line in lines) + "\n", encoding="utf-8")
        assert _read(shifted, tmp_path / f"s{n}") == bare, indent


# What multi-node launchers put in front of each line a host or rank prints (an empty line too).
LAUNCHER_LABELS = {"pdsh": "node1: ", "pdsh by address": "10.0.0.1: ", "srun --label": "0: ",
                   "torchrun --tee": "[default0]:"}


@pytest.mark.parametrize("name", ONE_OF_EACH)
def test_a_log_behind_a_launchers_host_labels_reads_as_the_log(name, tmp_path):
    """pdsh, DeepSpeed's launcher, srun and torchrun label every line; the file reads as the
    bare log (loganalyze/wrappers.py HOST_LABEL); a ticket's code fence stays outside them."""
    bare = _read(REAL / name, tmp_path / "bare")
    lines = (REAL / name).read_text(encoding="utf-8").splitlines()
    for n, (style, label) in enumerate(LAUNCHER_LABELS.items()):
        labelled = tmp_path / f"labelled{n}.log"
        labelled.write_text("\n".join(line if line.startswith("```") else label + line for line in lines) + "\n",
                            encoding="utf-8")
        assert _read(labelled, tmp_path / f"l{n}") == bare, style


def test_a_label_is_peeled_only_where_it_is_one():
    """Two hosts' lines interleaved lose their labels; a lone `word1: ` message in a log
    stays whole, and nccl-tests' own host name in its failure line stays the message's."""
    lines = ["node1: [2026-01-05 10:00:01] Decode batch. #running-req: 1",
             "node2: [2026-01-05 10:00:01] Decode batch. #running-req: 2",
             "plain line", "other line", "a third", "a fourth", "a fifth", "step1: warming up",
             "node01: Test NCCL failure common.cu:788 'unhandled system error'"]
    got = unwrap(pl.DataFrame({"raw": lines}).with_columns(text=pl.col("raw")), 2026)["text"].to_list()
    assert got == ["[2026-01-05 10:00:01] Decode batch. #running-req: 1",
                   "[2026-01-05 10:00:01] Decode batch. #running-req: 2", *lines[2:]]


def test_frames_of_a_traceback_alone_keep_their_indentation():
    assert common_indent(pl.Series(['  File "a.py", line 3 in f', '  File "b.py", line 9 in g'])) == ""
    assert common_indent(pl.Series(["  Decode batch.", "    more", "  x"])) == "  "
    assert common_indent(pl.Series(["  Decode batch.", "x"])) == ""
