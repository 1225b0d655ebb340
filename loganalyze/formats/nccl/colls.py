"""NCCL's collective calls (`NCCL_DEBUG_SUBSYS=COLL`: op, count, datatype, reduction) and
tuning choices (bytes -> algorithm, protocol), into `nccl_colls`."""

from __future__ import annotations

import polars as pl

from loganalyze.formats.nccl.lines import table_kind
from loganalyze.formats.spec import Sample

I, F, S = pl.Int64, pl.Float64, pl.String

# ncclDataType_t and ncclRedOp_t (src/nccl.h.in).
DTYPES = {0: ("int8", 1), 1: ("uint8", 1), 2: ("int32", 4), 3: ("uint32", 4), 4: ("int64", 8), 5: ("uint64", 8),
          6: ("float16", 2), 7: ("float32", 4), 8: ("float64", 8), 9: ("bfloat16", 2), 10: ("float8e4m3", 1),
          11: ("float8e5m2", 1)}
REDOPS = {0: "sum", 1: "prod", 2: "max", 3: "min", 4: "avg"}


def _colls(rows: pl.DataFrame) -> pl.DataFrame:
    """opCount is hex; bytes = count x the datatype's size."""
    dt = pl.col("datatype")
    return rows.with_columns(
        op_count=pl.col("op_count_hex").str.to_integer(base=16, strict=False),
        dtype=dt.replace_strict({k: v[0] for k, v in DTYPES.items()}, default=None, return_dtype=S),
        elem_bytes=dt.replace_strict({k: v[1] for k, v in DTYPES.items()}, default=None, return_dtype=I),
        redop_name=pl.col("redop").replace_strict(REDOPS, default="user", return_dtype=S),
    ).with_columns(bytes=pl.col("count") * pl.col("elem_bytes")).drop("op_count_hex")


def _tuning_bytes(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.with_columns(algo=pl.col("algo").str.to_uppercase(), proto=pl.col("proto").str.to_uppercase())


COLL_KINDS = (
    table_kind("nccl_colls", "coll", "call", "opCount ",
           r"^(?P<op>\w+): opCount (?P<op_count_hex>[0-9a-fA-F]+) sendbuff (?P<sendbuff>\S+) recvbuff (?P<recvbuff>\S+) "
           r"count (?P<count>\d+) datatype (?P<datatype>\d+) op (?P<redop>\d+) root (?P<root>-?\d+) comm (?P<comm>\S+) "
           r"\[nranks=(?P<nranks>\d+)\] stream (?P<stream>\S+)",
           (Sample("NCCL INFO AllReduce: opCount 139d sendbuff 0x78d056200000 recvbuff 0x78d056200000 count 7382228 "
                   "datatype 7 op 0 root 0 comm 0x78cfda045840 [nranks=128] stream 0x78d07125e5e0",
                   bytes=29528912, comm="0x78cfda045840", count=7382228, datatype=7, dtype="float32", elem_bytes=4,
                   nranks=128, op="AllReduce", op_count=5021, recvbuff="0x78d056200000", redop=0, redop_name="sum",
                   root=0, sendbuff="0x78d056200000", stream="0x78d07125e5e0"),),
           types={k: I for k in ("count", "datatype", "redop", "root", "nranks")}, handler=_colls),
    table_kind("nccl_colls", "tuning", "tuning", " Bytes -> Algo ",
           r"^(?:(?P<op>\w+): )?(?P<bytes>\d+) Bytes -> Algo (?P<algo>\w+) proto (?P<proto>\w+)"
           r"(?: channel\{Lo\.\.Hi\}=\{(?P<chan_lo>\d+)\.\.(?P<chan_hi>\d+)\})?(?: time (?P<model_time>[\d.]+))?",
           (Sample("NCCL INFO AllReduce: 16777216 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..3}",
                   algo="RING", bytes=16777216, chan_hi=3, chan_lo=0, op="AllReduce", proto="SIMPLE"),),
           types={"bytes": I, "chan_lo": I, "chan_hi": I, "model_time": F}, handler=_tuning_bytes),
)
