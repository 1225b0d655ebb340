"""GuideLLM's result tables (loganalyze/formats/result_tables.py): pipe tables of one row per
benchmark with a header of spanned groups, joined across a report's tables, and benchmarks.csv."""

from __future__ import annotations

import csv

import regex

from loganalyze.formats.bench_tables import LATENCY_STATS, TO_MS
from loganalyze.formats.result_cells import STATS, cell_number, load_level, unit_of


# GuideLLM column (its header words, lower case, joined by `/`) -> bench column.
GUIDELLM = (
    (r"^requests/comp/tot$", "completed"), (r"^requests/err/tot$", "failed"),
    (r"^timings/dur/sec$", "duration_s"),
    (r"^input tokens/comp/tot$", "input_tokens"), (r"^output tokens/comp/tot$", "output_tokens"),
    (r"^requests/per sec/mean$", "request_throughput"), (r"^requests/concurrency/mean$", "concurrency"),
    (r"^input tokens/per sec/mean$", "input_throughput"), (r"^output tokens/per sec/mean$", "output_throughput"),
    (r"^total tokens/per sec/mean$", "total_throughput"),
    # 0.2's text tables: Benchmarks Info, Benchmarks Stats.
    (r"^requests made/comp$", "completed"), (r"^requests made/err$", "failed"),
    (r"^metadata/duration/s$", "duration_s"),
    (r"^prompt tok total/comp$", "input_tokens"), (r"^output tok total/comp$", "output_tokens"),
    (r"^request stats/per second$", "request_throughput"), (r"^request stats/concurrency$", "concurrency"),
    (r"^out tok/sec/mean$", "output_throughput"), (r"^tot tok/sec/mean$", "total_throughput"),
)

# GuideLLM's request latency is in seconds in every release, also under 0.2's header
# `Req Latency (ms)` (docs/benchmark-tables.md); its other latencies in the unit printed.
GUIDELLM_LATENCY = {"request latency": "e2e", "req latency": "e2e", "ttft": "ttft", "itl": "itl", "tpot": "tpot"}


def _pipe_cells(line: str) -> list[str]:
    """A pipe row's cells, `""` where a header cell is spanned by the one before it
    (`| Timings ||||| Input`); the outer pipes are not cells."""
    text = line.strip()
    text = text[1:] if text.startswith("|") else text
    text = text[:-1] if text.endswith("|") else text
    return text.split("|")


def _columns(header_rows: list[list[str]], width: int) -> list[str]:
    """Each column's header words joined by `/` (`request latency/sec/mean`), spans filled;
    a unit in brackets is a word of its own (`TTFT (ms)` -> `ttft/ms`)."""
    paths = [[] for _ in range(width)]
    for cells in header_rows:
        last = ""
        for i in range(width):
            cell = cells[i] if i < len(cells) else ""
            last = last if cell == "" else regex.sub(r"\s+", " ", cell.strip())
            if last:
                name, unit = unit_of(last)
                paths[i] += [name, unit] if unit else [name]
    return ["/".join(p) for p in paths]


def guidellm_rows(lines: list[tuple[int, str]]) -> list[dict[str, object]]:
    """One result per benchmark row of a GuideLLM report's pipe tables, joined by its name."""
    results: dict[str, dict[str, object]] = {}
    header: list[list[str]] = []
    in_body = False
    for line_no, line in lines:
        text = line.strip()
        if regex.match(r"^\|=+\|", text):
            header, in_body = ([], False) if in_body or not header else (header, in_body)
            continue
        if regex.match(r"^\|-+\|", text):
            in_body = True
            continue
        if not text.startswith("|"):
            continue
        cells = _pipe_cells(text)
        if not in_body:
            header.append(cells)
            continue
        columns = _columns(header, len(cells))
        name = cells[0].strip()
        result = results.setdefault(name, {"line_no": line_no, "tool": "guidellm", **load_level(name)})
        for column, cell in zip(columns[1:], cells[1:]):
            _guidellm_cell(result, column, cell_number(cell))
    return list(results.values())


def _guidellm_cell(result: dict[str, object], column: str, value: float | None) -> None:
    if value is None:
        return
    for pattern, name in GUIDELLM:
        if regex.match(pattern, column):
            result.setdefault(name, value)
            return
    parts = column.split("/")
    metric = GUIDELLM_LATENCY.get(parts[0])
    stat = STATS.get(parts[-1])
    if metric and stat in LATENCY_STATS and len(parts) == 3:
        result.setdefault(f"{metric}_{stat}", value * (1000.0 if metric == "e2e" else TO_MS.get(parts[1], 1.0)))


# GuideLLM CSV column (group/name/statistic, lower case) -> bench column and scale.
GUIDELLM_CSV_COLUMNS = {
    "timings/duration/sec": ("duration_s", 1.0), "request counts/successful/": ("completed", 1.0),
    "request counts/errored/": ("failed", 1.0),
    "server throughput/successful requests/sec/mean": ("request_throughput", 1.0),
    "server throughput/successful concurrency/mean": ("concurrency", 1.0),
    "token throughput/successful input tokens/sec/mean": ("input_throughput", 1.0),
    "token throughput/successful output tokens/sec/mean": ("output_throughput", 1.0),
    "token throughput/successful total tokens/sec/mean": ("total_throughput", 1.0),
}

GUIDELLM_CSV_LATENCY = {"request latency": ("e2e", 1000.0), "time to first token": ("ttft", 1.0),
                        "time per output token": ("tpot", 1.0), "inter token latency": ("itl", 1.0)}


def guidellm_csv(lines: list[tuple[int, str]]) -> list[dict[str, object]]:
    """One result per benchmark row of GuideLLM's benchmarks.csv."""
    table = list(csv.reader([t for _, t in lines]))
    if len(table) < 4:
        return []
    paths = ["/".join(h.strip().lower() for h in cells) for cells in zip(*table[:3])]
    out = []
    for (line_no, _), cells in zip(lines[3:], table[3:]):
        row: dict[str, object] = {"line_no": line_no, "tool": "guidellm"}
        for path, cell in zip(paths, cells):
            group, name, stat = path.split("/", 2) if path.count("/") >= 2 else (path, "", "")
            if path == "benchmark/strategy/":
                row.update(load_level(cell.strip()))
            elif path in GUIDELLM_CSV_COLUMNS and cell_number(cell) is not None:
                column, scale = GUIDELLM_CSV_COLUMNS[path]
                row[column] = cell_number(cell) * scale
            elif group in GUIDELLM_CSV_LATENCY and name.startswith("successful") and STATS.get(
                    stat.replace("std dev", "std")) and cell_number(cell) is not None:
                metric, scale = GUIDELLM_CSV_LATENCY[group]
                row[f"{metric}_{STATS[stat.replace('std dev', 'std')]}"] = cell_number(cell) * scale
        out.append(row)
    return out
