"""vLLM lines that state settings, into the `config` table: the engine config dump,
`non-default args`, `args: Namespace(...)`, the `vllm serve` command line, version lines,
and settings stated on a line of their own."""

from __future__ import annotations

import polars as pl

from loganalyze.formats.config import explode_pairs, key_equals_value, repr_pairs, typed
from loganalyze.formats.spec import LineKind
from loganalyze.formats.vllm.lines import H

PAIR_LISTS = pl.List(pl.List(pl.String))

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
    pairs = pl.col("args").str.extract_all(r"--[\w-]+(?:[= ](?:'[^']*'|\"[^\"]*\"|[^-\s\\]\S*))?").list.eval(
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

KINDS = (
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
            # The model may be quoted for the shell; the flags may go on over ` \`-ended lines.
            r"(?:vllm serve|-m vllm\.entrypoints\.openai\.api_server)"
            r"""(?: ["']?(?P<model>[^-\s\\"'][^\s"']*)["']?)?(?P<args>(?s:.*))$""", _cli,
            ("(venv) [user@server personal]$ vllm serve /models/gemma-3-27b-it-FP8-Dynamic/ --tensor-parallel-size 2 "
             "--gpu-memory-utilization 0.8 --max-model-len 1024",
             "USE_BATCHED_RPA_KERNEL=1 vllm serve Qwen/Qwen3-32B --max-model-len=9216 --max-num-seqs=135",
             'vllm serve "Qwen/Qwen3-32B" \\\n    --dtype bfloat16 \\\n    --max-num-seqs 32 \\\n    --disable-log-requests'),
            # A command line, at the line's start or after a shell prompt, behind the environment
            # it sets (`CUDA_VISIBLE_DEVICES=0,1 vllm serve ...`); not a hint in prose (0.32:
            # "Restart vllm serve with --enable-scale-out to enable them.").
            match=r"(?:^|[$#>] ?)(?:[A-Z_][A-Z0-9_]*=\S* +)*(?:vllm serve|python3? -m vllm\.entrypoints\.openai\.api_server)"
                  r"(?: |$)",
            # A command written over several lines (bench/227 of hold-out 10).
            continuation=r"^\s+--[\w-]+"),
)
