"""DuckDB as a peer: the query a user would write instead of a parser, for `benchmarks/ingest.py`.

    python benchmarks/duck.py server.log out.parquet [--format sglang|vllm]

Every line is read as one VARCHAR column (`read_csv` with a separator, quote and escape
that log lines do not use), the stats lines are kept by one regex, each key's value is a
`regexp_extract` cast to its type, and the result is `COPY`d to one Parquet file. It reads
only the stats lines, as benchmarks/naive.py does. DuckDB is a benchmark-only dependency
(benchmarks/requirements.txt), never one of the package's.
"""

from __future__ import annotations

import sys

import duckdb

# (column, regex with one group, SQL type): the same fields as benchmarks/naive.py.
SGLANG = (
    ("ts", r"^\[([0-9-]+ [0-9:]+)", "VARCHAR"),
    ("rank", r"^\[[^\]]* (TP[0-9]+)\]", "VARCHAR"),
    ("running", r"#running-req: ([0-9]+)", "BIGINT"),
    ("tokens", r"#token: ([0-9]+)", "BIGINT"),
    ("token_usage", r"token usage: ([0-9.]+)", "DOUBLE"),
    ("accept_len", r"accept len: ([0-9.]+)", "DOUBLE"),
    ("accept_rate", r"accept rate: ([0-9.]+)", "DOUBLE"),
    ("graph", r"cuda graph: (\w+)", "VARCHAR"),
    ("gen_throughput", r"gen throughput \(token/s\): ([0-9.]+)", "DOUBLE"),
    ("queued", r"#queue-req: ([0-9]+)", "BIGINT"),
    ("new_seq", r"#new-seq: ([0-9]+)", "BIGINT"),
    ("new_tokens", r"#new-token: ([0-9]+)", "BIGINT"),
    ("cached_tokens", r"#cached-token: ([0-9]+)", "BIGINT"),
    ("input_throughput", r"input throughput \(token/s\): ([0-9.]+)", "DOUBLE"),
)
VLLM = (
    ("level", r"([A-Z]+) [0-9]{2}-[0-9]{2} [0-9:]+ \[", "VARCHAR"),
    ("ts", r"[A-Z]+ ([0-9]{2}-[0-9]{2} [0-9:]+) \[", "VARCHAR"),
    ("engine", r"Engine ([0-9]+):", "VARCHAR"),
    ("prompt_throughput", r"Avg prompt throughput: ([0-9.]+)", "DOUBLE"),
    ("gen_throughput", r"Avg generation throughput: ([0-9.]+)", "DOUBLE"),
    ("running", r"Running: ([0-9]+) reqs", "BIGINT"),
    ("queued", r"Waiting: ([0-9]+) reqs", "BIGINT"),
    ("token_usage", r"GPU KV cache usage: ([0-9.]+)%", "DOUBLE"),
    ("accept_len", r"Mean acceptance length: ([0-9.]+)", "DOUBLE"),
    ("accepted", r"Accepted: ([0-9]+) tokens", "BIGINT"),
    ("drafted", r"Drafted: ([0-9]+) tokens", "BIGINT"),
)
STATS = {"sglang": r"(Decode|Prefill) batch", "vllm": r"Engine [0-9]+: Avg prompt|SpecDecoding metrics"}


def query(path: str, out: str, fmt: str) -> str:
    def lit(s: str) -> str:
        return "'" + s.replace("'", "''") + "'"

    fields = ",\n  ".join(f"TRY_CAST(NULLIF(regexp_extract(line, {lit(rx)}, 1), '') AS {t}) AS {name}"
                          for name, rx, t in (SGLANG if fmt == "sglang" else VLLM))
    lines = (f"read_csv({lit(path)}, columns={{'line': 'VARCHAR'}}, header=false, sep={lit(chr(1))}, "
             "quote='', escape='', auto_detect=false, strict_mode=false, ignore_errors=true)")
    return (f"COPY (SELECT\n  {fields}\nFROM {lines}\nWHERE regexp_matches(line, {lit(STATS[fmt])}))\n"
            f"TO {lit(out)} (FORMAT parquet)")


def main(argv: list[str]) -> int:
    path, out = argv[0], argv[1]
    fmt = argv[argv.index("--format") + 1] if "--format" in argv else "sglang"
    con = duckdb.connect()
    con.execute(query(path, out, fmt))
    print(con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
