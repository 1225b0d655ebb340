"""vLLM's events while serving: the request log, preemption, KV cache exhaustion, OOM,
engine death, NCCL, worker exceptions, the kinds shared with SGLang, tracebacks, and any
other WARNING or ERROR line (the fallback, last)."""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from loganalyze.formats.common import (
    ENGINE_PROCESS_KINDS, TRACEBACK, TRACEBACK_CONTINUATION, severity_from_level,
)
from loganalyze.formats.spec import LineKind, Sample
from loganalyze.formats.vllm.lines import event

I, F = pl.Int64, pl.Float64

KV_INSUFFICIENT = (
    r"(?:.*?max seq len \((?P<max_model_len>\d+)\))?"
    r"(?:.*?stored in KV cache \((?P<kv_tokens>\d+)\))?"
    r"(?:.*?\((?P<needed_gib>[\d.]+) GiB KV cache is needed, which is larger than the available KV cache memory "
    r"\((?P<available_gib>[\d.]+) GiB\))?(?:.*?estimated maximum model length is (?P<max_len_possible>\d+))?"
)

KINDS = (
    # The request log (entrypoints/logger.py, on unless --disable-log-requests): `Received
    # request <id>: prompt: '...', params: SamplingParams(...)` up to 0.10, `params: ...,
    # num_prompt_tokens: N` later; the prompt is the user's text, so only the id and the
    # sampling limit are fields.
    event("request_received", "Received request ",
           r"^Received request (?P<request_id>[^\s:]+):(?:.*?\bmax_tokens=(?P<max_tokens>\d+))?", "info",
           (Sample("Received request chatcmpl-67ed206b1edc4811911bcc917c0a0f72: prompt: '<s>[INST]Hello![/INST]', "
                   "params: SamplingParams(n=1, temperature=0.7, top_p=1.0, max_tokens=8174, min_tokens=0), "
                   "prompt_token_ids: None, lora_request: None, prompt_adapter_request: None.",
                   request_id="chatcmpl-67ed206b1edc4811911bcc917c0a0f72", max_tokens=8174),),
           types={"max_tokens": I}, match=r"^Received request [^\s:]+: "),
    event("request_lifecycle", ("Finished request ", "Added request ", "Aborted request"),
           r"^(?P<action>Finished|Added|Aborted) request(?:\(s\))? (?P<request_id>\S+?)\.?$", "info",
           ("INFO 02-05 04:53:20 async_llm_engine.py:111] Finished request cmpl-672a8058f6cb4d1d8f5ba5397af93575.",),
           match=r"^(?:Finished|Added|Aborted) request"),
    # Warnings and errors a diagnosis uses.
    # `preempted by` since 0.2; 0.6.x printed `preempted in` for a while (vllm/176).
    event("preemption", ("is preempted by PreemptionMode.", "is preempted in PreemptionMode."),
           r"Sequence group (?P<request_id>\S+) is preempted (?:by|in) PreemptionMode\.(?P<mode>\w+) mode"
           r"(?:.*total_num_cumulative_preemption=(?P<cumulative>\d+))?", "warning",
           ("WARNING 08-20 10:18:39 scheduler.py:1141] Sequence group 147 is preempted by PreemptionMode.RECOMPUTE "
            "mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase "
            "gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
            "total_num_cumulative_preemption=1",
            "WARNING 09-12 03:14:07 scheduler.py:1089] Sequence group cmpl-71c6c2702c07-0 is preempted in "
            "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. total_num_cumulative_preemption=1"),
           types={"cumulative": I}),
    # V1 (0.8+) logs no preemption when it happens, only the resumption of a request it
    # preempted for KV blocks (vllm/128: LMCache loading its prefix back): one line a preemption.
    event("preempt_resumed", "has been resumed!", r"^Preempted request (?P<request_id>\S+) has been resumed!", "warning",
          ("(EngineCore_0 pid=3945189) INFO 08-21 07:17:09 [scheduler.py:495] Preempted request "
           "cmpl-e5951453df7d471e8aac25957dbc9096-0 has been resumed!",), match=r"^Preempted request \S+ has been resumed"),
    # V1's check before the profile (0.9+): what is free on the GPU is below the share that
    # --gpu-memory-utilization asks for, usually because another process holds memory.
    # Later releases name the device (`on device cuda:0 (...)`).
    event("startup_memory_short", "on startup is less than desired GPU memory utilization",
           r"Free memory on device (?:(?P<device>\S+) )?\((?P<free_gib>[\d.]+)/(?P<total_gib>[\d.]+) GiB\) on startup is less than desired "
           r"GPU memory utilization \((?P<gpu_memory_utilization>[\d.]+), (?P<wanted_gib>[\d.]+) GiB\)", "critical",
           (Sample("(EngineCore_DP0 pid=17374) ERROR 09-28 15:47:24 [core.py:718] ValueError: Free memory on device "
                   "(3.22/4.0 GiB) on startup is less than desired GPU memory utilization (0.9, 3.6 GiB). Decrease GPU "
                   "memory utilization or reduce GPU memory used by other processes.",
                   free_gib=3.22, total_gib=4.0, gpu_memory_utilization=0.9, wanted_gib=3.6),
            Sample("(Worker pid=148) ERROR 07-01 02:36:18 [multiproc_executor.py:870] ValueError: Free memory on "
                   "device cuda:0 (22.35/23.56 GiB) on startup is less than desired GPU memory utilization (0.95, "
                   "22.38 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
                   device="cuda:0", free_gib=22.35, total_gib=23.56, gpu_memory_utilization=0.95, wanted_gib=22.38)),
           types={"free_gib": F, "total_gib": F, "gpu_memory_utilization": F, "wanted_gib": F},
           continuation=TRACEBACK_CONTINUATION),
    # P/D disaggregation with the NIXL connector (distributed/kv_transfer/.../nixl_connector.py,
    # 0.9+): the prefill side frees KV blocks the decode side never read within
    # VLLM_NIXL_ABORT_REQUEST_TIMEOUT, or blocks a decode worker read for a request it no
    # longer knows (they may have expired): the request's KV cache did not cross.
    event("kv_transfer_expired", ("Releasing expired KV blocks for request", "Potentially invalid KV blocks"),
           r"^(?:Releasing expired|Potentially invalid) KV blocks for (?:unrecognized )?request (?P<request_id>\S+)"
           r"(?: which were retrieved by (?P<readers>\d+) decode worker\(s\) within (?P<timeout_s>\d+) seconds)?",
           "warning",
           (Sample("Releasing expired KV blocks for request cmpl-3da205a6-1c3c-41b5-aeaa-b8421e81fd5c-0 which were "
                   "retrieved by 0 decode worker(s) within 120 seconds.",
                   request_id="cmpl-3da205a6-1c3c-41b5-aeaa-b8421e81fd5c-0", readers=0, timeout_s=120),
            Sample("Potentially invalid KV blocks for unrecognized request chatcmpl-129a69c8-cd1a-40e0-aa3e-94662fd8cc2b "
                   "were retrieved by a decode worker. They may have expired.",
                   request_id="chatcmpl-129a69c8-cd1a-40e0-aa3e-94662fd8cc2b")),
           types={"readers": I, "timeout_s": I}),
    # The KV connector's transfers over the last stats interval (kv_transfer/kv_connector/v1/metrics.py,
    # 0.10+: its stats' `reduce()` as `key=value` pairs, whose keys and their order vary with the
    # connector; 0.9 dev: the stats object's repr). A failed count is moved to the front, so that
    # one pattern reads it whichever order the connector printed.
    event("kv_transfer_stats", "KV Transfer metrics: ",
           r"KV Transfer metrics: (?:Num failed transfers=(?P<failed>\d+), )?(?:.*?(?:num_successful_transfers|Num "
           r"successful transfers)=(?P<successful>\d+))?(?:.*?Avg xfer time \(ms\)=(?P<avg_xfer_ms>[\d.]+))?"
           r"(?:.*?Throughput \(MB/s\)=(?P<throughput_mb_s>[\d.]+))?(?:.*?Num KV expired reqs=(?P<kv_expired>\d+))?",
           "info",
           (Sample("INFO 07-03 13:32:10 [metrics.py:109] KV Transfer metrics: KVTransferAggregatedStats("
                   "avg_transfer_durations=0.0, avg_bytes_transferred=0.0, num_blocks_transferred=0, "
                   "num_successful_transfers=0)", successful=0),
            Sample("KV Transfer metrics: Num successful transfers=2, Avg xfer time (ms)=1.5, P90 xfer time (ms)=1.9, "
                   "Avg MB per transfer=1.5, Throughput (MB/s)=1000.0, Avg number of descriptors=5.0, Num failed "
                   "transfers=1, Num failed recvs=0, Num KV expired reqs=0",
                   failed=1, successful=2, avg_xfer_ms=1.5, throughput_mb_s=1000.0, kv_expired=0)),
           rewrites=((r"^(.*?KV Transfer metrics: )(.*?)(Num failed transfers=\d+, )", "$1$3$2"),),
           types={"failed": I, "successful": I, "avg_xfer_ms": F, "throughput_mb_s": F, "kv_expired": I}),
    # A KV connector's own report that a request's KV cache did not cross: the Mooncake
    # connectors (vLLM's and vllm-ascend's `Mooncake transfer failed for request X`, then
    # `Failed to transfer KV cache for request X: <reason>`) and NIXL's handshake with the
    # remote engine failing, which names no request (docs/formats-sources.md#pd-disaggregation-kv-transfers-that-failed).
    event("kv_connector_failed", (" transfer failed for request", "Failed to transfer KV cache for request",
                                  "Handshake with ", "NIXL handshake ", "Handshake failed for request"),
          r"^(?:(?:(?P<backend>\w+) transfer|(?P<step>Handshake)) failed for request\.? (?:remote_request_id=)?"
          r"(?P<request_id>[^\s,]+?)[.,]?(?:\s|$)"
          r"|Failed to transfer KV cache for request (?P<kv_request_id>\S+?)[.:]?(?:\s+(?P<reason>\S.*))?$"
          r"|(?:Handshake with (?P<engine_id>\S+)|NIXL handshake) (?P<handshake>failed|timed out))",
          "error",
          (Sample("(EngineCore_DP0 pid=5704) ERROR 01-06 06:43:02 [mooncake_connector.py:419] Mooncake transfer failed "
                  "for request cmpl-118b93ed-a3b2-4d9f-a26d-1d5dce6d7bf2-0",
                  backend="Mooncake", request_id="cmpl-118b93ed-a3b2-4d9f-a26d-1d5dce6d7bf2-0"),
           Sample("(EngineCore_DP0 pid=5704) ERROR 01-06 06:43:02 [mooncake_connector.py:330] Failed to transfer KV "
                  "cache for request cmpl-118b93ed-a3b2-4d9f-a26d-1d5dce6d7bf2-0: Mooncake transfer failed, ret: -1",
                  kv_request_id="cmpl-118b93ed-a3b2-4d9f-a26d-1d5dce6d7bf2-0", reason="Mooncake transfer failed, ret: -1"),
           Sample("ERROR 11-22 06:57:51 [nixl_connector.py:548] Handshake with c00824be-282f-4719-9aeb-120dcb516863 failed",
                  engine_id="c00824be-282f-4719-9aeb-120dcb516863", handshake="failed"),
           # 0.11+, with kv_load_failure_policy: the request's blocks are marked invalid (vllm PR 26171's log).
           Sample("(EngineCore_DP0 pid=3317003) ERROR 10-07 17:11:06 [distributed/.../v1/nixl_connector.py:832] Handshake "
                  "failed for request cmpl-6e8a849f-7ec0-4abe-b4c7-38bce04d53d1-0, marking blocks as invalid",
                  step="Handshake", request_id="cmpl-6e8a849f-7ec0-4abe-b4c7-38bce04d53d1-0")),
          match=r"^(?:(?:\w+ transfer|Handshake) failed for request\.? \S|Failed to transfer KV cache for request \S"
                r"|Handshake with \S+ failed|NIXL handshake (?:failed|timed out))",
          continuation=TRACEBACK_CONTINUATION),
    event("kv_cache_insufficient", ("No available memory for the cache blocks", "stored in KV cache (",
                                     "KV cache is needed, which is larger than the available KV cache memory",
                                     "To serve at least one request with the model"),
           KV_INSUFFICIENT, "critical",
           ("ERROR 04-01 10:00:00 [core.py:390] ValueError: To serve at least one request with the models's max seq "
            "len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.50 "
            "GiB). Based on the available memory, the estimated maximum model length is 77824. Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",),
           types={"max_model_len": I, "kv_tokens": I, "needed_gib": F, "available_gib": F, "max_len_possible": I},
           continuation=TRACEBACK_CONTINUATION),
    # NCCL's own wording, in the `Last error:` its exception carries: `Cuda failure 2 'out of memory'`.
    event("oom", ("CUDA out of memory", "OutOfMemoryError", "CUDA driver error: out of memory", "'out of memory'"),
           r"(?:.*?Tried to allocate (?P<tried>[\d.]+ [KMG]iB)\. GPU (?P<gpu_index>\d+) has a total capacity of "
           r"(?P<capacity>[\d.]+ [KMG]iB) of which (?P<free>[\d.]+ [KMG]iB) is free)?", "critical",
           ("(EngineCore pid=104) ERROR 05-05 12:36:58 [core.py:1140] torch.OutOfMemoryError: CUDA out of memory. "
            "Tried to allocate 50.00 MiB. GPU 0 has a total capacity of 23.56 GiB of which 37.12 MiB is free.",),
           continuation=TRACEBACK_CONTINUATION),
    # V0's multiprocessing front end (0.6 - 0.10) says it of its engine process: `RuntimeError('Engine
    # process (pid 77) died.')`, `MQLLMEngine is already dead, terminating server process`.
    event("engine_dead", ("EngineDeadError", "EngineCore encountered a fatal error", "AsyncLLM output_handler failed",
                           "Engine core initialization failed", "Engine process failed to start",
                           "Engine background task failed",
                           "MQLLMEngine is already dead", "Engine process (pid "),
           None, "critical",
           ("(APIServer pid=1) ERROR 05-05 12:36:59 [serving.py:1173] vllm.v1.engine.exceptions.EngineDeadError: "
            "EngineCore encountered an issue. See stack trace (above) for the root cause.",
            "CRITICAL 01-22 00:13:36 launcher.py:99] MQLLMEngine is already dead, terminating server process"),
           continuation=TRACEBACK_CONTINUATION),
    event("nccl_error", "NCCL error",
           r"(?:Exception in worker (?P<worker>\S+) while processing method (?P<method>\w+): )?.*?"
           r"NCCL error(?: in: \S+?:\d+,|(?: in: [^:]*)?:) (?P<nccl_error>[^(,\n]*[^(,\n ])", "critical",
           ("(VllmWorkerProcess pid=761) ERROR 07-24 08:26:01 multiproc_worker_utils.py:226] Exception in worker "
            "VllmWorkerProcess while processing method init_device: NCCL error: unhandled cuda error (run with "
            "NCCL_DEBUG=INFO for details), Traceback (most recent call last):",
            # PyTorch 2.x names its source line: `NCCL error in: <file>:<line>, <error>` (vllm/182 of hold-out 10)
            Sample("(VllmWorker rank=3 pid=15164) ERROR 06-19 07:06:13 [multiproc_executor.py:527] "
                   "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
                   "NCCLUtils.cpp:77, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.26.2",
                   nccl_error="unhandled cuda error")),
           continuation=TRACEBACK_CONTINUATION, match=r"NCCL error(?: in: \S+?:\d+,|[^:]*:) "),
    event("nccl_timeout", ("Watchdog caught collective operation timeout", "RPC call to execute_model timed out"),
           None, "critical", ("ERROR 04-01 10:00:00 [multiproc_executor.py:140] RPC call to execute_model timed out.",),
           continuation=TRACEBACK_CONTINUATION),
    event("worker_exception", "Exception in worker ",
           r"Exception in worker (?P<worker>\S+) while processing method (?P<method>\w+): (?P<error>.*?)"
           r"(?:, Traceback \(most recent call last\):)?$", "error",
           ("(VllmWorkerProcess pid=761) ERROR 07-24 08:26:01 multiproc_worker_utils.py:226] Exception in worker "
            "VllmWorkerProcess while processing method load_model: boom, Traceback (most recent call last):",),
           continuation=TRACEBACK_CONTINUATION),
    event("custom_allreduce_disabled", "Custom allreduce is disabled", r"(?:.*?because (?P<reason>[^.]+))?", "warning",
           (Sample("WARNING 04-01 10:00:00 custom_all_reduce.py:134] Custom allreduce is disabled because it's not "
                   "supported on more than two PCIe-only GPUs. To silence this warning, specify "
                   "disable_custom_all_reduce=True explicitly.",
                   reason="it's not supported on more than two PCIe-only GPUs"),)),
    event("custom_allreduce_graphs", " cuda graph addresses", r"Registering (?P<addresses>\d+) cuda graph addresses",
           "info", ("(Worker_TP0_EP0 pid=2709390) INFO 09-29 09:52:21 [custom_all_reduce.py:203] Registering 12784 "
                    "cuda graph addresses",), types={"addresses": I}),
    event("nccl_library", "Found nccl from library ", r"Found nccl from library (?P<library>\S+)", "info",
           ("(VllmWorkerProcess pid=760) INFO 07-24 08:25:45 utils.py:784] Found nccl from library libnccl.so.2",)),
    event("nccl_version", "is using nccl==", r"using nccl==(?P<nccl_version>[\d.]+)", "info",
           ("(VllmWorkerProcess pid=761) INFO 07-24 08:25:45 pynccl.py:63] vLLM is using nccl==2.20.5",)),
    event("process_crash", "Process ", r"^Process (?P<process_name>[\w-]+):$", "critical",
           ("(EngineCore pid=104) Process EngineCore:",), match=r"^Process [\w-]+:$"),
    *ENGINE_PROCESS_KINDS,
    replace(TRACEBACK, orphan=r'^\s*File "', samples=(
        # A log cut mid-traceback (fixtures/real/vllm/36_*.log): no final error line, so no fields.
        Sample("\n".join((
            '(EngineCore pid=104) Traceback (most recent call last):',
            '(EngineCore pid=104)   File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap',
            '(EngineCore pid=104)     self.run()',
            '(EngineCore pid=104)   File "/usr/lib/python3.12/multiprocessing/process.py", line 108, in run',
            '(EngineCore pid=104)     self._target(*self._args, **self._kwargs)',
            '(EngineCore pid=104)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", '
            'line 1140, in run_engine_core',
            '(EngineCore pid=104)     raise e',
            '(EngineCore pid=104)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", '
            'line 1129, in run_engine_core',
            '(EngineCore pid=104)     engine_core.run_busy_loop()',
            '(EngineCore pid=104)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", '
            'line 1170, in run_busy_loop',
            '(EngineCore pid=104)     self._process_engine_step()',
        ))),
        '(RayWorkerWrapper pid=67451, ip=10.0.0.1) ERROR 06-25 15:28:30 worker_base.py:148]   File "/x/worker.py", '
        "line 162, in determine_num_available_blocks",
    )),
    # Any other line vLLM printed with its own header: an event of its level, the message kept
    # (warm-ups, backends chosen, cache directories: vllm/135 and 138 of hold-out 5). A header
    # with nothing after it is no event (a banner's blank first line).
    LineKind(
        name="other", table="events", needle="", levels=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
        fallback=True, match=r"\S", message=True, handler=severity_from_level(),
        samples=("(APIServer pid=1391815) WARNING 08-19 14:58:41 [__init__.py:1635] Default sampling parameters have "
                 "been overridden by the model's Hugging Face generation config.",
                 "(EngineCore pid=7476) INFO 07-25 13:42:38 [qwen_triton_warmup.py:372] Warming up Qwen Triton kernels "
                 "for model_type=qwen3_5_text."),
    ),
)

