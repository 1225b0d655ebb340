"""What every metrics family returns, and helpers they share.

A family (concurrency, speculative, nccl, ...) is one module with one public function
`Run -> Family | None` (None when the run has no data for it). `summary` holds the
numbers scripts and findings use; `frames` hold the series that charts draw; `notes`
say where a value came from (a cap from config, a default, or inferred).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from loganalyze.run import Run


DECODE_COLUMNS = ("source", "line_no", "ts", "rank", "running", "queued", "token_usage", "gen_throughput",
                  "prompt_throughput", "accept_len", "accept_rate", "retracted", "preempted")


@dataclass
class Family:
    name: str
    summary: dict[str, Any]
    frames: dict[str, pl.DataFrame] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary, "notes": self.notes} if self.notes else dict(self.summary)


def config_value(config: pl.DataFrame, *keys: str) -> tuple[str | None, float | None, dict | None]:
    """The last value of the first key present: (text, number, the config row as a dict)."""
    for key in keys:
        rows = config.filter(pl.col("key") == key).sort("line_no")
        if rows.height:
            row = rows.row(-1, named=True)
            return row["value"], row["value_num"], row
    return None, None, None


def decode_rows(run: Run) -> pl.DataFrame:
    """The run's decode stats rows in (ts, source, line_no) order, read and sorted once per
    run: several families start from them, and on a big log that read is most of their time.
    Kept while the run's sources stay the same.

    Only the columns the families read are loaded, in one chunk: the line text (`raw`)
    alone is 1.4 GB for the 3.4 M rows of a 1 GB log, and every later filter pays for each
    column and chunk it carries. Evidence reads the text of its few lines back by
    (source, line_no): see `line_text`."""
    sources = tuple(s["id"] for s in run.info["sources"])
    cached = run.__dict__.get("_decode_rows")
    if cached is None or cached[0] != sources:
        decode = run.table("stats").filter(pl.col("phase") == "decode").select(DECODE_COLUMNS)
        stats = decode.collect(engine="streaming").rechunk()
        if not in_order(stats):
            stats = stats.sort("ts", "source", "line_no")
        cached = run.__dict__["_decode_rows"] = (sources, stats)
    return cached[1]


def line_text(run: Run, rows: pl.DataFrame, tables: tuple[str, ...] = ("stats", "spec", "bench")) -> pl.DataFrame:
    """`rows` with their `raw` line text filled in from `tables`, by (source, line_no), where
    it is missing: the per-interval frames leave the text out (see `decode_rows`), so it is
    read for the few rows a finding cites, not for millions."""
    if "raw" not in rows.columns:
        rows = rows.with_columns(raw=pl.lit(None, pl.String))
    missing = rows.filter(pl.col("raw").is_null())
    if missing.height == 0:
        return rows
    keys = (pl.col("source").is_in(missing["source"].unique().implode())
            & pl.col("line_no").is_in(missing["line_no"].unique().implode()))
    wanted = missing["line_no"].unique().to_list()
    found = pl.concat([run.store.scan(run.name, t, lines=wanted).filter(keys).select("source", "line_no", __raw="raw")
                       for t in tables])
    out = rows.lazy().join(found.unique(["source", "line_no"], keep="first"), on=["source", "line_no"], how="left",
                           maintain_order="left")
    return out.with_columns(raw=pl.coalesce("raw", "__raw")).drop("__raw").collect()


def in_order(frame: pl.DataFrame) -> bool:
    """Whether `frame` is already sorted by (ts, source, line_no), as a log read in file order
    usually is (then sorting would only copy it). No null ts: sort puts those first."""
    if frame.height < 2:
        return frame.height == 0 or frame["ts"].null_count() == 0
    ts, src, line = pl.col("ts"), pl.col("source"), pl.col("line_no")
    after = (ts > ts.shift(1)) | ((ts == ts.shift(1)) & ((src > src.shift(1)) | ((src == src.shift(1)) & (line > line.shift(1)))))
    return bool(frame.select((ts.null_count() == 0) & after.slice(1).all()).item())


def primary_rank(stats: pl.DataFrame) -> pl.DataFrame:
    """Rows of the one rank that metrics follow: stats are printed per rank and per DP group.

    The rank with the most rows wins (TP0, or the only one); with DP attention each DP
    rank prints its own numbers, and the cap is divided among them.
    """
    if stats.height == 0:
        return stats
    counts = stats.group_by("rank").len().sort(["len", "rank"], descending=[True, False], nulls_last=False)
    rank = counts["rank"][0]
    return stats.filter(pl.col("rank").is_null() if rank is None else pl.col("rank") == rank)


def round_or_none(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(float(x), digits)
