"""The canonical tables: the contract between parsers and everything downstream.

Every engine's parser writes these columns with these types, so that metrics read one
shape whatever produced it. A column a parser emits must be declared (a test runs every
format's sample lines to check it); the store writes exactly these columns. The tables
every format may write are here; a format's own tables (nccl_links, bench, ...) are in its
module's `TABLES`, and a registry (loganalyze/formats/registry.py) holds them all.
"""

from __future__ import annotations

import re

import polars as pl

# A table's name is a folder name in the store and a SQL table name: lower case, \Z not $.
TABLE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}\Z")
I, F, S, B = pl.Int64, pl.Float64, pl.String, pl.Boolean
TS = pl.Datetime("us")
PAIRS = pl.List(pl.Struct({"key": S, "value": S}))

# `raw` is the line as read (wrappers included): findings quote it as evidence.
COMMON = {"source": S, "line_no": I, "ts": TS, "kind": S, "rank": S, "gpu": S, "process": S, "level": S, "raw": S}

Schema = dict[str, pl.DataType]

CANONICAL: dict[str, Schema] = {
    "stats": {
        **COMMON,
        "phase": S, "running": I, "queued": I, "tokens": I, "token_usage": F, "swa_token_usage": F,
        "gen_throughput": F, "input_throughput": F, "prompt_throughput": F, "swapped": I, "accept_len": F, "accept_rate": F, "graph": B,
        "retracted": I, "preempted": I, "new_seq": I, "new_tokens": I, "cached_tokens": I,
        "cache_hit_rate": F, "pending_tokens": I, "prealloc_usage": F, "transfer_req": I, "extra": PAIRS,
    },
    # One row per speculative-decoding metrics line (vLLM) : per-interval counters.
    "spec": {
        **COMMON, "drafted": I, "accepted": I, "drafts": I, "mean_accept_len": F, "accept_rate": F,
        "per_position": pl.List(F), "k": I,  # k: speculative tokens per step, where the line prints it (V0)
    },
    "config": {**COMMON, "key": S, "value": S, "value_num": F, "value_type": S, "origin": S},
    "events": {**COMMON, "severity": S, "message": S, "fields": S, "span": I},
    "requests": {**COMMON, "client": S, "port": I, "method": S, "path": S, "http": S, "status": I},
    "unparsed": {"source": S, "line_no": I, "ts": TS, "text": S},
}


def table(columns: dict[str, pl.DataType]) -> Schema:
    """A format-specific table (nccl_links, bench, ...): the common columns first."""
    return {**COMMON, **columns}


def conform(frame: pl.DataFrame, schema: Schema) -> pl.DataFrame:
    """Exactly the table's columns, in order and type; missing ones are null."""
    cols = [
        (pl.col(c).cast(t, strict=False) if c in frame.columns else pl.lit(None, t)).alias(c)
        for c, t in schema.items()
    ]
    return frame.select(cols)


def empty(schema: Schema) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)
