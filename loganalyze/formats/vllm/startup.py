"""vLLM's startup and shutdown events: capacity (KV blocks and tokens, concurrency, memory),
timing (weights, compile, CUDA graphs, engine init), readiness, the parallel layout, the
kernels picked, shutdown, and `vllm bench serve`'s steps."""

from __future__ import annotations

import polars as pl

from loganalyze.formats.common import PROGRESS, UVICORN, UVICORN_WARNING
from loganalyze.formats.spec import Sample
from loganalyze.formats.vllm.lines import H, event

I, F = pl.Int64, pl.Float64

GIB = {"elapsed_s": F, "weights_gib": F, "kv_cache_gib": F, "mem_gib": F, "compile_s": F}
PROGRESS_TYPES = {"percent": F, "done": I, "total": I}
MEMORY_PROFILE = (
    r"(?s)Memory profiling takes (?P<elapsed_s>[\d.]+) seconds"
    r"(?:.*?total_gpu_memory \((?P<total_gpu_memory_gib>[\d.]+)GiB\) x gpu_memory_utilization "
    r"\((?P<gpu_memory_utilization>[\d.]+)\) = (?P<usable_gib>[\d.]+)GiB)?"
    r"(?:.*?model weights take (?P<weights_gib>[\d.]+)GiB; non_torch_memory takes (?P<non_torch_gib>[\d.]+)GiB; "
    r"PyTorch activation peak memory takes (?P<activation_peak_gib>[\d.]+)GiB; "
    r"the rest of the memory reserved for KV Cache is (?P<kv_cache_gib>[\d.]+)GiB)?"
)

KINDS = (
    # Capacity: KV blocks and tokens, how many max-length requests fit.
    event("cache_config_info", "cache_config_info with initialization after num_gpu_blocks is: ",
           r"(?:(?:Engine (?P<engine>\d+)|(?P<engines>\d+) Engines): )?vllm cache_config_info with initialization after "
           r"num_gpu_blocks is: (?P<gpu_blocks>\d+)", "info",
           ("(APIServer pid=1391815) INFO 08-19 14:58:41 [loggers.py:142] Engine 000: vllm cache_config_info with "
            "initialization after num_gpu_blocks is: 57656",
            # 0.9 prints it without the engine (vllm/104).
            Sample("INFO 06-02 11:03:56 [loggers.py:134] vllm cache_config_info with initialization after "
                   "num_gpu_blocks is: 70688", gpu_blocks=70688)), types={"gpu_blocks": I, "engines": I}),
    event("gpu_blocks", " blocks: ",
           r"^(?:# )?(?P<device>\w+) blocks: (?P<gpu_blocks>\d+)(?:, # CPU blocks: (?P<cpu_blocks>\d+))?",
           "info", ("INFO 07-29 19:12:55 [executor_base.py:113] # cuda blocks: 10650, # CPU blocks: 1638",
                    "INFO 01-30 03:19:14 kv_cache_utils.py:395] # GPU blocks: 1381",
                    # pasted without its header, whose `# ` is then read as a comment mark, or lost
                    Sample("GPU blocks: 1952, # CPU blocks: 2048", device="GPU", gpu_blocks=1952, cpu_blocks=2048)),
           types={"gpu_blocks": I, "cpu_blocks": I}, match=r"^(?:# )?\w+ blocks: \d+(?:, # CPU blocks: \d+)?$"),
    event("kv_cache_size", "KV cache size: ",
           r"(?P<device>\w+(?: \+ host)?) KV cache size: (?P<tokens>[\d,]+) tokens(?:, Maximum concurrency for "
           r"(?P<max_model_len>[\d,]+) tokens per request: (?P<max_concurrency>[\d.]+)x)?", "info",
           ("(EngineCore_DP0 pid=441) INFO 11-24 11:44:18 [kv_cache_utils.py:1234] GPU KV cache size: 1,587,648 tokens",
            H + "GPU KV cache size: 922,496 tokens, Maximum concurrency for 40,000 tokens per request: 23.06x"),
           types={"tokens": I, "max_model_len": I, "max_concurrency": F}),
    event("max_concurrency", "Maximum concurrency for ",
           r"Maximum concurrency for (?P<max_model_len>[\d,]+) tokens per request: (?P<max_concurrency>[\d.]+)x",
           "info",
           ("(EngineCore_DP0 pid=441) INFO 11-24 11:44:18 [kv_cache_utils.py:1239] Maximum concurrency for 2,048 "
            "tokens per request: 775.22x",), types={"max_model_len": I, "max_concurrency": F}),
    event("kv_cache_memory", "Available KV cache memory: ", r"Available KV cache memory: (?P<kv_cache_gib>[\d.]+) GiB",
           "info", ("(EngineCore_DP0 pid=441) INFO 11-24 11:44:17 [gpu_worker.py:348] Available KV cache memory: "
                    "33.31 GiB",), types=GIB),
    event("memory_profile", "Memory profiling takes ", MEMORY_PROFILE, "info",
           ("INFO 07-29 19:12:55 [worker.py:294] Memory profiling takes 3.01 seconds",),
           continuation=r"^(?:the current vLLM instance can use|model weights take )",
           types={n: F for n in ("elapsed_s", "total_gpu_memory_gib", "gpu_memory_utilization", "usable_gib",
                                 "weights_gib", "non_torch_gib", "activation_peak_gib", "kv_cache_gib")}),
    # Timing: weights, torch.compile, CUDA graphs, engine init, server ready.
    event("weights_loaded", ("Loading model weights took ", "Model loading took "),
           r"(?:Loading model weights|Model loading) took (?P<weights_gib>[\d.]+) Gi?B(?: memory)?"
           r"(?: and (?P<elapsed_s>[\d.]+) seconds)?", "info",
           ("INFO 01-30 03:18:12 gpu_model_runner.py:848] Loading model weights took 67.7229 GB",
            "(EngineCore_DP0 pid=441) INFO 11-24 11:43:54 [gpu_model_runner.py:3341] Model loading took 2.0513 GiB "
            "memory and 27.200487 seconds"), types=GIB),
    event("weights_read", "Loading weights took ", r"Loading weights took (?P<elapsed_s>[\d.]+) seconds", "info",
           ("INFO 07-29 19:12:52 [default_loader.py:272] Loading weights took 8.37 seconds",), types=GIB),
    event("torch_compile", ("torch.compile takes ", "torch.compile took "),
           r"torch\.compile (?:takes|took) (?P<elapsed_s>[\d.]+) s in total", "info",
           ("INFO 01-30 03:19:13 monitor.py:31] torch.compile takes 54.73 s in total",
            "(Worker_TP0 pid=101) INFO 07-06 10:46:17 [monitor.py:53] torch.compile took 0.87 s in total"), types=GIB),
    event("dynamo_compile",
           ("Dynamo bytecode transform time", "Compiling a graph for ", "Directly load the compiled graph"),
           r"(?P<step>Dynamo bytecode transform time|Compiling a graph for .+? takes|Directly load the compiled "
           r"graph\(s\) for .+? from the cache, took):? (?P<elapsed_s>[\d.]+) s\b", "info",
           ("INFO 01-30 03:18:25 backends.py:585] Dynamo bytecode transform time: 12.88 s",
            "INFO 01-30 03:19:07 backends.py:321] Compiling a graph for general shape takes 41.86 s"), types=GIB),
    event("compile_cache", ("for vLLM's torch.compile", "Cache the graph ", "saved AOT compiled function to ",
                             "Directly load AOT compilation from path "),
           r"Using cache directory: (?P<cache_dir>\S+) for vLLM's torch\.compile|Cache the graph"
           r"|saved AOT compiled function to (?P<aot_saved>\S+)|Directly load AOT compilation from path (?P<aot_loaded>\S+)",
           "info",
           (Sample("INFO 01-30 03:18:25 backends.py:577] Using cache directory: /root/.cache/vllm/torch_compile_cache/"
                   "2b70b500a6/rank_0 for vLLM's torch.compile",
                   cache_dir="/root/.cache/vllm/torch_compile_cache/2b70b500a6/rank_0"),
            Sample("INFO 01-30 03:18:28 backends.py:309] Cache the graph of shape None for later use"),
            Sample("(Worker_TP0 pid=101) INFO 07-06 10:46:17 [decorators.py:311] Directly load AOT compilation from path "
                   "~/.cache/vllm/torch_compile_cache/torch_aot_compile/764c2a7c/rank_0_0/model",
                   aot_loaded="~/.cache/vllm/torch_compile_cache/torch_aot_compile/764c2a7c/rank_0_0/model"))),
    event("graph_capture_done", "Graph capturing finished in ",
           r"Graph capturing finished in (?P<elapsed_s>\d+) secs(?:, took (?P<mem_gib>[\d.]+) GiB)?", "info",
           ("(Worker_TP3_EP3 pid=2709393) INFO 09-29 09:52:22 [gpu_model_runner.py:3468] Graph capturing finished in "
            "38 secs, took 1.64 GiB",), types=GIB),
    event("graph_memory_estimate", "Estimated CUDA graph memory: ",
           r"Estimated CUDA graph memory: (?P<mem_gib>[\d.]+) GiB", "info",
           (H + "Estimated CUDA graph memory: 6.24 GiB total",), types=GIB),
    event("graph_capture_notice", ("Capturing the model for CUDA graphs", "Capturing cudagraphs for decoding",
                                    "CUDA graphs can take additional"), None, "info",
           ("INFO 07-17 23:41:30 model_runner.py:851] CUDA graphs can take additional 1~3 GiB memory per GPU. If you "
            "are running out of memory, consider decreasing `gpu_memory_utilization` or enforcing eager mode.",)),
    event("engine_init", "init engine (profile, create kv cache, warmup model) took ",
           r"took (?P<elapsed_s>[\d.]+) (?:seconds|s)(?: \(compilation: (?P<compile_s>[\d.]+) s)?", "info",
           ("(EngineCore_0 pid=1399537) INFO 08-19 14:58:40 [core.py:215] init engine (profile, create kv cache, "
            "warmup model) took 1.06 seconds",), types=GIB),
    event("shard_progress", "checkpoint shards:",
           r"Loading (?:\w+ )?checkpoint shards:\s+(?P<percent>\d+)% Completed \| (?P<done>\d+)/(?P<total>\d+) "
           r"\[(?P<elapsed>[\d:]+)", "info",
           ("Loading safetensors checkpoint shards:  62% Completed | 10/16 [00:06<00:04,  1.46it/s]",), types=PROGRESS_TYPES),
    PROGRESS,
    event("server_start", "Starting vLLM ", r"Starting vLLM (?:API )?server(?: \d+)? on (?P<url>\S+)", "info",
           (H + "Starting vLLM API server 0 on http://0.0.0.0:8000",), match=r"Starting vLLM (?:API )?server"),
    event("route", ("Available routes are:", "Route: "),
           r"^(?:Available routes are:|Route: (?P<path>\S+), Methods: (?P<methods>.+))$", "info",
           (H + "Route: /v1/chat/completions, Methods: POST",)),
    event("server_ready", "Application startup complete.", None, "info", ("INFO:     Application startup complete.",)),
    UVICORN,
    UVICORN_WARNING,
    # A shutdown began (0.2x+ `[shutdown]` lines, the signal that triggered it): what follows,
    # an EngineDeadError of the API server included, is its consequence.
    # The engine process died under the API server (killed, crashed): a fault, whose cleanup
    # the `[shutdown]` lines after it describe.
    event("engine_exited", "engine core exited unexpectedly", None, "critical",
           ("(APIServer pid=4208) WARNING 12-01 13:29:21 [core_client.py:817] [shutdown] MPClient: engine core exited "
            "unexpectedly; starting cleanup",)),
    event("shutdown", ("[shutdown]", "received signal=SIG", "Received SIGINT", "Received SIGTERM"), None, "info",
           ("(EngineCore pid=25058) INFO 12-01 13:19:08 [core.py:1454] [shutdown] EngineCore: trigger received "
            "signal=SIGTERM",)),
    event("startup_notice", ("Waiting for init message from front-end", "Starting profile run for",
                              "Warming up model for the compilation", "Warming up done.", "Scale-out endpoints are disabled",
                              "No IOProcessor plugins requested by the model", "Worker ready; awaiting tasks",
                              "Loading model from scratch", "Encoder cache will be initialized with a budget of",
                              "Padding mamba page size by", "Setting attention block size to",
                              "Profiling CUDA graph memory: ", "Heartbeat successful."), None, "info",
           ("INFO 08-11 10:45:30 [core.py:572] Waiting for init message from front-end.",
            "(Worker pid=6464) INFO 12-01 13:32:46 [cpu_model_runner.py:87] Warming up model for the compilation...")),
    # Which kernels the engine picked (V1 0.10+): the attention backend, FlashAttention's
    # version, the sampler's top-p/top-k implementation.
    event("kernel_choice", ("backend on V1 engine", "Using FlashAttention version", "for top-p & top-k sampling"),
           r"^Using (?P<choice>.+?)(?: backend on V1 engine| version (?P<version>\d+)| for top-p & top-k sampling)\.?$",
           "info",
           (Sample("(VllmWorker rank=0 pid=2120280) INFO 07-28 23:02:25 [cuda.py:290] Using Flash Attention backend on "
                   "V1 engine.", choice="Flash Attention"),
            Sample("(EngineCore pid=1992345) INFO 08-26 22:25:09 [flash_attn.py:596] Using FlashAttention version 2",
                   choice="FlashAttention", version=2),
            Sample("(EngineCore_DP0 pid=66914) INFO 09-21 12:29:22 [topk_topp_sampler.py:55] Using FlashInfer for top-p "
                   "& top-k sampling.", choice="FlashInfer")),
           types={"version": I}, match=r"^Using "),
    event("load_model_begin", ("Starting to load model ", "Loading drafter model"),
           r"^(?:Starting to load model (?P<model>\S+?)(?:\.\.\.)?|Loading (?P<what>drafter) model\.*)$", "info",
           (Sample("(Worker pid=6464) INFO 12-01 13:32:45 [cpu_model_runner.py:68] Starting to load model "
                   "/tmp/rec/model...", model="/tmp/rec/model"),),
           match=r"^(?:Starting to load model |Loading drafter model)"),
    # Where each worker sits in the parallel layout (distributed/parallel_state.py, 0.2x+).
    event("rank_assignment", " is assigned as DP rank ",
           r"^rank (?P<global_rank>\d+) in world size (?P<world_size>\d+) is assigned as DP rank (?P<dp_rank>\d+), "
           r"PP rank (?P<pp_rank>\d+)(?:, \w+ rank \S+)*?, TP rank (?P<tp_rank>\d+)", "info",
           (Sample("(Worker pid=6464) INFO 12-01 13:32:45 [parallel_state.py:2350] rank 0 in world size 1 is assigned as "
                   "DP rank 0, PP rank 0, PCP rank 0, TP rank 0, ETP rank 0, EP rank N/A, EPLB rank N/A",
                   global_rank=0, world_size=1, dp_rank=0, pp_rank=0, tp_rank=0),),
           types={"global_rank": I, "world_size": I, "dp_rank": I, "pp_rank": I, "tp_rank": I}),
    event("model_init", "Initializing model took ", r"Initializing model took (?P<elapsed_s>[\d.]+) seconds", "info",
           ("(Worker pid=6464) INFO 12-01 13:32:45 [base_loader.py:82] Initializing model took 0.100072 seconds",),
           types=GIB),
    event("warmup_run", "Initial profiling/warmup run took ",
           r"Initial profiling/warmup run took (?P<elapsed_s>[\d.]+) s", "info",
           ("(Worker pid=6464) INFO 12-01 13:32:53 [monitor.py:91] [backbone] Initial profiling/warmup run took 0.02 s",),
           types=GIB),
    # Where the weights are read from (weight_utils.py, 0.2x+): the filesystem decides whether
    # they are prefetched into the page cache.
    event("checkpoint_fs", ("Filesystem type for checkpoints: ", "Auto-prefetch is disabled because the filesystem"),
           r"Filesystem type for checkpoints: (?P<fs>\w+)\. Checkpoint size: (?P<checkpoint_gib>[\d.]+) GiB\. "
           r"Available RAM: (?P<ram_gib>[\d.]+) GiB|Auto-prefetch is disabled because the filesystem \((?P<no_prefetch_fs>\w+)\)",
           "info", (Sample("(Worker pid=6464) INFO 12-01 13:32:45 [weight_utils.py:1108] Filesystem type for checkpoints: "
                           "EXT4. Checkpoint size: 0.00 GiB. Available RAM: 21.87 GiB.",
                           fs="EXT4", checkpoint_gib=0.0, ram_gib=21.87),),
           types={"checkpoint_gib": F, "ram_gib": F}),
    event("torch_threads", "Reducing Torch threads from ",
           r"Reducing Torch threads from (?P<threads_before>\d+) to (?P<threads>\d+)", "info",
           ("(EngineCore pid=6452) INFO 12-01 13:32:46 [torch_utils.py:295] Reducing Torch threads from 2 to 1 for "
            "serving. Set OMP_NUM_THREADS in the external environment to override.",),
           types={"threads_before": I, "threads": I}),
    # The CPU backend: the KV cache space it was given, and how its OpenMP threads are bound
    # (one message over five lines, each with the header).
    event("cpu_kv_cache", " GiB for KV cache on node ",
           r"Explicitly set \((?P<kv_cache_gib>[\d.]+)/(?P<mem_gib>[\d.]+)\) GiB for KV cache on node (?P<node>\d+)",
           "info", (Sample("(Worker pid=6464) INFO 12-01 13:32:54 [cpu_worker.py:260] Explicitly set (1.0/11.84) GiB for "
                           "KV cache on node 0.", kv_cache_gib=1.0, mem_gib=11.84, node=0),),
           types={"kv_cache_gib": F, "mem_gib": F, "node": I}),
    event("omp_binding", "OpenMP thread binding info:",
           r"(?s)(?:.*?VLLM_CPU_OMP_THREADS_BIND='(?P<bind>[^']*)')?(?:.*?local_rank=(?P<local_rank>\d+), core ids=\[(?P<core_ids>[^\]]*)\])?",
           "info", (Sample("\n".join((
               "(EngineCore pid=6452) INFO 12-01 13:32:38 [ompmultiprocessing.py:185] OpenMP thread binding info:",
               "(EngineCore pid=6452) INFO 12-01 13:32:38 [ompmultiprocessing.py:185] \tVLLM_CPU_OMP_THREADS_BIND='auto', "
               "auto_setup=True, skip_setup=False",
               "(EngineCore pid=6452) INFO 12-01 13:32:38 [ompmultiprocessing.py:185] \tlocal_rank=0, core ids=[0]")),
               bind="auto", local_rank=0, core_ids="0"),),
           types={"local_rank": I}, continuation=r"^\t"),
    event("triton_unavailable", ("Triton is installed, but doesn't include CPU backend",
                                  "Triton is installed but 0 active driver(s) found",
                                  "Triton not installed or not compatible"), None, "info",
           ("Triton is installed, but doesn't include CPU backend. Disabling Triton.",)),
    event("worker_exit", ("Parent process exited, terminating worker queues", "Killing local vLLM worker processes"),
           None, "info", ("(Worker pid=6464) INFO 12-01 13:33:53 [multiproc_executor.py:843] Parent process exited, "
                          "terminating worker queues",)),
    # The broadcast queue between the engine and its workers had no free block for a minute
    # (distributed/device_communicators/shm_broadcast.py): a worker is slow (compiling) or stuck.
    event("shm_broadcast_wait", "No available shared memory broadcast block found in ",
           r"block found in (?P<wait_s>\d+) seconds?", "info",
           (Sample("(EngineCore pid=102) INFO 05-21 06:32:41 [shm_broadcast.py:698] No available shared memory broadcast "
                   "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
                   "time-consuming work (e.g. compilation, weight/kv cache quantization).", wait_s=60.0),),
           types={"wait_s": F}),
    event("graph_memory_profiling", "CUDA graph memory profiling is enabled",
           r"--gpu-memory-utilization=(?P<gpu_memory_utilization>[\d.]+) is equivalent to "
           r"--gpu-memory-utilization=(?P<equivalent>[\d.]+)", "info",
           (Sample("(Worker_TP1 pid=448) INFO 08-14 14:07:22 [gpu_worker.py:578] CUDA graph memory profiling is enabled "
                   "(default since v0.21.0). The current --gpu-memory-utilization=0.8200 is equivalent to "
                   "--gpu-memory-utilization=0.8048 without CUDA graph memory profiling.",
                   gpu_memory_utilization=0.82, equivalent=0.8048),),
           types={"gpu_memory_utilization": F, "equivalent": F}),
    # V0 0.6's one-line profile (worker.py), often pasted without its header.
    event("memory_profile_results", "Memory profiling results: ",
           r"total_gpu_memory=(?P<total_gpu_memory_gib>[\d.]+)GiB.*?kv_cache_size=(?P<kv_cache_gib>[\d.]+)GiB"
           r"(?:.*?gpu_memory_utilization=(?P<gpu_memory_utilization>[\d.]+))?", "info",
           (Sample("Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB "
                   "peak_torch_memory=17.98GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB "
                   "kv_cache_size=2.89GiB gpu_memory_utilization=0.90",
                   total_gpu_memory_gib=23.58, kv_cache_gib=2.89, gpu_memory_utilization=0.9),),
           types={"total_gpu_memory_gib": F, "kv_cache_gib": F, "gpu_memory_utilization": F}),
    # LMCache's own logger, inside vLLM's workers: `[2026-08-26 15:05:59,851] LMCache INFO: ...`;
    # its per-request lookups (`Reqid: R, Total tokens N, LMCache hit tokens: H, need to load: L`)
    # and stores (`Storing KV cache for N out of M tokens`) say how much of a prompt it served.
    event("lmcache", "LMCache ",
          r"^LMCache (?:INFO|DEBUG): (?:Reqid: [^,]+, Total tokens (?P<total_tokens>\d+), LMCache hit tokens: "
          r"(?P<hit_tokens>\d+), need to load: (?P<load_tokens>\d+)|Storing KV cache for (?P<stored_tokens>\d+) "
          r"out of (?P<store_total>\d+) tokens|(?P<what>[^:(]+))", "info",
           (Sample("(Worker_TP0 pid=440) [2026-08-26 15:05:59,851] LMCache INFO: Engine KV Format: "
                   "EngineKVFormat.NL_X_TWO_X_NB_BS_NH_HS NL x 2 x [NB, BS, NH, HS] "
                   "(detection.py:69:lmcache.v1.gpu_connector.kv_format.detection)", what="Engine KV Format"),
            Sample("[2025-05-27 08:27:12,496] LMCache INFO: Reqid: cmpl-233d9bc679f94a908e3b367db835307f-0, Total tokens "
                   "673, LMCache hit tokens: 672, need to load: 0 (vllm_v1_adapter.py:687:lmcache.integration.vllm."
                   "vllm_v1_adapter)", total_tokens=673, hit_tokens=672, load_tokens=0),
            Sample("[2025-07-03 12:45:24,614] LMCache INFO: Storing KV cache for 2862 out of 2862 tokens "
                   "(skip_leading_tokens=0) for request 33 (vllm_v1_adapter.py:761:lmcache.integration.vllm."
                   "vllm_v1_adapter)", stored_tokens=2862, store_total=2862)),
           types={"total_tokens": I, "hit_tokens": I, "load_tokens": I, "stored_tokens": I, "store_total": I},
           match=r"^LMCache (?:INFO|DEBUG): "),
    # Its warnings, which are its own notices (a connector call before attention metadata
    # exists, a store skipped for want of buffer memory), not the server's errors.
    event("lmcache_warning", "LMCache WARNING: ", r"^LMCache WARNING: (?P<what>[^(]+?)\s*(?:\(|$)", "warning",
           (Sample("[2025-07-03 12:45:24,656] LMCache WARNING: Failed to allocate memory for the KV cache.",
                   what="Failed to allocate memory for the KV cache."),),
           match=r"^LMCache WARNING: "),
    # A KV connector's start-up (distributed/kv_transfer/.../factory.py, nixl_connector.py) and
    # NIXL's own agent lines, bare or behind NIXL's header (`2025-11-25 02:39:46 NIXL INFO    _api.py:361 `).
    event("kv_connector", ("Creating v1 connector with name", "Initializing NIXL worker", "Initialized NIXL agent",
                           " was instantiated", "NixlConnector setting KV cache layout", "Registering KV_Caches"),
          r"(?:Creating v1 connector with name: (?P<connector>\w+) and engine_id: (?P<engine_id>\S+)"
          r"|Initializing NIXL worker (?P<nixl_worker>\S+)|Initialized NIXL agent: (?P<nixl_agent>\S+)"
          r"|Backend (?P<nixl_backend>\w+) was instantiated|setting KV cache layout to (?P<kv_layout>\w+)"
          r"|Registering KV_Caches)", "info",
          (Sample("(EngineCore_DP0 pid=590) INFO 11-25 02:39:49 [factory.py:64] Creating v1 connector with name: "
                  "NixlConnector and engine_id: 027a18cd-ad69-4b86-92cb-2fd78674bced", connector="NixlConnector",
                  engine_id="027a18cd-ad69-4b86-92cb-2fd78674bced"),
           Sample("(EngineCore_DP0 pid=590) 2025-11-25 02:39:46 NIXL INFO    _api.py:361 Backend UCX was instantiated",
                  nixl_backend="UCX"),
           Sample("(EngineCore_0 pid=532339) (RayWorkerWrapper pid=533564) Initialized NIXL agent: "
                  "a8ab2334-456e-447c-861b-74caf1bdc6e9", nixl_agent="a8ab2334-456e-447c-861b-74caf1bdc6e9")),
          match=r"^(?:(?:\S+ \S+ )?NIXL INFO\s+\S+ )?(?:Creating v1 connector with name|Initializing NIXL worker"
                r"|Initialized NIXL agent|Backend \w+ was instantiated|NixlConnector setting KV cache layout"
                r"|Registering KV_Caches)"),
    # `vllm bench serve` (benchmarks/serve.py, datasets.py) prints its steps around the result block.
    event("bench_sampling", "Sampling input_len from ",
           r"Sampling input_len from \[(?P<input_min>\d+), (?P<input_max>\d+)\] and output_len from "
           r"\[(?P<output_min>\d+), (?P<output_max>\d+)\]", "info",
           (Sample("(MainProcess pid=24053) INFO 12-01 13:16:55 [utils.py:88] Sampling input_len from [64, 64] and "
                   "output_len from [512, 512]", input_min=64, input_max=64, output_min=512, output_max=512),),
           types={"input_min": I, "input_max": I, "output_min": I, "output_max": I}),
    event("bench_step", ("Starting initial single prompt test run", "Skipping endpoint ready check",
                          "Initial test run completed", "Starting main benchmark run",
                          "tip: install termplotlib and gnuplot to plot the metrics"), None, "info",
           ("Starting initial single prompt test run...",), match=r"^(?:Starting|Skipping|Initial test|tip: )"),
    event("bench_failed_requests", "Failed requests during benchmark run detected",
           r"capping to (?P<shown>\d+)\)", "warning",
           (Sample("Failed requests during benchmark run detected (capping to 10):\nError 0: Bad Request\n"
                   "Error 1: Bad Request", shown=10),),
           types={"shown": I}, continuation=r"^Error \d+: "),
)
