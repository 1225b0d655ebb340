"""SGLang's launch command (`python -m sglang.launch_server --model-path M --tp 8 ...`), read as
config rows by command_flags (loganalyze/formats/config.py), for logs that hold the command a
user ran but not the `server_args=` dump the server prints (a ticket's excerpt: the command,
then a result; sglang/245 of hold-out 13).

Each flag becomes the ServerArgs field it sets, so that the analyses read it as they read the
dump: argparse's aliases (`--tp` and `--tp-size` are `tp_size`) and the unambiguous prefixes
it accepts (`--speculative-algo` is `--speculative-algorithm`) are resolved against the
fields named here, the ones this project reads; any other flag keeps its own name.
"""

from __future__ import annotations

# ServerArgs field -> the flags that set it (sglang/srt/server_args.py; the field's own name
# with `-` is always one of them).
FIELDS = {
    "model_path": ("model-path", "model"),
    "tokenizer_path": ("tokenizer-path",),
    "tp_size": ("tp-size", "tensor-parallel-size"),
    "dp_size": ("dp-size", "data-parallel-size"),
    "ep_size": ("ep-size", "expert-parallel-size"),
    "pp_size": ("pp-size", "pipeline-parallel-size"),
    "max_running_requests": ("max-running-requests",),
    "max_total_tokens": ("max-total-tokens",),
    "chunked_prefill_size": ("chunked-prefill-size",),
    "max_prefill_tokens": ("max-prefill-tokens",),
    "mem_fraction_static": ("mem-fraction-static",),
    "context_length": ("context-length",),
    "cuda_graph_max_bs": ("cuda-graph-max-bs",),
    "disable_cuda_graph": ("disable-cuda-graph",),
    "enable_dp_attention": ("enable-dp-attention",),
    "speculative_algorithm": ("speculative-algorithm",),
    "speculative_draft_model_path": ("speculative-draft-model-path",),
    "speculative_num_steps": ("speculative-num-steps",),
    "speculative_eagle_topk": ("speculative-eagle-topk",),
    "speculative_num_draft_tokens": ("speculative-num-draft-tokens",),
    "decode_log_interval": ("decode-log-interval",),
    "attention_backend": ("attention-backend",),
    "kv_cache_dtype": ("kv-cache-dtype",),
    "quantization": ("quantization",),
    "disaggregation_mode": ("disaggregation-mode",),
}
FLAGS = {flag: field for field, flags in FIELDS.items() for flag in flags}

# The command at a line's start or after a shell prompt, behind the environment it sets.
MATCH = r"(?:^|[$#>] ?)(?:[A-Z_][A-Z0-9_]*=\S* +)*python3? -m sglang\.launch_server(?:\s|$)"
PATTERN = r"(?s)sglang\.launch_server(?P<args>.*)$"
