"""nccl-tests output (all_reduce_perf, all_gather_perf, ...), nccl-tests up to v2.19.6.

The header says how the test ran (threads, GPUs, sizes) and on which devices; then one
row per message size with out-of-place and in-place time, algbw, busbw and #wrong; then
the average bus bandwidth (docs/formats-sources.md#nccl-tests-output). Captured output is often
indented or has lost its `#`, so both are optional. NCCL_DEBUG lines in the same file are
claimed first by the embeddable `nccl` format.
"""

from __future__ import annotations

import polars as pl

from loganalyze.formats.spec import Handler, LineKind, LogFormat, Sample
from loganalyze.formats.tables import Schema, table

I, F, S = pl.Int64, pl.Float64, pl.String

TABLES: dict[str, Schema] = {}
TABLES["nccl_perf"] = table({
    "what": S, "test": S, "tests_version": S, "env": S, "args": S,
    "nthread": I, "ngpus": I, "min_bytes": I, "max_bytes": I, "step": S, "warmup_iters": I, "iters": I,
    "agg_iters": I, "validation": I, "graph": I,
    "dev_rank": I, "group": I, "dev_pid": I, "dev_host": S, "device": I, "bus": S, "device_name": S,
    "size": I, "count": I, "type": S, "redop": S, "root": I,
    "oop_time_us": F, "oop_algbw": F, "oop_busbw": F, "oop_wrong": F,
    "ip_time_us": F, "ip_algbw": F, "ip_busbw": F, "ip_wrong": F,
    "avg_busbw": F, "oob": I,
})

TYPES = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16", "f8e4m3",
         "f8e5m2")
ENGINE_COLUMNS = {"text", "msg", "body", "ok", "owner", "cont", "cont_lines", "wrap_ts"}
NUM = r"(\S+)"
# The test binaries nccl-tests builds (src/*.cu): a word merely ending in `_perf` (a benchmark
# suite's dataset name such as `gsm8k_gen_0_shot_cot_str_perf`) is no nccl-tests command.
TEST = r"(?:all_reduce|all_gather|alltoall|broadcast|reduce_scatter|reduce|gather|scatter|sendrecv|hypercube)"


def _declared(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.select([c for c in rows.columns if c in TABLES["nccl_perf"] or c in ENGINE_COLUMNS])


def _command(rows: pl.DataFrame) -> pl.DataFrame:
    """The NCCL_* settings on the command line (`NCCL_P2P_LEVEL=SYS ./build/all_reduce_perf -g 8`)."""
    return rows.with_columns(env=pl.col("body").str.extract_all(r"\bNCCL_\w+=\S+").list.join(" "))


def _kind(name: str, needle, pattern: str, samples: tuple[str, ...], *, match: str | None = None,
          types: dict | None = None, handler: Handler | None = None) -> LineKind:
    steps = handler
    return LineKind(
        name=name, table="nccl_perf", needle=needle, match=match, pattern=pattern, types=types or {},
        const={"what": name}, samples=samples,
        # Without a handler the engine keeps only the columns the pattern and const write: a
        # kind is plain data unless it computes a column.
        handler=(lambda rows: _declared(steps(rows))) if steps else None,
    )


ROW = (
    # `redop` and `root` are printed only by the releases and tests that have them (the 2.6-era
    # broadcast_perf prints neither: `65536  8192  float  16.57  1.98  1.98  0e+00 ...`).
    r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>[a-z0-9]+)(?:\s+(?P<redop>[a-z]\w*))?(?:\s+(?P<root>-?\d+))?"
    r"\s+(?P<oop_time_us>[\d.eE+-]+)\s+(?P<oop_algbw>[\d.eE+-]+)\s+(?P<oop_busbw>[\d.eE+-]+)\s+(?P<oop_wrong>\S+)"
    r"(?:\s+(?P<ip_time_us>[\d.eE+-]+)\s+(?P<ip_algbw>[\d.eE+-]+)\s+(?P<ip_busbw>[\d.eE+-]+)\s+(?P<ip_wrong>\S+))?\s*$"
)
FLOATS = {k: F for k in ("oop_time_us", "oop_algbw", "oop_busbw", "oop_wrong", "ip_time_us", "ip_algbw", "ip_busbw",
                         "ip_wrong")}

KINDS = (
    _kind("row", TYPES, ROW, (
        Sample("268435456      67108864     float     sum      -1    15654   17.15   25.72      0    15658   17.14   25.72      0",
               count=67108864, ip_algbw=17.14, ip_busbw=25.72, ip_time_us=15658.0, ip_wrong=0.0, oop_algbw=17.15,
               oop_busbw=25.72, oop_time_us=15654.0, oop_wrong=0.0, redop="sum", root=-1, size=268435456, type="float"),
        Sample("8             2     float     sum      -1    42.56    0.00    0.00    N/A    40.06    0.00    0.00    N/A",
               count=2, ip_algbw=0.0, ip_busbw=0.0, ip_time_us=40.06, oop_algbw=0.0, oop_busbw=0.0, oop_time_us=42.56,
               redop="sum", root=-1, size=8, type="float"),
        Sample("    65536          8192   float    16.57    1.98    1.98  0e+00    13.83    2.37    2.37  0e+00",
               count=8192, ip_algbw=2.37, ip_busbw=2.37, ip_time_us=13.83, ip_wrong=0.0, oop_algbw=1.98, oop_busbw=1.98,
               oop_time_us=16.57, oop_wrong=0.0, size=65536, type="float"),
    ), match=r"^\s*\d+\s+\d+\s+[a-z]", types={"size": I, "count": I, "root": I, **FLOATS}),
    _kind("version", "nccl-tests version", r"nccl-tests version (?P<tests_version>\S+)",
          ("# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807",)),
    _kind("test_start", "Collective test starting", r"Collective test starting: (?P<test>\S+)",
          ("# Collective test starting: all_reduce_perf",)),
    _kind("test_end", "Collective test concluded", r"Collective test concluded: (?P<test>\S+)",
          ("# Collective test concluded: all_reduce_perf",)),
    _kind("params", "nThread ",
          r"^#?\s*nThread (?P<nthread>\d+) nGpus (?P<ngpus>\d+) minBytes (?P<min_bytes>\d+) maxBytes (?P<max_bytes>\d+)"
          r"(?: step: (?P<step>\S+))?(?: warmup iters: (?P<warmup_iters>\d+))?(?: iters: (?P<iters>\d+))?"
          r"(?: agg iters: (?P<agg_iters>\d+))?(?: validation: (?P<validation>\d+))?(?: graph: (?P<graph>\d+))?",
          (Sample("# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
                  "validation: 1 graph: 0",
                  agg_iters=1, graph=0, iters=20, max_bytes=134217728, min_bytes=8, ngpus=8, nthread=1,
                  step="2(factor)", validation=1, warmup_iters=5),
           "# nThread 1 nGpus 2 minBytes 8 maxBytes 16777216 step: 2(factor) warmup iters: 5 iters: 20 validation: 1"),
          types={k: I for k in ("nthread", "ngpus", "min_bytes", "max_bytes", "warmup_iters", "iters", "agg_iters",
                                "validation", "graph")}),
    _kind("device", "Rank ",
          r"^#?\s*Rank\s+(?P<dev_rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<dev_pid>\d+)\s+on\s+(?P<dev_host>\S+)"
          r"\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]+)\]\s+(?P<device_name>.+?)\s*$",
          (Sample("#  Rank  0 Group  0 Pid  19124 on node01 device  0 [0000:85:00] NVIDIA GeForce RTX 4090",
                  bus="0000:85:00", dev_host="node01", dev_pid=19124, dev_rank=0, device=0,
                  device_name="NVIDIA GeForce RTX 4090", group=0),
           "#   Rank  0 Pid    225 on nccl-tests device  0 [0xc1] NVIDIA RTX A6000"),
          types={k: I for k in ("dev_rank", "group", "dev_pid", "device")}),
    _kind("avg_busbw", "Avg bus bandwidth", r"Avg bus bandwidth\s*: (?P<avg_busbw>[\d.eE+-]+)",
          (Sample("# Avg bus bandwidth    : 6.6972 ",
                  avg_busbw=6.6972),), types={"avg_busbw": F}),
    _kind("oob", "Out of bounds values", r"Out of bounds values\s*: (?P<oob>\d+)",
          ("# Out of bounds values : 0 OK",), types={"oob": I}),
    _kind("command", "_perf", rf"(?:^|[\s/])(?P<test>{TEST}_perf(?:_mpi)?)(?:\s+(?P<args>.*?))?\s*$",
          ("./build/all_reduce_perf -b 256M -e 2G -f 2 -g 4",
           "root@node01:/opt/nccl-tests# NCCL_P2P_DISABLE=0 NCCL_P2P_LEVEL=SYS NCCL_DEBUG=info ./build/all_reduce_perf "
           "-g 8 | tail -n 30"),
          match=rf"(?:^|[\s/]){TEST}_perf(?:_mpi)?(?:\s|$)", handler=_command),
    # With or without the `#` a paste (a markdown render, a copy from a web page) may drop
    # (nccl/137): the column words are nccl-tests' own, not a table's of any kind.
    _kind("columns", ("out-of-place", "size", "(B)"),
          r"^#?\s*(?:out-of-place\s+in-place|size\s+count\s+type\s|\(B\)\s+\(elements\))",
          (Sample("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
                  "   busbw #wrong"),
           Sample("       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
                  "   busbw #wrong"),
           Sample("                                                  out-of-place                       in-place"),
           Sample("        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)"))),
    _kind("notice", ("Using devices", "Blocking Enabled", "Errors with asterisks"),
          r"^#?\s*(?:Using devices|Blocking Enabled: wait for completion and barrier after each collective"
          r"|Errors with asterisks indicate errors that have exceeded the maximum threshold\.)\s*$",
          (Sample(" Using devices"), Sample(" Blocking Enabled: wait for completion and barrier after each collective "),
           Sample("# Errors with asterisks indicate errors that have exceeded the maximum threshold."))),
    # What mpirun's ssh launch prints before the test's first line, on the hosts it first meets
    # (nccl/137): the launcher's, no nccl-tests line, but part of every such paste.
    _kind("ssh_notice", "to the list of known hosts",
          r"^Warning: Permanently added '\[?(?P<dev_host>[^'\]:,]+)[^']*'(?:,'[^']+')* \([\w-]+\) to the list of known "
          r"hosts\.$",
          (Sample("Warning: Permanently added '[10.2.0.3]:2022' (RSA) to the list of known hosts.", dev_host="10.2.0.3"),
           Sample("Warning: Permanently added 'node02,10.0.0.2' (ECDSA) to the list of known hosts.",
                  dev_host="node02"))),
    _kind("comment", "#", r"^#", (Sample("#"), Sample("# Reducing maxBytes to 7516192768 due to memory limitation")),
          match=r"^#"),
)

FORMAT = LogFormat(
    name="nccl-tests",
    description="nccl-tests benchmark output (all_reduce_perf and friends), up to v2.19.6",
    releases="nccl-tests <= 2.19.6",
    prefix=r"^\s*(?P<msg>.*?)\s*$",
    hash_lines=True,
    kinds=KINDS,
    detect=(
        r"#?\s*nThread \d+ nGpus \d+ minBytes",
        r"# ?Using devices",
        r"^\s*#?\s+Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s",
        r"# Avg bus bandwidth",
        r"out-of-place\s+in-place",
        r"# Collective test (?:starting|concluded)",
        rf"^\s*\d+\s+\d+\s+(?:{'|'.join(TYPES)})\s+\w+\s+-?\d+\s+[\d.]",
        # The 2.x tables before `redop` and `root`: time, algbw, busbw and an error column twice
        # (`65536  2048  float  52.01  1.26  1.10  0e+00  50.09 ...`, nccl/310 of hold-out 18).
        rf"^\s*\d+\s+\d+\s+(?:{'|'.join(TYPES)})\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+\S+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+\S+\s*$",
        rf"(?:^|[\s/]){TEST}_perf(?:_mpi)?\s+-",
    ),
    versions=(
        (r"nccl-tests version ", "2.17+"),
        (r"Rank\s+\d+\s+Group\s+\d+\s+Pid\s+\d+ .*\[[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\]", "Feb 2025+"),
        (r"Rank\s+\d+\s+Group\s+\d+\s+Pid", "2.x"),
        (r"Rank\s+\d+\s+Pid\s+\d+ ", "<=2021"),
    ),
)
