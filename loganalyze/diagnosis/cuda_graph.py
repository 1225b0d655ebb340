"""cuda-graph-off: decode steps that ran without a CUDA graph, at the batch sizes that ran.

SGLang replays a captured CUDA graph for a decode batch no larger than the largest size
it captured (`--cuda-graph-max-bs`; the `Capture cuda graph bs [...]` list) and launches
every kernel one by one above it or when graphs are off (`--disable-cuda-graph`); each
decode line says which (`cuda graph: True|False`, `npu graph` on Ascend). Without a graph
a step pays the launch overhead of every kernel, which is most of a small batch's step
(docs/findings.md, "Decode without CUDA graphs"). Prefill never runs in a graph, so only
decode lines count. Only a clear pattern is reported:

* every decode line without a graph: off by configuration where the server args say so,
  otherwise the log does not say why (low confidence);
* lines without a graph at batch sizes as large as or above the largest that ran with one:
  graphs stop at that size (sglang/48: graphs up to 28 running, none at 36 and 46;
  sglang/49: batch 48 ran with a graph in one run and without in the other, 6139 and 5453
  tokens/s).

Lines without a graph below sizes that ran with one (a mixed or idle step) are left alone.
The finding is informational: graphs off is a choice with a memory cost, not a fault.
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding


def _decode(ctx: Case) -> pl.DataFrame:
    """Decode lines that say whether they ran in a graph: a narrow read of the stats table."""
    return ctx.run.table("stats").filter((pl.col("phase") == "decode") & pl.col("graph").is_not_null()
                                         & pl.col("running").is_not_null()) \
        .select("source", "line_no", "running", "graph", "gen_throughput").sort("source", "line_no").collect()


def _same_batch(on: pl.DataFrame, off: pl.DataFrame) -> str:
    """Throughput with and without a graph at a batch size both ran at, where the log has one."""
    both = on.group_by("running").agg(on_tps=pl.col("gen_throughput").mean()).join(
        off.group_by("running").agg(off_tps=pl.col("gen_throughput").mean()), on="running").drop_nulls()
    if both.height == 0:
        return ""
    r = both.sort("running", descending=True).row(0, named=True)
    return (f" At batch {r['running']} the log has both: {r['on_tps']:,.0f} tokens/s with a graph, "
            f"{r['off_tps']:,.0f} without ({r['off_tps'] / r['on_tps'] - 1:+.0%}).")


def find(ctx: Case) -> list[Finding]:
    if "stats" not in ctx.run.tables() or "graph" not in ctx.run.table("stats").collect_schema():
        return []
    rows = _decode(ctx)
    off, on = rows.filter(~pl.col("graph")), rows.filter(pl.col("graph"))
    if off.height == 0:
        return []
    disabled = ctx.config_rows("disable_cuda_graph").filter(pl.col("value") == "True")
    cap_rows = ctx.config_rows("cuda_graph_max_bs").filter(pl.col("value").str.contains(r"^\d+$"))
    if on.height:
        largest = on["running"].max()
        off = off.filter(pl.col("running") >= largest)
        if off.height == 0:
            return []
        why = (f"the largest batch that ran with a graph is {largest}" if off["running"].min() > largest else
               f"batch {largest} ran with a graph in other lines of the log (another run or setting)")
        confidence = "medium"
        config = cap_rows
    elif disabled.height:
        why, confidence, config, largest = "graphs are off (disable_cuda_graph=True)", "high", disabled, None
    elif cap_rows.height and off["running"].min() > int(cap_rows["value"][0]):
        largest = int(cap_rows["value"][0])
        why, confidence, config = f"cuda_graph_max_bs is {largest}", "high", cap_rows
    else:
        why, confidence, config, largest = "the log does not say why (no server args)", "low", cap_rows, None
    low, high = off["running"].min(), off["running"].max()
    sizes = f"{low}" if low == high else f"{low}-{high}"
    return [Finding(
        id="cuda-graph-off",
        severity="info",
        title=f"Decode without CUDA graph at batch {sizes}",
        verdict=(f"{off.height} of {rows.height} decode line(s) ran without a graph, at batch {sizes}: {why}. "
                 "Those steps launch every kernel one by one, which costs most at small batches."
                 + _same_batch(on, off)),
        impact=0.0,
        impact_text="decode steps without a graph pay kernel-launch overhead",
        recommendation=("Let graphs cover the batch sizes that run: --cuda-graph-max-bs at least the running "
                        "batch seen (up to --max-running-requests), or drop --disable-cuda-graph; capturing "
                        "more sizes costs GPU memory and startup time, so compare throughput at those batch sizes."),
        confidence=confidence,
        evidence=ctx.evidence(config.head(1)) + ctx.evidence(
            pl.concat([on.sort("running").tail(1), off.sort("running").tail(2)]).select("source", "line_no")),
        metrics={"lines_without_graph": off.height, "decode_lines": rows.height, "batch_min": low,
                 "batch_max": high, "largest_with_graph": largest},
    )]
