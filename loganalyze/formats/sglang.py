"""SGLang server logs, releases 0.1 to 0.5.23 (see docs/formats-sources.md#sglang-server-logs).

Stats lines are parsed by key, so the many header and field-order variants across
releases are one kind each; unknown keys land in the `extra` column.
"""

from __future__ import annotations

from functools import partial

import polars as pl

from loganalyze.formats import sglang_launch
from loganalyze.formats.common import (
    ACCESS, ENGINE_PROCESS_KINDS, PROGRESS, TRACEBACK, UVICORN, UVICORN_WARNING, severity_from_level, stats_kind,
)
from loganalyze.formats.config import command_flags, config_value, explode_pairs, key_equals_value, repr_dump
from loganalyze.formats.spec import Key, LineKind, LogFormat, Sample, TsFormat

# A request whose KV cache did not cross (the kind `kv_transfer_failed`; also the message of a
# client's abort response, which the kv-transfer finding reads with it).
KV_TRANSFER_FAILED = (r"(?P<side>\w+) (?P<stage>transfer|bootstrap|handshake) failed for request rank=(?P<tp_rank>\d+)"
                      r".*?(?: with exception (?P<error>\w+)\(bootstrap_room=(?P<room>\d+)\): (?P<reason>.*))?$")

PREFIX = (
    r"^(?:\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?|\d\d:\d\d:\d\d(?:\.\d+)?)"
    r"(?: (?P<rank>(?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*))?\] )?"
    # 0.5.8+ may print `INFO server_args.py:1819: ` (a relative file: an absolute path there is
    # Python's warnings module, `/site-packages/x.py:12: UserWarning: `, behind some leader);
    # its level alone where a leader took the header up to it (`> [2026-02-14 15:21:27] INFO `).
    r"(?:(?:(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) )?[\w.-][\w./-]*\.py:\d+: )?"
    r"(?:\[gpu(?:_id)?=(?P<gpu>\d+)\] )?"
    r"(?P<msg>.*)$"
)

I, F, B = pl.Int64, pl.Float64, pl.Boolean

STATS_KEYS = (
    Key("#running-req", "running", I),
    Key("#running_req", "running", I),
    Key("#queue-req", "queued", I),
    Key("#remaining_req", "queued", I),
    Key("#token", "tokens", I),
    Key("#full token", "tokens", I),
    Key("token usage", "token_usage", F),
    Key("full token usage", "token_usage", F),
    Key("swa token usage", "swa_token_usage", F),
    Key("gen throughput (token/s)", "gen_throughput", F),
    Key("input throughput (token/s)", "input_throughput", F),
    Key("accept len", "accept_len", F),
    Key("accept rate", "accept_rate", F),
    Key("cuda graph", "graph", B),
    Key("cpu graph", "graph", B),
    Key("npu graph", "graph", B),
    Key("musa graph", "graph", B),
    Key("#retracted-req", "retracted", I),
    Key("#new-seq", "new_seq", I),
    Key("#seq", "new_seq", I),
    Key("#new-token", "new_tokens", I),
    Key("#new_token", "new_tokens", I),
    Key("#cached-token", "cached_tokens", I),
    Key("#cached_token", "cached_tokens", I),
    Key("cache hit rate", "cache_hit_rate", F, percent=True),
    Key("tree_cache_hit_rate", "cache_hit_rate", F, percent=True),
    Key("#pending-token", "pending_tokens", I),
    Key("pre-allocated usage", "prealloc_usage", F),
    Key("#transfer-req", "transfer_req", I),
    Key("#transferring-req", "transfer_req", I),
)

# 0.4.9 hybrid SWA prints `#token: full=a, swa=b, token usage: full=x, swa=y`: the same
# fields the later releases print as separate keys.
SWA_REWRITES = (
    (r"#token: full=(\d+), swa=(\d+)", "#full token: $1, #swa token: $2"),
    (r"token usage: full=([\d.]+), swa=([\d.]+)", "full token usage: $1, swa token usage: $2"),
)


# Where a stats message starts: the message itself, or behind a header bracket that SGLang's
# prefix does not know (a fork's logger: `INFO 8900 [ DP15 TP15 EP15 scheduler_metrics_mixin.py:222] `).
AFTER_HEADER = r"(?:^|\] )"

_stats = partial(stats_kind, keys=STATS_KEYS, rewrites=SWA_REWRITES)


def _event(name: str, needle, pattern: str | None, severity: str, samples: tuple[str, ...], **kw) -> LineKind:
    types = kw.pop("types", {})
    return LineKind(
        name=name, table="events", needle=needle, pattern=pattern, types=types, pack="fields",
        message=True, const={"severity": severity}, samples=samples, **kw,
    )


def _spec_reset(rows: pl.DataFrame) -> pl.DataFrame:
    pair = pl.concat_list(pl.lit("max_running_requests"), pl.col("body").str.extract(r"reset to (\d+)", 1))
    # One [key, value] pair per row: a list of one list (concat_list alone does not nest).
    return explode_pairs(rows, pl.concat_list(pair.list.to_array(2)).cast(pl.List(pl.List(pl.String))),
                         "speculative_reset")


GB = {"avail_mem_gb": F, "mem_usage_gb": F, "elapsed_s": F}

KINDS = (
    _stats("decode_stats", "decode", "Decode batch", rf"{AFTER_HEADER}Decode batch(?: \[\d+\])?[.,]", (
        Sample("Decode batch, #running-req: 3, #token: 266624, token usage: 0.43, accept len: 1.67, accept rate: 0.13, "
               "pre-allocated usage: 0.22, #prealloc-req: 0, #transfer-req: 1, #retracted-req: 0, cuda graph: True, "
               "gen throughput (token/s): 183.10, #queue-req: 0",
               accept_len=1.67, accept_rate=0.13, gen_throughput=183.1, graph=True, prealloc_usage=0.22, queued=0,
               retracted=0, running=3, token_usage=0.43, tokens=266624, transfer_req=1),
        Sample("Decode batch. #running-req: 509, #token: 180776, token usage: 0.43, gen throughput (token/s): 7897.87, "
               "largest-len: 0, #queue-req: 0, ",
               gen_throughput=7897.87, queued=0, running=509, token_usage=0.43, tokens=180776),
    )),
    _stats("decode_stats_v01", "decode", "#running-req", r"^#running-req: \d+, #token: ", (
        "#running-req: 5, #token: 1000, token usage: 0.10, #queue-req: 0",
    )),
    _stats("prefill_stats", "prefill", ("Prefill batch", "Prefil batch"), rf"{AFTER_HEADER}(?:Prefill|Prefil) batch", (
        Sample("Prefill batch. #new-seq: 1, #new-token: 75, #cached-token: 0, cache hit rate: 0.00%, token usage: 0.01, "
               "#running-req: 1, #queue-req: 62",
               cache_hit_rate=0.0, cached_tokens=0, new_seq=1, new_tokens=75, queued=62, running=1, token_usage=0.01),
    )),
    _stats("fill_stats_v01", "prefill", "new fill batch.", r"^new fill batch\.", (
        Sample("new fill batch. #seq: 1. #cached_token: 330. #new_token: 2172. #remaining_req: 57. #running_req: 9. "
               "tree_cache_hit_rate: 69.16%",
               cache_hit_rate=0.6916, cached_tokens=330, new_seq=1, new_tokens=2172, queued=57, running=9),
    )),
    LineKind(
        name="server_args", table="config", needle="server_args=", match=r"^server_args=(?:ServerArgs\(|\{)",
        continuation=r"^\s*[a-z_0-9]*=[^,]*, [a-z_0-9]+=", handler=repr_dump("server_args"),
        samples=("server_args=ServerArgs(model_path='/m', tp_size=8, max_running_requests=48)",),
    ),
    LineKind(
        name="launch_command", table="config", needle="sglang.launch_server", match=sglang_launch.MATCH,
        pattern=sglang_launch.PATTERN, handler=command_flags("cli", sglang_launch.FLAGS),
        continuation=r"^\s+--[\w-]+",  # a command written over ` \`-ended lines
        samples=("python -m sglang.launch_server --model-path /m --tp 8 --speculative-algo EAGLE3 \\\n"
                 "    --speculative-num-steps 3 --chunked-prefill-size -1",),
    ),
    LineKind(
        name="scheduler_limits", table="config", needle="max_total_num_tokens=", match=r"^max_total_num_tokens=\d+",
        handler=key_equals_value("scheduler"),
        samples=(Sample("max_total_num_tokens=2795207, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                        "max_running_requests=48, context_len=262144, available_gpu_mem=11.82 GB",
                        max_total_num_tokens="2795207", chunked_prefill_size="8192", max_prefill_tokens="16384",
                        max_running_requests="48", context_len="262144", available_gpu_mem="11.82"),),
    ),
    LineKind(
        name="spec_reset", table="config", needle="Max running requests is reset to",
        pattern=r"reset to (?P<value>\d+) for speculative", handler=_spec_reset,
        samples=(Sample("Max running requests is reset to 48 for speculative decoding. You can override this by "
                        "explicitly setting --max-running-requests.",
                        max_running_requests="48"),),
    ),
    # sglang-jax's startup summary of what limits the cap (`Max running requests constraints:`,
    # one `- Server limit: 1024 (configured)` line per limit), ending in the cap it chose
    # (sglang/306 of hold-out 18).
    LineKind(
        name="running_cap_final", table="config", needle="Final max_running_requests: ",
        pattern=r"Final max_running_requests: (?P<value>\d+)\s*$",
        handler=config_value("max_running_requests", "running_cap_summary"),
        samples=(Sample("   \u2192 Final max_running_requests: 512", max_running_requests="512"),),
    ),
    _event("load_weight_begin", "Load weight begin", r"avail mem=(?P<avail_mem_gb>[\d.]+) GB", "info",
           ("Load weight begin. avail mem=77.18 GB",), types=GB),
    _event("load_weight_end", "Load weight end",
           r"Load weight end\.(?: elapsed=(?P<elapsed_s>[\d.]+) s,)? type=(?P<model_class>[^,]+),"
           r"(?: dtype=(?P<dtype>[^,]+),)?.*?avail mem=(?P<avail_mem_gb>[\d.]+) GB(?:, mem usage=(?P<mem_usage_gb>[\d.]+) GB)?",
           "info", ("Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=31.72 GB, mem usage=15.09 GB.",),
           types=GB),
    # `Multi-thread loading shards:`: enable_multithread_load (the sample: guqiong96/Lsglang#7's GLM-5.1 load).
    _event("shard_progress", ("checkpoint shards:", "Multi-thread loading shards:"),
           r"^(?:Loading (?:\w+ )?checkpoint|Multi-thread loading) shards:\s+(?P<percent>\d+)% Completed \| "
           r"(?P<done>\d+)/(?P<total>\d+) \[(?P<elapsed>[\d:]+)",
           "info", ("Loading safetensors checkpoint shards:  25% Completed | 1/4 [00:00<00:01,  2.32it/s]",
                    Sample("Multi-thread loading shards: 100% Completed | 142/142 [00:25<00:00,  5.66it/s]",
                           percent=100.0, done=142, total=142, elapsed="00:25")),
           types={"percent": F, "done": I, "total": I}),
    _event("kv_cache_allocated", "is allocated.",
           r"KV Cache is allocated\.(?: dtype: (?P<dtype>[^,]+),)?(?: #tokens: (?P<tokens>\d+),)?"
           r"(?: K size: (?P<k_size_gb>[\d.]+) GB, V size: (?P<v_size_gb>[\d.]+) GB| KV size: (?P<kv_size_gb>[\d.]+) GB)",
           "info", ("KV Cache is allocated. #tokens: 2795207, K size: 53.31 GB, V size: 53.31 GB",),
           types={"tokens": I, "k_size_gb": F, "v_size_gb": F, "kv_size_gb": F}),
    # --max-total-tokens above what the memory profile allows; a profiled value <= 0 means the
    # weights left no memory for the KV cache (sglang/98: -561981 on all 8 ranks).
    _event("kv_profile", "is larger than the profiled value",
           r"max_total_tokens=(?P<requested>\d+) is larger than the profiled value (?P<profiled>-?\d+)", "info",
           (Sample("max_total_tokens=131072 is larger than the profiled value -561981. Use the profiled value instead.",
                   requested=131072, profiled=-561981),),
           types={"requested": I, "profiled": I}),
    _event("memory_pool_end", "Memory pool end", r"avail mem=(?P<avail_mem_gb>[\d.]+) GB", "info",
           ("Memory pool end. avail mem=11.87 GB",), types=GB),
    _event("dist_init_begin", "Init torch distributed begin", None, "info", ("Init torch distributed begin.",)),
    _event("dist_init_end", "Init torch distributed ends",
           r"ends\.(?: elapsed=(?P<elapsed_s>[\d.]+) s,)? mem usage=(?P<mem_usage_gb>[\d.]+) GB", "info",
           ("Init torch distributed ends. mem usage=0.00 GB",), types=GB),
    _event("graph_capture_bs", "graph bs [", r"^Capture \w+ graph bs \[(?P<bs>[^\]]*)\]", "info",
           ("Capture cuda graph bs [1, 2, 4, 8]",)),
    _event("graph_capture_begin", "begin. ", r"^Capture (?P<what>.+?) begin\.(?:.*?avail mem=(?P<avail_mem_gb>[\d.]+) GB)?",
           "info", ("Capture cuda graph begin. This can take up to several minutes. avail mem=11.82 GB",), types=GB),
    _event("graph_capture_end", "end. ", r"^Capture (?P<what>.+?) end\. (?:Time elapsed: |elapsed=)(?P<elapsed_s>[\d.]+) s",
           "info", ("Capture cuda graph end. Time elapsed: 21.41 s. mem usage=1.18 GB. avail mem=10.64 GB.",), types=GB),
    # The custom all-reduce registering its buffers after capture (vLLM's custom_allreduce_graphs).
    _event("graph_addresses", " cuda graph addresses", r"Registering (?P<addresses>\d+) cuda graph addresses",
           "info", (Sample("Registering 3492 cuda graph addresses", addresses=3492),), types={"addresses": I}),
    # Piecewise CUDA graphs compile each shape with torch.compile (0.5.x).
    _event("dynamo_compile", "Compiling a graph for ",
           r"Compiling a graph for (?P<shape>.+?) takes (?P<elapsed_s>[\d.]+) s", "info",
           (Sample("Compiling a graph for dynamic shape takes 3.38 s", shape="dynamic shape", elapsed_s=3.38),),
           types={"elapsed_s": F}),
    _event("generation_defaults", "Using default chat sampling params from model generation config",
           None, "info", ("Using default chat sampling params from model generation config: {'repetition_penalty': 1.0, "
                          "'temperature': 0.6, 'top_k': 20, 'top_p': 0.95}",)),
    _event("server_ready", "fired up and ready to roll", None, "info", ("The server is fired up and ready to roll!",)),
    _event("retraction", "#retracted_reqs:",
           r"#retracted_reqs: (?P<retracted>\d+),.*#new_token_ratio: (?P<ratio_before>[\d.]+) -> (?P<ratio_after>[\d.]+)",
           "warning", ("KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.5988 -> 1.0000",),
           types={"retracted": I, "ratio_before": F, "ratio_after": F}),
    # `Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.88.`:
    # the startup check of recent releases (sglang/268 of hold-out 14; raised as a ValueError,
    # whose traceback kind takes the line where it is one).
    _event("oom", ("out of memory", "Not enough memory", "OutOfMemoryError", "leave no GPU memory for the KV cache"),
           r"(?:Prefill|Decode) out of memory|alloc_req_slots runs out of memory|Not enough memory|CUDA out of memory"
           r"|OutOfMemoryError|leave no GPU memory for the KV cache",
           "critical", ("Decode out of memory. Try to lower your batch size.",), fallback=True),
    _event("watchdog_timeout", "atchdog timeout", r"(?:(?P<component>\w+) )?[Ww]atchdog timeout \((?:self\.)?watchdog_timeout=(?P<timeout_s>\d+)",
           "critical", ("Watchdog timeout (self.watchdog_timeout=300)",), types={"timeout_s": F}),
    # A child process died: its parent's SIGQUIT handler, worded `Received sigquit from a child
    # proces(s).` up to 0.5.x and `SIGQUIT received. signum=..., frame=...` since.
    _event("child_failed", ("Received sigquit from a child", "SIGQUIT received."), None, "critical",
           ("Received sigquit from a child proces. It usually means the child failed.",
            "SIGQUIT received. signum=None, frame=None. It usually means one child failed."),
           match=r"^(?:Received sigquit from a child|SIGQUIT received\.)"),
    _event("exception", "hit an exception", r"^(?P<component>\w+) hit an exception", "critical",
           ("Scheduler hit an exception: Traceback (most recent call last):",),
           continuation=TRACEBACK.continuation),
    _event("abort", ("Abort request", "disconnected from the client", "timeout reached", "queue is full"),
           r"Abort request|disconnected from the client|(?:waiting|running) timeout reached|queue is full", "warning",
           ("Request is disconnected from the client side (type 1). Abort request obj.rid='abc'",)),
    _event("overlap_disabled", "Overlap scheduler is disabled", None, "info",
           ("Overlap scheduler is disabled because of using eagle speculative decoding.",)),
    _event("nccl_version", "is using nccl==", r"using nccl==(?P<nccl_version>[\d.]+)", "info",
           ("sglang is using nccl==2.21.5",)),
    _event("killed", "Killed", r"^Killed$", "critical", ("Killed",)),
    # The watchdog's py-spy dump that did not happen (py-spy not installed): no stack to read.
    _event("dump_failed", ("Pyspy failed", "pyspy dump attempts failed", "Pyspy is not available"),
           r"^(?:Pyspy failed to dump PID (?P<pid>\d+)\.|All pyspy dump attempts failed for PID (?P<pid_all>\d+)\."
           r"|Pyspy failed \((?P<command>[^)]*)\)\.|Pyspy is not available:)\s*(?:Error: )?(?P<error>.*)$", "info",
           ("Pyspy failed to dump PID 63217.   Error: /bin/sh: py-spy: command not found",),
           types={"pid": I, "pid_all": I}),
    # A response a client got back, pasted from its side: SGLang's JSON with `"finish_reason":
    # {"type":"abort","message":...,"status_code":N}` (tokenizer_manager.py's abort). The
    # message is the server's own line (a KV transfer failure, a scheduler error).
    _event("abort_response", '"type":"abort"',
           r'"finish_reason":\{"type":"abort","message":"(?P<reason>(?:[^"\\]|\\.)*)"(?:,"status_code":(?P<status>\d+))?',
           "warning", (
               Sample('{"text":"","meta_info":{"id":"c564d0c547f945aa987620f1255b838d","finish_reason":{"type":"abort",'
                      '"message":"Decode transfer failed for request rank=0 decode_req.req.rid=\'c564d0c5\' '
                      'decode_req.req.bootstrap_room=2170015846053279415 with exception '
                      'KVTransferError(bootstrap_room=2170015846053279415): Failed to get kvcache from prefill '
                      'instance, it might be dead","status_code":500,"err_type":null},"prompt_tokens":8}}',
                      reason="Decode transfer failed for request rank=0 decode_req.req.rid='c564d0c5' "
                             "decode_req.req.bootstrap_room=2170015846053279415 with exception "
                             "KVTransferError(bootstrap_room=2170015846053279415): Failed to get kvcache from prefill "
                             "instance, it might be dead", status=500),
           ), types={"status": I}, match=r'"finish_reason":\{"type":"abort"'),
    # PD disaggregation: a request whose KV cache did not cross between the prefill and the
    # decode server (docs/formats.md, "SGLang PD disaggregation").
    _event("kv_transfer_failed", " failed for request rank=", "^" + KV_TRANSFER_FAILED, "warning", (
               Sample("Decode transfer failed for request rank=1 decode_req.req.rid='3ce84ffb82764f45b028dd8e6c4beed1' "
                      "decode_req.req.bootstrap_room=1655955501905217457 with exception "
                      "KVTransferError(bootstrap_room=1655955501905217457): Failed due to an unknown reason from "
                      "another rank",
                      side="Decode", stage="transfer", tp_rank=1, error="KVTransferError", room="1655955501905217457",
                      reason="Failed due to an unknown reason from another rank"),
               Sample("Prefill bootstrap failed for request rank=0 req.rid='894df0a757e04ae3b19e360e86055b6d' "
                      "req.bootstrap_room=389535395827821955 with exception "
                      "KVTransferError(bootstrap_room=389535395827821955): Aborted by AbortReq.",
                      side="Prefill", stage="bootstrap", tp_rank=0, error="KVTransferError", room="389535395827821955",
                      reason="Aborted by AbortReq."),
           ), types={"tp_rank": I}),
    # The decode side's waiting timeout (SGLANG_DISAGGREGATION_WAITING_TIMEOUT) ran out for
    # requests whose cache never arrived: one line per rank, no request named.
    _event("kv_transfer_timeout", "fail to receive KV Cache transfer done signal",
           r"(?P<reason>Some requests fail to receive KV Cache transfer done signal after bootstrapping)", "warning", (
               Sample("Some requests fail to receive KV Cache transfer done signal after bootstrapping. If a greater "
                      "mean TTFT is acceptable, you can 'export SGLANG_DISAGGREGATION_WAITING_TIMEOUT=600' (10 "
                      "minutes) to relax the timeout condition.",
                      reason="Some requests fail to receive KV Cache transfer done signal after bootstrapping"),
           )),
    # The request log (--log-requests): `Receive: obj=GenerateReqInput(rid='...', ...)` when a
    # request arrives and `Finish: obj=..., out={...}` when it ends; only the id is a field.
    _event("request_log", ("Receive: obj=", "Finish: obj="),
           r"^(?P<action>Receive|Finish): obj=\w+\((?:.*?\brid='(?P<request_id>[^']+)')?", "info",
           (Sample("Receive: obj=GenerateReqInput(rid='jJKjafC4O-zhjMwPvrWDgQc', sampling_params={'temperature': 1.0, "
                   "'max_new_tokens': 128}, stream=True, priority=35)",
                   action="Receive", request_id="jJKjafC4O-zhjMwPvrWDgQc"),),
           match=r"^(?:Receive|Finish): obj=\w+\("),
    # A transfer backend's worker failing one room (a request's KV cache) with an exception,
    # its traceback below (disaggregation/nixl/conn.py, 0.5.x): `NIXL transport error for
    # room R: e` or `Transfer failed for room R: e` where the transport raised it.
    _event("kv_transfer_error", ("transfer worker error for room", "transport error for room", "Transfer failed for room"),
           r"^(?:Unexpected transfer worker error|NIXL transport error|Transfer failed) for room (?P<room>\d+)"
           r"(?::\s*(?P<reason>.+))?", "warning", (
               Sample("Unexpected transfer worker error for room 1788380104266545413", room="1788380104266545413"),
               Sample("NIXL transport error for room 5839938415251080346: NIXL_ERR_REMOTE_DISCONNECT",
                      room="5839938415251080346", reason="NIXL_ERR_REMOTE_DISCONNECT"),
           ), continuation=TRACEBACK.continuation),
    # Settings the server chose or adjusted, stated on a line of their own (server_args.py,
    # model_runner.py): an excerpt without the server_args dump still has them.
    LineKind(
        name="attention_backend", table="config", needle=("Attention backend not ", "MLA optimization is turned on"),
        match=r"^(?:Attention backend not (?:set|specified)|MLA optimization is turned on)\. Use \w+ backend",
        pattern=r"\. Use (?P<value>\w+) backend", handler=config_value("attention_backend", "server"),
        samples=(Sample("Attention backend not set. Use flashinfer backend by default.", attention_backend="flashinfer"),
                 Sample("MLA optimization is turned on. Use triton backend.", attention_backend="triton")),
    ),
    LineKind(
        name="mem_fraction", table="config", needle="Automatically reduce --mem-fraction-static to ",
        pattern=r"--mem-fraction-static to (?P<value>[\d.]+)", handler=config_value("mem_fraction_static", "server"),
        samples=(Sample("Automatically reduce --mem-fraction-static to 0.760 because this is a multimodal model.",
                        mem_fraction_static="0.760"),),
    ),
    LineKind(
        name="kv_cache_dtype", table="config", needle="Using KV cache dtype: ",
        pattern=r"Using KV cache dtype: (?P<value>[\w.]+)", handler=config_value("kv_cache_dtype", "model_runner"),
        samples=(Sample("Using KV cache dtype: torch.bfloat16", kv_cache_dtype="torch.bfloat16"),),
    ),
    LineKind(
        name="chat_template", table="config",
        needle=("Detected chat template content format: ", "chat template with detected content format: "),
        pattern=r"(?:Detected chat template content format|with detected content format): (?P<value>\w+)",
        handler=config_value("chat_template_content_format", "server"),
        samples=(Sample("Using default HuggingFace chat template with detected content format: string",
                        chat_template_content_format="string"),),
    ),
    _event("args_adjusted", ("Automatically turn ", "Automatically adjust ", "Automatically set ",
                             "The chunked prefill size is adjusted to "),
           r"^(?:.*?chunked prefill size is adjusted to (?P<chunked_prefill_size>\d+))?", "info",
           (Sample("DP attention is enabled. The chunked prefill size is adjusted to 4096 to avoid MoE kernel issues. "
                   "The schedule conservativeness is adjusted to 0.3. Data parallel size is adjusted to be the same as "
                   "tensor parallel size.", chunked_prefill_size=4096),
            Sample("Automatically turn off --chunked-prefill-size and disable radix cache for qwen2-vl.")),
           types={"chunked_prefill_size": I}),
    _event("startup_notice", ("_BACKEND is not initialized", "Disable prefill CUDA graph because",
                              "backend is disabled when piecewise cuda graph is enabled",
                              "error message 'operation scheduled before its operands' can be ignored",
                              "install_torch_compiled", "SGLangBackend"), None, "info",
           ("MOE_RUNNER_BACKEND is not initialized, the backend will be automatically selected",)),
    _event("import_skipped", "Ignore import error when loading ",
           r"Ignore import error when loading (?P<module>[\w.]+): (?P<error>.*)", "info",
           (Sample("Ignore import error when loading sglang.srt.models.mindspore: name 'Tensor' is not defined",
                   module="sglang.srt.models.mindspore", error="name 'Tensor' is not defined"),)),
    _event("hf_snapshot", "Found local HF snapshot for ",
           r"Found local HF snapshot for (?P<model>\S+) at (?P<path>[^;]+)", "info",
           (Sample("Found local HF snapshot for meta-llama/Llama-3.1-8B-Instruct at /home/user/.cache/huggingface/hub/"
                   "models--meta-llama--Llama-3.1-8B-Instruct/snapshots/0e9e39f2; skipping download.",
                   model="meta-llama/Llama-3.1-8B-Instruct",
                   path="/home/user/.cache/huggingface/hub/models--meta-llama--Llama-3.1-8B-Instruct/snapshots/0e9e39f2"),)),
    _event("tree_cache_init", "Tree cache initialized: ", r"Tree cache initialized: .*?\bimpl=(?P<impl>\w+)", "info",
           (Sample("Tree cache initialized: source=default impl=ChunkCache hybrid_swa=False hybrid_ssm=False "
                   "hierarchical=False streaming_wrapped=False", impl="ChunkCache"),)),
    _event("graph_num_tokens", "graph num tokens [", r"^Capture \w+ graph num tokens \[(?P<num_tokens>[^\]]*)\]?",
           "info", (Sample("Capture cuda graph num tokens [4, 8, 12, 16]", num_tokens="4, 8, 12, 16"),)),
    _event("pd_warmup_done", "disaggregation mode warmup with status ",
           r"End of (?P<mode>\w+) disaggregation mode warmup with status (?P<status>\d+)", "info",
           (Sample("End of prefill disaggregation mode warmup with status 200, resp: [{'text': '777 2023-11-'}]",
                   mode="prefill", status=200),), types={"status": I}),
    # What the watchdog prints of the batch that did not finish, after `Watchdog timeout`
    # (managers/scheduler.py, 0.4.x): its size, and the tail of the repr, the KV pool's free
    # and evictable tokens (a wrapped or cut dump puts them on a line of their own).
    _event("watchdog_batch", ("self.cur_batch.batch_size()=", "self.token_to_kv_pool_allocator.available_size()="),
           r"(?:self\.cur_batch\.batch_size\(\)=(?P<batch_size>\d+))?"
           r"(?:.*?self\.token_to_kv_pool_allocator\.available_size\(\)=(?P<available_tokens>\d+))?"
           r"(?:.*?self\.tree_cache\.evictable_size\(\)=(?P<evictable_tokens>\d+))?", "info",
           (Sample("self.cur_batch.batch_size()=26,  self.cur_batch.reqs=[Req(rid=d4424f3eb90345f0a863068978c0f17c...",
                   batch_size=26),
            Sample("self.grammar=None)], self.token_to_kv_pool_allocator.available_size()=798917, "
                   "self.tree_cache.evictable_size()=0,", available_tokens=798917, evictable_tokens=0)),
           types={"batch_size": I, "available_tokens": I, "evictable_tokens": I}),
    UVICORN,
    UVICORN_WARNING,
    PROGRESS,
    *ENGINE_PROCESS_KINDS,
    ACCESS,
    TRACEBACK,
    # Any other line a logger wrote (a timestamp or a level: SGLang's `[timestamp]` header,
    # or a collector's) that no kind took: an event of its level (info where none is
    # printed), the message kept: LoRA and backend notices, JIT compiles, deprecations.
    # Print output without a collector's stamp stays unparsed.
    LineKind(
        name="other", table="events", needle="", match=r"\S", logged=True, fallback=True, message=True,
        handler=severity_from_level(),
        samples=(Sample("[2025-06-15 07:28:32] Using triton as backend of LoRA kernels.", severity="info"),
                 Sample("[2026-02-14 15:21:27] INFO server_args.py:2854: Set soft_watchdog_timeout since in CI",
                        severity="info")),
    ),
)

# max_running_requests that SGLang sets under speculative decoding when the flag is not
# given, by the release ranges of FORMAT.versions below; ranges that straddle a change
# (0.4.4-0.4.5, 0.3.4-0.4.6) are left out (docs/formats-sources.md, "The speculative reset").
SPEC_RESET_DEFAULT = {"0.4.3.post3-0.4.4.post1": 32, "0.4.7-0.5.3": 48, "0.5.4": 48, "0.5.5-0.5.8": 48, "0.5.9+": 48}

# What starts a record anywhere in a line (loganalyze/formats/glued.py): the dated header with its rank
# tags, with or without a stats message after it, or a stats message glued on without one.
RANKS = r"(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*"
STATS_START = r"(?:Decode|Prefill) batch(?: \[\d+\])?[.,] #"
RECORD_HEADER = rf"\[\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?{RANKS}\] "
RECORD_START = rf"{RECORD_HEADER}(?:{STATS_START})?|{STATS_START}"

FORMAT = LogFormat(
    name="sglang",
    description="SGLang server log (launch_server), releases 0.1 to 0.5.23",
    releases="0.1 - 0.5.23",
    prefix=PREFIX,
    kinds=KINDS,
    ts_formats=(TsFormat("%Y-%m-%d %H:%M:%S%.f"), TsFormat("%H:%M:%S%.f", complete="date")),
    record_start=RECORD_START,
    record_marks=("] ", " batch"),
    record_header=RECORD_HEADER,
    detect=(
        r"(?:Decode|Prefill|Prefil) batch(?: \[\d+\])?[.,] #",
        r"new fill batch\. #seq",
        r"^#running-req: \d+, #token:",
        r"server_args=ServerArgs\(|^\[[^\]]+\] server_args=\{", sglang_launch.MATCH,
        r"--mem-fraction-static",  # SGLang's flag, named in its memory errors (sglang/266 of hold-out 14)
        r"^(?:\[[\d :-]+\] )?Capture [\w ]*graph (?:begin|end)\. ",  # its graph capture (vLLM says `Capturing`)
        r"fired up and ready to roll",
        r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: (?:DP|TP|EP|PP)\d+)+\] ",
        r"Load weight (?:begin|end)\. ",
        # sglang-jax (SGLang on TPU): its precompile phases and the startup's cap summary
        # (sglang/281, sglang/306 of hold-out 18).
        r"\] Begin to precompile |Precompile finished in \d+ secs|^Max running requests constraints:$",
        r'^\s*File "[^"]*/sglang/',  # a traceback through SGLang's own code
        r"sglang",
    ),
    versions=(
        (r"Decode batch, .*#queue-req: \d+$", "0.5.9+"),
        (r"Decode batch, .*#queue-req: \d+, ?$", "0.5.5-0.5.8"),
        (r"Decode batch \[\d+\], ", "0.5.4"),
        (r"largest-len: ", "0.4.3.post3-0.4.4.post1"),
        (r"Decode batch\. .*cuda graph: ", "0.4.7-0.5.3"),
        (r"Decode batch\. .*#queue-req: \d+, $", "0.4.4-0.4.5"),
        (r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d TP\d+\] Decode batch\. ", "0.3.4-0.4.6"),
        (r"\[gpu=\d+\] ", "0.2.9"),
        (r"\[gpu_id=\d+\] ", "0.1.17-0.2.5"),
        (r"new fill batch\.", "0.1.x"),
    ),
)
