"""vLLM's periodic engine lines (`stats`: V0, V1, the 0.33 iteration line) and its
speculative-decoding lines (`spec`: V1's per-interval metrics, V0's cumulative counters,
the offline examples' summary)."""

from __future__ import annotations

from functools import partial

import polars as pl

from loganalyze.formats.common import stats_kind
from loganalyze.formats.spec import Key, LineKind, Sample
from loganalyze.formats.vllm.lines import H

I, F = pl.Int64, pl.Float64

# ---------------------------------------------------------------------------- stats

STATS_KEYS = (
    Key("Running", "running", I),
    Key("Waiting", "queued", I),
    Key("Pending", "queued", I),
    Key("Swapped", "swapped", I),
    Key("Preemptions", "preempted", I),
    Key("KV cache usage", "token_usage", F, percent=True),
    Key("Avg prompt throughput", "prompt_throughput", F),
    Key("Avg generation throughput", "gen_throughput", F),
    Key("Prefix cache hit rate", "cache_hit_rate", F, percent=True),
    Key("context requests", "new_seq", I),
    Key("context tokens", "new_tokens", I),
    Key("generation requests", "running", I),
)

# Bring every release's stats line to `key: value, ` pairs that the keys find.
# Header-like parts (`Engine 000: `) move to the end, where `extra` finds them as pairs.
STATS_REWRITES = (
    (r"\.$", ""),
    (r"^RUNNING: (\d+) \| WAITING: (\d+)$", "Running: $1 reqs, Waiting: $2 reqs"),  # V1 0.7.0's core.py line
    (r"^.*?Engine (\d+): (.*)$", "$2, Engine: $1"),
    (r"^.*?(\d+) Engines Aggregated: (.*)$", "$2, Engines aggregated: $1"),
    (r"^.*?Iteration\((\d+)\): (.*)$", "$2, Iteration: $1"),
    (r"(\d+) (context requests|context tokens|generation requests|generation tokens)", "$2: $1"),
    (r"(\d+ reqs) ([A-Z])", "$1, $2"),  # 0.7.1-0.7.2: `Waiting: 0 reqs GPU KV cache usage`
    (r"KV fetch: (\d+) waiting to start, (\d+) in progress, (\d+) completed waiting",
     "KV fetch waiting: $1, KV fetch in progress: $2, KV fetch completed waiting: $3"),
    # The device's KV usage follows a count (`reqs, GPU KV ...`, `Preemptions: 2, XPU KV ...`);
    # V0's `CPU KV cache usage` (swap space) follows a percentage and stays as it is.
    (r"(\w, )([A-Z]+) KV cache usage: ", "${1}KV device: $2, KV cache usage: "),
    (r"^Prefix cache hit rate: GPU: ([\d.]+%), CPU: ", "Prefix cache hit rate: $1, CPU prefix cache hit rate: "),
)


_stats = partial(stats_kind, keys=STATS_KEYS, rewrites=STATS_REWRITES)


# ----------------------------------------------------------------- speculative decoding

V1_SPEC_KEYS = (
    Key("Mean acceptance length", "mean_accept_len", F),
    Key("Accepted", "accepted", I),
    Key("Drafted", "drafted", I),
    Key("Avg Draft acceptance rate", "accept_rate", F, percent=True),
    Key("Draft acceptance rate", "accept_rate", F, percent=True),
)

V0_TOTALS = ("total_accepted", "total_drafted", "total_emitted")
V0_SPEC_KEYS = (
    Key("Number of speculative tokens", "k", I),
    Key("Number of accepted tokens", "total_accepted", I),
    Key("Number of draft tokens", "total_drafted", I),
    Key("Number of draft tokens tokens", "total_drafted", I),  # 0.4.1-0.5.2 typo
    Key("Number of emitted tokens", "total_emitted", I),
    Key("Number of emitted tokens tokens", "total_emitted", I),
)


def _v1_drafts(rows: pl.DataFrame) -> pl.DataFrame:
    """Drafts (verify rounds), which V1 does not print, from what it does print.

    With a fixed k (EAGLE, MTP, draft model) drafts = Drafted / k, k being the length of
    the per-position list; that is taken when it reproduces the printed mean length.
    Otherwise (ngram, suffix: drafts shorter than k) Accepted / (mean length - 1).
    """
    k, accepted, mean = pl.col("per_position").list.len(), pl.col("accepted"), pl.col("mean_accept_len")
    fixed = pl.col("drafted") / k
    consistent = (k > 0) & (pl.col("drafted") % k == 0) & ((1 + accepted / fixed - mean).abs() < 0.0051)
    drafts = pl.when(consistent).then(fixed).when(mean > 1).then((accepted / (mean - 1)).round())
    return rows.with_columns(drafts=drafts.cast(I))


def _v0_intervals(rows: pl.DataFrame, state: dict) -> pl.DataFrame:
    """Per-interval values from V0's counters, which are cumulative since engine start.

    Each line minus the line before (the previous batch's last line comes from `state`);
    a counter that drops means the engine restarted, so the line's own value is the
    interval. Accept length = emitted / drafts, with drafts = draft tokens / k: emitted
    tokens count the accepted prefix plus the bonus token. (V0's `accepted` counts
    positions accepted whatever came before, so it is not used for the length.)
    """
    last = state.get("last", dict.fromkeys(V0_TOTALS, 0))
    prev = {c: pl.col(c).shift(1).fill_null(last[c]) for c in V0_TOTALS}
    restart = pl.any_horizontal([pl.col(c) < prev[c] for c in V0_TOTALS])
    delta = {c: pl.when(restart).then(pl.col(c)).otherwise(pl.col(c) - prev[c]) for c in V0_TOTALS}
    out = rows.with_columns(
        accepted=delta["total_accepted"], drafted=delta["total_drafted"], emitted=delta["total_emitted"])
    state["last"] = {c: out[c].drop_nulls()[-1] if out[c].drop_nulls().len() else last[c] for c in V0_TOTALS}
    drafts = pl.col("drafted") / pl.col("k")
    return out.with_columns(
        drafts=drafts.round().cast(I),
        accept_rate=pl.when(pl.col("drafted") > 0).then(pl.col("accepted") / pl.col("drafted")),
        mean_accept_len=pl.when(drafts > 0).then(pl.col("emitted") / drafts),
    )


def _offline_summary(rows: pl.DataFrame) -> pl.DataFrame:
    """The acceptance rate of the offline example's summary: accepted / drafted where it
    prints them, else the mean of the per-position rates (the same ratio, for a fixed k)."""
    rate = pl.when(pl.col("drafted") > 0).then(pl.col("accepted") / pl.col("drafted"))
    return rows.with_columns(accept_rate=pl.coalesce(rate, pl.col("per_position").list.mean()))


# --------------------------------------------------------------------------- config

KINDS = (
    _stats("stats", "decode", "Running: ", r"Running: \d+ reqs", (
        Sample("INFO 02-05 04:53:21 llm_engine.py:706] Avg prompt throughput: 1137.2 tokens/s, Avg generation throughput: "
               "193.7 tokens/s, Running: 5 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 4.2%, "
               "CPU KV cache usage: 0.0%",
               gen_throughput=193.7, prompt_throughput=1137.2, queued=0, running=5, swapped=0, token_usage=0.042),
        "INFO 03-18 09:04:46 [metrics.py:481] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.4 "
        "tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.6%, "
        "CPU KV cache usage: 0.0%.",
        Sample("(APIServer pid=851) INFO 04-28 22:54:32 [loggers.py:257] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
               "Avg generation throughput: 5.4 tokens/s, Running: 1 reqs, Waiting: 14 reqs, GPU KV cache usage: 76.5%, "
               "Prefix cache hit rate: 92.0%",
               cache_hit_rate=0.92, gen_throughput=5.4, prompt_throughput=0.0, queued=14, running=1, token_usage=0.765),
        Sample("INFO 01-31 10:00:00 loggers.py:72] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 9.9 "
               "tokens/s, Running: 2 reqs, Waiting: 0 reqs GPU KV cache usage: 1.0%.",
               gen_throughput=9.9, prompt_throughput=0.0, queued=0, running=2, token_usage=0.01),
    )),
    _stats("core_stats", "decode", "RUNNING: ", r"^RUNNING: \d+ \| WAITING: \d+$", (
        "INFO 01-04 17:21:02 core.py:247] RUNNING: 306 | WAITING: 628",
    )),
    _stats("prefix_cache", "prefix_cache", "Prefix cache hit rate: GPU: ", r"^Prefix cache hit rate: GPU: ", (
        "INFO 10-16 19:06:01 metrics.py:361] Prefix cache hit rate: GPU: 94.35%, CPU: 0.00%",
    )),
    _stats("iteration", "iteration", "Iteration(", r"Iteration\(\d+\): \d+ context requests", (
        Sample("Iteration(120): 2 context requests, 4096 context tokens, 30 generation requests, 30 generation tokens, "
               "iteration elapsed time: 25.10 ms, GPU KV cache usage: 12.0%",
               new_seq=2, new_tokens=4096, running=30, token_usage=0.12),
    )),
    LineKind(
        name="spec_decoding", table="spec", needle="SpecDecoding metrics: ", keys=V1_SPEC_KEYS,
        rewrites=((r"^.*?SpecDecoding metrics: ", ""),),
        pattern=r"Per-position acceptance rate: (?P<per_position>(?:[\d.]+|nan)(?:, (?:[\d.]+|nan))*)",
        types={"per_position": pl.List(F)}, handler=_v1_drafts,
        samples=(
            Sample("(APIServer pid=1) INFO 05-07 04:56:17 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: "
                   "2.63, Accepted throughput: 76.80 tokens/s, Drafted throughput: 235.49 tokens/s, Accepted: 768 tokens, "
                   "Drafted: 2355 tokens, Per-position acceptance rate: 0.726, 0.467, 0.240, 0.134, 0.064, "
                   "Avg Draft acceptance rate: 32.6%",
                   accept_rate=0.326, accepted=768, drafted=2355, drafts=471, mean_accept_len=2.63,
                   per_position=[0.726, 0.467, 0.24, 0.134, 0.064]),
            Sample("INFO 04-10 08:00:00 [metrics.py:87] SpecDecoding metrics: Draft acceptance rate: 45.0%, "
                   "Accepted: 90 tokens, Drafted: 200 tokens",
                   accept_rate=0.45, accepted=90, drafted=200),
        ),
    ),
    LineKind(
        name="spec_v0", table="spec", needle="Speculative metrics: ", match=r"System efficiency: ",
        keys=V0_SPEC_KEYS, rewrites=((r"^.*?Speculative metrics: ", ""),), carry=_v0_intervals,
        samples=(
            Sample("INFO 10-16 19:05:47 metrics.py:367] Speculative metrics: Draft acceptance rate: 0.642, System "
                   "efficiency: 0.598, Number of speculative tokens: 3, Number of accepted tokens: 8547, Number of draft "
                   "tokens: 13311, Number of emitted tokens: 10616.",
                   # the counters are totals since start: the row holds them (first interval) and their ratios
                   accepted=8547, drafted=13311, drafts=13311 // 3, k=3, accept_rate=8547 / 13311,
                   mean_accept_len=10616 / (13311 // 3)),
        ),
    ),
    # V1's first spec-decoding line (0.8, before `SpecDecoding metrics`): V0's wording without
    # `System efficiency`, and the counts are the interval's (reset after each line), not totals.
    LineKind(
        name="spec_v1_counts", table="spec", needle="Speculative metrics: ",
        match=r"Speculative metrics: Draft acceptance rate: (?:[\d.]+|nan), Number of ",
        keys=(Key("Draft acceptance rate", "accept_rate", F), Key("Number of speculative tokens", "k", I),
              Key("Number of accepted tokens", "accepted", I), Key("Number of draft tokens", "drafted", I)),
        rewrites=((r"^.*?Speculative metrics: ", ""),),
        samples=(
            Sample("Speculative metrics: Draft acceptance rate: 1.000, Number of accepted tokens: 66, Number of draft "
                   "tokens: 66, ", accept_rate=1.0, accepted=66, drafted=66),
            Sample(f"{H}Speculative metrics: Draft acceptance rate: 0.500, Number of speculative tokens: 3, Number of "
                   "accepted tokens: 30, Number of draft tokens: 60, Number of emitted tokens: 50.",
                   accept_rate=0.5, k=3, accepted=30, drafted=60),
        ),
    ),
    # The offline examples (examples/offline_inference/spec_decode.py and its predecessor
    # eagle.py) print totals from the engine's counters, not a log line: `total_num_output_tokens`,
    # `num_drafts`, `num_draft_tokens`, `num_accepted_tokens` (later releases), `mean acceptance
    # length`, then `acceptance at token i: r` per draft position (`i:r` in the first form).
    # One spec row for the whole run; a summary without the totals is the run of its lines.
    LineKind(
        name="spec_offline_summary", table="spec", needle="total_num_output_tokens: ",
        match=r"^total_num_output_tokens: \d+$",
        rewrites=((r"\n-{10,}", ""), (r"\nacceptance at token 0: ?", "\nper_position: "),
                  (r"\nacceptance at token [1-9]\d*: ?", ", ")),
        pattern=(r"(?s)^(?:.*?num_drafts: (?P<drafts>\d+))?(?:.*?num_draft_tokens: (?P<drafted>\d+))?"
                 r"(?:.*?num_accepted_tokens: (?P<accepted>\d+))?.*?mean acceptance length: (?P<mean_accept_len>[\d.]+)"
                 r"(?:\nper_position: (?P<per_position>[\d.]+(?:, [\d.]+)*))?"),
        types={"drafts": I, "drafted": I, "accepted": I, "mean_accept_len": F, "per_position": pl.List(F)},
        continuation=r"^(?:(?:num_drafts|num_draft_tokens|num_accepted_tokens|mean acceptance length): [\d.]+"
                     r"|-{10,}|acceptance at token \d+: ?[\d.]+)$",
        orphan=r"^(?:-{10,}|mean acceptance length: [\d.]+)$", handler=_offline_summary,
        # One sample, the whole block: its lines alone are no summary (and behind a logging
        # leader, the fallback's events).
        samples=(Sample("\n".join(("total_num_output_tokens: 68596", "num_drafts: 20468", "num_draft_tokens: 204680",
                                   "num_accepted_tokens: 48266", "mean acceptance length: 3.36", "-" * 50,
                                   "acceptance at token 0: 0.71", "acceptance at token 1: 0.50")),
                        drafts=20468, drafted=204680, accepted=48266, mean_accept_len=3.36,
                        per_position=[0.71, 0.5], accept_rate=48266 / 204680),),
    ),
)
