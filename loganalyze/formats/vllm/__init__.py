"""vLLM server logs, releases 0.2.7 to 0.33 (see docs/formats-sources.md#vllm-server-logs).

Every header form is one prefix: `INFO 02-05 04:53:21 llm_engine.py:706] ` (up to 0.7),
`[metrics.py:481]` in brackets (0.8+), `(APIServer pid=1) ` in front (0.31+, and the
stdout decoration of worker processes; loganalyze/wrappers.py removes it, the prefix
takes it where an indent or a `│` box hid it from the wrapper), a Python-default
`2024-12-20 15:18:19 - vllm.engine.metrics - INFO - ` header, torch's `[rank0]: `. Kinds
match the message body, so a custom header still parses.

Tables:
- `stats`, phase "decode": the periodic engine line of V0 (`Pending`) and V1
  (`Waiting`), parsed by key. The line covers the whole engine (prefill and decode) but
  is vLLM's counterpart of SGLang's decode line: running, queue, KV usage, throughput.
  Keys without a column (Deferred, KV fetch, Corrupted, external / MM cache hit rates,
  the V0 CPU swap-space usage, the KV device, the engine index) go to `extra`.
  Phase "prefix_cache": V0's separate `Prefix cache hit rate: GPU: x%, CPU: y%` line.
  Phase "iteration": the optional per-iteration line of 0.33.
- `spec`: V1 `SpecDecoding metrics:` (per interval as printed) and V0 `Speculative
  metrics:` (cumulative counters, turned into per-interval differences). Accept length
  counts the bonus token, as SGLang's `accept len` does.
- `config`: the engine config dump, `non-default args`, `args: Namespace(...)`, the
  `vllm serve` command line, version lines (`engine` = "vllm", `engine_version`), and
  settings the log states (max model len, chunked prefill budget, eager mode).
- `events`: capacity and timing lines with typed `fields`, preemption, KV cache
  exhaustion, OOM, engine death, NCCL, tracebacks (one event each), and any other
  WARNING or ERROR line.
- `requests`: uvicorn access lines.

The kinds live by what they read, in the order classification tries them: `stats` (the
periodic engine lines, speculative decoding), `settings` (the `config` table), `startup`
(capacity, timing, readiness, shutdown), `serving` (requests, warnings and errors, the
shared kinds, the fallback). `lines` holds the header every kind shares.
"""

from __future__ import annotations

from loganalyze.formats.common import ACCESS
from loganalyze.formats.spec import LogFormat, TsFormat
from loganalyze.formats.vllm import serving, settings, startup, stats
from loganalyze.formats.vllm.lines import HEADER, PREFIX, RECORD_HEADER, RECORD_START, STAMP, STATS_START  # noqa: F401 (STATS_START)

KINDS = (ACCESS, *stats.KINDS, *settings.KINDS, *startup.KINDS, *serving.KINDS)

FORMAT = LogFormat(
    name="vllm",
    description="vLLM server log (vllm serve / api_server, V0 and V1 engines), releases 0.2.7 to 0.33",
    releases="0.2.7 - 0.33",
    prefix=PREFIX,
    kinds=KINDS,
    ts_formats=(TsFormat("%m-%d %H:%M:%S", complete="year"), TsFormat("%m-%d %H:%M", complete="year"),
                TsFormat("%Y-%m-%d %H:%M:%S")),
    record_start=RECORD_START,
    record_marks=(".py:", "Avg prompt throughput: "),
    record_header=RECORD_HEADER,
    detect=(
        HEADER,
        r"Avg prompt throughput: [\d.]+ tokens/s, Avg generation throughput: ",
        r"SpecDecoding metrics: |Speculative metrics: Draft acceptance rate",
        r"^(?:mean acceptance length: [\d.]+|acceptance at token \d+: ?[\d.]+)$",  # the offline spec_decode example
        r'^\s*File "[^"]*/vllm/',  # a traceback through vLLM's own code
        r"Initializing an? (?:V[01] )?LLM engine",
        r"vLLM API server version |vLLM server version |non-default args: \{",
        r"(?:^|[\s$#>])vllm serve ",
        r"vLLM",
        r"^Capturing CUDA graphs \((?:decode|mixed prefill-decode|prefill|PIECEWISE|FULL)",  # V1's graph-capture progress
        r"^\((?:EngineCore(?:_DP\d+)?|APIServer|VllmWorker[-\w]*) pid=\d+\)",
    ),
    versions=(
        (r"\w+ KV cache size: [\d,]+ tokens, Maximum concurrency", "0.28+"),
        (r"Model loading took [\d.]+ GiB memory and", "0.11.1+"),
        (r"SpecDecoding metrics: Mean acceptance length: .*Avg Draft acceptance rate", "0.10.2+"),
        (r"SpecDecoding metrics: Draft acceptance rate: [\d.]+%, Mean acceptance length", "0.8.5-0.10.1"),
        (r"Engine \d{3}: Avg prompt throughput", "0.8.3+"),
        (r"Running: \d+ reqs, Waiting: \d+ reqs, GPU KV cache usage: [\d.]+%, Prefix cache hit rate", "V1 0.7.3-0.8.2"),
        (r"Running: \d+ reqs, Waiting: \d+ reqs GPU KV cache usage", "V1 0.7.1-0.7.2"),
        (STAMP + r"\[[\w./-]+?\.py:\d+\] ", "0.8+"),
        (r"Pending: \d+ reqs, GPU KV cache usage: [\d.]+%, CPU KV cache usage: [\d.]+%\.", "V0 0.4.3-0.7.3"),
        (r"Pending: \d+ reqs, GPU KV cache usage: [\d.]+%, CPU KV cache usage: [\d.]+%$", "V0 0.2.7-0.4.2"),
        (STAMP + r"[\w./-]+?\.py:\d+\] ", "0.2.7-0.7.3"),
    ),
)
