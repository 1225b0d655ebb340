"""concurrency-cap: `running` pinned at a server cap while requests wait in the queue.

Running flat with an empty queue is the client's own limit (client-limited, info).
In speculative mode SGLang lowers max_running_requests to 48 unless the flag is given
(docs/formats-sources.md#the-speculative-reset-of-max_running_requests): the finding names that reset when it caused the cap.
"""

from __future__ import annotations

import polars as pl

from loganalyze.diagnosis.base import Case, Finding, extreme_rows
from loganalyze.diagnosis.kv_pressure import FULL, GAUGES, SCRAPES, exported_gauges
from loganalyze.kinds import kind_in

MIN_CAPPED = 0.05  # fraction of decode intervals at the cap with a queue
CRITICAL_CAPPED = 0.25  # or more requests waiting than running at some point
FEW_ROWS = 3  # capped intervals below which an inferred cap has low confidence
FEW_INTERVALS = 10  # stats lines below which the share at the cap is a small sample (docs/formats-sources.md#vllm-server-logs)
SCRAPED_CAPPED = 0.25  # share of busy scrapes at the maximum with a queue: the cap is inferred, so more than MIN_CAPPED
LOWER = {"high": "medium", "medium": "low", "low": "low"}


def _recommendation(cap: int, reset: bool, engine_flag: str) -> str:
    if reset:
        return (f"Pass {engine_flag} explicitly (e.g. {engine_flag} 128, sized to the KV cache), or turn "
                "speculation off above the concurrency where it stops paying (see spec findings); "
                f"the cap of {cap} came from the speculative-decoding reset, not from memory.")
    return f"Raise {engine_flag} above {cap} if token usage leaves room, or add replicas for the queued load."


def find(ctx: Case) -> list[Finding]:
    c = ctx.metrics.get("concurrency")
    if not c:
        return _from_scrapes(ctx) or _from_gauges(ctx) or _configured_only(ctx, None)
    s = c.summary
    if not s["cap"]:
        return []
    capped = s["capped_fraction"] or 0.0
    if capped < MIN_CAPPED:
        return _configured_only(ctx, s)
    timeline = c.frames["timeline"]
    at_cap = timeline.select("capped", "queued", "running", "source", "line_no").filter("capped")
    wait_share = (at_cap["queued"] / (at_cap["queued"] + at_cap["running"])).mean()
    peak = extreme_rows(at_cap.select("source", "line_no", "queued"), "queued")
    reset = s["speculative_reset"] or s["cap_source"] == "speculative default" or _spec_48(ctx, s["cap"])
    engine_flag = "--max-num-seqs" if s["cap_source"] in ("default",) or _is_vllm(ctx) else "--max-running-requests"
    cap_rows = ctx.config_rows("max_running_requests", "max_num_seqs")
    evidence = ctx.evidence(pl.concat([cap_rows.select("source", "line_no", "raw"),
                                       peak.select("source", "line_no")], how="diagonal"))
    origin = " (reset by speculative decoding)" if reset else ""
    verdict = (f"Running requests sit at the server cap of {s['cap']}{origin} in {capped:.0%} of decode "
               f"intervals while up to {s['queue_max']} requests wait (mean {s['queue_mean_at_cap']} at the cap); "
               f"token usage is only {s['token_usage_max']:.2f} at most, so the cap is configuration, not memory."
               if s["token_usage_max"] is not None and s["token_usage_max"] < 0.9 else
               f"Running requests sit at the server cap of {s['cap']}{origin} in {capped:.0%} of decode "
               f"intervals while up to {s['queue_max']} requests wait.")
    if s["cap_source"] == "speculative default":
        versions = sorted({src.get("version") for src in ctx.run.info["sources"] if src.get("version")})
        verdict += (f" No server configuration in the log: {s['cap']} is the cap SGLang {', '.join(versions)} sets "
                    "itself under speculative decoding (the decode lines print an accept length), inferred from "
                    "the release, and running never exceeds it.")
    elif s["cap_source"] == "default of some release":
        verdict += (f" No server configuration or release in the log: {s['cap']} is a value vLLM's default "
                    "max_num_seqs takes (256 or 1024 by release and GPU memory), and running stops there with "
                    "requests waiting and the KV cache far from full.")
    elif s["cap_source"] == "inferred":
        verdict += (f" No server configuration in the log: the cap is inferred from {s['cap_rows']} interval(s) "
                    "at the same maximum with a queue.")
    sweep_text, sweep_metrics = _sweep(ctx)
    confidence = ("medium" if s["cap_source"] in ("speculative default", "default of some release")
                  else "high" if s["cap_source"] != "inferred"
                  else "medium" if s["cap_rows"] >= FEW_ROWS else "low")
    severity = "critical" if capped >= CRITICAL_CAPPED or (s["queue_max"] or 0) >= s["cap"] else "warning"
    if s["decode_rows"] < FEW_INTERVALS:  # a few lines show a cap, not how much of the run it held back
        verdict += _few_rows(timeline, s)
        confidence, severity = LOWER[confidence], "warning"
    return [Finding(
        id="concurrency-cap",
        severity=severity,
        title=f"Concurrency capped at {s['cap']}" + (" by the speculative-decoding reset" if reset else ""),
        verdict=verdict + sweep_text,
        impact=float(wait_share),
        impact_text=f"{wait_share:.0%} of offered requests wait in the queue while the server is at the cap",
        recommendation=_recommendation(s["cap"], reset, engine_flag),
        confidence=confidence,
        evidence=evidence,
        metrics={k: s[k] for k in ("cap", "cap_source", "speculative_reset", "capped_fraction", "queue_max",
                                   "queue_mean_at_cap", "token_usage_max", "running_max")} | sweep_metrics,
    )]


def _from_scrapes(ctx: Case) -> list[Finding]:
    """No stats lines, but the scrapes themselves (AIPerf's JSONL or Parquet): unlike the summary's
    statistics they show running and waiting at the same moment. Running at its maximum while
    requests wait, in SCRAPED_CAPPED of the scrapes where anything runs and in FEW_ROWS scrapes at
    least (no configuration says the cap, so a maximum a healthy run touches must not pass), with the KV cache never full, is a cap at that maximum, as stats lines would show it."""
    gauges = ctx.run.table("metrics").filter(kind_in(SCRAPES) & pl.col("name").str.contains(
        f"{GAUGES['running']}|{GAUGES['waiting']}|{GAUGES['usage']}")).collect()
    if gauges.height == 0:
        return []
    which = pl.when(pl.col("name").str.contains(GAUGES["running"])).then(pl.lit("running")) \
        .when(pl.col("name").str.contains(GAUGES["waiting"])).then(pl.lit("waiting")).otherwise(pl.lit("usage"))
    # A scrape held by several files (the JSONL and the Parquet of one run) counts once; engines add up.
    series = gauges.with_columns(gauge=which).group_by("ts", "gauge", "labels").agg(
        pl.col("value").max(), pl.col("source").first(), pl.col("line_no").first())
    wide = series.group_by("ts", "gauge").agg(pl.col("value").sum(), pl.col("source").first(),
                                             pl.col("line_no").first()) \
        .pivot(on="gauge", index="ts", values=["value", "source", "line_no"])
    if not {"value_running", "value_waiting"} <= set(wide.columns):
        return []
    busy = wide.filter(pl.col("value_running") > 0)
    cap = busy["value_running"].max()
    usage = wide["value_usage"].max() if "value_usage" in wide.columns else None
    at_cap = busy.filter((pl.col("value_running") == cap) & (pl.col("value_waiting") > 0))
    if cap is None or at_cap.height < FEW_ROWS or at_cap.height < SCRAPED_CAPPED * busy.height or (usage or 0) >= FULL:
        return []
    cap, share = int(cap), at_cap.height / busy.height
    waiting_max = at_cap["value_waiting"].max()
    flag = "--max-running-requests" if gauges.filter(pl.col("name").str.starts_with("sglang:")).height else "--max-num-seqs"
    peak = at_cap.sort("value_waiting", descending=True).head(1)
    evidence = gauges.filter(pl.col("name").str.contains(GAUGES["waiting"])).join(
        peak.select(source="source_waiting", line_no="line_no_waiting"), on=["source", "line_no"], how="semi")
    return [Finding(
        id="concurrency-cap", severity="warning", title=f"Concurrency capped at {cap}",
        verdict=(f"AIPerf's scrapes of the server's metrics: running requests at their maximum of {cap} while "
                 f"requests wait (up to {waiting_max:g}) in {at_cap.height} of the {busy.height} scrapes where "
                 f"anything runs ({share:.0%}), KV usage at most {usage or 0:.2f}: a cap of {cap} running requests "
                 "holds them, not memory. No server log here says the configured value (the cap is inferred)."),
        impact=round(float((at_cap["value_waiting"] / (at_cap["value_waiting"] + cap)).mean()), 2),
        impact_text="requests wait in the queue while the server runs at the cap",
        recommendation=_recommendation(cap, False, flag),
        confidence="medium" if at_cap.height >= FEW_INTERVALS else "low", evidence=ctx.evidence(evidence.head(1)),
        metrics={"cap": cap, "cap_source": "inferred from the scraped gauges", "capped_fraction": round(share, 2),
                 "queue_max": waiting_max, "token_usage_max": usage, "running_max": cap},
    )]


def _from_gauges(ctx: Case) -> list[Finding]:
    """No stats lines, but AIPerf's server-metrics export: `running` at its maximum in half of
    its scrapes or more (p50 = max) while requests wait in half of them (waiting p50 > 0) and
    the KV cache is never full is a sequence cap at that maximum (docs/formats-sources.md#server-metrics)."""
    g = exported_gauges(ctx)
    if (not g or not g["running_max"] or g["running_p50"] != g["running_max"] or not g["waiting_p50"]
            or (g["usage_max"] or 0) >= FULL):
        return []
    cap = int(g["running_max"])
    flag = "--max-running-requests" if ctx.run.table("metrics").filter(pl.col("name").str.starts_with("sglang:")) \
        .head(1).collect().height else "--max-num-seqs"
    return [Finding(
        id="concurrency-cap", severity="warning", title=f"Concurrency capped at {cap}",
        verdict=(f"AIPerf's server-metrics export: running requests at their maximum of {cap} in half of its "
                 f"scrapes or more (p50 {g['running_p50']:g}) while requests wait in half of them or more (waiting "
                 f"p50 {g['waiting_p50']:g}, max {g['waiting_max']:g}), KV usage at most {g['usage_max']:.2f}: a "
                 f"cap of {cap} running requests holds them, not memory. No server log here says the configured "
                 "value, and the export's statistics are each gauge's own (the cap is inferred)."),
        impact=round(min(1.0, g["waiting_p50"] / (g["waiting_p50"] + cap)), 2),
        impact_text="requests wait in the queue while the server runs at the cap",
        recommendation=_recommendation(cap, False, flag),
        confidence="medium", evidence=ctx.evidence(g["evidence"]),
        metrics={"cap": cap, "cap_source": "inferred from the exported gauges", "queue_max": g["waiting_max"],
                 "token_usage_max": g["usage_max"], "running_max": g["running_max"]},
    )]


def _few_rows(timeline: pl.DataFrame, s: dict) -> str:
    """What a short sample of stats lines leaves open: how many there are and how far apart
    (vLLM logs one per 10 s by default), so a share of them is a rough one."""
    gap = timeline["ts"].diff().dt.total_seconds().median() if "ts" in timeline.columns else None
    apart = f", about {gap:.0f} s apart" if gap else ""
    return (f" This rests on {s['decode_rows']} stats line{'s' if s['decode_rows'] != 1 else ''} only{apart} ({s['cap_rows']} at the cap with a queue): "
            "what happened between them is not logged, so the share at the cap is rough.")


def _sweep(ctx: Case) -> tuple[str, dict]:
    """The benchmark sweep's side: where throughput plateaus and the concurrency that first hits the cap."""
    sweep = ctx.metrics.get("sweep")
    hit = sweep.frames["levels"].filter(pl.col("cause") == "cap reached") if sweep else None
    if hit is None or hit.height == 0:
        return _rate_sweep(sweep) if sweep and "rate_levels" in sweep.frames else ("", {})
    s, first = sweep.summary, int(hit["c"][0])
    if sweep.frames["levels"].height == 1:  # one benchmark run, no sweep to plateau
        return (f" The benchmark's concurrency of {first} is above the cap.", {"cap_hit_at_c": first})
    plateau = f"plateaus at {s['peak_tok_s']:,.0f} output tok/s from C={s['knee_level']} and " if s["knee_level"] else ""
    return (f" The benchmark sweep {plateau}first hits the cap at C={first}.",
            {"cap_hit_at_c": first, "plateau_from_c": s["knee_level"], "plateau_tok_s": s["peak_tok_s"]})


def _rate_sweep(sweep) -> tuple[str, dict]:
    """A sweep of offered request rates: the rate from which throughput stops rising, what
    TTFT does beyond it, and the first rate at which the server sat at its cap."""
    hit = sweep.frames["rate_levels"].filter(pl.col("cause") == "cap reached")
    if hit.height == 0:
        return "", {}
    s, first = sweep.summary, hit["request_rate"][0]
    plateau = ""
    if s["rate_knee"] is not None:
        ttft = (f" (median TTFT {s['ttft_p50_ms_at_rate_knee']:,.0f} ms there, up to "
                f"{s['ttft_p50_ms_beyond_rate_knee']:,.0f} ms beyond)"
                if s["ttft_p50_ms_at_rate_knee"] is not None and s["ttft_p50_ms_beyond_rate_knee"] is not None else "")
        plateau = f"stops rising at {s['rate_peak_tok_s']:,.0f} output tok/s from {s['rate_knee']:g} req/s{ttft} and "
    return (f" The benchmark's sweep of offered request rates {plateau}first hits the cap at {first:g} req/s.",
            {"cap_hit_at_rate": first, "plateau_from_rate": s["rate_knee"], "plateau_tok_s": s["rate_peak_tok_s"]})


def _spec_48(ctx: Case, cap: int) -> bool:
    """SGLang <= 0.5.3 set 48 (32 in 0.4.3.post3-0.4.4.post1) silently under speculation."""
    spec = ctx.metrics.get("speculative")
    return bool(spec and spec.summary["algorithm"] and cap in (48, 32))


def _is_vllm(ctx: Case) -> bool:
    return any(s["format"] == "vllm" for s in ctx.run.info["sources"])


def _configured_only(ctx: Case, summary: dict | None) -> list[Finding]:
    """Info when speculation set the cap but no stats show it binding (a config-only log)."""
    spec = ctx.metrics.get("speculative")
    algorithm = spec.summary["algorithm"] if spec else None
    rows = ctx.config_rows("max_running_requests")
    unknown = ctx.config_rows("speculative_algorithm").height == 0  # a dump cut before the speculative args
    if rows.height == 0 or (summary is not None and summary["decode_rows"]) or not (algorithm or unknown):
        return []
    cap = rows["value"][-1]
    if cap not in ("48", "32"):
        return []
    algo_text = (f"speculative algorithm {algorithm}" if algorithm else
                 "the speculative settings cut from this log; 48 is the value SGLang sets under speculation")
    return [Finding(
        id="concurrency-cap", severity="info",
        title=f"Concurrency cap {cap} set by speculative decoding",
        verdict=(f"max_running_requests={cap} with {algo_text}: SGLang lowers "
                 "the cap to this value when --max-running-requests is not given. No stats lines here show whether "
                 "requests queue at it."),
        impact=0.0, impact_text="unknown without stats lines; check `#queue-req` at high load",
        recommendation=_recommendation(int(cap), True, "--max-running-requests"),
        confidence="medium", evidence=ctx.evidence(rows), metrics={"cap": int(cap)},
    )]
