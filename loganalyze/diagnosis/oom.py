"""oom: the GPU ran out of memory: out-of-memory errors and failed allocations at run time,
or, at startup, no memory left for the KV cache (a configuration: the weights, the graphs
and --gpu-memory-utilization leave too little, or max_model_len needs more than there is).

Out-of-memory text is needed: an engine that died (EngineDeadError) without it is a crash,
and one that died after a shutdown began is neither.
"""

from __future__ import annotations

import json
import re

import polars as pl

from loganalyze.diagnosis.base import TRACEBACKS, Case, Finding
from loganalyze.kinds import kind_in, kinds

KINDS = kinds("oom", "kv_cache_insufficient", "startup_memory_short")
NCCL_WARN = kinds("nccl_warn")
STARTUP = kinds("kv_cache_insufficient", "gpu_blocks", "startup_memory_short", "kv_profile")
KV_TEXT = (r"No available memory for the cache blocks|larger than the available KV cache memory|can be stored in KV cache"
           r"|To serve at least one request with the model"  # the start of the last, where a paste cut the rest
           r"|leave no GPU memory for the KV cache")  # SGLang's weights that leave no room (sglang/268 of hold-out 14)
# vLLM's check before the profile, also read inside the traceback that carries it (vllm/117).
SHORT_TEXT = r"on startup is less than desired GPU memory utilization"
STARTUP_TEXT = f"{KV_TEXT}|{SHORT_TEXT}"
OOM_TEXT = rf"OutOfMemoryError|out of memory|Not enough memory|{STARTUP_TEXT}"
V0_BLOCK_TOKENS = 16  # vLLM V0's default --block-size, where the log does not print one


def _request_limits(ctx: Case) -> tuple[int | None, int]:
    """(the longest request the server takes, tokens per KV block) from the run's settings."""
    config = ctx.run.config()
    longest = next((int(v) for k in ("max_model_len", "max_seq_len") if (v := config.get(k, "")).isdigit()), None)
    block = int(config["block_size"]) if config.get("block_size", "").isdigit() else V0_BLOCK_TOKENS
    return longest, block


def no_kv_blocks(ctx: Case) -> pl.Expr:
    """The profile left too little for the KV cache: vLLM's `# GPU blocks: 0` (vllm/61), or fewer
    blocks than one request of the longest length holds, which V0 then refuses at startup
    (vllm/260 of hold-out 17: 229 blocks of 16 tokens, 3,664 tokens, for max_seq_len 4096);
    SGLang's `... is larger than the profiled value -561981` (sglang/98)."""
    longest, block = _request_limits(ctx)
    blocks = pl.col("fields").str.json_path_match("$.gpu_blocks").cast(pl.Int64, strict=False)
    short = (blocks == 0) | ((blocks * block < longest) if longest else pl.lit(False))
    return ((kind_in(kinds("gpu_blocks")) & short)
            | (kind_in(kinds("kv_profile"))
               & (pl.col("fields").str.json_path_match("$.profiled").cast(pl.Int64, strict=False) <= 0))
            ).fill_null(False)


def _rows(ctx: Case) -> pl.DataFrame:
    in_traceback = kind_in(TRACEBACKS) & pl.col("message").str.contains(OOM_TEXT)
    # NCCL's `NCCL WARN Cuda failure 'out of memory'`: the allocation NCCL made failed.
    in_nccl = kind_in(NCCL_WARN) & pl.col("message").str.contains(OOM_TEXT)
    # A client's traceback (AIPerf's log, say) is no server's out-of-memory.
    rows = ctx.events((kind_in(KINDS) | in_traceback | in_nccl | no_kv_blocks(ctx)) & ~ctx.by_client())
    return rows.filter(~ctx.after_shutdown(rows))


def _quote(message: str) -> str:
    """The line of an event that says what ran out: inside a traceback the error line
    (`RuntimeError: CUDA error: out of memory`), not the frame it starts with (sglang/64) nor the
    source line that raises it (vllm/59: `raise ValueError("No available memory ...`); a paren
    a paste left open at the line's end is dropped (vllm/97: `... stored in KV cache (`)."""
    lines = [line.strip() for line in message.splitlines()] or [""]
    said = [line for line in lines if re.search(OOM_TEXT, line)]
    errors = [line for line in said if re.match(r"[\w.]*(?:Error|Exception): ", line)]
    text = (errors or said or lines)[0]
    return (text[:-1].rstrip() if text.endswith("(") else text)[:160]


def find(ctx: Case) -> list[Finding]:
    rows = _rows(ctx)
    if rows.height == 0:
        return []
    first = rows.row(0, named=True)
    startup = (rows["kind"].is_in(list(STARTUP)) | rows["message"].str.contains(STARTUP_TEXT).fill_null(False)).all()
    short = (rows["kind"] == "startup_memory_short") | rows["message"].str.contains(SHORT_TEXT).fill_null(False)
    if startup and short.all():
        return [_held_elsewhere(ctx, rows)]
    if startup:
        return [Finding(
            id="oom", severity="critical", title="No GPU memory left for the KV cache (configuration)",
            verdict=(f"At startup the engine found too little GPU memory for the KV cache ({rows.height} line(s); "
                     f"the first: {_quote(first['message'])}{_capacity(ctx, first)}): the server never starts "
                     "serving. This is how it was configured, not an out-of-memory at run time."),
            impact=1.0, impact_text="the server does not start",
            recommendation=("Leave the KV cache more memory: raise --gpu-memory-utilization (vLLM) or "
                            "--mem-fraction-static (SGLang), lower --max-model-len, shard wider (--tensor-parallel-size), "
                            "or use a smaller or quantized model."),
            evidence=ctx.evidence(rows), metrics={"events": rows.height, "phase": "startup"},
        )]
    return [Finding(
        id="oom", severity="critical", title="Out of memory",
        verdict=f"{rows.height} out-of-memory event(s); the first: {_quote(first['message'])}",
        impact=1.0, impact_text="the server stops serving",
        recommendation=("Lower memory use: --mem-fraction-static (SGLang) or --gpu-memory-utilization (vLLM) a "
                        "little lower to leave room for activations and graphs, smaller --max-running-requests / "
                        "--max-num-seqs or --cuda-graph-max-bs, shorter --context-length."),
        evidence=ctx.evidence(rows), metrics={"events": rows.height, "phase": "run time"},
    )]


def _capacity(ctx: Case, row: dict) -> str:
    """What a `# GPU blocks: N` line holds against the longest request, where N is above 0."""
    blocks = json.loads(row["fields"] or "{}").get("gpu_blocks") if row["kind"] == "gpu_blocks" else None
    longest, block = _request_limits(ctx)
    if not blocks or not longest:
        return ""
    return (f"; {blocks:,} blocks of {block} tokens hold {blocks * block:,} tokens, fewer than one request of "
            f"max_seq_len {longest:,}")


def _held_elsewhere(ctx: Case, rows: pl.DataFrame) -> Finding:
    """vLLM's check before it loads anything: the GPU has less free memory than
    --gpu-memory-utilization asks it to take, so something else holds the rest."""
    typed = rows.filter(pl.col("kind") == "startup_memory_short")
    f = json.loads((typed if typed.height else rows)["fields"][0] or "{}")
    said = (f"{f['free_gib']:g} of {f['total_gib']:g} GiB were free, {f['gpu_memory_utilization']:g} of the GPU asks "
            f"for {f['wanted_gib']:g} GiB" if {"free_gib", "total_gib", "wanted_gib"} <= f.keys() else
            rows["message"][0][:160])
    return Finding(
        id="oom", severity="critical", title="GPU memory already in use at startup (configuration)",
        verdict=(f"At startup the GPU had less free memory than --gpu-memory-utilization asks the server to take "
                 f"({said}): another process holds GPU memory (a server still running, another model, a notebook) "
                 "or the fraction is set above what is free. The server never starts serving."),
        impact=1.0, impact_text="the server does not start",
        recommendation=("Free the GPU (`nvidia-smi` lists the processes holding memory) or lower "
                        "--gpu-memory-utilization below the free share; two servers on one GPU need fractions that add "
                        "up to less than 1."),
        evidence=ctx.evidence(rows), metrics={"events": rows.height, "phase": "startup", **f},
    )
