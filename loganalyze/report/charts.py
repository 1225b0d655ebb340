"""Charts: one small function per chart, `Family -> alt.Chart | None` (None: no data to draw).

Frames are downsampled to at most MAX_POINTS buckets before they become Vega-Lite data
(a spec inlines its data as JSON), so a report of a 1 GB run stays a few MB. Charts have
no title (the page's caption carries it) and `width="container"` so they follow the
page on a phone and on paper. Colour never carries meaning alone: series also differ in
dash pattern and are named in the legend.

A family absent from a run simply has no charts; `PER_RUN` and `COMPARED` list which
function draws which family, in page order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import altair as alt
import polars as pl

from loganalyze.metrics.base import Family

MAX_POINTS = 400
HEIGHT = 200
NEAR_FULL = 0.9
SERIES_COLOURS = ("#1f5fa8", "#d9730d", "#2e8540", "#8e44ad", "#b22222", "#555555")
DASHES = ([1, 0], [6, 3], [2, 2], [8, 2, 2, 2], [4, 4], [1, 3])
EVICTION_COLUMNS = ("retracted", "preempted")
TIME_AXIS = alt.Axis(labelOverlap=True, labelAngle=0)


def downsample(frame: pl.DataFrame, x: str, aggs: dict[str, str], n: int = MAX_POINTS) -> pl.DataFrame:
    """At most n rows: equal-width buckets over x, each column aggregated as `aggs` says (mean, max, sum)."""
    frame = frame.filter(pl.col(x).is_not_null()).sort(x)
    if frame.height <= n:
        return frame.select(x, *aggs)
    pos = pl.col(x).cast(pl.Int64)
    lo, hi = frame.select(pos.min()).item(), frame.select(pos.max()).item()
    bucket = ((pos - lo) * n // (hi - lo + 1)).alias("_bucket")
    return (frame.group_by(bucket, maintain_order=True)
            .agg(pl.col(x).min(), *[getattr(pl.col(c), how)() for c, how in aggs.items()])
            .sort(x).drop("_bucket"))


def time_axis(frame: pl.DataFrame, aggs: dict[str, str]) -> tuple[pl.DataFrame, alt.X]:
    """Downsampled frame with an `x` column, and its encoding: the log clock, or line numbers without one.

    Timestamps are written as UTC ISO strings and drawn on a UTC scale, so the axis shows
    the log's own wall-clock time whatever the reader's time zone.
    """
    if "ts" in frame.columns and frame["ts"].drop_nulls().len():
        out = downsample(frame, "ts", aggs)
        out = out.with_columns(x=pl.col("ts").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")).drop("ts")
        return out, alt.X("x:T", title="time (log clock)", scale=alt.Scale(type="utc"), axis=TIME_AXIS)
    out = downsample(frame, "line_no", aggs).rename({"line_no": "x"})
    return out, alt.X("x:Q", title="log line")


def _series(frame: pl.DataFrame, x: alt.X, columns: dict[str, str], y_title: str) -> alt.Chart:
    """Lines of several columns of one frame, told apart by colour, dash and legend label."""
    long = frame.unpivot(index="x", on=list(columns), variable_name="series", value_name="value").with_columns(
        pl.col("series").replace_strict(columns))
    labels = list(columns.values())
    return alt.Chart(long).mark_line(interpolate="step-after", strokeWidth=1.6).encode(
        x=x,
        y=alt.Y("value:Q", title=y_title),
        color=alt.Color("series:N", title=None, scale=alt.Scale(domain=labels, range=SERIES_COLOURS[:len(labels)]),
                        legend=alt.Legend(orient="top")),
        strokeDash=alt.StrokeDash("series:N", title=None, scale=alt.Scale(domain=labels, range=DASHES[:len(labels)]),
                                  legend=None),
        tooltip=[alt.Tooltip("x", title="at"), "series:N", alt.Tooltip("value:Q", format=",.2f")],
    )


def _rule(value: float, label: str, colour: str = "#b22222") -> alt.LayerChart:
    """A dashed horizontal reference line with its label written on it."""
    base = alt.Chart(pl.DataFrame({"y": [float(value)], "label": [label]}))
    return (base.mark_rule(strokeDash=[5, 3], color=colour, strokeWidth=1.5).encode(y="y:Q")
            + base.mark_text(align="left", baseline="bottom", dx=4, dy=-2, color=colour, fontSize=11)
            .encode(y="y:Q", text="label:N", x=alt.value(0)))


def _by_run(runs: list[str]) -> dict:
    """Colour and dash per run, in the order the runs were given."""
    return {"color": alt.Color("run:N", title=None, scale=alt.Scale(domain=runs, range=SERIES_COLOURS[:len(runs)]),
                               legend=alt.Legend(orient="top")),
            "strokeDash": alt.StrokeDash("run:N", scale=alt.Scale(domain=runs, range=DASHES[:len(runs)]), legend=None)}


CONCURRENCY_AXIS = alt.X("c:Q", title="client concurrency", scale=alt.Scale(type="log", base=2),
                         axis=alt.Axis(values=[2 ** i for i in range(11)], format="d"))


def running_vs_cap(fam: Family) -> alt.Chart | None:
    t = fam.frames.get("timeline")
    if t is None or t.height == 0 or t["running"].drop_nulls().len() == 0:
        return None
    frame, x = time_axis(t, {"running": "mean", "queued": "mean"})
    chart = _series(frame, x, {"running": "running", "queued": "queued"}, "requests")
    cap = fam.summary.get("cap")
    return chart + _rule(cap, f"cap {cap} ({fam.summary.get('cap_source')})") if cap else chart


def kv_usage(fam: Family) -> alt.Chart | None:
    """KV cache (token) usage, with the near-full line and any retraction/preemption marked."""
    t = fam.frames.get("timeline")
    if t is None or t["token_usage"].drop_nulls().len() == 0:
        return None
    evictions = [c for c in EVICTION_COLUMNS if c in t.columns]
    frame, x = time_axis(t, {"token_usage": "mean", **{c: "sum" for c in evictions}})
    line = alt.Chart(frame).mark_area(line={"color": "#1f5fa8"}, color="#1f5fa8", opacity=0.25,
                                      interpolate="step-after").encode(
        x=x, y=alt.Y("token_usage:Q", title="token usage", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
        tooltip=[alt.Tooltip("x", title="at"), alt.Tooltip("token_usage:Q", format=".1%")])
    chart = line + _rule(NEAR_FULL, "near full")
    for column in evictions:
        marks = frame.filter(pl.col(column) > 0)
        if marks.height:
            chart += alt.Chart(marks).mark_point(shape="triangle-down", size=70, filled=True, color="#b22222").encode(
                x=x, y=alt.value(8), tooltip=[alt.Tooltip("x", title="at"), alt.Tooltip(f"{column}:Q")])
    return chart


def gen_throughput(fam: Family) -> alt.Chart | None:
    t = fam.frames.get("timeline")
    if t is None or t["gen_throughput"].drop_nulls().len() == 0:
        return None
    frame, x = time_axis(t, {"gen_throughput": "mean"})
    return _series(frame, x, {"gen_throughput": "generation throughput"}, "tokens/s")


def accept_length(fam: Family) -> alt.Chart | None:
    """Accept length over time against the maximum the settings allow and, when constant, break-even."""
    t = fam.frames.get("timeline")
    if t is None or t["accept_len"].drop_nulls().len() == 0:
        return None
    frame, x = time_axis(t, {"accept_len": "mean"})
    chart = _series(frame, x, {"accept_len": "accept length"}, "tokens per verify step")
    maximum = fam.summary.get("max_accept_len")
    if maximum:
        chart += _rule(maximum, f"maximum {maximum:g}", colour="#2e8540")
    taus = fam.frames.get("break_even", pl.DataFrame({"tau_star": []}))["tau_star"].drop_nulls().unique()
    if taus.len() == 1:
        chart += _rule(taus[0], f"break-even {taus[0]:.2f}")
    return chart


def break_even_by_batch(fam: Family) -> alt.Chart | None:
    """Accept length tau against break-even tau* at each batch size: below the line, speculation loses."""
    t = fam.frames.get("break_even")
    if t is None or t["tau_star"].drop_nulls().len() == 0:
        return None
    frame = t.select(x="running", tau="tau", tau_star="tau_star")
    return _series(frame, alt.X("x:Q", title="running requests (batch size)"),
                   {"tau": "accept length τ", "tau_star": "break-even τ*"}, "tokens per step").mark_line(
        point=True, strokeWidth=1.6)


def per_position(fam: Family) -> alt.Chart | None:
    rates = fam.summary.get("per_position")
    if not rates:
        return None
    frame = pl.DataFrame({"position": list(range(1, len(rates) + 1)), "rate": rates})
    bars = alt.Chart(frame).mark_bar(color="#1f5fa8").encode(
        x=alt.X("position:O", title="draft position"),
        y=alt.Y("rate:Q", title="acceptance rate", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
        tooltip=["position:O", alt.Tooltip("rate:Q", format=".1%")])
    return bars + bars.mark_text(dy=-4, baseline="bottom").encode(text=alt.Text("rate:Q", format=".0%"))


def step_time_by_batch(fam: Family) -> alt.Chart | None:
    """Median decode step time per batch size, one line per run: where speculation's extra cost shows."""
    t = fam.frames.get("by_batch")
    if t is None or t.height == 0:
        return None
    runs = t["run"].unique(maintain_order=True).to_list()
    return alt.Chart(t.select("run", "running", "step_ms", "intervals")).mark_line(point=True).encode(
        x=alt.X("running:Q", title="running requests (batch size)"),
        y=alt.Y("step_ms:Q", title="decode step (ms)"), **_by_run(runs),
        tooltip=["run:N", "running:Q", alt.Tooltip("step_ms:Q", format=".1f"), "intervals:Q"])


def startup_phases(fam: Family) -> alt.Chart | None:
    """Startup as a timeline of phases (load, compile, graph capture, KV cache), each bar labelled in seconds.

    A phase the server timed itself (`Model loading took 430 s`) may be one line: its bar is
    drawn back from that line by the printed duration."""
    t = fam.frames.get("phases")
    if t is None or t.height == 0 or t["start"].drop_nulls().len() == 0:
        return None
    iso = "%Y-%m-%dT%H:%M:%S%.3fZ"
    printed = pl.col("end") - pl.duration(milliseconds=(pl.col("seconds").fill_null(0) * 1000).cast(pl.Int64))
    frame = t.select("phase", "seconds", start=pl.min_horizontal("start", printed).dt.strftime(iso),
                     end=pl.col("end").dt.strftime(iso),
                     label=pl.format("{} s", pl.col("seconds").round(0).cast(pl.Int64)))
    base = alt.Chart(frame).encode(y=alt.Y("phase:N", title=None, sort=None))
    bars = base.mark_bar(color="#1f5fa8").encode(
        x=alt.X("start:T", title="time (log clock)", scale=alt.Scale(type="utc"), axis=TIME_AXIS), x2="end:T",
        tooltip=["phase:N", alt.Tooltip("seconds:Q", format=",.1f")])
    return bars + base.mark_text(align="left", dx=4).encode(x="end:T", text="label:N")


def sweep_throughput(fam: Family) -> alt.Chart | None:
    """Output throughput at each benchmark concurrency, one line per run; the point shape says
    why throughput stopped growing there (cap reached, KV cache full, ...)."""
    t = fam.frames.get("levels")
    if t is None or t["output_throughput"].drop_nulls().len() == 0:
        return None
    frame = t.select("run", "c", "output_throughput", cause=pl.col("cause").fill_null("unknown"))
    runs = frame["run"].unique(maintain_order=True).to_list()
    line = alt.Chart(frame).mark_line(strokeWidth=1.6).encode(
        x=CONCURRENCY_AXIS, y=alt.Y("output_throughput:Q", title="output tokens/s"), **_by_run(runs))
    points = alt.Chart(frame).mark_point(filled=True, size=60).encode(
        x=CONCURRENCY_AXIS, y="output_throughput:Q", color=_by_run(runs)["color"],
        shape=alt.Shape("cause:N", title="limit", legend=alt.Legend(orient="bottom")),
        tooltip=["run:N", "c:Q", alt.Tooltip("output_throughput:Q", format=",.1f"), "cause:N"])
    return line + points


def _latency(fam: Family, metric: str, title: str) -> alt.Chart | None:
    """Median and p99 of one latency (ms) against concurrency: runs by colour, percentiles by dash."""
    t = fam.frames.get("levels")
    columns = {f"{metric}_median": "p50", f"{metric}_p99": "p99"}
    if t is None or any(c not in t.columns for c in columns) or t[f"{metric}_median"].drop_nulls().len() == 0:
        return None
    long = t.select("run", "c", *columns).unpivot(index=["run", "c"], variable_name="percentile", value_name="ms") \
        .with_columns(pl.col("percentile").replace_strict(columns)).drop_nulls("ms")
    runs = long["run"].unique(maintain_order=True).to_list()
    return alt.Chart(long).mark_line(point=True, strokeWidth=1.6).encode(
        x=CONCURRENCY_AXIS, y=alt.Y("ms:Q", title=f"{title} (ms, log)", scale=alt.Scale(type="log")),
        color=_by_run(runs)["color"], detail="percentile:N",
        strokeDash=alt.StrokeDash("percentile:N", title=None, scale=alt.Scale(domain=["p50", "p99"], range=DASHES[:2]),
                                  legend=alt.Legend(orient="top", symbolType="stroke", symbolStrokeColor="#444",
                                                     symbolStrokeWidth=2)),
        tooltip=["run:N", "c:Q", "percentile:N", alt.Tooltip("ms:Q", format=",.1f")])


def sweep_ttft(fam: Family) -> alt.Chart | None:
    return _latency(fam, "ttft", "time to first token")


def sweep_tpot(fam: Family) -> alt.Chart | None:
    return _latency(fam, "tpot", "time per output token")


def nccl_transports(fam: Family) -> alt.Chart | None:
    """Rank-to-rank grid of the largest communicator: which transport each link used, and on how
    many channels (P2P vs SHM vs NET is what a PCIe box without NVLink pays for)."""
    links = fam.frames.get("links")
    if links is None or links.height == 0 or links["src_rank"].drop_nulls().len() == 0:
        return None
    sizes = links.group_by("comm_key").agg(ranks=pl.col("comm_nranks").max(), n=pl.len())
    key, ranks = sizes.sort(["ranks", "n", "comm_key"], descending=[True, True, False], nulls_last=True).row(0)[:2]
    grid = (links.filter(pl.col("comm_key") == key).drop_nulls(["src_rank", "dst_rank"])
            .group_by("src_rank", "dst_rank")
            .agg(transport=pl.col("transport").unique().sort().str.join(" + "), channels=pl.col("channel").n_unique())
            .sort("src_rank", "dst_rank"))
    base = alt.Chart(grid).encode(x=alt.X("dst_rank:O", title="to rank"), y=alt.Y("src_rank:O", title="from rank"))
    rects = base.mark_rect(stroke="white").encode(
        color=alt.Color("transport:N", title=None, scale=alt.Scale(range=SERIES_COLOURS), legend=alt.Legend(orient="top")),
        tooltip=["src_rank:O", "dst_rank:O", "transport:N", "channels:Q"])
    chart = rects + base.mark_text(color="white", fontSize=10).encode(text="channels:Q")
    return chart.properties(title=alt.TitleParams(f"communicator {key}, {ranks or grid.height} ranks", fontSize=11,
                                                  fontWeight="normal", anchor="start"))


@dataclass(frozen=True)
class ChartKind:
    title: str
    family: str
    draw: Callable[[Family], alt.Chart | None]
    caption: str


PER_RUN = (
    ChartKind("Running requests, cap and queue", "concurrency", running_vs_cap,
              "Running requests pinned at the cap while the queue is non-empty means the cap, not the GPU, is the limit."),
    ChartKind("KV cache usage", "concurrency", kv_usage,
              "Token usage of the KV cache; at 90 % and above the scheduler stops admitting and may evict requests."),
    ChartKind("Generation throughput", "concurrency", gen_throughput, "Output tokens per second, as the server logged them."),
    ChartKind("Accept length", "speculative", accept_length,
              "Tokens each verification step yields (bonus token included), against the maximum the settings allow."),
    ChartKind("Accept length vs break-even by batch size", "speculative", break_even_by_batch,
              "Where τ falls below τ*, a speculative step costs more per token than a plain one."),
    ChartKind("Acceptance by draft position", "speculative", per_position,
              "A rate that collapses after the first position is the signature of a mismatched drafter."),
    ChartKind("Startup timeline", "startup", startup_phases, "Where the time before the server answered went."),
    ChartKind("NCCL transports", "nccl", nccl_transports,
              "How each pair of ranks talks: P2P (GPU to GPU over PCIe or NVLink), SHM (through host memory) or NET "
              "(between nodes); the number in a cell is its channel count."),
)

# Charts drawn once with every run's frames stacked (a `run` column): lines per run.
COMPARED = (
    ChartKind("Throughput vs concurrency", "sweep", sweep_throughput,
              "Benchmark output throughput at each client concurrency; the marker says what limited each step."),
    ChartKind("Time to first token vs concurrency", "sweep", sweep_ttft,
              "Median (solid) and p99 (dashed); a jump means requests wait in a queue before they start."),
    ChartKind("Time per output token vs concurrency", "sweep", sweep_tpot,
              "Median (solid) and p99 (dashed) decode time per token as the batch grows."),
    ChartKind("Decode step time by batch size", "steps", step_time_by_batch,
              "Median time of one decode step at each batch size; the gap between runs is the cost of their settings."),
)


def stacked(families: dict[str, Family]) -> Family:
    """One family whose frames hold every run's rows, with a `run` column (for COMPARED charts)."""
    names = dict.fromkeys(frame for f in families.values() for frame in f.frames)
    frames = {frame: pl.concat([f.frames[frame].with_columns(run=pl.lit(run)) for run, f in families.items()
                                if frame in f.frames], how="diagonal_relaxed") for frame in names}
    return Family(next(iter(families.values())).name, {}, frames)


def spec(chart: alt.Chart) -> str:
    """The chart's Vega-Lite JSON, sized to its container."""
    return chart.properties(width="container", height=HEIGHT).configure_view(stroke=None).configure_axis(
        labelFontSize=11, titleFontSize=11, grid=True, gridColor="#e6e6e6").to_json(indent=None)
