"""The parser a user would write by hand: the baseline `benchmarks/ingest.py` compares against.

    python benchmarks/naive.py server.log out.parquet [--format sglang|vllm]

One regex per stats-line layout (the `regex` module), `search` on every line in a Python
loop, a dict per matching line, then one Parquet file. It reads only the stats lines
(loganalyze also keeps every other line, the raw text and the line numbers), so it is
the generous baseline: a hand parser that handles more does more work per line.
"""

from __future__ import annotations

import sys

import polars as pl
import regex

SGLANG = [
    regex.compile(
        r"^\[(?P<ts>[\d-]+ [\d:]+)(?: (?P<rank>TP\d+))?\] Decode batch, #running-req: (?P<running>\d+), "
        r"#token: (?P<tokens>\d+), token usage: (?P<token_usage>[\d.]+), accept len: (?P<accept_len>[\d.]+), "
        r"accept rate: (?P<accept_rate>[\d.]+), cuda graph: (?P<graph>\w+), "
        r"gen throughput \(token/s\): (?P<gen_throughput>[\d.]+), #queue-req: (?P<queued>\d+)"
    ),
    regex.compile(
        r"^\[(?P<ts>[\d-]+ [\d:]+)(?: (?P<rank>TP\d+))?\] Prefill batch, #new-seq: (?P<new_seq>\d+), "
        r"#new-token: (?P<new_tokens>\d+), #cached-token: (?P<cached_tokens>\d+), token usage: (?P<token_usage>[\d.]+), "
        r"#running-req: (?P<running>\d+), #queue-req: (?P<queued>\d+), "
        r"input throughput \(token/s\): (?P<input_throughput>[\d.]+)"
    ),
]
VLLM = [
    regex.compile(
        r"(?P<level>[A-Z]+) (?P<ts>\d\d-\d\d [\d:]+) \[[\w.]+:\d+\] Engine (?P<engine>\d+): "
        r"Avg prompt throughput: (?P<prompt_throughput>[\d.]+) tokens/s, "
        r"Avg generation throughput: (?P<gen_throughput>[\d.]+) tokens/s, Running: (?P<running>\d+) reqs, "
        r"Waiting: (?P<queued>\d+) reqs, GPU KV cache usage: (?P<token_usage>[\d.]+)%"
    ),
    regex.compile(
        r"(?P<level>[A-Z]+) (?P<ts>\d\d-\d\d [\d:]+) \[[\w.]+:\d+\] SpecDecoding metrics: "
        r"Mean acceptance length: (?P<accept_len>[\d.]+), .*?Accepted: (?P<accepted>\d+) tokens, "
        r"Drafted: (?P<drafted>\d+) tokens"
    ),
]
TEXT = {"ts", "rank", "graph", "level", "engine"}
INTS = {"running", "tokens", "queued", "new_seq", "new_tokens", "cached_tokens", "accepted", "drafted"}


def parse(path: str, patterns: list[regex.Pattern]) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            for pattern in patterns:
                m = pattern.search(line)
                if m:
                    row = {}
                    for k, v in m.groupdict().items():
                        row[k] = v if k in TEXT or v is None else int(v) if k in INTS else float(v)
                    rows.append(row)
                    break
    return rows


def main(argv: list[str]) -> int:
    path, out = argv[0], argv[1]
    patterns = VLLM if "--format" in argv and argv[argv.index("--format") + 1] == "vllm" else SGLANG
    rows = parse(path, patterns)
    pl.DataFrame(rows, infer_schema_length=None).write_parquet(out)
    print(len(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
