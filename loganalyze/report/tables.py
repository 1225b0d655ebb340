"""The report's tables as plain rows, shared by the HTML and Markdown renderers.

A `Table` is strings only, already redacted (see model.py); renderers escape them.
Rows flagged `differs` are those where the runs disagree: the comparison's point.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any


from loganalyze.report.model import ReportData, RunData

EXTRA_CONFIG_ROWS = 30

# (label, family, summary key, what follows the value: a format string over the same summary)
KEY_METRICS: tuple[tuple[str, str, str, str | None], ...] = (
    ("Single-stream throughput (tok/s)", "sweep", "single_stream_tok_s", None),
    ("Peak throughput (tok/s)", "sweep", "peak_tok_s", "at C={peak_level}"),
    ("Knee (concurrency)", "sweep", "knee_level", "({plateau_cause})"),
    ("TTFT p50 at peak (ms)", "sweep", "ttft_p50_ms_at_peak", None),
    ("TPOT p50 at peak (ms)", "sweep", "tpot_p50_ms_at_peak", None),
    ("Concurrency cap", "concurrency", "cap", "({cap_source})"),
    ("Running requests, max", "concurrency", "running_max", None),
    ("Queued requests, max", "concurrency", "queue_max", None),
    ("Time at the cap with a queue", "concurrency", "capped_fraction", None),
    ("KV token usage, max", "concurrency", "token_usage_max", None),
    ("Generation throughput, mean (tok/s)", "concurrency", "gen_throughput_mean", None),
    ("Generation throughput, max (tok/s)", "concurrency", "gen_throughput_max", None),
    ("Speculative algorithm", "speculative", "algorithm", None),
    ("Accept length, mean", "speculative", "accept_len_mean", None),
    ("Accept length, maximum possible", "speculative", "max_accept_len", None),
    ("Accept rate, mean", "speculative", "accept_rate_mean", None),
    ("Normalised acceptance", "speculative", "acceptance_normalised", None),
    ("Decode step, median (ms)", "steps", "step_ms_median", None),
    ("Tokens per step per request", "steps", "tokens_per_step", None),
    ("Startup to ready (s)", "startup", "startup_s", None),
    ("Weight loading (s)", "startup", "load_s", None),
    ("NCCL transports (links)", "nccl", "transports", None),
    ("NCCL channels", "nccl", "channels_max", None),
)

# Server settings that decide throughput, SGLang and vLLM names side by side.
KEY_CONFIG = (
    "engine", "engine_version", "model_path", "model", "quantization", "dtype", "kv_cache_dtype",
    "tp_size", "tensor_parallel_size", "pp_size", "pipeline_parallel_size", "dp_size", "data_parallel_size",
    "enable_dp_attention", "ep_size", "context_length", "max_model_len",
    "max_running_requests", "max_num_seqs", "max_total_tokens", "max_num_batched_tokens", "chunked_prefill_size",
    "mem_fraction_static", "gpu_memory_utilization", "cuda_graph_max_bs", "disable_cuda_graph", "enforce_eager",
    "attention_backend", "schedule_policy", "enable_prefix_caching", "disable_radix_cache",
    "speculative_algorithm", "speculative_draft_model_path", "speculative_num_steps", "speculative_eagle_topk",
    "speculative_num_draft_tokens", "speculative_config",
)

FIELD = re.compile(r"\{(\w+)\}")
PERCENT_SUFFIXES = ("_fraction", "_normalised", "accept_rate_mean", "_share")
MISSING = "–"


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    differs: list[bool] = field(default_factory=list)
    note: str = ""


def fmt(key: str, value: Any) -> str:
    """A summary value as a reader wants it: fractions as percentages, big numbers grouped."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and key.endswith(PERCENT_SUFFIXES):
        return f"{value:.1%}"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".") if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(key, v) for v in value)
    if isinstance(value, dict) and all(not isinstance(v, (dict, list)) for v in value.values()):
        return ", ".join(f"{k} {fmt(k, v)}" for k, v in value.items())
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _differs(values: list[str]) -> bool:
    """Two or more runs have a value and they disagree (a value only one run has is no difference)."""
    present = {v for v in values if v != MISSING}
    return len(present) > 1


def _table(title: str, runs: list[RunData], rows: list[tuple[str, list[str]]], note: str = "",
           mark: bool = False) -> Table:
    """Label column plus one column per run; `mark` flags rows that differ (settings, not numbers:
    numbers differ between runs by nature)."""
    return Table(title, ["", *[r.name + (" (baseline)" if r.is_baseline else "") for r in runs]],
                 [[label, *values] for label, values in rows], [mark and _differs(v) for _, v in rows], note)


def key_metrics(data: ReportData) -> Table:
    """The headline numbers of every run side by side; rows no run has are left out."""
    rows = []
    for label, family, key, suffix in KEY_METRICS:
        values = []
        for run in data.runs:
            s = run.families[family].summary if family in run.families else {}
            text = fmt(key, s.get(key))
            if suffix and s.get(key) is not None and all(s.get(k) is not None for k in FIELD.findall(suffix)):
                text += " " + suffix.format(**s)
            values.append(text)
        if any(v != MISSING for v in values):
            rows.append((label, values))
    return _table("Key numbers", data.runs, rows)


def all_metrics(data: ReportData) -> Table:
    """Every scalar summary value of every family, so families added later show up unasked."""
    keys: dict[tuple[str, str], None] = {}
    for run in data.runs:
        for name, family in run.families.items():
            keys.update({(name, k): None for k in family.summary})
    rows = [(f"{name}.{key}", [fmt(key, run.families[name].summary.get(key)) if name in run.families else MISSING
                               for run in data.runs]) for name, key in keys]
    return _table("All metrics", data.runs, rows)


def config_table(data: ReportData) -> Table:
    """Key settings, plus (comparing runs) every other setting the runs share with different values."""
    present = [k for k in KEY_CONFIG if any(k in r.config for r in data.runs)]
    shared = set.intersection(*(set(r.config) for r in data.runs)) if len(data.runs) > 1 else set()
    extra = sorted(k for k in shared - set(KEY_CONFIG) if len({r.config[k] for r in data.runs}) > 1)
    rows = [(k, [r.config.get(k, MISSING) for r in data.runs]) for k in present + extra[:EXTRA_CONFIG_ROWS]]
    note = "Rows marked ≠ differ between runs." if len(data.runs) > 1 else ""
    if len(extra) > EXTRA_CONFIG_ROWS:
        note += f" {len(extra) - EXTRA_CONFIG_ROWS} more differing settings not shown (loganalyze show RUN)."
    return _table("Key configuration", data.runs, rows, note.strip(), mark=True)


def sources_table(data: ReportData) -> Table:
    rows = [[run.name, s["path"], f"{s['format']} {s['version'] or ''}".strip(), fmt("lines", s["lines"]),
             fmt("unparsed", s["unparsed"]), (s["sha256"] or "")[:16]]
            for run in data.runs for s in run.sources]
    return Table("Sources", ["run", "file", "format", "lines", "unparsed", "sha256 (first 16)"], rows,
                 [False] * len(rows))


def unparsed_table(run: RunData) -> Table | None:
    """The most common shapes of the lines no parser claimed: what a new format rule should cover."""
    t = run.unparsed
    if t.height == 0:
        return None
    paths = {s["sha256"][:16]: s["path"] for s in run.sources if s["sha256"]}
    rows = [[fmt("count", r["count"]), r["template"], f"{paths.get(r['source'], r['source'])}:{r['line_no']}"]
            for r in t.iter_rows(named=True)]
    total = sum(s["unparsed"] or 0 for s in run.sources)
    return Table(f"Unparsed lines: {run.name}", ["count", "template (digits and hex masked)", "first seen"], rows,
                 [False] * len(rows), f"{total:,} unparsed lines in all; the {len(rows)} most common templates.")
