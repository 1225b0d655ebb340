"""Concurrency saturation: is `running` pinned at a server cap while requests queue?

The cap is SGLang's max_running_requests or vLLM's max_num_seqs, from the config the log
printed; failing that vLLM's default for the version, or SGLang's cap under speculation
for the detected release (where the decode lines show an accept length), or, last, inferred from a flat
maximum of `running` while the queue is non-empty (labelled as such).
"""

from __future__ import annotations

import polars as pl

from loganalyze.metrics.base import Family, config_value, decode_rows, primary_rank, round_or_none
from loganalyze.run import Run

NEAR_FULL = 0.9
DRAIN_MIN_ROWS = 3
MIN_INFERRED_CAP = 8  # a smaller flat maximum with a queue is a stall, not a cap someone configured
PLAIN_USAGE = 0.5  # token usage below which a queue longer than the running batch is no memory limit


def speculative_default(versions: tuple[str, ...], decode: pl.DataFrame) -> int | None:
    """SGLang's own cap under speculation for the detected release, where the decode lines
    show speculation (an accept length) and never run above it (above it, the flag was given)."""
    from loganalyze.formats.sglang import SPEC_RESET_DEFAULT

    known = {SPEC_RESET_DEFAULT[v] for v in versions if v in SPEC_RESET_DEFAULT}
    if len(known) != 1 or "accept_len" not in decode.columns or decode["accept_len"].is_null().all():
        return None
    default = known.pop()
    return default if (decode["running"].max() or 0) <= default else None


def server_sources(run: Run) -> tuple[tuple[str, ...], str | None]:
    """What find_cap needs to know of a run's sources: the SGLang release ranges detected, and
    the one inference engine whose format they have (None where there is none, or both)."""
    sources = run.info["sources"]
    versions = tuple(s["version"] for s in sources if s.get("format") == "sglang" and s.get("version"))
    engines = {s.get("format") for s in sources} & {"sglang", "vllm"}
    return versions, engines.pop() if len(engines) == 1 else None


def find_cap(config: pl.DataFrame, decode: pl.DataFrame, versions: tuple[str, ...] = (),
             engine: str | None = None) -> tuple[int | None, str, dict | None]:
    """(cap, where it came from, the config row) for the decode rows' scheduler; `versions`
    are the SGLang release ranges detected for the run's sources, `engine` the engine their
    format says where no config row does (server_sources)."""
    _, num, row = config_value(config, "max_running_requests", "max_num_seqs")
    if num is not None:
        cap = int(num)
        _, dp, _ = config_value(config, "dp_size")
        attn_dp, _, _ = config_value(config, "enable_dp_attention")
        if attn_dp == "True" and dp and dp > 1:
            cap //= int(dp)
        return cap, row["origin"], row
    version, _, _ = config_value(config, "engine_version")
    engine = config_value(config, "engine")[0] or engine
    if engine == "vllm":
        from loganalyze.formats.vllm_defaults import EVERY_DEFAULT, default_max_num_seqs

        default = default_max_num_seqs(version)
        if default:
            return default, "default", None
        if _plain_plateau(decode).filter(pl.col("running").is_in(list(EVERY_DEFAULT))).height:
            return int(decode["running"].max()), "default of some release", None
    default = speculative_default(versions, decode)
    if default:
        return default, "speculative default", None
    inferred = infer_cap(decode)
    return inferred, "inferred" if inferred else "unknown", None


def infer_cap(decode: pl.DataFrame) -> int | None:
    """The maximum of `running` when it recurs with a non-empty queue: a cap the log never
    printed. One interval decides it when it is plain: at that maximum more requests wait
    than run while the KV cache is nearly empty (an excerpt of one line: 32 running, 68
    queued, token usage 0.01), since nothing but a configured cap holds them back. Unless the
    next line shows the queue empty: then the whole queue was served within one logging
    interval, an arrival burst the scheduler was still admitting (vllm/139: 17 running and
    183 waiting, then 0 and 0 ten seconds later), not a cap holding requests back."""
    if decode.height == 0 or decode["running"].max() is None:
        return None
    top = decode["running"].max()
    pinned = decode.filter((pl.col("running") == top) & (pl.col("queued") > 0))
    memory_bound = (pinned["token_usage"].fill_null(0) >= NEAR_FULL).mean() or 0
    plain = _plain_plateau(decode).filter(pl.col("queued") >= pl.col("running")).height
    if top < MIN_INFERRED_CAP or memory_bound > 0.5 or (pinned.height < max(3, 0.1 * decode.height) and not plain):
        return None
    return int(top)


def _plain_plateau(decode: pl.DataFrame) -> pl.DataFrame:
    """Intervals at the maximum of `running` with requests waiting, the KV cache far from full
    and the queue not served by the next line (an arrival burst being admitted, infer_cap)."""
    drained_next = (pl.col("queued").shift(-1).over("source") == 0).fill_null(False)
    return decode.sort("source", "line_no").filter(
        (pl.col("running") == pl.col("running").max()) & (pl.col("queued") > 0)
        & (pl.col("token_usage") < PLAIN_USAGE) & ~drained_next)


def drain_mask(min_rows: int = DRAIN_MIN_ROWS) -> pl.Expr:
    """Rows of an end-of-load drain: running falls line after line with an empty queue.

    Such windows measure the benchmark's tail, not the server's steady state, so
    steady-state means leave them out.
    """
    def mark(cols: pl.Series) -> pl.Series:  # one call: an expression used twice would run it twice
        in_drain = _drain_rows(cols, min_rows)
        return in_drain | in_drain.shift(-1).fill_null(False)

    return pl.struct("running", "queued").map_batches(mark, return_dtype=pl.Boolean)


def _drain_rows(cols: pl.Series, min_rows: int) -> pl.Series:
    """`falling & (falling.sum().over(streak) >= min_rows)`, streak = (~falling).cum_sum(),
    without a window over as many groups as rows (seconds on a 1 GB log).

    Same result, nulls included: as in the window, `falling` counts within each streak
    group (the step from the group's previous row; none for its first), and the rows with
    no streak (a null `falling`) form one more group.
    """
    frame = cols.struct.unnest()
    falling = frame.select((pl.col("running").diff() < 0) & (pl.col("queued") == 0)).to_series()
    streak = (~falling).cum_sum()
    keyed = streak.is_not_null()
    sums = pl.repeat(0, frame.height, dtype=pl.UInt32, eager=True)
    at = keyed.arg_true()
    if at.len():
        st = streak.gather(at)
        first = (pl.col("st") != pl.col("st").shift(1)).fill_null(True)
        steps = _falling_steps(frame[at].with_columns(st=st), first)
        runs = st.rle().struct.field("len")  # groups are runs: streak never decreases
        ends = steps.cum_sum().gather(runs.cum_sum() - 1)
        sums = sums.scatter(at, (ends - ends.shift(1, fill_value=0)).gather(st.rle_id()))
    loose = (~keyed).arg_true()
    if loose.len():
        sums = sums.scatter(loose, _falling_steps(frame[loose]).sum())
    return falling & (sums >= min_rows)


def _falling_steps(frame: pl.DataFrame, first: pl.Expr | None = None) -> pl.Series:
    """1 where running fell from the row before (in `frame`) with an empty queue, else 0."""
    step = pl.col("running").diff()
    if first is not None:
        step = pl.when(first).then(None).otherwise(step)
    return frame.select(((step < 0) & (pl.col("queued") == 0)).fill_null(False).cast(pl.UInt32)).to_series()


def concurrency(run: Run) -> Family | None:
    stats = decode_rows(run)
    if stats.height == 0:
        return None
    decode = primary_rank(stats)
    config = run.table("config").collect()
    cap, origin, cap_row = find_cap(config, decode, *server_sources(run))
    reset = config.filter(pl.col("origin") == "speculative_reset")
    at_cap = (pl.col("running") >= cap) if cap else pl.lit(False)
    flags = decode.with_columns(at_cap=at_cap, capped=at_cap & (pl.col("queued") > 0), drain=drain_mask())
    capped = flags.select("capped", "queued").filter("capped")  # only what the summary reads: no copy of every column
    steady = flags.select("drain", "running", "gen_throughput").filter(~pl.col("drain"))
    summary = {
        "cap": cap,
        "cap_rows": int(flags["capped"].sum()),
        "cap_source": origin,
        "speculative_reset": reset.height > 0,
        "decode_rows": decode.height,
        "rank": decode["rank"][0],
        "running_mean": round_or_none(steady["running"].mean(), 2),
        "running_max": decode["running"].max(),
        "queue_mean": round_or_none(decode["queued"].mean(), 2),
        "queue_max": decode["queued"].max(),
        "queue_mean_at_cap": round_or_none(capped["queued"].mean(), 2) if capped.height else None,
        "at_cap_fraction": round_or_none(flags["at_cap"].mean()),
        "capped_fraction": round_or_none(flags["capped"].mean()),
        "queued_fraction": round_or_none((decode["queued"] > 0).mean()),
        "token_usage_mean": round_or_none(decode["token_usage"].mean()),
        "token_usage_max": round_or_none(decode["token_usage"].max()),
        "near_full_fraction": round_or_none((decode["token_usage"] >= NEAR_FULL).mean()),
        "gen_throughput_mean": round_or_none(steady["gen_throughput"].mean(), 2),
        "drain_rows": flags["drain"].sum(),
        "gen_throughput_max": round_or_none(decode["gen_throughput"].max(), 2),
    }
    timeline = flags.select("ts", "line_no", "source", "running", "queued", "token_usage", "gen_throughput",
                            "prompt_throughput", "at_cap", "capped", "drain", "retracted", "preempted").with_columns(cap=pl.lit(cap, pl.Int64))
    notes = {"cap": f"{origin}" + (f" (line {cap_row['line_no']})" if cap_row else "")}
    return Family("concurrency", summary, {"timeline": timeline}, notes)
