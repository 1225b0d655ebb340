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
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import polars as pl

from loganalyze.formats.common import (
    ACCESS, FATAL_ERROR, GLOO_CONNECTED, NANOBIND_LEAKS, NUMEXPR, PROGRESS, PYTHON_WARNING,
    STACK_DUMP, TORCH_WARNING, TRACEBACK, TRACEBACK_CONTINUATION, TRANSFER_ENGINE, TRANSFER_ERROR, UVICORN, UVICORN_WARNING,
    WEIGHTS_FORMAT,
    stats_kind,
)
from loganalyze.formats.config import explode_pairs, key_equals_value, repr_pairs, typed
from loganalyze.formats.spec import Key, LineKind, LogFormat, Sample, TsFormat

LEVEL = "DEBUG|INFO|WARNING|ERROR|CRITICAL"
PREFIX = (
    r"^(?:[ \t│]*(?:\((?P<process>[^()]*?pid=\d+[^()]*)\) )?"
    rf"(?:(?P<level>{LEVEL}) (?P<ts>\d\d-\d\d \d\d:\d\d:\d\d) \[?[\w./-]+?\.py:\d+\](?: |$)"
    rf"|(?P<ts__2>\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d)(?:[,.]\d+)? - [\w.]+ - (?P<level__2>{LEVEL}) - ))?"
    r"(?:\[rank(?P<rank>\d+)\]: ?)?"
    r"(?P<msg>.*?)(?: \([\w.]+\.py:\d+\))?[ \t│]*$"
)

I, F, S = pl.Int64, pl.Float64, pl.String
PAIR_LISTS = pl.List(pl.List(S))

# ---------------------------------------------------------------------------- stats

STATS_KEYS = (
    Key("Running", "running", I),
    Key("Waiting", "queued", I),
    Key("Pending", "queued", I),
    Key("Swapped", "swapped", I),
    Key("Preemptions", "preempted", I),
    Key("KV cache usage", "token_usage", F, percent=True),
    Key("Avg prompt throughput", "prompt_throughput", F),
    Key("Avg generation throughput", "gen_throughput", F),
    Key("Prefix cache hit rate", "cache_hit_rate", F, percent=True),
    Key("context requests", "new_seq", I),
    Key("context tokens", "new_tokens", I),
    Key("generation requests", "running", I),
)

# Bring every release's stats line to `key: value, ` pairs that the keys find.
# Header-like parts (`Engine 000: `) move to the end, where `extra` finds them as pairs.
STATS_REWRITES = (
    (r"\.$", ""),
    (r"^RUNNING: (\d+) \| WAITING: (\d+)$", "Running: $1 reqs, Waiting: $2 reqs"),  # V1 0.7.0's core.py line
    (r"^.*?Engine (\d+): (.*)$", "$2, Engine: $1"),
    (r"^.*?(\d+) Engines Aggregated: (.*)$", "$2, Engines aggregated: $1"),
    (r"^.*?Iteration\((\d+)\): (.*)$", "$2, Iteration: $1"),
    (r"(\d+) (context requests|context tokens|generation requests|generation tokens)", "$2: $1"),
    (r"(\d+ reqs) ([A-Z])", "$1, $2"),  # 0.7.1-0.7.2: `Waiting: 0 reqs GPU KV cache usage`
    (r"KV fetch: (\d+) waiting to start, (\d+) in progress, (\d+) completed waiting",
     "KV fetch waiting: $1, KV fetch in progress: $2, KV fetch completed waiting: $3"),
    # The device's KV usage follows a count (`reqs, GPU KV ...`, `Preemptions: 2, XPU KV ...`);
    # V0's `CPU KV cache usage` (swap space) follows a percentage and stays as it is.
    (r"(\w, )([A-Z]+) KV cache usage: ", "${1}KV device: $2, KV cache usage: "),
    (r"^Prefix cache hit rate: GPU: ([\d.]+%), CPU: ", "Prefix cache hit rate: $1, CPU prefix cache hit rate: "),
)


_stats = partial(stats_kind, keys=STATS_KEYS, rewrites=STATS_REWRITES)


# ----------------------------------------------------------------- speculative decoding

V1_SPEC_KEYS = (
    Key("Mean acceptance length", "mean_accept_len", F),
    Key("Accepted", "accepted", I),
    Key("Drafted", "drafted", I),
    Key("Avg Draft acceptance rate", "accept_rate", F, percent=True),
    Key("Draft acceptance rate", "accept_rate", F, percent=True),
)

V0_TOTALS = ("total_accepted", "total_drafted", "total_emitted")
V0_SPEC_KEYS = (
    Key("Number of speculative tokens", "k", I),
    Key("Number of accepted tokens", "total_accepted", I),
    Key("Number of draft tokens", "total_drafted", I),
    Key("Number of draft tokens tokens", "total_drafted", I),  # 0.4.1-0.5.2 typo
    Key("Number of emitted tokens", "total_emitted", I),
    Key("Number of emitted tokens tokens", "total_emitted", I),
)


def _v1_drafts(rows: pl.DataFrame) -> pl.DataFrame:
    """Drafts (verify rounds), which V1 does not print, from what it does print.

    With a fixed k (EAGLE, MTP, draft model) drafts = Drafted / k, k being the length of
    the per-position list; that is taken when it reproduces the printed mean length.
    Otherwise (ngram, suffix: drafts shorter than k) Accepted / (mean length - 1).
    """
    k, accepted, mean = pl.col("per_position").list.len(), pl.col("accepted"), pl.col("mean_accept_len")
    fixed = pl.col("drafted") / k
    consistent = (k > 0) & (pl.col("drafted") % k == 0) & ((1 + accepted / fixed - mean).abs() < 0.0051)
    drafts = pl.when(consistent).then(fixed).when(mean > 1).then((accepted / (mean - 1)).round())
    return rows.with_columns(drafts=drafts.cast(I))


def _v0_intervals(rows: pl.DataFrame, state: dict) -> pl.DataFrame:
    """Per-interval values from V0's counters, which are cumulative since engine start.

    Each line minus the line before (the previous batch's last line comes from `state`);
    a counter that drops means the engine restarted, so the line's own value is the
    interval. Accept length = emitted / drafts, with drafts = draft tokens / k: emitted
    tokens count the accepted prefix plus the bonus token. (V0's `accepted` counts
    positions accepted whatever came before, so it is not used for the length.)
    """
    last = state.get("last", dict.fromkeys(V0_TOTALS, 0))
    prev = {c: pl.col(c).shift(1).fill_null(last[c]) for c in V0_TOTALS}
    restart = pl.any_horizontal([pl.col(c) < prev[c] for c in V0_TOTALS])
    delta = {c: pl.when(restart).then(pl.col(c)).otherwise(pl.col(c) - prev[c]) for c in V0_TOTALS}
    out = rows.with_columns(
        accepted=delta["total_accepted"], drafted=delta["total_drafted"], emitted=delta["total_emitted"])
    state["last"] = {c: out[c].drop_nulls()[-1] if out[c].drop_nulls().len() else last[c] for c in V0_TOTALS}
    drafts = pl.col("drafted") / pl.col("k")
    return out.with_columns(
        drafts=drafts.round().cast(I),
        accept_rate=pl.when(pl.col("drafted") > 0).then(pl.col("accepted") / pl.col("drafted")),
        mean_accept_len=pl.when(drafts > 0).then(pl.col("emitted") / drafts),
    )


def _offline_summary(rows: pl.DataFrame) -> pl.DataFrame:
    """The acceptance rate of the offline example's summary: accepted / drafted where it
    prints them, else the mean of the per-position rates (the same ratio, for a fixed k)."""
    rate = pl.when(pl.col("drafted") > 0).then(pl.col("accepted") / pl.col("drafted"))
    return rows.with_columns(accept_rate=pl.coalesce(rate, pl.col("per_position").list.mean()))


# --------------------------------------------------------------------------- config

COMMON_COLUMNS = ("line_no", "ts", "rank", "kind", "process", "level", "raw")


def _quoted(expr: pl.Expr) -> pl.Expr:
    """A value typed as text even when it looks like a number (`0.10` as a version)."""
    return pl.lit("'") + expr + pl.lit("'")


def _settings_rows(rows: pl.DataFrame, origin: str, values: dict[str, pl.Expr]) -> pl.DataFrame:
    """One config row per (key, raw value expression); null values are left out."""
    keep = [c for c in COMMON_COLUMNS if c in rows.columns]
    parts = [rows.select(*keep, key=pl.lit(k), _raw=v) for k, v in values.items()]
    out = pl.concat(parts).filter(pl.col("_raw").is_not_null())
    return out.with_columns(**typed(pl.col("_raw")), origin=pl.lit(origin)).drop("_raw")


def _settings(origin: str, **values: pl.Expr):
    """Handler for lines that state settings: config key -> raw value expression."""

    def handle(rows: pl.DataFrame) -> pl.DataFrame:
        return _settings_rows(rows, origin, values)

    return handle


def _config_pairs(dump: str, prefix: str = "") -> list[list[str]]:
    """Pairs of a repr or dict dump, plus `speculative_config.<key>` for the nested spec config."""
    pairs = repr_pairs(dump)
    nested = [[f"{k}.{sk}", sv] for k, v in pairs if k == "speculative_config" for sk, sv in repr_pairs(v)]
    return [[prefix + k, v] for k, v in pairs + nested]


def _pair_rows(rows: pl.DataFrame, pairs: pl.Expr, origin: str) -> pl.DataFrame:
    """`explode_pairs`, which keeps the line's process, level and raw text (evidence for findings)."""
    return explode_pairs(rows, pairs, origin)


def _dump_rows(rows: pl.DataFrame, dump: pl.Expr, origin: str, prefix: str = "") -> pl.DataFrame:
    pairs = dump.map_elements(lambda d: _config_pairs(d, prefix), return_dtype=PAIR_LISTS)
    return _pair_rows(rows, pairs, origin)


def _dump(origin: str, prefix: str = ""):
    """Handler for a dict or `Name(...)` repr dump of settings (one line per server start)."""

    def handle(rows: pl.DataFrame) -> pl.DataFrame:
        return _dump_rows(rows, pl.col("body"), origin, prefix)

    return handle


VERSION = {"engine": pl.lit("'vllm'"), "engine_version": _quoted(pl.col("version"))}


def _engine_config(rows: pl.DataFrame) -> pl.DataFrame:
    """`Initializing ... LLM engine (vX) with config: a=1, b='x', ...`: version rows plus the dump."""
    dump = _dump_rows(rows, pl.lit("(") + pl.col("cfg") + pl.lit(")"), "engine_config")
    return pl.concat([_settings_rows(rows, "engine_config", VERSION), dump], how="diagonal_relaxed")


def _cli(rows: pl.DataFrame) -> pl.DataFrame:
    """`vllm serve MODEL --flag value --switch`: one row per flag, `-` read as `_` (EngineArgs names)."""
    flag = pl.element()
    pairs = pl.col("args").str.extract_all(r"--[\w-]+(?:[= ](?:'[^']*'|\"[^\"]*\"|[^-\s]\S*))?").list.eval(
        pl.concat_list(
            flag.str.extract(r"^--([\w-]+)", 1).str.replace_all("-", "_"),
            flag.str.extract(r"^--[\w-]+[= ](.*)$", 1).fill_null("True"),
        )
    )
    model = _settings_rows(rows, "cli", {"model": _quoted(pl.col("model"))})
    return pl.concat([model, _pair_rows(rows, pairs, "cli")], how="diagonal_relaxed")


def _config(name: str, needle, pattern: str | None, handler, samples: tuple[str, ...], **kw) -> LineKind:
    return LineKind(name=name, table="config", needle=needle, pattern=pattern, handler=handler, samples=samples,
                    **kw)


# --------------------------------------------------------------------------- events


def _event(name: str, needle, pattern: str | None, severity: str, samples: tuple[str, ...], **kw) -> LineKind:
    return LineKind(
        name=name, table="events", needle=needle, pattern=pattern, pack="fields", message=True,
        const={"severity": severity}, samples=samples, **kw,
    )


def _severity_from_level(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.with_columns(severity=pl.col("level").str.to_lowercase())


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
KV_INSUFFICIENT = (
    r"(?:.*?max seq len \((?P<max_model_len>\d+)\))?"
    r"(?:.*?stored in KV cache \((?P<kv_tokens>\d+)\))?"
    r"(?:.*?\((?P<needed_gib>[\d.]+) GiB KV cache is needed, which is larger than the available KV cache memory "
    r"\((?P<available_gib>[\d.]+) GiB\))?(?:.*?estimated maximum model length is (?P<max_len_possible>\d+))?"
)
H = "INFO 08-11 10:45:20 [api_server.py:1755] "  # a header for samples written from a format string

KINDS = (
    ACCESS,
    _stats("stats", "decode", "Running: ", r"Running: \d+ reqs", (
        Sample("INFO 02-05 04:53:21 llm_engine.py:706] Avg prompt throughput: 1137.2 tokens/s, Avg generation throughput: "
               "193.7 tokens/s, Running: 5 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 4.2%, "
               "CPU KV cache usage: 0.0%",
               gen_throughput=193.7, prompt_throughput=1137.2, queued=0, running=5, swapped=0, token_usage=0.042),
        "INFO 03-18 09:04:46 [metrics.py:481] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.4 "
        "tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.6%, "
        "CPU KV cache usage: 0.0%.",
        Sample("(APIServer pid=851) INFO 04-28 22:54:32 [loggers.py:257] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
               "Avg generation throughput: 5.4 tokens/s, Running: 1 reqs, Waiting: 14 reqs, GPU KV cache usage: 76.5%, "
               "Prefix cache hit rate: 92.0%",
               cache_hit_rate=0.92, gen_throughput=5.4, prompt_throughput=0.0, queued=14, running=1, token_usage=0.765),
        Sample("INFO 01-31 10:00:00 loggers.py:72] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 9.9 "
               "tokens/s, Running: 2 reqs, Waiting: 0 reqs GPU KV cache usage: 1.0%.",
               gen_throughput=9.9, prompt_throughput=0.0, queued=0, running=2, token_usage=0.01),
    )),
    _stats("core_stats", "decode", "RUNNING: ", r"^RUNNING: \d+ \| WAITING: \d+$", (
        "INFO 01-04 17:21:02 core.py:247] RUNNING: 306 | WAITING: 628",
    )),
    _stats("prefix_cache", "prefix_cache", "Prefix cache hit rate: GPU: ", r"^Prefix cache hit rate: GPU: ", (
        "INFO 10-16 19:06:01 metrics.py:361] Prefix cache hit rate: GPU: 94.35%, CPU: 0.00%",
    )),
    _stats("iteration", "iteration", "Iteration(", r"Iteration\(\d+\): \d+ context requests", (
        Sample("Iteration(120): 2 context requests, 4096 context tokens, 30 generation requests, 30 generation tokens, "
               "iteration elapsed time: 25.10 ms, GPU KV cache usage: 12.0%",
               new_seq=2, new_tokens=4096, running=30, token_usage=0.12),
    )),
    LineKind(
        name="spec_decoding", table="spec", needle="SpecDecoding metrics: ", keys=V1_SPEC_KEYS,
        rewrites=((r"^.*?SpecDecoding metrics: ", ""),),
        pattern=r"Per-position acceptance rate: (?P<per_position>(?:[\d.]+|nan)(?:, (?:[\d.]+|nan))*)",
        types={"per_position": pl.List(F)}, handler=_v1_drafts,
        samples=(
            Sample("(APIServer pid=1) INFO 05-07 04:56:17 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: "
                   "2.63, Accepted throughput: 76.80 tokens/s, Drafted throughput: 235.49 tokens/s, Accepted: 768 tokens, "
                   "Drafted: 2355 tokens, Per-position acceptance rate: 0.726, 0.467, 0.240, 0.134, 0.064, "
                   "Avg Draft acceptance rate: 32.6%",
                   accept_rate=0.326, accepted=768, drafted=2355, drafts=471, mean_accept_len=2.63,
                   per_position=[0.726, 0.467, 0.24, 0.134, 0.064]),
            Sample("INFO 04-10 08:00:00 [metrics.py:87] SpecDecoding metrics: Draft acceptance rate: 45.0%, "
                   "Accepted: 90 tokens, Drafted: 200 tokens",
                   accept_rate=0.45, accepted=90, drafted=200),
        ),
    ),
    LineKind(
        name="spec_v0", table="spec", needle="Speculative metrics: ", match=r"System efficiency: ",
        keys=V0_SPEC_KEYS, rewrites=((r"^.*?Speculative metrics: ", ""),), carry=_v0_intervals,
        samples=(
            Sample("INFO 10-16 19:05:47 metrics.py:367] Speculative metrics: Draft acceptance rate: 0.642, System "
                   "efficiency: 0.598, Number of speculative tokens: 3, Number of accepted tokens: 8547, Number of draft "
                   "tokens: 13311, Number of emitted tokens: 10616.",
                   # the counters are totals since start: the row holds them (first interval) and their ratios
                   accepted=8547, drafted=13311, drafts=13311 // 3, k=3, accept_rate=8547 / 13311,
                   mean_accept_len=10616 / (13311 // 3)),
        ),
    ),
    # V1's first spec-decoding line (0.8, before `SpecDecoding metrics`): V0's wording without
    # `System efficiency`, and the counts are the interval's (reset after each line), not totals.
    LineKind(
        name="spec_v1_counts", table="spec", needle="Speculative metrics: ",
        match=r"Speculative metrics: Draft acceptance rate: (?:[\d.]+|nan), Number of ",
        keys=(Key("Draft acceptance rate", "accept_rate", F), Key("Number of speculative tokens", "k", I),
              Key("Number of accepted tokens", "accepted", I), Key("Number of draft tokens", "drafted", I)),
        rewrites=((r"^.*?Speculative metrics: ", ""),),
        samples=(
            Sample("Speculative metrics: Draft acceptance rate: 1.000, Number of accepted tokens: 66, Number of draft "
                   "tokens: 66, ", accept_rate=1.0, accepted=66, drafted=66),
            Sample(f"{H}Speculative metrics: Draft acceptance rate: 0.500, Number of speculative tokens: 3, Number of "
                   "accepted tokens: 30, Number of draft tokens: 60, Number of emitted tokens: 50.",
                   accept_rate=0.5, k=3, accepted=30, drafted=60),
        ),
    ),
    # The offline examples (examples/offline_inference/spec_decode.py and its predecessor
    # eagle.py) print totals from the engine's counters, not a log line: `total_num_output_tokens`,
    # `num_drafts`, `num_draft_tokens`, `num_accepted_tokens` (later releases), `mean acceptance
    # length`, then `acceptance at token i: r` per draft position (`i:r` in the first form).
    # One spec row for the whole run; a summary without the totals is the run of its lines.
    LineKind(
        name="spec_offline_summary", table="spec", needle="total_num_output_tokens: ",
        match=r"^total_num_output_tokens: \d+$",
        rewrites=((r"\n-{10,}", ""), (r"\nacceptance at token 0: ?", "\nper_position: "),
                  (r"\nacceptance at token [1-9]\d*: ?", ", ")),
        pattern=(r"(?s)^(?:.*?num_drafts: (?P<drafts>\d+))?(?:.*?num_draft_tokens: (?P<drafted>\d+))?"
                 r"(?:.*?num_accepted_tokens: (?P<accepted>\d+))?.*?mean acceptance length: (?P<mean_accept_len>[\d.]+)"
                 r"(?:\nper_position: (?P<per_position>[\d.]+(?:, [\d.]+)*))?"),
        types={"drafts": I, "drafted": I, "accepted": I, "mean_accept_len": F, "per_position": pl.List(F)},
        continuation=r"^(?:(?:num_drafts|num_draft_tokens|num_accepted_tokens|mean acceptance length): [\d.]+"
                     r"|-{10,}|acceptance at token \d+: ?[\d.]+)$",
        orphan=r"^(?:-{10,}|mean acceptance length: [\d.]+)$", handler=_offline_summary,
        samples=("total_num_output_tokens: 68596", "num_drafts: 20468", "num_draft_tokens: 204680",
                 "num_accepted_tokens: 48266", "mean acceptance length: 3.36", "-" * 50,
                 "acceptance at token 0: 0.71", "acceptance at token 1: 0.50"),
    ),
    _config("engine_config", "LLM engine", r"Initializing an? (?:V[01] )?LLM engine(?: \(v(?P<version>[^)]+)\))? "
            r"with config: (?P<cfg>.*)$", _engine_config, (
                "INFO 08-11 10:45:30 [core.py:74] Initializing a V1 LLM engine (v0.10.0) with config: model='/m', "
                "speculative_config=SpeculativeConfig(method='eagle3', model='/d', num_spec_tokens=5), "
                "tokenizer='/m', tensor_parallel_size=2, seed=0, enable_prefix_caching=True, "
                "compilation_config={\"level\":3,\"splitting_ops\":[\"a\", \"b\"]}",
                "INFO 10-16 19:00:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: "
                "model='/m', speculative_config=SpeculativeConfig(draft_model='/d', num_spec_tokens=3), "
                "tokenizer='/m', max_seq_len=4096, enforce_eager=False, use_cached_outputs=False, ",
            ), match=r"Initializing an? (?:V[01] )?LLM engine"),
    _config("non_default_args", "non-default args: {", None, _dump("non_default_args"), (
        "INFO 08-11 10:45:20 [cli_args.py:261] non-default args: {'model': '/m', 'max_num_seqs': 48, "
        "'speculative_config': {'method': 'eagle3', 'num_speculative_tokens': 5}}",
    ), continuation=r"^\S*': "),  # a terminal that wraps the long line (docs/formats-sources.md#vllm-server-logs)
    _config("args", "args: Namespace(", None, _dump("args"), (
        "INFO 06-25 15:20:00 api_server.py:177] args: Namespace(host=None, port=8000, max_num_seqs=256, "
        "tensor_parallel_size=2)",
    ), match=r"^args: Namespace\("),
    _config("api_server_version", "vLLM API server version ", r"vLLM API server version (?P<version>\S+)",
            _settings("server", **VERSION),
            ("INFO 08-11 10:45:20 [api_server.py:1755] vLLM API server version 0.10.0",)),
    _config("server_version", "vLLM server version ",
            r"vLLM server version (?P<version>\S+), serving model (?P<model>\S+)",
            _settings("server", **VERSION, model=_quoted(pl.col("model"))),
            (H + "vLLM server version 0.19.1, serving model Qwen/Qwen3-8B",)),
    # 0.15+ ASCII logo: one message over five lines, the header repeated on each.
    _config("banner", "█     █     █▄   ▄█", r"(?s)version\s+(?P<version>\S+).*?model\s+(?P<model>\S+)",
            _settings("server", **VERSION, model=_quoted(pl.col("model"))), (
                H + "       █     █     █▄   ▄█",
                H + " ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.19.1rc1",
                H + "  █▄█▀ █     █     █     █  model   Qwen/Qwen3-8B",
                H + "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀",
            ), match=r"^\s*█     █     █▄   ▄█$",
            continuation=r"^[\s█▄▀]*(?:(?:version|model)\s+\S+)?$"),
    _config("chunked_prefill", "Chunked prefill is enabled with max_num_batched_tokens=",
            r"max_num_batched_tokens=(?P<value>\d+)",
            _settings("engine", max_num_batched_tokens=pl.col("value"), enable_chunked_prefill=pl.lit("True")),
            ("INFO 08-11 10:45:24 [config.py:2434] Chunked prefill is enabled with max_num_batched_tokens=2048.",)),
    _config("max_model_len", "Using max model len ", r"Using max model len (?P<value>\d+)",
            _settings("engine", max_model_len=pl.col("value")),
            ("INFO 08-11 10:45:24 [config.py:1604] Using max model len 1024",)),
    _config("platform", "Automatically detected platform ", r"detected platform (?P<value>\w+)",
            _settings("engine", platform=_quoted(pl.col("value"))),
            ("INFO 08-11 10:45:18 [__init__.py:235] Automatically detected platform cuda.",)),
    _config("eager_mode", "Cudagraph is disabled under eager mode", None,
            _settings("engine", enforce_eager=pl.lit("True")),
            ("(EngineCore_0 pid=1399537) INFO 08-19 14:58:41 [__init__.py:3575] Cudagraph is disabled under "
             "eager mode",)),
    _config("supported_tasks", ("Supported_tasks: ", "Supported tasks: "), r"Supported[_ ]tasks: (?P<value>\[.*\])",
            _settings("server", supported_tasks=pl.col("value")),
            ("(APIServer pid=1391815) INFO 08-19 14:58:41 [api_server.py:1639] Supported_tasks: ['generate']",
             "(APIServer pid=6417) INFO 12-01 13:32:55 [entry.py:136] Supported tasks: ['generate']")),
    # What the engine resolved or was told, stated on a line of its own (0.2x+).
    _config("architecture", "Resolved architecture: ", r"Resolved architecture: (?P<value>\w+)",
            _settings("engine", architecture=_quoted(pl.col("value"))),
            ("(APIServer pid=6417) INFO 12-01 13:32:32 [model.py:733] Resolved architecture: LlamaForCausalLM",)),
    _config("chat_template", "Detected the chat template content format to be ",
            r"content format to be '(?P<value>\w+)'",
            _settings("server", chat_template_content_format=_quoted(pl.col("value"))),
            (H + "Detected the chat template content format to be 'string'. You can set "
             "`--chat-template-content-format` to override this.",)),
    _config("kv_cache_layout", " KV cache layout", r"^Using (?P<value>\w+) KV cache layout",
            _settings("engine", kv_cache_layout=_quoted(pl.col("value"))),
            ("(EngineCore pid=6452) INFO 12-01 13:32:46 [utils.py:347] Using LBHNC KV cache layout.",),
            match=r"^Using \w+ KV cache layout"),
    _config("gpu_blocks_override", "with num_gpu_blocks_override=",
            r"Overriding num_gpu_blocks=\d+ with num_gpu_blocks_override=(?P<value>\d+)",
            _settings("engine", num_gpu_blocks_override=pl.col("value")),
            ("(EngineCore pid=26477) INFO 12-01 13:19:40 [kv_cache_utils.py:2619] Overriding num_gpu_blocks=8192 with "
             "num_gpu_blocks_override=12",)),
    _config("dp_group_leader", "DP group leader: ", None, key_equals_value("dp_group"),
            ("(EngineCore pid=6452) INFO 12-01 13:32:38 [multiproc_executor.py:153] DP group leader: node_rank=0, "
             "node_rank_within_dp=0, master_addr=127.0.0.1, mq_connect_ip=192.0.2.2 (local), world_size=1, "
             "local_world_size=1",)),
    _config("dist_init", "distributed_init_method=", None, key_equals_value("distributed"),
            ("(Worker pid=6464) INFO 12-01 13:32:45 [parallel_state.py:1906] world_size=1 rank=0 local_rank=0 "
             "distributed_init_method=file:///tmp/vllm_dist_745765a981fd42b3ada2a696ec484c38 backend=gloo",),
            match=r"^world_size=\d+ rank=\d+ "),
    _config("ir_op_priority", "Final IR op priority ", None, _dump("ir_op_priority", prefix="ir_op_priority."),
            ("(APIServer pid=6417) INFO 12-01 13:32:32 [kernel.py:467] Final IR op priority after setting platform "
             "defaults: IrOpPriorityConfig(rms_norm=['native'], fused_add_rms_norm=['native'])",)),
    _config("sampling_defaults", "sampling params from model: {", None,
            _dump("model_generation_config", prefix="default_sampling."),
            ("(APIServer pid=1391815) INFO 08-19 14:58:41 [serving_responses.py:120] Using default chat sampling "
             "params from model: {'temperature': 0.6, 'top_p': 0.9}",)),
    _config("serve_command", ("vllm serve ", "vllm.entrypoints.openai.api_server"),
            r"(?:vllm serve|-m vllm\.entrypoints\.openai\.api_server)(?: (?P<model>[^-\s]\S*))?(?P<args>.*)$", _cli,
            ("(venv) [user@server personal]$ vllm serve /models/gemma-3-27b-it-FP8-Dynamic/ --tensor-parallel-size 2 "
             "--gpu-memory-utilization 0.8 --max-model-len 1024",),
            # A command line, at the line's start or after a shell prompt; not a hint in prose
            # (0.32: "Restart vllm serve with --enable-scale-out to enable them.").
            match=r"(?:^|[$#>] ?)(?:vllm serve|python3? -m vllm\.entrypoints\.openai\.api_server)(?: |$)"),
    # Capacity: KV blocks and tokens, how many max-length requests fit.
    _event("cache_config_info", "cache_config_info with initialization after num_gpu_blocks is: ",
           r"(?:(?:Engine (?P<engine>\d+)|(?P<engines>\d+) Engines): )?vllm cache_config_info with initialization after "
           r"num_gpu_blocks is: (?P<gpu_blocks>\d+)", "info",
           ("(APIServer pid=1391815) INFO 08-19 14:58:41 [loggers.py:142] Engine 000: vllm cache_config_info with "
            "initialization after num_gpu_blocks is: 57656",
            # 0.9 prints it without the engine (vllm/104).
            Sample("INFO 06-02 11:03:56 [loggers.py:134] vllm cache_config_info with initialization after "
                   "num_gpu_blocks is: 70688", gpu_blocks=70688)), types={"gpu_blocks": I, "engines": I}),
    _event("gpu_blocks", " blocks: ",
           r"^(?:# )?(?P<device>\w+) blocks: (?P<gpu_blocks>\d+)(?:, # CPU blocks: (?P<cpu_blocks>\d+))?",
           "info", ("INFO 07-29 19:12:55 [executor_base.py:113] # cuda blocks: 10650, # CPU blocks: 1638",
                    "INFO 01-30 03:19:14 kv_cache_utils.py:395] # GPU blocks: 1381",
                    # pasted without its header, whose `# ` is then read as a comment mark, or lost
                    Sample("GPU blocks: 1952, # CPU blocks: 2048", device="GPU", gpu_blocks=1952, cpu_blocks=2048)),
           types={"gpu_blocks": I, "cpu_blocks": I}, match=r"^(?:# )?\w+ blocks: \d+(?:, # CPU blocks: \d+)?$"),
    _event("kv_cache_size", "KV cache size: ",
           r"(?P<device>\w+(?: \+ host)?) KV cache size: (?P<tokens>[\d,]+) tokens(?:, Maximum concurrency for "
           r"(?P<max_model_len>[\d,]+) tokens per request: (?P<max_concurrency>[\d.]+)x)?", "info",
           ("(EngineCore_DP0 pid=441) INFO 11-24 11:44:18 [kv_cache_utils.py:1234] GPU KV cache size: 1,587,648 tokens",
            H + "GPU KV cache size: 922,496 tokens, Maximum concurrency for 40,000 tokens per request: 23.06x"),
           types={"tokens": I, "max_model_len": I, "max_concurrency": F}),
    _event("max_concurrency", "Maximum concurrency for ",
           r"Maximum concurrency for (?P<max_model_len>[\d,]+) tokens per request: (?P<max_concurrency>[\d.]+)x",
           "info",
           ("(EngineCore_DP0 pid=441) INFO 11-24 11:44:18 [kv_cache_utils.py:1239] Maximum concurrency for 2,048 "
            "tokens per request: 775.22x",), types={"max_model_len": I, "max_concurrency": F}),
    _event("kv_cache_memory", "Available KV cache memory: ", r"Available KV cache memory: (?P<kv_cache_gib>[\d.]+) GiB",
           "info", ("(EngineCore_DP0 pid=441) INFO 11-24 11:44:17 [gpu_worker.py:348] Available KV cache memory: "
                    "33.31 GiB",), types=GIB),
    _event("memory_profile", "Memory profiling takes ", MEMORY_PROFILE, "info",
           ("INFO 07-29 19:12:55 [worker.py:294] Memory profiling takes 3.01 seconds",),
           continuation=r"^(?:the current vLLM instance can use|model weights take )",
           types={n: F for n in ("elapsed_s", "total_gpu_memory_gib", "gpu_memory_utilization", "usable_gib",
                                 "weights_gib", "non_torch_gib", "activation_peak_gib", "kv_cache_gib")}),
    # Timing: weights, torch.compile, CUDA graphs, engine init, server ready.
    _event("weights_loaded", ("Loading model weights took ", "Model loading took "),
           r"(?:Loading model weights|Model loading) took (?P<weights_gib>[\d.]+) Gi?B(?: memory)?"
           r"(?: and (?P<elapsed_s>[\d.]+) seconds)?", "info",
           ("INFO 01-30 03:18:12 gpu_model_runner.py:848] Loading model weights took 67.7229 GB",
            "(EngineCore_DP0 pid=441) INFO 11-24 11:43:54 [gpu_model_runner.py:3341] Model loading took 2.0513 GiB "
            "memory and 27.200487 seconds"), types=GIB),
    _event("weights_read", "Loading weights took ", r"Loading weights took (?P<elapsed_s>[\d.]+) seconds", "info",
           ("INFO 07-29 19:12:52 [default_loader.py:272] Loading weights took 8.37 seconds",), types=GIB),
    _event("torch_compile", ("torch.compile takes ", "torch.compile took "),
           r"torch\.compile (?:takes|took) (?P<elapsed_s>[\d.]+) s in total", "info",
           ("INFO 01-30 03:19:13 monitor.py:31] torch.compile takes 54.73 s in total",
            "(Worker_TP0 pid=101) INFO 07-06 10:46:17 [monitor.py:53] torch.compile took 0.87 s in total"), types=GIB),
    _event("dynamo_compile",
           ("Dynamo bytecode transform time", "Compiling a graph for ", "Directly load the compiled graph"),
           r"(?P<step>Dynamo bytecode transform time|Compiling a graph for .+? takes|Directly load the compiled "
           r"graph\(s\) for .+? from the cache, took):? (?P<elapsed_s>[\d.]+) s\b", "info",
           ("INFO 01-30 03:18:25 backends.py:585] Dynamo bytecode transform time: 12.88 s",
            "INFO 01-30 03:19:07 backends.py:321] Compiling a graph for general shape takes 41.86 s"), types=GIB),
    _event("compile_cache", ("for vLLM's torch.compile", "Cache the graph ", "saved AOT compiled function to ",
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
    _event("graph_capture_done", "Graph capturing finished in ",
           r"Graph capturing finished in (?P<elapsed_s>\d+) secs(?:, took (?P<mem_gib>[\d.]+) GiB)?", "info",
           ("(Worker_TP3_EP3 pid=2709393) INFO 09-29 09:52:22 [gpu_model_runner.py:3468] Graph capturing finished in "
            "38 secs, took 1.64 GiB",), types=GIB),
    _event("graph_memory_estimate", "Estimated CUDA graph memory: ",
           r"Estimated CUDA graph memory: (?P<mem_gib>[\d.]+) GiB", "info",
           (H + "Estimated CUDA graph memory: 6.24 GiB total",), types=GIB),
    _event("graph_capture_notice", ("Capturing the model for CUDA graphs", "Capturing cudagraphs for decoding",
                                    "CUDA graphs can take additional"), None, "info",
           ("INFO 07-17 23:41:30 model_runner.py:851] CUDA graphs can take additional 1~3 GiB memory per GPU. If you "
            "are running out of memory, consider decreasing `gpu_memory_utilization` or enforcing eager mode.",)),
    _event("engine_init", "init engine (profile, create kv cache, warmup model) took ",
           r"took (?P<elapsed_s>[\d.]+) (?:seconds|s)(?: \(compilation: (?P<compile_s>[\d.]+) s)?", "info",
           ("(EngineCore_0 pid=1399537) INFO 08-19 14:58:40 [core.py:215] init engine (profile, create kv cache, "
            "warmup model) took 1.06 seconds",), types=GIB),
    _event("shard_progress", "checkpoint shards:",
           r"Loading (?:\w+ )?checkpoint shards:\s+(?P<percent>\d+)% Completed \| (?P<done>\d+)/(?P<total>\d+) "
           r"\[(?P<elapsed>[\d:]+)", "info",
           ("Loading safetensors checkpoint shards:  62% Completed | 10/16 [00:06<00:04,  1.46it/s]",), types=PROGRESS_TYPES),
    PROGRESS,
    _event("server_start", "Starting vLLM ", r"Starting vLLM (?:API )?server(?: \d+)? on (?P<url>\S+)", "info",
           (H + "Starting vLLM API server 0 on http://0.0.0.0:8000",), match=r"Starting vLLM (?:API )?server"),
    _event("route", ("Available routes are:", "Route: "),
           r"^(?:Available routes are:|Route: (?P<path>\S+), Methods: (?P<methods>.+))$", "info",
           (H + "Route: /v1/chat/completions, Methods: POST",)),
    _event("server_ready", "Application startup complete.", None, "info", ("INFO:     Application startup complete.",)),
    UVICORN,
    UVICORN_WARNING,
    # A shutdown began (0.2x+ `[shutdown]` lines, the signal that triggered it): what follows,
    # an EngineDeadError of the API server included, is its consequence.
    # The engine process died under the API server (killed, crashed): a fault, whose cleanup
    # the `[shutdown]` lines after it describe.
    _event("engine_exited", "engine core exited unexpectedly", None, "critical",
           ("(APIServer pid=4208) WARNING 12-01 13:29:21 [core_client.py:817] [shutdown] MPClient: engine core exited "
            "unexpectedly; starting cleanup",)),
    _event("shutdown", ("[shutdown]", "received signal=SIG", "Received SIGINT", "Received SIGTERM"), None, "info",
           ("(EngineCore pid=25058) INFO 12-01 13:19:08 [core.py:1454] [shutdown] EngineCore: trigger received "
            "signal=SIGTERM",)),
    _event("startup_notice", ("Waiting for init message from front-end", "Starting profile run for",
                              "Warming up model for the compilation", "Warming up done.", "Scale-out endpoints are disabled",
                              "No IOProcessor plugins requested by the model", "Worker ready; awaiting tasks",
                              "Loading model from scratch", "Encoder cache will be initialized with a budget of",
                              "Padding mamba page size by", "Setting attention block size to",
                              "Profiling CUDA graph memory: ", "Heartbeat successful."), None, "info",
           ("INFO 08-11 10:45:30 [core.py:572] Waiting for init message from front-end.",
            "(Worker pid=6464) INFO 12-01 13:32:46 [cpu_model_runner.py:87] Warming up model for the compilation...")),
    # Which kernels the engine picked (V1 0.10+): the attention backend, FlashAttention's
    # version, the sampler's top-p/top-k implementation.
    _event("kernel_choice", ("backend on V1 engine", "Using FlashAttention version", "for top-p & top-k sampling"),
           r"^Using (?P<choice>.+?)(?: backend on V1 engine| version (?P<version>\d+)| for top-p & top-k sampling)\.?$",
           "info",
           (Sample("(VllmWorker rank=0 pid=2120280) INFO 07-28 23:02:25 [cuda.py:290] Using Flash Attention backend on "
                   "V1 engine.", choice="Flash Attention"),
            Sample("(EngineCore pid=1992345) INFO 08-26 22:25:09 [flash_attn.py:596] Using FlashAttention version 2",
                   choice="FlashAttention", version=2),
            Sample("(EngineCore_DP0 pid=66914) INFO 09-21 12:29:22 [topk_topp_sampler.py:55] Using FlashInfer for top-p "
                   "& top-k sampling.", choice="FlashInfer")),
           types={"version": I}, match=r"^Using "),
    _event("load_model_begin", ("Starting to load model ", "Loading drafter model"),
           r"^(?:Starting to load model (?P<model>\S+?)(?:\.\.\.)?|Loading (?P<what>drafter) model\.*)$", "info",
           (Sample("(Worker pid=6464) INFO 12-01 13:32:45 [cpu_model_runner.py:68] Starting to load model "
                   "/tmp/rec/model...", model="/tmp/rec/model"),),
           match=r"^(?:Starting to load model |Loading drafter model)"),
    # Where each worker sits in the parallel layout (distributed/parallel_state.py, 0.2x+).
    _event("rank_assignment", " is assigned as DP rank ",
           r"^rank (?P<global_rank>\d+) in world size (?P<world_size>\d+) is assigned as DP rank (?P<dp_rank>\d+), "
           r"PP rank (?P<pp_rank>\d+)(?:, \w+ rank \S+)*?, TP rank (?P<tp_rank>\d+)", "info",
           (Sample("(Worker pid=6464) INFO 12-01 13:32:45 [parallel_state.py:2350] rank 0 in world size 1 is assigned as "
                   "DP rank 0, PP rank 0, PCP rank 0, TP rank 0, ETP rank 0, EP rank N/A, EPLB rank N/A",
                   global_rank=0, world_size=1, dp_rank=0, pp_rank=0, tp_rank=0),),
           types={"global_rank": I, "world_size": I, "dp_rank": I, "pp_rank": I, "tp_rank": I}),
    _event("model_init", "Initializing model took ", r"Initializing model took (?P<elapsed_s>[\d.]+) seconds", "info",
           ("(Worker pid=6464) INFO 12-01 13:32:45 [base_loader.py:82] Initializing model took 0.100072 seconds",),
           types=GIB),
    _event("warmup_run", "Initial profiling/warmup run took ",
           r"Initial profiling/warmup run took (?P<elapsed_s>[\d.]+) s", "info",
           ("(Worker pid=6464) INFO 12-01 13:32:53 [monitor.py:91] [backbone] Initial profiling/warmup run took 0.02 s",),
           types=GIB),
    # Where the weights are read from (weight_utils.py, 0.2x+): the filesystem decides whether
    # they are prefetched into the page cache.
    _event("checkpoint_fs", ("Filesystem type for checkpoints: ", "Auto-prefetch is disabled because the filesystem"),
           r"Filesystem type for checkpoints: (?P<fs>\w+)\. Checkpoint size: (?P<checkpoint_gib>[\d.]+) GiB\. "
           r"Available RAM: (?P<ram_gib>[\d.]+) GiB|Auto-prefetch is disabled because the filesystem \((?P<no_prefetch_fs>\w+)\)",
           "info", (Sample("(Worker pid=6464) INFO 12-01 13:32:45 [weight_utils.py:1108] Filesystem type for checkpoints: "
                           "EXT4. Checkpoint size: 0.00 GiB. Available RAM: 21.87 GiB.",
                           fs="EXT4", checkpoint_gib=0.0, ram_gib=21.87),),
           types={"checkpoint_gib": F, "ram_gib": F}),
    _event("torch_threads", "Reducing Torch threads from ",
           r"Reducing Torch threads from (?P<threads_before>\d+) to (?P<threads>\d+)", "info",
           ("(EngineCore pid=6452) INFO 12-01 13:32:46 [torch_utils.py:295] Reducing Torch threads from 2 to 1 for "
            "serving. Set OMP_NUM_THREADS in the external environment to override.",),
           types={"threads_before": I, "threads": I}),
    # The CPU backend: the KV cache space it was given, and how its OpenMP threads are bound
    # (one message over five lines, each with the header).
    _event("cpu_kv_cache", " GiB for KV cache on node ",
           r"Explicitly set \((?P<kv_cache_gib>[\d.]+)/(?P<mem_gib>[\d.]+)\) GiB for KV cache on node (?P<node>\d+)",
           "info", (Sample("(Worker pid=6464) INFO 12-01 13:32:54 [cpu_worker.py:260] Explicitly set (1.0/11.84) GiB for "
                           "KV cache on node 0.", kv_cache_gib=1.0, mem_gib=11.84, node=0),),
           types={"kv_cache_gib": F, "mem_gib": F, "node": I}),
    _event("omp_binding", "OpenMP thread binding info:",
           r"(?s)(?:.*?VLLM_CPU_OMP_THREADS_BIND='(?P<bind>[^']*)')?(?:.*?local_rank=(?P<local_rank>\d+), core ids=\[(?P<core_ids>[^\]]*)\])?",
           "info", (Sample("\n".join((
               "(EngineCore pid=6452) INFO 12-01 13:32:38 [ompmultiprocessing.py:185] OpenMP thread binding info:",
               "(EngineCore pid=6452) INFO 12-01 13:32:38 [ompmultiprocessing.py:185] \tVLLM_CPU_OMP_THREADS_BIND='auto', "
               "auto_setup=True, skip_setup=False",
               "(EngineCore pid=6452) INFO 12-01 13:32:38 [ompmultiprocessing.py:185] \tlocal_rank=0, core ids=[0]")),
               bind="auto", local_rank=0, core_ids="0"),),
           types={"local_rank": I}, continuation=r"^\t"),
    _event("triton_unavailable", ("Triton is installed, but doesn't include CPU backend",
                                  "Triton is installed but 0 active driver(s) found",
                                  "Triton not installed or not compatible"), None, "info",
           ("Triton is installed, but doesn't include CPU backend. Disabling Triton.",)),
    _event("worker_exit", ("Parent process exited, terminating worker queues", "Killing local vLLM worker processes"),
           None, "info", ("(Worker pid=6464) INFO 12-01 13:33:53 [multiproc_executor.py:843] Parent process exited, "
                          "terminating worker queues",)),
    # The broadcast queue between the engine and its workers had no free block for a minute
    # (distributed/device_communicators/shm_broadcast.py): a worker is slow (compiling) or stuck.
    _event("shm_broadcast_wait", "No available shared memory broadcast block found in ",
           r"block found in (?P<wait_s>\d+) seconds?", "info",
           (Sample("(EngineCore pid=102) INFO 05-21 06:32:41 [shm_broadcast.py:698] No available shared memory broadcast "
                   "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
                   "time-consuming work (e.g. compilation, weight/kv cache quantization).", wait_s=60.0),),
           types={"wait_s": F}),
    _event("graph_memory_profiling", "CUDA graph memory profiling is enabled",
           r"--gpu-memory-utilization=(?P<gpu_memory_utilization>[\d.]+) is equivalent to "
           r"--gpu-memory-utilization=(?P<equivalent>[\d.]+)", "info",
           (Sample("(Worker_TP1 pid=448) INFO 08-14 14:07:22 [gpu_worker.py:578] CUDA graph memory profiling is enabled "
                   "(default since v0.21.0). The current --gpu-memory-utilization=0.8200 is equivalent to "
                   "--gpu-memory-utilization=0.8048 without CUDA graph memory profiling.",
                   gpu_memory_utilization=0.82, equivalent=0.8048),),
           types={"gpu_memory_utilization": F, "equivalent": F}),
    # V0 0.6's one-line profile (worker.py), often pasted without its header.
    _event("memory_profile_results", "Memory profiling results: ",
           r"total_gpu_memory=(?P<total_gpu_memory_gib>[\d.]+)GiB.*?kv_cache_size=(?P<kv_cache_gib>[\d.]+)GiB"
           r"(?:.*?gpu_memory_utilization=(?P<gpu_memory_utilization>[\d.]+))?", "info",
           (Sample("Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB "
                   "peak_torch_memory=17.98GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB "
                   "kv_cache_size=2.89GiB gpu_memory_utilization=0.90",
                   total_gpu_memory_gib=23.58, kv_cache_gib=2.89, gpu_memory_utilization=0.9),),
           types={"total_gpu_memory_gib": F, "kv_cache_gib": F, "gpu_memory_utilization": F}),
    # LMCache's own logger, inside vLLM's workers: `[2026-08-26 15:05:59,851] LMCache INFO: ...`.
    _event("lmcache", "LMCache ", r"^LMCache (?:INFO|DEBUG): (?P<what>[^:(]+)", "info",
           (Sample("(Worker_TP0 pid=440) [2026-08-26 15:05:59,851] LMCache INFO: Engine KV Format: "
                   "EngineKVFormat.NL_X_TWO_X_NB_BS_NH_HS NL x 2 x [NB, BS, NH, HS] "
                   "(detection.py:69:lmcache.v1.gpu_connector.kv_format.detection)", what="Engine KV Format"),),
           match=r"^LMCache (?:INFO|DEBUG): "),
    # `vllm bench serve` (benchmarks/serve.py, datasets.py) prints its steps around the result block.
    _event("bench_sampling", "Sampling input_len from ",
           r"Sampling input_len from \[(?P<input_min>\d+), (?P<input_max>\d+)\] and output_len from "
           r"\[(?P<output_min>\d+), (?P<output_max>\d+)\]", "info",
           (Sample("(MainProcess pid=24053) INFO 12-01 13:16:55 [utils.py:88] Sampling input_len from [64, 64] and "
                   "output_len from [512, 512]", input_min=64, input_max=64, output_min=512, output_max=512),),
           types={"input_min": I, "input_max": I, "output_min": I, "output_max": I}),
    _event("bench_step", ("Starting initial single prompt test run", "Skipping endpoint ready check",
                          "Initial test run completed", "Starting main benchmark run",
                          "tip: install termplotlib and gnuplot to plot the metrics"), None, "info",
           ("Starting initial single prompt test run...",), match=r"^(?:Starting|Skipping|Initial test|tip: )"),
    _event("bench_failed_requests", "Failed requests during benchmark run detected",
           r"capping to (?P<shown>\d+)\)", "warning",
           (Sample("Failed requests during benchmark run detected (capping to 10):\nError 0: Bad Request\n"
                   "Error 1: Bad Request", shown=10),),
           types={"shown": I}, continuation=r"^Error \d+: "),
    # The request log (entrypoints/logger.py, on unless --disable-log-requests): `Received
    # request <id>: prompt: '...', params: SamplingParams(...)` up to 0.10, `params: ...,
    # num_prompt_tokens: N` later; the prompt is the user's text, so only the id and the
    # sampling limit are fields.
    _event("request_received", "Received request ",
           r"^Received request (?P<request_id>[^\s:]+):(?:.*?\bmax_tokens=(?P<max_tokens>\d+))?", "info",
           (Sample("Received request chatcmpl-67ed206b1edc4811911bcc917c0a0f72: prompt: '<s>[INST]Hello![/INST]', "
                   "params: SamplingParams(n=1, temperature=0.7, top_p=1.0, max_tokens=8174, min_tokens=0), "
                   "prompt_token_ids: None, lora_request: None, prompt_adapter_request: None.",
                   request_id="chatcmpl-67ed206b1edc4811911bcc917c0a0f72", max_tokens=8174),),
           types={"max_tokens": I}, match=r"^Received request [^\s:]+: "),
    _event("request_lifecycle", ("Finished request ", "Added request ", "Aborted request"),
           r"^(?P<action>Finished|Added|Aborted) request(?:\(s\))? (?P<request_id>\S+?)\.?$", "info",
           ("INFO 02-05 04:53:20 async_llm_engine.py:111] Finished request cmpl-672a8058f6cb4d1d8f5ba5397af93575.",),
           match=r"^(?:Finished|Added|Aborted) request"),
    # Warnings and errors a diagnosis uses.
    _event("preemption", "is preempted by PreemptionMode.",
           r"Sequence group (?P<request_id>\S+) is preempted by PreemptionMode\.(?P<mode>\w+) mode"
           r"(?:.*total_num_cumulative_preemption=(?P<cumulative>\d+))?", "warning",
           ("WARNING 08-20 10:18:39 scheduler.py:1141] Sequence group 147 is preempted by PreemptionMode.RECOMPUTE "
            "mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase "
            "gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
            "total_num_cumulative_preemption=1",), types={"cumulative": I}),
    # V1's check before the profile (0.9+): what is free on the GPU is below the share that
    # --gpu-memory-utilization asks for, usually because another process holds memory.
    # Later releases name the device (`on device cuda:0 (...)`).
    _event("startup_memory_short", "on startup is less than desired GPU memory utilization",
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
    _event("kv_transfer_expired", ("Releasing expired KV blocks for request", "Potentially invalid KV blocks"),
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
    _event("kv_cache_insufficient", ("No available memory for the cache blocks", "stored in KV cache (",
                                     "KV cache is needed, which is larger than the available KV cache memory",
                                     "To serve at least one request with the model"),
           KV_INSUFFICIENT, "critical",
           ("ERROR 04-01 10:00:00 [core.py:390] ValueError: To serve at least one request with the models's max seq "
            "len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.50 "
            "GiB). Based on the available memory, the estimated maximum model length is 77824. Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",),
           types={"max_model_len": I, "kv_tokens": I, "needed_gib": F, "available_gib": F, "max_len_possible": I},
           continuation=TRACEBACK_CONTINUATION),
    _event("oom", ("CUDA out of memory", "OutOfMemoryError", "CUDA driver error: out of memory"),
           r"(?:.*?Tried to allocate (?P<tried>[\d.]+ [KMG]iB)\. GPU (?P<gpu_index>\d+) has a total capacity of "
           r"(?P<capacity>[\d.]+ [KMG]iB) of which (?P<free>[\d.]+ [KMG]iB) is free)?", "critical",
           ("(EngineCore pid=104) ERROR 05-05 12:36:58 [core.py:1140] torch.OutOfMemoryError: CUDA out of memory. "
            "Tried to allocate 50.00 MiB. GPU 0 has a total capacity of 23.56 GiB of which 37.12 MiB is free.",),
           continuation=TRACEBACK_CONTINUATION),
    _event("engine_dead", ("EngineDeadError", "EngineCore encountered a fatal error", "AsyncLLM output_handler failed",
                           "Engine core initialization failed", "Engine process failed to start"),
           None, "critical",
           ("(APIServer pid=1) ERROR 05-05 12:36:59 [serving.py:1173] vllm.v1.engine.exceptions.EngineDeadError: "
            "EngineCore encountered an issue. See stack trace (above) for the root cause.",),
           continuation=TRACEBACK_CONTINUATION),
    _event("nccl_error", "NCCL error",
           r"(?:Exception in worker (?P<worker>\S+) while processing method (?P<method>\w+): )?.*?"
           r"NCCL error(?: in: [^:]*)?: (?P<nccl_error>[^(,\n]*[^(,\n ])", "critical",
           ("(VllmWorkerProcess pid=761) ERROR 07-24 08:26:01 multiproc_worker_utils.py:226] Exception in worker "
            "VllmWorkerProcess while processing method init_device: NCCL error: unhandled cuda error (run with "
            "NCCL_DEBUG=INFO for details), Traceback (most recent call last):",),
           continuation=TRACEBACK_CONTINUATION, match=r"NCCL error[^:]*: "),
    _event("nccl_timeout", ("Watchdog caught collective operation timeout", "RPC call to execute_model timed out"),
           None, "critical", ("ERROR 04-01 10:00:00 [multiproc_executor.py:140] RPC call to execute_model timed out.",),
           continuation=TRACEBACK_CONTINUATION),
    _event("worker_exception", "Exception in worker ",
           r"Exception in worker (?P<worker>\S+) while processing method (?P<method>\w+): (?P<error>.*?)"
           r"(?:, Traceback \(most recent call last\):)?$", "error",
           ("(VllmWorkerProcess pid=761) ERROR 07-24 08:26:01 multiproc_worker_utils.py:226] Exception in worker "
            "VllmWorkerProcess while processing method load_model: boom, Traceback (most recent call last):",),
           continuation=TRACEBACK_CONTINUATION),
    _event("custom_allreduce_disabled", "Custom allreduce is disabled", r"(?:.*?because (?P<reason>[^.]+))?", "warning",
           (Sample("WARNING 04-01 10:00:00 custom_all_reduce.py:134] Custom allreduce is disabled because it's not "
                   "supported on more than two PCIe-only GPUs. To silence this warning, specify "
                   "disable_custom_all_reduce=True explicitly.",
                   reason="it's not supported on more than two PCIe-only GPUs"),)),
    _event("custom_allreduce_graphs", " cuda graph addresses", r"Registering (?P<addresses>\d+) cuda graph addresses",
           "info", ("(Worker_TP0_EP0 pid=2709390) INFO 09-29 09:52:21 [custom_all_reduce.py:203] Registering 12784 "
                    "cuda graph addresses",), types={"addresses": I}),
    _event("nccl_library", "Found nccl from library ", r"Found nccl from library (?P<library>\S+)", "info",
           ("(VllmWorkerProcess pid=760) INFO 07-24 08:25:45 utils.py:784] Found nccl from library libnccl.so.2",)),
    _event("nccl_version", "is using nccl==", r"using nccl==(?P<nccl_version>[\d.]+)", "info",
           ("(VllmWorkerProcess pid=761) INFO 07-24 08:25:45 pynccl.py:63] vLLM is using nccl==2.20.5",)),
    _event("process_crash", "Process ", r"^Process (?P<process_name>[\w-]+):$", "critical",
           ("(EngineCore pid=104) Process EngineCore:",), match=r"^Process [\w-]+:$"),
    PYTHON_WARNING,
    TORCH_WARNING,
    NANOBIND_LEAKS,
    GLOO_CONNECTED,
    WEIGHTS_FORMAT,
    NUMEXPR,
    STACK_DUMP,
    FATAL_ERROR,
    TRANSFER_ERROR,
    TRANSFER_ENGINE,
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
    LineKind(
        name="other", table="events", needle="", levels=("WARNING", "ERROR", "CRITICAL"), fallback=True,
        message=True, handler=_severity_from_level,
        samples=("(APIServer pid=1391815) WARNING 08-19 14:58:41 [__init__.py:1635] Default sampling parameters have "
                 "been overridden by the model's Hugging Face generation config.",),
    ),
)

# The default header, for detection and version hints: before 0.8 no `[` before the file.
STAMP = rf"^\s*(?:│ )?(?:\([^()]*pid=\d+[^()]*\) )?(?:{LEVEL}) \d\d-\d\d \d\d:\d\d:\d\d "
HEADER = STAMP + r"\[?[\w./-]+?\.py:\d+\] "

# What starts a record anywhere in a line (loganalyze/formats/glued.py): the header (level, month-day
# clock, file:line) with or without a stats message after it, or a stats message glued on
# without its header. A process tag in front of a header goes with it (loganalyze/formats/glued.py).
STATS_START = r"(?:Engine \d+: )?Avg prompt throughput: "
RECORD_START = rf"(?:{LEVEL}) \d\d-\d\d \d\d:\d\d:\d\d \[?[\w./-]+?\.py:\d+\] (?:{STATS_START})?|{STATS_START}"

FORMAT = LogFormat(
    name="vllm",
    description="vLLM server log (vllm serve / api_server, V0 and V1 engines), releases 0.2.7 to 0.33",
    releases="0.2.7 - 0.33",
    prefix=PREFIX,
    kinds=KINDS,
    ts_formats=(TsFormat("%m-%d %H:%M:%S", complete="year"), TsFormat("%Y-%m-%d %H:%M:%S")),
    record_start=RECORD_START,
    record_marks=(".py:", "Avg prompt throughput: "),
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
        r"^Capturing CUDA graphs \((?:decode|mixed prefill-decode|prefill)",  # V1's graph-capture progress
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
