"""Generate large, realistic inference-server logs for benchmarks.

    python benchmarks/generate.py /tmp/sglang-1g.log                       # SGLang, 1 GB
    python benchmarks/generate.py /tmp/vllm-1g.log --format vllm --size 1G
    python benchmarks/generate.py /tmp/sglang-5g.log --size 5G --seed 7

SGLang: a busy TP-8 server (0.5.x): a startup block printed by the 8 ranks (server args,
NCCL INFO lines, weight loading, KV cache, CUDA graph capture), then the steady state of
TP0's `Decode batch` lines with accept len / accept rate (EAGLE), `Prefill batch` lines and
interleaved uvicorn access lines, with a few retractions, aborts, unknown lines and
tracebacks.

vLLM V1 (0.11+): `(APIServer pid=1) INFO MM-DD HH:MM:SS [loggers.py:NNN] Engine 000: ...`
stats lines every 10 s of log time, each followed by a `SpecDecoding metrics` line, with
the access lines of the requests served in between, after a startup block.

Deterministic: the same arguments give the same bytes (Python's seeded Mersenne Twister
feeds polars, which formats whole columns at a time; nothing is printed line by line).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import polars as pl
import pyarrow as pa

CHUNK_LINES = 200_000
START = 1_767_322_800  # 2026-01-02 03:00:00 UTC


def parse_size(text: str) -> int:
    units = {"K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
    text = text.strip().upper().removesuffix("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


class Rand:
    """Columns of uniform integers from a seeded Mersenne Twister, without a Python loop."""

    def __init__(self, seed: int):
        self.rnd = random.Random(seed)

    def u32(self, n: int) -> pl.Series:
        buf = pa.py_buffer(self.rnd.randbytes(4 * n))
        return pl.from_arrow(pa.Array.from_buffers(pa.uint32(), n, [None, buf])).cast(pl.Int64)

    def ints(self, n: int, lo: int, hi: int) -> pl.Series:
        """Uniform integers in [lo, hi]."""
        return self.u32(n) % (hi - lo + 1) + lo


def dec(col: pl.Expr, places: int = 2) -> pl.Expr:
    """An integer column holding hundredths (say) printed as a fixed-point decimal."""
    scale = 10**places
    return pl.format("{}.{}", col // scale, (col % scale).cast(pl.String).str.zfill(places))


def ts_sglang(sec: pl.Expr) -> pl.Expr:
    return pl.from_epoch(sec, time_unit="s").dt.strftime("%Y-%m-%d %H:%M:%S")


def ts_vllm(sec: pl.Expr) -> pl.Expr:
    return pl.from_epoch(sec, time_unit="s").dt.strftime("%m-%d %H:%M:%S")


def ts_text(sec: int, layout: str) -> str:
    return time.strftime(layout, time.gmtime(sec))


# ---------------------------------------------------------------- SGLang

def sglang_startup(t: int) -> list[str]:
    day = "%Y-%m-%d %H:%M:%S"
    ts = ts_text(t, day)
    out = [
        f"[{ts}] server_args=ServerArgs(model_path='/models/moonshotai/Kimi-K2.5', tokenizer_path='/models/moonshotai/"
        "Kimi-K2.5', tokenizer_mode='auto', skip_tokenizer_init=False, load_format='auto', trust_remote_code=True, "
        "dtype='auto', kv_cache_dtype='auto', quantization=None, context_length=None, device='cuda', "
        "served_model_name='kimi-k2.5', chat_template=None, is_embedding=False, revision=None, host='0.0.0.0', "
        "port=30000, mem_fraction_static=0.85, max_running_requests=None, max_total_tokens=None, "
        "chunked_prefill_size=8192, max_prefill_tokens=16384, schedule_policy='fcfs', tp_size=8, "
        "stream_interval=1, random_seed=42, log_level='info', speculative_algorithm='EAGLE3', "
        "speculative_draft_model_path='/models/AQ-MedAI/Kimi-K2-eagle3', speculative_num_steps=3, "
        "speculative_eagle_topk=1, speculative_num_draft_tokens=4, enable_metrics=False, decode_log_interval=40)",
        f"[{ts}] Using default HuggingFace chat template with detected content format: string",
    ]
    t += 4
    ts = ts_text(t, day)
    for r in range(8):
        out.append(f"[{ts} TP{r}] Init torch distributed begin.")
    for r in range(8):
        out.append(f"node01:4100{r}:4100{r} [{r}] NCCL INFO Bootstrap : Using eth0:10.1.0.7<0>")
        out.append(f"node01:4100{r}:4100{r} [{r}] NCCL INFO cudaDriverVersion 12080")
        out.append(f"node01:4100{r}:4100{r} [{r}] NCCL INFO NCCL version 2.21.5+cuda12.4")
    for r in range(8):
        for c in range(2):
            out.append(f"node01:4100{r}:4120{r} [{r}] NCCL INFO Channel {c:02d} : {r}[{r}] -> {(r + 1) % 8}[{(r + 1) % 8}] "
                       "via SHM/direct/direct")
    for r in range(8):
        out.append(f"node01:4100{r}:4120{r} [{r}] NCCL INFO Connected all rings")
        out.append(f"node01:4100{r}:4120{r} [{r}] NCCL INFO comm 0x5581c2a0 rank {r} nranks 8 cudaDev {r} "
                   f"nvmlDev {r} busId {r}1000 commId 0x3c1f5e6a7b8c9d0e - Init COMPLETE")
    t += 2
    ts = ts_text(t, day)
    out.append(f"[{ts} TP0] sglang is using nccl==2.21.5")
    for r in range(8):
        out.append(f"[{ts} TP{r}] Init torch distributed ends. mem usage=1.21 GB")
        out.append(f"[{ts} TP{r}] Load weight begin. avail mem=93.{r + 10} GB")
    for pct, done in ((0, 0), (25, 16), (50, 32), (75, 48), (100, 64)):
        out.append(f"Loading safetensors checkpoint shards: {pct:3d}% Completed | {done}/64 "
                   f"[{done // 8:02d}:{done % 60:02d}<{(64 - done) // 8:02d}:00,  1.46it/s]")
    t += 512
    ts = ts_text(t, day)
    for r in range(8):
        out.append(f"[{ts} TP{r}] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
                   f"avail mem=24.{r + 10} GB, mem usage=68.81 GB.")
        out.append(f"[{ts} TP{r}] KV Cache is allocated. #tokens: 812544, KV size: 9.30 GB")
        out.append(f"[{ts} TP{r}] Memory pool end. avail mem=13.{r + 20} GB")
    out.append(f"[{ts} TP0] max_total_num_tokens=812544, chunked_prefill_size=8192, max_prefill_tokens=16384, "
               "max_running_requests=48, context_len=262144, available_gpu_mem=13.20 GB")
    out.append(f"[{ts}] Max running requests is reset to 48 for speculative decoding. You can override this by "
               "explicitly setting --max-running-requests.")
    out.append(f"[{ts}] Overlap scheduler is disabled because of using eagle speculative decoding.")
    for r in range(8):
        out.append(f"[{ts} TP{r}] Capture cuda graph begin. This can take up to several minutes. avail mem=13.{r + 20} GB")
    out.append(f"[{ts} TP0] Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24, 32, 40, 48]")
    t += 41
    ts = ts_text(t, day)
    for r in range(8):
        out.append(f"[{ts} TP{r}] Capture cuda graph end. Time elapsed: 41.{r + 10} s. mem usage=2.14 GB. "
                   f"avail mem=11.{r + 10} GB.")
    out += [
        f"[{ts}] INFO:     Started server process [40990]",
        f"[{ts}] INFO:     Waiting for application startup.",
        f"[{ts}] INFO:     Application startup complete.",
        f"[{ts}] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
        f"[{ts}] INFO:     127.0.0.1:39990 - \"GET /get_model_info HTTP/1.1\" 200 OK",
        f"[{ts}] The server is fired up and ready to roll!",
    ]
    return out


def sglang_rare(rnd: random.Random, t: int) -> list[str]:
    """One of the occasional lines of a long-running server, at time t."""
    ts = ts_text(t, "%Y-%m-%d %H:%M:%S")
    pick = rnd.randrange(5)
    if pick == 0:
        return [
            f"[{ts}] Error in request handler",
            "Traceback (most recent call last):",
            '  File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/http_server.py", line 512, in '
            "v1_chat_completions",
            "    return await raw_request.app.state.openai_serving_chat.handle_request(request, raw_request)",
            '  File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/openai/serving_base.py", line 47, in '
            "handle_request",
            "    adapted_request, processed_request = self._convert_to_internal_request(request)",
            f"ValueError: The input ({rnd.randrange(262145, 400000)} tokens) is longer than the model's context "
            "length (262144 tokens).",
        ]
    if pick == 1:
        return [f"[{ts} TP0] KV cache pool is full. Retract requests. #retracted_reqs: {rnd.randrange(1, 4)}, "
                f"#new_token_ratio: 0.{rnd.randrange(1000, 9999)} -> 1.0000"]
    if pick == 2:
        return [f"[{ts}] Request is disconnected from the client side (type 1). Abort request "
                f"obj.rid='{rnd.getrandbits(128):032x}'"]
    if pick == 3:
        return [f"[{ts}] INFO:     127.0.0.1:{rnd.randrange(30000, 60000)} - \"GET /metrics HTTP/1.1\" 200 OK"]
    return [f"[{ts} TP0] Cache flushed successfully!"]


def sglang_chunk(rand: Rand, n: int, t0: int, port0: int) -> tuple[pl.DataFrame, int]:
    """n steady-state lines starting at second t0 (about 4 lines a second)."""
    kind = rand.ints(n, 0, 99)  # 0-61 decode, 62-83 prefill, 84-99 access
    frame = pl.DataFrame({
        "i": pl.int_range(0, n, eager=True), "k": kind,
        "a": rand.ints(n, 0, 2**31), "b": rand.ints(n, 0, 2**31), "c": rand.ints(n, 0, 2**31),
    }).with_columns(sec=pl.lit(t0) + pl.col("i") // 4)
    a, b, c = pl.col("a"), pl.col("b"), pl.col("c")
    ts = ts_sglang(pl.col("sec"))
    queue = (a // 7) % 90
    decode = pl.format(
        "[{} TP0] Decode batch, #running-req: {}, #token: {}, token usage: {}, accept len: {}, accept rate: {}, "
        "cuda graph: True, gen throughput (token/s): {}, #queue-req: {}",
        ts, pl.when(queue > 0).then(48).otherwise(a % 48 + 1), b % 800_000, dec(b % 100),
        dec(165 + c % 18), dec(40 + (c // 32) % 9), dec(80_000 + (a // 1000) % 9000), queue,
    )
    prefill = pl.format(
        "[{} TP0] Prefill batch, #new-seq: {}, #new-token: {}, #cached-token: {}, token usage: {}, "
        "#running-req: {}, #queue-req: {}, input throughput (token/s): {}, cuda graph: False",
        ts, 1 + a % 4, 100 + b % 8000, (c % 5) * (b % 2048), dec(b % 100), a % 48, queue,
        dec(100_000 + c % 2_000_000),
    )
    access = pl.format(
        '[{}] INFO:     127.0.0.1:{} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        ts, pl.lit(port0) + pl.col("i") % 20000,
    )
    text = pl.when(pl.col("k") < 62).then(decode).when(pl.col("k") < 84).then(prefill).otherwise(access)
    return frame.select(text=text), t0 + n // 4 + 1


# ---------------------------------------------------------------- vLLM

VLLM_PFX = "(APIServer pid=1) INFO"


def vllm_startup(t: int) -> list[str]:
    def ts(sec: int) -> str:
        return ts_text(sec, "%m-%d %H:%M:%S")

    a, e = VLLM_PFX, "(EngineCore_DP0 pid=310) INFO"
    out = [
        f"{a} {ts(t)} [api_server.py:1896] vLLM API server version 0.11.2",
        f"{a} {ts(t)} [utils.py:253] non-default args: {{'model_tag': 'meta-llama/Llama-3.1-70B-Instruct', "
        "'host': '0.0.0.0', 'model': 'meta-llama/Llama-3.1-70B-Instruct', 'max_model_len': 32768, "
        "'tensor_parallel_size': 8, 'max_num_seqs': 256, 'speculative_config': {'method': 'eagle3', "
        "'model': 'yuhuili/EAGLE3-LLaMA3.3-Instruct-70B', 'num_speculative_tokens': 3}}",
        f"{a} {ts(t + 5)} [model.py:631] Resolved architecture: LlamaForCausalLM",
        f"{e} {ts(t + 9)} [core.py:93] Initializing a V1 LLM engine (v0.11.2) with config: "
        "model='meta-llama/Llama-3.1-70B-Instruct', speculative_config=SpeculativeConfig(method='eagle3', "
        "model='yuhuili/EAGLE3-LLaMA3.3-Instruct-70B', num_spec_tokens=3), tokenizer='meta-llama/Llama-3.1-70B-Instruct', "
        "dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=8, pipeline_parallel_size=1, "
        "enforce_eager=False, kv_cache_dtype=auto, seed=0, enable_prefix_caching=True",
    ]
    for r in range(8):
        out.append(f"(Worker_TP{r} pid={320 + r}) INFO {ts(t + 20)} [default_loader.py:267] Loading weights took "
                   f"41.{r + 10} seconds")
        out.append(f"(Worker_TP{r} pid={320 + r}) INFO {ts(t + 21)} [gpu_model_runner.py:2653] Model loading took "
                   f"16.4{r} GiB memory and 43.{r + 20} seconds")
    for r in range(8):
        out.append(f"node01:{320 + r}:{320 + r} [{r}] NCCL INFO NCCL version 2.27.3+cuda12.9")
        out.append(f"node01:{320 + r}:{900 + r} [{r}] NCCL INFO Channel 00/24 : {r}[{r}] -> {(r + 1) % 8}[{(r + 1) % 8}] "
                   "via P2P/CUMEM")
    out += [
        f"{e} {ts(t + 60)} [kv_cache_utils.py:1087] GPU KV cache size: 1,587,648 tokens",
        f"{e} {ts(t + 60)} [kv_cache_utils.py:1091] Maximum concurrency for 32,768 tokens per request: 48.45x",
        f"{e} {ts(t + 80)} [gpu_model_runner.py:3480] Graph capturing finished in 19 secs, took 1.21 GiB",
        f"{e} {ts(t + 80)} [core.py:210] init engine (profile, create kv cache, warmup model) took 58.91 seconds",
        f"{a} {ts(t + 82)} [api_server.py:1634] Supported_tasks: ['generate']",
        f"{a} {ts(t + 82)} [api_server.py:1912] Starting vLLM API server 0 on http://0.0.0.0:8000",
        f"{a} {ts(t + 82)} [launcher.py:34] Available routes are:",
        f"(APIServer pid=1) INFO:     Started server process [1]",
        f"(APIServer pid=1) INFO:     Waiting for application startup.",
        f"(APIServer pid=1) INFO:     Application startup complete.",
    ]
    return out


def vllm_rare(rnd: random.Random, t: int) -> list[str]:
    ts = ts_text(t, "%m-%d %H:%M:%S")
    if rnd.randrange(2) == 0:
        return [
            f"(APIServer pid=1) ERROR {ts} [serving_chat.py:1145] Error in chat completion stream generator.",
            f"(APIServer pid=1) ERROR {ts} [serving_chat.py:1145] Traceback (most recent call last):",
            f'(APIServer pid=1) ERROR {ts} [serving_chat.py:1145]   File "/usr/local/lib/python3.12/dist-packages/'
            'vllm/entrypoints/openai/serving_chat.py", line 612, in chat_completion_stream_generator',
            f"(APIServer pid=1) ERROR {ts} [serving_chat.py:1145]     async for res in result_generator:",
            f"(APIServer pid=1) ERROR {ts} [serving_chat.py:1145] asyncio.exceptions.CancelledError",
        ]
    return [f"(APIServer pid=1) WARNING {ts} [protocol.py:93] The following fields were present in the request but "
            "ignored: {'stream_options'}"]


def vllm_chunk(rand: Rand, n: int, t0: int, port0: int) -> tuple[pl.DataFrame, int]:
    """n lines: every interval of 10 s is a stats line, a SpecDecoding line and ~40 access lines."""
    frame = pl.DataFrame({
        "i": pl.int_range(0, n, eager=True),
        "a": rand.ints(n, 0, 2**31), "b": rand.ints(n, 0, 2**31), "c": rand.ints(n, 0, 2**31),
    }).with_columns(sec=pl.lit(t0) + pl.col("i") // 4)
    a, b, c = pl.col("a"), pl.col("b"), pl.col("c")
    ts = ts_vllm(pl.col("sec"))
    waiting = (a // 7) % 120
    running = pl.when(waiting > 0).then(256).otherwise(a % 256 + 1)
    stats = pl.format(
        "{} {} [loggers.py:236] Engine 000: Avg prompt throughput: {} tokens/s, Avg generation throughput: {} "
        "tokens/s, Running: {} reqs, Waiting: {} reqs, GPU KV cache usage: {}%, Prefix cache hit rate: {}%",
        pl.lit(VLLM_PFX), ts, dec(b % 300_000, 1), dec(10_000 + c % 40_000, 1), running, waiting,
        dec(b % 1000, 1), dec(c % 1000, 1),
    )
    p0, p1, p2 = 500 + a % 400, 200 + b % 300, 50 + c % 150
    drafted = 3 * (1000 + b % 9000)
    accepted = (drafted * (p0 + p1 + p2)) // 3000
    spec = pl.format(
        "{} {} [metrics.py:100] SpecDecoding metrics: Mean acceptance length: {}, Accepted throughput: {} tokens/s, "
        "Drafted throughput: {} tokens/s, Accepted: {} tokens, Drafted: {} tokens, Per-position acceptance rate: "
        "0.{}, 0.{}, 0.{}, Avg Draft acceptance rate: {}%",
        pl.lit(VLLM_PFX), ts, dec(100 + (p0 + p1 + p2) // 10), dec(accepted * 10), dec(drafted * 10), accepted, drafted,
        p0.cast(pl.String).str.zfill(3), p1.cast(pl.String).str.zfill(3), p2.cast(pl.String).str.zfill(3),
        dec((p0 + p1 + p2) // 3, 1),
    )
    access = pl.format('(APIServer pid=1) INFO:     10.0.3.{}:{} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
                       a % 250 + 1, pl.lit(port0) + pl.col("i") % 20000)
    k = pl.col("i") % 42  # 42 lines at 4 a second: about 10 s
    text = pl.when(k == 0).then(stats).when(k == 1).then(spec).otherwise(access)
    return frame.select(text=text), t0 + n // 4 + 1


FORMATS: dict[str, tuple[Callable, Callable, Callable]] = {
    "sglang": (sglang_startup, sglang_chunk, sglang_rare),
    "vllm": (vllm_startup, vllm_chunk, vllm_rare),
}


def blocks(fmt: str, seed: int) -> Iterator[pl.Series]:
    """Columns of lines: the startup block, then steady-state chunks with a few rare lines between."""
    startup, chunk, rare = FORMATS[fmt]
    rand, rnd = Rand(seed), random.Random(seed + 1)
    t = START
    yield pl.Series(startup(t), dtype=pl.String)
    t += 700
    port = 40000
    while True:
        frame, t = chunk(rand, CHUNK_LINES, t, port)
        port = 40000 + (port + 7) % 20000
        yield frame["text"]
        extra = []
        for _ in range(rnd.randrange(1, 4)):
            extra += rare(rnd, t)
            t += 1
        yield pl.Series(extra, dtype=pl.String)


def generate(path: str | Path, fmt: str = "sglang", size: int = 10**9, seed: int = 0) -> int:
    """Write about `size` bytes of `fmt` log lines to `path` (cut at a line end); returns bytes written."""
    written = 0
    with open(path, "wb") as out:
        for lines in blocks(fmt, seed):
            frame = lines.to_frame("text").with_columns(end=(pl.col("text").str.len_bytes() + 1).cum_sum())
            last = written + int(frame["end"][-1]) >= size
            if last:
                frame = frame.filter(pl.col("end") <= size - written)
            if frame.height:
                frame.select("text").write_csv(out, include_header=False, quote_style="never")
                written += int(frame["end"][-1])
            if last:
                return written
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path")
    ap.add_argument("--format", choices=sorted(FORMATS), default="sglang")
    ap.add_argument("--size", default="1G", help="approximate size: 500M, 1G, 5G (default 1G)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t = time.perf_counter()
    n = generate(args.path, args.format, parse_size(args.size), args.seed)
    dt = time.perf_counter() - t
    print(f"{args.path}: {n / 1e6:,.0f} MB of {args.format} in {dt:.1f} s ({n / 1e6 / dt:,.0f} MB/s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
