"""What a finding is, and the `Case` every finder receives.

A finder is one module with one function `find(ctx: Case) -> list[Finding]`. It reads
metrics families (and, for evidence, rows of the run's tables: their `raw` line text),
never raw log files. `impact` is the estimated fraction of throughput (or latency) lost,
0 to 1: findings are ranked by it, root causes before their consequences.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import polars as pl

from loganalyze.kinds import kind_in, kinds
from loganalyze.metrics.base import Family, line_text
from loganalyze.run import Run

SHUTDOWN, UVICORN = kinds("shutdown"), kinds("uvicorn")
TRACEBACKS = kinds("traceback", "exception")
# A benchmark client's own code in a traceback's frames (vLLM's benchmarks/benchmark_serving.py
# and `vllm bench`'s vllm/benchmarks/, SGLang's bench_serving.py, GuideLLM, AIPerf, GenAI-Perf,
# and the packages of the other load generators: inference-perf, llmperf, genai-bench,
# trtllm-bench's tensorrt_llm/bench/, evalscope's perf, Modular MAX's max/benchmark/): the client failed, whatever file
# holds it (a console where a server's lines came first).
CLIENT_CODE = (r'File "[^"]*(?:/benchmark_\w+\.py|/vllm/benchmarks/|/sglang/bench_\w+\.py'
               r'|/(?:guidellm|aiperf|genai_perf|inference_perf|llmperf|genai_bench)/|/tensorrt_llm/bench/'
               r'|/evalscope/perf/|/max/benchmark/)')

SEVERITIES = ("critical", "warning", "info")
CLIENT_FORMATS = ("bench", "bench-json", "client-log")
MAX_EVIDENCE = 5
EXCERPT = 240


def value_range(values: pl.Series) -> str:
    """`14` where every value is 14, else `12-14`: a verdict reads "14 requests wait", not "14-14"."""
    low, high = values.min(), values.max()
    return f"{low}" if low == high else f"{low}-{high}"


def extreme_rows(rows: pl.DataFrame, column: str, n: int = 3, largest: bool = True) -> pl.DataFrame:
    """The `n` rows with the largest (or smallest) `column`, ties in frame order, rows where
    it is null left out: a stable sort then `head(n)`, without sorting millions of rows to
    cite three."""
    values = rows[column].drop_nulls()
    if values.len() == 0:
        return rows.head(0)
    edge = values.top_k(n).min() if largest else values.bottom_k(n).max()
    near = rows.filter(pl.col(column) >= edge if largest else pl.col(column) <= edge)
    return near.sort(column, descending=largest, maintain_order=True).head(n)


@dataclass
class Evidence:
    path: str
    line: int
    text: str


@dataclass
class Finding:
    id: str
    severity: str
    title: str
    verdict: str
    impact: float
    impact_text: str
    recommendation: str
    confidence: str = "high"
    evidence: list[Evidence] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    consequence: bool = False  # an effect of the root causes (listed after them)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Case:
    """The run under diagnosis and what it is diagnosed with: its metrics, and the baseline
    run with its metrics where one is given. (`Case`, not "context": the parser's
    `formats.spec.Context` is the other thing a run's lines are read with.)"""

    run: Run
    metrics: dict[str, Family]
    baseline: Run | None = None
    baseline_metrics: dict[str, Family] | None = None

    def paths(self) -> dict[str, str]:
        return {s["id"]: s["path"] for s in self.run.info["sources"]}

    def evidence(self, rows: pl.DataFrame, limit: int = MAX_EVIDENCE) -> list[Evidence]:
        """Evidence from table rows that carry source and line_no; their text is `raw`, or,
        for rows of the per-interval frames (which leave it out), read back from the run."""
        paths = self.paths()
        rows = line_text(self.run, rows.head(limit))
        return [
            Evidence(paths.get(r["source"], r["source"]), int(r["line_no"]), (r["raw"] or "").strip())
            for r in rows.iter_rows(named=True)
        ]

    def events(self, where: pl.Expr) -> pl.DataFrame:
        """The run's events matching `where`, in log order: the input of every event-driven finder."""
        return self.run.table("events").filter(where).sort("source", "line_no").collect()

    def client_sources(self) -> list[str]:
        """Sources that a benchmark client wrote (a bench format, or a console log that holds a
        result block): their errors are the client's, not the server's."""
        ids = {s["id"] for s in self.run.info["sources"] if s.get("format") in CLIENT_FORMATS}
        if "bench" in self.run.tables():
            ids |= set(self.run.table("bench").select("source").unique().collect()["source"].to_list())
        return sorted(ids | self._command_only())

    def _command_only(self) -> set[str]:
        """Sources that hold a client's command line and nothing a server prints (no stats, no
        server setting): a paste of the command and what it printed (bench/293 of hold-out 15:
        genai-bench's command, then its ValueError)."""
        if "config" not in self.run.tables():
            return set()
        keys = self.run.table("config").group_by("source").agg(
            client=pl.col("key").str.starts_with("bench.").any(),
            server=(~pl.col("key").str.starts_with("bench.")).any()).collect()
        served = (set(self.run.table("stats").select("source").unique().collect()["source"].to_list())
                  if "stats" in self.run.tables() else set())
        return set(keys.filter(pl.col("client") & ~pl.col("server"))["source"].to_list()) - served

    def by_client(self) -> pl.Expr:
        """Events a benchmark client printed: those of its files (`client_sources`), the
        tracebacks that run through a client's code (CLIENT_CODE), and the exception chained
        to such a traceback (`The above exception was the direct cause of the following
        exception:`, then the next traceback: one failure, bench/235 of hold-out 11)."""
        client = kind_in(TRACEBACKS) & pl.col("message").str.contains(CLIENT_CODE).fill_null(False)
        before = lambda expr, n: expr.shift(n).over("source", order_by="line_no")  # noqa: E731
        chained = (kind_in(TRACEBACKS) & (before(pl.col("kind"), 1) == "traceback_chain")
                   & before(client, 2)).fill_null(False)
        return pl.col("source").is_in(self.client_sources()) | client | chained

    def after_shutdown(self, rows: pl.DataFrame) -> pl.Series:
        """Which of `rows` (with source and line_no) come after a shutdown began in their source
        (a `[shutdown]` line, uvicorn's 'Shutting down'): consequences of it, not faults."""
        began = self.events(kind_in(SHUTDOWN) | (
            kind_in(UVICORN) & pl.col("message").str.contains("Shutting down|shutdown"))) \
            .group_by("source").agg(began=pl.col("line_no").min())
        if began.height == 0 or rows.height == 0:
            return pl.Series([False] * rows.height, dtype=pl.Boolean)
        at = rows.select("source", "line_no").join(began, on="source", how="left", maintain_order="left")
        return (at["line_no"] > at["began"]).fill_null(False)

    def config_rows(self, *keys: str, origin: str | None = None) -> pl.DataFrame:
        """Config rows of these keys, one per line, with `raw` cut down to the setting itself.

        A server-args dump is one line of thousands of characters: the evidence is the
        line's prefix and the `key=value` that matters.
        """
        cfg = self.run.table("config").filter(pl.col("key").is_in(list(keys)))
        if origin:
            cfg = cfg.filter(pl.col("origin") == origin)
        rows = cfg.sort("line_no", "source").collect().unique(["source", "line_no"], keep="first", maintain_order=True)
        short = pl.col("raw").str.len_chars() <= EXCERPT
        excerpt = pl.format("{} ... {}={} ...", pl.col("raw").str.slice(0, 40), pl.col("key"), pl.col("value"))
        return rows.with_columns(raw=pl.when(short).then(pl.col("raw")).otherwise(excerpt))
