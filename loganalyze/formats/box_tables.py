"""GenAI-Perf's and AIPerf's result tables (loganalyze/formats/result_tables.py): box tables of
one row per metric, several to a run, their CSV exports, and the rows a table's name carries."""

from __future__ import annotations

import csv

import regex

from loganalyze.formats.bench_tables import LATENCY_STATS, TO_MS
from loganalyze.formats.result_cells import NUMBER, STATS, cell_number, load_level, unit_of


# GenAI-Perf <= 24.x printed the run's throughputs as lines below its table.
BOX_BELOW = r"^(?:Output token throughput|Request throughput) \(per sec\): [\d.,]+\s*$"

# Row name (lower case, unit removed) -> metric. GenAI-Perf's and AIPerf's inter-token
# latency is (latency - TTFT) / (tokens - 1): the TPOT of vLLM's and SGLang's clients.
METRIC_ROWS = {
    "time to first token": "ttft", "ttft": "ttft", "inter token latency": "tpot", "request latency": "e2e",
    "time per output token": "tpot",
}

TOTAL_ROWS = {
    "request throughput": "request_throughput", "output token throughput": "output_throughput",
    "input token throughput": "input_throughput", "total token throughput": "total_throughput",
    "request count": "completed", "error request count": "failed", "benchmark duration": "duration_s",
    "effective concurrency": "concurrency",
}


def metric_rows(header: list[str], rows: list[list[str]]) -> dict[str, object]:
    """The bench columns of a table with one metric per row and one statistic per column."""
    stats = [STATS.get(h.strip().lower()) for h in header]
    out: dict[str, object] = {}
    extra: list[dict[str, str]] = []
    for cells in rows:
        name, unit = unit_of(cells[0])
        values = dict(zip(stats[1:], (cell_number(c) for c in cells[1:])))
        metric = METRIC_ROWS.get(name)
        if metric:
            scale = TO_MS.get(unit or "ms", 1.0)
            for stat, value in values.items():
                if stat in LATENCY_STATS and value is not None:
                    out.setdefault(f"{metric}_{stat}", value * scale)
        elif name in TOTAL_ROWS and values.get("mean") is not None:
            out.setdefault(TOTAL_ROWS[name], values["mean"])
        elif any(v is not None for v in values.values()):
            printed = next(c.strip() for c in cells[1:] if cell_number(c) is not None)
            extra.append({"key": cells[0].strip(), "value": printed})
    if extra:
        out["extra"] = extra
    return out


Section = tuple[list[str], list[list[str]]]


def error_rows(header: list[str], rows: list[list[str]]) -> dict[str, object]:
    """AIPerf's error summary (`┃ Code ┃ Type ┃ Message ┃ Count ┃`, one row per kind of
    error): the failed requests it counts, each kind's code, type and message kept in `extra`.
    Printed alone where every request failed (bench/213: 500 answers of 400 Bad Request)."""
    column = {name.lower(): i for i, name in enumerate(header)}
    if "count" not in column:
        return {}
    counts = [cell_number(cells[column["count"]]) for cells in rows if len(cells) == len(header)]
    described = [{"key": "error " + " ".join(cells[column[c]] for c in ("code", "type") if c in column).strip(),
                  "value": cells[column["message"]] if "message" in column else ""}
                 for cells in rows if len(cells) == len(header)]
    if not counts or None in counts:
        return {}
    return {"failed": int(sum(counts)), "extra": described}


def box_sections(lines: list[str]) -> tuple[list[Section], dict[str, object]]:
    """Each box table's header cells and metric rows, and the lines printed below them. A
    row with text in its first cell only, or none in it, carries on the row above cell by
    cell (rich wraps long names and long values); so does a header wrapped over two lines."""
    lines = _cropped(lines)
    sections: list[Section] = []
    below: dict[str, object] = {}
    inside = False
    for line in lines:
        text = line.strip()
        if text.startswith(("┏", "└", "┗")):
            inside = text.startswith("┏")
            sections += [([], [])] if inside else []
        elif text.startswith("┃") and not (inside and sections[-1][1]):
            if not inside:  # a paste that lost the top border
                inside = True
                sections.append(([], []))
            cells = [c.strip() for c in text.strip("┃").split("┃")]
            head = sections[-1][0]
            head[:] = [f"{a} {b}".strip() for a, b in zip(head, cells)] if head else cells
        elif text.startswith("│") and inside:
            cells = [c.strip() for c in text.strip("│").split("│")]
            rows = sections[-1][1]
            if rows and (not cells[0] or not any(cells[1:])):  # a wrapped name, or wrapped values
                rows[-1][:] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells)]
            elif cells[0]:
                rows.append(cells)
        elif regex.match(BOX_BELOW, text):
            name, value = text.split(":", 1)
            below[TOTAL_ROWS[unit_of(name)[0]]] = cell_number(value)
    return sections, below


def _cropped(lines: list[str]) -> list[str]:
    """Tables inside rich panels (GuideLLM 0.1's report: `│ │ ┏━━━┓ │ │`) cut to the columns
    of their own border; the panels' borders are no part of them."""
    top = next((t for t in lines if "┏" in t or "┃" in t), "")
    left = min((i for i in (top.find("┏"), top.find("┃")) if i >= 0), default=0)
    if "│" not in top[:left]:
        return lines
    right = max(top.rfind("┓"), top.rfind("┃")) + 1
    return [t[left:right] for t in lines]


def csv_sections(lines: list[str]) -> list[Section]:
    """Each section of a CSV export: `Metric,avg,min,...` rows, then `Metric,Value` rows."""
    sections: list[Section] = []
    for cells in csv.reader(lines):
        if cells and cells[0] in ("Metric", "Statistic"):
            sections.append((cells, []))
        elif cells and sections:
            sections[-1][1].append(cells)
    return sections


# GuideLLM 0.1's rich tables, one row per benchmark: column (its name, lower case) -> metric,
# the cell a list of the percentiles the header names (`Time to First Token [1%, ..., 99%]
# (ms)`) or one value (`Request Latency (sec)`: the mean).
BOX_LATENCY = {"request latency": "e2e", "time to first token": "ttft", "inter token latency": "itl"}

BOX_TOTALS = {"requests per second": "request_throughput", "output token throughput": "output_throughput",
              "requests completed": "completed", "request failed": "failed", "requests failed": "failed"}


def benchmark_box(lines: list[tuple[int, str]]) -> list[dict[str, object]]:
    """One result per benchmark row of GuideLLM 0.1's rich tables, joined by its name."""
    sections, _ = box_sections([t for _, t in lines])
    results: dict[str, dict[str, object]] = {}
    for header, rows in sections:
        for cells in rows:
            name = cells[0]
            line_no = next((no for no, t in lines if f" {name} " in t), lines[0][0])
            result = results.setdefault(name, {"line_no": line_no, "tool": "guidellm", **load_level(name)})
            for column, cell in zip(header[1:], cells[1:]):
                _box_cell(result, column, cell)
    return list(results.values())


def _box_cell(result: dict[str, object], column: str, cell: str) -> None:
    name, unit = unit_of(regex.sub(r"\s*\[[^\]]*\]", "", column))
    percentiles = regex.findall(r"(\d+)%", column)
    values = [float(v) for v in NUMBER.findall(cell.replace(",", " "))]
    if name in BOX_LATENCY:
        scale = TO_MS.get(unit or "ms", 1.0)
        stats = [STATS.get(f"p{p}") for p in percentiles] if percentiles else ["mean"]
        if len(stats) == len(values):
            for stat, value in zip(stats, values):
                if stat in LATENCY_STATS:
                    result.setdefault(f"{BOX_LATENCY[name]}_{stat}", value * scale)
    elif name in BOX_TOTALS and len(values) == 1:
        result.setdefault(BOX_TOTALS[name], values[0])


def metric_result(lines: list[str]) -> dict[str, object]:
    """The one result of a run's box tables or CSV export, their sections read together."""
    if lines[0].lstrip().startswith(("Metric,", "Statistic,")):  # AIPerf's CSV has sum and p1 columns
        sections, below = csv_sections(lines), {}
        tool = "aiperf" if regex.search(r",sum,|,p1,", lines[0]) else "genai-perf"
    else:
        sections, below = box_sections(lines)
        tool = "genai-perf" if any(h and h[0] == "Statistic" for h, _ in sections) else "aiperf"
    if any(h and h[0] == "Statistic" for h, _ in sections) or any("GenAI-Perf" in line for line in lines[:2]):
        tool = "genai-perf"
    out: dict[str, object] = {"tool": tool, **below}
    for header, rows in sections:
        found = error_rows(header, rows) if header[:1] == ["Code"] else metric_rows(header, rows)
        for key, value in found.items():
            if key == "extra":
                out["extra"] = [*out.get("extra", []), *value]
            else:
                out.setdefault(key, value)
    return out
