"""Benchmark results printed as text tables of any drawing (docs/benchmark-tables.md, "Text
tables of any drawing").

Clients and the people who paste their results draw tables in many ways: tabulate's grid
(`+----+` / `+====+`), fancy grid (`╒═══╤`, `│`), pipe and markdown tables (`|---|`), rich
and light boxes. What their cells mean does not depend on the drawing, so one reader splits
any of them into header and body cells (`cells`), and one vocabulary maps what the cells say
onto the bench table (`read`):

- a table of metrics (one row per quantity, one column per statistic: `│ TTFT │ total │
  7437.1 ms │` under `Average │ Min │ P99`, or evalscope's `Key | Value`) gives one result,
  each cell read as the row's label with the column's statistic;
- a table of runs (one row per run, one column per quantity: `| ISL | Concurrency | TTFT
  (ms) |`, `| max_concurrency | mean_ttft_ms |`) gives one result per row, each cell read
  by its column's header;
- a table of metric rows whose columns are runs (`Request Throughput (req/sec): | 0.97 |
  0.98`, perhaps under `| Metric | main | branch |`) gives one result per value column;
- rows pasted without their header are read only where their width is that of exactly one
  known client's table (`HEADLESS`; loganalyze/formats/result_tables.py reads them with that client's
  reader and marks the result `partial`); other rows are not read.

Header words are read as result labels are (loganalyze/formats/summary_labels.py), after the aliases
that only tables print (`ISL`, `N Req`, `input_throughput`). A table that names no latency,
throughput, successful requests or duration is not a result table and gives nothing.
"""

from __future__ import annotations

import polars as pl
import regex

from loganalyze.formats import summary_labels
from loganalyze.formats.bench_tables import BENCH

SEPARATORS = "│┃║|"
# A rule: no word characters, a run of dashes or double lines (`+---+`, `╞═══╪`, `|:--|`).
# Log text is untrusted and these run in Python's backtracking `regex`: each pattern is
# linear (possessive runs, one lookahead), since a 100,000-dash line followed by a letter
# took minutes on `^[^\w]*[-─━═=]{3,}[^\w]*$`.
MD_RULE = r"^\s*+\|?\s*+:?-{2,}+:?\s*+(?:\|\s*+:?-{2,}+:?\s*+)++\|?\s*+$"
RULE = rf"^(?=[^\w]*?[-─━═=]{{3}})[^\w]*+$|{MD_RULE}"
# The rule under a header: drawn with `=`, `═` or `━`, or a pipe table's `|---|` (grids
# draw their body rules with `+` or box corners at the junctions, pipe tables never do).
HEAD_RULE = rf"^(?=[^\w]*?[=═━]{{3}})[^\w]*+$|{MD_RULE}"

GAP = r"\s{2,}"  # between two cells of a table drawn with spaces only

# Header aliases that only tables print (normalised words) -> bench column; the rest of a
# header is read by summary_labels as a printed label is.
ALIASES = {
    "isl": "input_len", "osl": "output_len", "input len": "input_len", "output len": "output_len",
    "n req": "num_prompts", "num prompts": "num_prompts", "max concurrency": "max_concurrency",
    "concur": "max_concurrency", "req tput (rps)": "request_throughput", "req/s": "request_throughput",
    "request throughput": "request_throughput", "request rate (req/s)": "request_rate",
    "tput (req/s)": "request_throughput", "output tput (tok/s)": "output_throughput", "test name": "label",
    "input throughput": "input_throughput", "output throughput": "output_throughput",
    "total throughput": "total_throughput", "source": "tool", "backend": "backend",
    "request count": "completed", "error request count": "failed", "effective concurrency": "concurrency",
    # Offline and speculative-decoding benchmarks (SpecForge's bench_eagle3, bench_one_batch):
    # the batch size is how many requests run at once.
    "bs": "concurrency", "batch size": "concurrency", "throughput (tok/s)": "output_throughput",
    "throughput (token/s)": "output_throughput", "acc len": "accept_length", "accept len": "accept_length",
    "accept length": "accept_length", "acceptance length": "accept_length", "avg accept length": "accept_length",
    "benchmark": "label",
}
TEXT_COLUMNS = ("tool", "backend", "label")
# Column headers that name a statistic, and the word summary_labels reads for it; a column
# of another statistic (min, p75, N) is not read into the bench table.
STATS = {"avg": "", "average": "", "mean": "", "value": "", "median": "median", "p50": "median",
         "p90": "p90", "p95": "p95", "p99": "p99", "max": "max", "std": "std", "stdev": "std"}
STAT_HEAD = r"(?i)^(?:avg|average|mean|min|max|median|std|stdev|value|n|count|p\d+(?:\.\d+)?|\d+(?:\.\d+)?%)$"
STAT_ROW = r"(?i)^(?:p?\d+(?:\.\d+)?%|p\d+(?:\.\d+)?|avg|average|mean|median|min|max|std|stdev)$"
# Metric rows with one sample per completed request, whose `N` column (ais_bench's) is the
# number of requests that completed; a per-token metric's N (TPOT, ITL) counts tokens.
PER_REQUEST = r"(?i)^(?:e2el|e2e latency|request latency|ttft)$"
# A column of metric rows that says which part of a request the row measures (ais_bench's
# `Stage`): only the whole request (`total`) is the bench table's.
STAGE = r"(?i)^stage$"
# A table's first header cell -> the client that prints it.
TOOLS = {"performance parameters": "ais_bench"}
# Known clients' headers, for rows pasted without theirs: read only when exactly one has
# the rows' width (AIPerf's console table: 8 cells, a metric a row) and its rows start as that
# client's do. evalscope's percentile table (a percentile a row) is 9 cells from 0.15 to 1.6,
# in seconds; from 1.7 on it prints a metric a row in milliseconds, always under its header
# (docs/benchmark-tables.md).
HEADLESS = {
    8: ("aiperf", ["Metric", "avg", "min", "max", "p99", "p90", "p50", "std"]),
    9: ("evalscope", ["Percentiles", "TTFT (s)", "ITL (s)", "TPOT (s)", "Latency (s)", "Input tokens",
                      "Output tokens", "Output (tok/s)", "Total (tok/s)"]),
}
NUMBER = r"^[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?"
RUN_VALUE = rf"{NUMBER}\s*(?:[A-Za-z/]+)?$"  # `0.9765`, `16075.82 tok/s`; not `2.90x`


def split(line: str) -> list[str]:
    """A row's cells, the outer separators dropped (`│ a │ b │` -> [a, b])."""
    text = line.strip()
    text = text[1:] if text[:1] in SEPARATORS else text
    text = text[:-1] if text[-1:] in SEPARATORS else text
    return [c.strip().strip("*").strip() for c in regex.split(f"[{SEPARATORS}]", text)]  # `**bold**` cells


def cells(lines: list[tuple[int, str]]) -> tuple[list[list[str]], list[tuple[int, list[str]]]]:
    """The header rows and body rows (line number, cells) of one table of any drawing. The
    rows before the first header rule are the header. A table drawn with one kind of rule
    (tabulate's `pretty` and `simple_outline`: `+---+`, `├───┼`) marks its header by the only
    rule inside it, under the first row; a table with neither has no header."""
    rows: list[tuple[int, list[str]]] = []
    header: list[list[str]] | None = None
    inner: list[int] = []  # the rows above each rule, where the first row has some
    for no, text in lines:
        if regex.match(RULE, text):
            if rows and header is None and regex.match(HEAD_RULE, text):
                header, rows = [c for _, c in rows], []
            elif rows:
                inner.append(len(rows))
            continue
        if any(c in text for c in SEPARATORS):
            rows.append((no, split(text)))
    if header is None and len(rows) > 2 and [k for k in inner if k < len(rows)] == [1]:
        header, rows = [rows[0][1]], rows[1:]
    return header or [], rows


def spaced_cells(lines: list[tuple[int, str]]) -> tuple[list[list[str]], list[tuple[int, list[str]]]]:
    """Header and body cells of a table drawn with spaces only (tabulate's `plain`, Model
    Analyzer's console): the first line is the header, and a row is its cells two or more
    spaces apart. A row of another width than the header's (an empty cell shifts the rest, a
    line of another table) is not a row of it, and is not read, rather than read into the
    wrong columns."""
    header = regex.split(GAP, lines[0][1].strip())
    rows = [(no, regex.split(GAP, text.strip())) for no, text in lines[1:]]
    return [header], [(no, row) for no, row in rows if len(row) == len(header)]


def _words(cell: str) -> str:
    """A header cell or row label as label words: `mean_ttft_ms` -> `mean ttft (ms)`,
    `TTFT (ms)` -> `ttft (ms)`, `Total   Latency (ms):` -> `total latency (ms)`."""
    text = regex.sub(r"\s+", " ", cell.replace("_", " ")).strip().rstrip(":").strip().lower()
    return regex.sub(r" (ms|s|us)$", r" (\1)", text)


def _quantity(cell: str) -> str:
    """A quantity's label words where a statistic comes before it: a bare `Latency` (evalscope's
    percentiles) is each request's, end to end."""
    return regex.sub(r"^latency\b", "e2e latency", _words(cell))


def _column(labels: pl.Series, values: pl.Series) -> pl.DataFrame:
    """(column, value) of each (label, cell): an alias, else the label read as a printed one."""
    frame = pl.DataFrame({"label": labels, "value": values}, schema={"label": pl.String, "value": pl.String})
    alias = pl.col("label").replace_strict(ALIASES, default=None)
    read, scaled = summary_labels.columns(pl.col("label"), pl.col("value"))
    number = pl.col("value").str.replace_all(",", "").str.extract(f"({NUMBER})", 1)
    text = pl.when(alias.is_in(list(TEXT_COLUMNS))).then(pl.col("value"))
    out = frame.select(column=pl.coalesce(alias, read),
                       value=pl.when(alias.is_not_null()).then(pl.coalesce(text, number)).otherwise(scaled))
    return out.with_columns(pl.when(pl.col("column").is_in(list(BENCH))).then("column").alias("column"))


def _result(found: pl.DataFrame) -> dict[str, object]:
    """The first value of each column, numbers as numbers."""
    out: dict[str, object] = {}
    for column, value in found.filter(pl.col("column").is_not_null() & pl.col("value").is_not_null()).iter_rows():
        out.setdefault(column, value if column in TEXT_COLUMNS else float(value))
    return out


def _measures(result: dict[str, object]) -> bool:
    """A result table names a latency, a throughput, the requests that succeeded, the
    benchmark's duration or a speculative accept length; a table of anything else is not one."""
    return any(regex.match(r"^(?:ttft|tpot|itl|e2e)_|.*throughput$|^completed$|^duration_s$|^accept_length$", k)
               for k in result)


def runs(header: list[str], body: list[tuple[int, list[str]]]) -> list[dict[str, object]]:
    """One result per row of a table of runs, each cell read by its column's header. A row
    named by a statistic (`p99`, `90%`, `avg`: a table of percentiles, one per row) is no
    run, and is not read as one."""
    names = [_words(h) for h in header]
    out = []
    for no, row in body:
        if regex.match(STAT_ROW, row[0]):
            continue
        found = _column(pl.Series(names[:len(row)]), pl.Series(row[:len(names)]))
        result = _result(found)
        if _measures(result):
            out.append({"line_no": no, **result})
    return out


def metrics(header: list[str], body: list[tuple[int, list[str]]], line_no: int) -> list[dict[str, object]]:
    """One result of a table of metrics, on the table's first line: each cell read as
    `<statistic> <row label>`, the rows of a stage other than the whole request left out.
    One whose statistics are all percentiles (evalscope 1.7+) is a table of percentiles."""
    names = [h.strip().lower() for h in header]
    stage = next((i for i, h in enumerate(names) if regex.match(STAGE, h)), None)
    count = next((i for i, h in enumerate(names) if h == "n"), None)
    labels, values = [], []
    for _, row in body:
        if stage is not None and (stage >= len(row) or row[stage].lower() != "total"):
            continue
        for name, cell in zip(names[1:], row[1:]):
            if _stat(name) is not None:
                labels.append(f"{_stat(name)} {_quantity(row[0])}".strip())
                values.append(cell)
        if count is not None and count < len(row) and regex.match(PER_REQUEST, row[0].strip()):
            labels.append("successful requests")  # one sample a request that completed
            values.append(row[count])
    result = _result(_column(pl.Series(labels, dtype=pl.String), pl.Series(values, dtype=pl.String)))
    if not _measures(result):
        return []
    tool = TOOLS.get(names[0])
    tails = all(regex.match(PERCENTILE_HEAD, name) for name in names[1:])
    return [{"line_no": line_no, **result, **({"tool": tool} if tool else {}), **({PERCENTILES: True} if tails else {})}]


# Marks the result of a table of percentiles: the tails of the run whose summary the report
# printed just above it (evalscope's `Percentile results:` under its `Benchmarking summary:`).
PERCENTILES = "of_percentiles"
PERCENTILE_HEAD = r"^(?:\d+(?:\.\d+)?%|min|max)$"


def percentiles(header: list[str], body: list[tuple[int, list[str]]], line_no: int) -> list[dict[str, object]]:
    """One result of a table of percentiles (a statistic a row, a quantity a column: evalscope's
    `| 99% | 1.23 | ...` under `| Percentiles | TTFT (s) | ...`), on the table's first line:
    each cell read as `<row's statistic> <column>`; rows of other percentiles (10%, 66%) are
    no bench column and are not read. Its throughputs are each request's, so no run's
    throughput is read from them."""
    quantities = [_quantity(column) for column in header[1:]]
    labels, values = [], []
    for _, row in body:
        stat = _stat(row[0])
        for quantity, cell in zip(quantities, row[1:]):
            if stat is not None and quantity:
                labels.append(f"{stat} {quantity}".strip())
                values.append(cell)
    result = _result(_column(pl.Series(labels, dtype=pl.String), pl.Series(values, dtype=pl.String)))
    return [{"line_no": line_no, PERCENTILES: True, **result}] if _measures(result) else []


def value_columns(header: list[str], body: list[tuple[int, list[str]]]) -> list[dict[str, object]]:
    """One result per value column of a table of metric rows whose columns are runs (a result
    block retyped as `label | main | branch`), named by its header cell where there is one,
    on the first row's line. A column with a cell that is no plain value (`2.90x`, `+1.2%`:
    a comparison), or with no cell at all, is no run."""
    width = max(len(row) for _, row in body)
    labels = pl.Series([_words(row[0]) for _, row in body], dtype=pl.String)
    out = []
    for j in range(1, width):
        values = [row[j] if j < len(row) else "" for _, row in body]
        if not any(values) or not all(regex.match(RUN_VALUE, v) for v in values if v):
            continue  # an empty column (`||||`: thousands in a hostile line) is no run either
        result = _result(_column(labels, pl.Series(values, dtype=pl.String)))
        if result and j < len(header) and header[j]:
            result["label"] = header[j]
        out += [{"line_no": body[0][0], **result}] if result else []
    return out


def _mapped(names: list[str]) -> int:
    """How many of a header's cells name a bench column (a latency with its unit, a count)."""
    found = _column(pl.Series([_words(n) for n in names], dtype=pl.String), pl.Series(["1"] * len(names)))
    return found["column"].is_not_null().sum()


def headless(lines: list[tuple[int, str]]) -> tuple[str, list[str], list[list[str]]] | None:
    """Box rows pasted without their header: the client and header whose width they have, where
    exactly one known client's table has it and every row starts with a label; else None."""
    header_rows, body = cells(lines)
    widths = {len(row) for _, row in body}
    if header_rows or len(widths) != 1 or widths.pop() not in HEADLESS:
        return None
    tool, header = HEADLESS[len(body[0][1])]
    first = STAT_ROW if header[0] == "Percentiles" else r"^[A-Za-z]"
    if not all(regex.match(first, row[0]) for _, row in body):
        return None
    return tool, header, [row for _, row in body]


def _stat(cell: str) -> str | None:
    """The statistic a header cell or row label names, as summary_labels reads it (`99%` and
    `P99` are `p99`, `avg` is the mean: ''), or None for one with no bench column (`min`, `75%`)."""
    name = cell.strip().lower()
    return STATS.get(f"p{name[:-1]}" if name.endswith("%") else name)


def _percentile_rows(body: list[tuple[int, list[str]]]) -> bool:
    """Every row named by a statistic (`10%`, `p99`, `max`): a table of percentiles."""
    return bool(body) and all(regex.match(STAT_ROW, row[0]) for _, row in body)


def read(lines: list[tuple[int, str]]) -> list[dict[str, object]]:
    """The results of one table, by its layout: metric rows where its columns (after the
    first) are statistics, runs where its header names bench columns, else metric rows with
    a run in each value column, and percentiles where every row is named by one."""
    spaced = not any(c in t for _, t in lines for c in SEPARATORS)
    header_rows, body = spaced_cells(lines) if spaced else cells(lines)
    if not body:
        return []
    width = max(len(h) for h in header_rows) if header_rows else 0
    header = [" ".join(h[i] for h in header_rows if i < len(h)).strip() for i in range(width)]
    stats = [h for h in header[1:] if regex.match(STAT_HEAD, h.strip())]
    if stats and len(stats) >= len([h for h in header[1:] if not regex.match(STAGE, h.strip())]):
        return metrics(header, body, lines[0][0])
    if header_rows and _percentile_rows(body):
        return percentiles(header, body, lines[0][0])
    if _mapped(header) >= 2:
        return runs(header, body)
    # A table drawn with spaces has its header on its first line: one whose words map to no
    # bench column says nothing the rows could be read by.
    return [] if spaced else value_columns(header, body)
