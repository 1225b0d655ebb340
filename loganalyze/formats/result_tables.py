"""Benchmark results printed as tables (docs/benchmark-tables.md).

Three clients print their results as tables rather than `label: value` rows, and users
paste those tables into tickets:

- GenAI-Perf and AIPerf: box tables (`┃ Statistic ┃ avg ┃ min ┃ ...`, one row per metric,
  units in the row name: `Time To First Token (ms)`), several in a row (AIPerf prints
  "Effective", "Usage" and "LLM Metrics" tables for one run), and their CSV exports
  (`Metric,avg,min,...` then `Metric,Value`).
- GuideLLM 0.3+: pipe tables (`| Benchmark | Timings ||||| ...`), one row per benchmark
  (a load level such as `concurrent@8`), a header of two or three rows where `|||` spans a
  group name over several columns, one table per subject (run summary, latency, throughput),
  and its benchmarks.csv (its benchmarks.json is loganalyze/formats/bench_json/'s).

Every other table (evalscope's and ais_bench's grids, tabulate grids and markdown summaries
of runs, result blocks retyped as markdown) is read by loganalyze/formats/text_tables.py, the reader
of text tables of any drawing; this module finds where such tables start and hands them on.

The tables of one report (adjacent on the page) are read together: one `bench` row per run
for the metric-row layout, one per benchmark row (joined across the report's tables by its
name) for GuideLLM. Cells are read by their header's words, never by position, because
each release adds, renames and reorders columns. Tables are a few dozen lines per report,
so the handler reads them in Python; no line of any other kind reaches it.
"""

from __future__ import annotations

import csv

import polars as pl
import regex

from loganalyze.formats import text_tables
from loganalyze.formats.bench_tables import BENCH, LATENCY_STATS, TO_MS

BOX_TITLE = r"^\s*(?:NVIDIA )?(?:GenAI-Perf|AIPerf)\b.*\bMetrics\b|^\s*LLM Metrics\s*$"
# The top border, or the header row where a paste lost the border.
BOX_TOP = r"^[\s│]*┏━|^[\s│]*┃\s*(?:Statistic|Metric|Benchmark)\s*┃"
# GenAI-Perf <= 24.x printed the run's throughputs as lines below its table.
BOX_BELOW = r"^(?:Output token throughput|Request throughput) \(per sec\): [\d.,]+\s*$"
BOX_ROW = rf"^\s*[┃│┡╇└┗┣━]|{BOX_BELOW}"
CSV_HEAD = r"^(?:Metric|Statistic),(?:avg|Value)\b"
CSV_ROW = r'^(?:"[^"]*"|[A-Za-z(][^,|│]*)(?:,[^,]*)+\s*$'
PIPE_TITLE = (r"^\s*(?:ℹ\s*)?(?:Run Summary Info|[A-Z][A-Za-z ]* Statistics(?: \([A-Za-z ]+\))?|"
              r"Benchmarks? (?:Info|Stats))\s*:?\s*$")
PIPE_TOP = r"^\s*\|=+\|"
# GuideLLM's benchmarks.csv: three header rows (group, name and unit, statistic), one row per
# benchmark; its cells hold JSON with commas, so any line with two commas goes on a table.
GUIDELLM_CSV = r"^Run Info,Run Info,"
CSV_ANY_ROW = r"^[^│┃|]*,[^│┃|]*,"
PIPE_ROW = r"^\s*\|.*\|\s*$|^\* confidence interval"
# GuideLLM 0.2's text tables: no outer pipes (`Metadata |||| Requests Made ||| ...`, `Benchmark|
# Start Time| ...`), `=` rules above and below. A terminal narrower than the table wraps each
# row over several lines at its width and pads the last one with spaces (`255` + 77 spaces).
# A result block rewritten as a markdown table by hand, one metric per row and one column per
# run (`Request Throughput (req/sec): | 0.9765 | 0.9812`, under `-- | -- | --`); its first row
# that names a Throughput or Latency (capitalised, as table labels are: server logs print
# `throughput` in their stats lines, which must not wake this reader) with a number starts it.
MD_METRIC = (r"^\s*\|?\s*[A-Za-z][^|]*\b(?:Throughput|Latency|TTFT|TPOT|ITL)\b[^|]*\|"
             r"\s*[-+]?\d[\d.,]*(?:[eE][-+]?\d+)?\s*[A-Za-z/]*\s*(?:\||$)")
# Its header row, where it has one (`| Metric | main | branch |`), names the runs; a table whose
# columns are statistics (`| Metric | avg | p50 | p99 |`) is one run's metric rows.
MD_HEAD = r"^\s*\|?\s*(?:Metrics?|Statistics?)\s*\|[^|]*\S"
# Any other client's table (loganalyze/formats/text_tables.py): a grid's top border (tabulate's `+---+`
# and `╒═══╤`, a light box's `┌───┬`), a pipe table's header that names both a load level and
# a latency or throughput, or, where a paste lost the header, a box row whose first cell
# names a quantity with its unit and whose next holds a number.
GRID_TOP = r"^\s*(?:\+-{3,}[-+]*\+|╒═{3,}[═╤]*╕|┌─{3,}[─┬]*┐)\s*$"
LOAD = r"concurrency|\bisl\b|request[ _]rate|\bqps\b"
MEASURE = r"ttft|tpot|\bitl\b|e2el|latency|throughput"
RUN_HEAD = rf"(?i)^\s*\|.*(?:(?:{LOAD}).*\|.*(?:{MEASURE})|(?:{MEASURE}).*\|.*(?:{LOAD}))"
# evalscope's summary as a markdown table (`| Key | Value |`).
KEY_VALUE_HEAD = r"^\s*\|\s*Key\s*\|\s*Value\s*\|\s*$"
HEADLESS_ROW = r"^\s*│\s*[A-Z][^│]*\([^│()]+\)\s*│\s*[-+]?\d[\d,.]*\s*│"
# A metric table's header: a statistic per column (ais_bench's `│ Average │ Min │ Max │`).
STAT_HEAD_ROW = r"(?i)[│┃|]\s*(?:average|avg|mean)\s*[│┃|]\s*min\s*[│┃|]\s*max\s*[│┃|]"
GRID_ROW = r"^\s*[+╞├╘╒┌└][-=─═+╪┼╧┴╤┬]{3,}"
# Tables drawn with spaces only (tabulate's `plain`, Model Analyzer's console, bench/92): a
# header whose cells, two or more spaces apart, name a load and a measure, then rows with a
# number after such a gap.
SPACED_HEAD = (rf"(?i)^[^|│┃+=:]*?(?:(?:{LOAD})[^|│┃:]*? {{2,}}[^|│┃:]*?(?:{MEASURE})"
               rf"|(?:{MEASURE})[^|│┃:]*? {{2,}}[^|│┃:]*?(?:{LOAD}))")
SPACED_ROW = r"^[^|│┃]*\S {2,}[-+]?\d[\d.,]*(?:\s|$)"
TEXT_HEAD = r"^Metadata\s*\|+\s*(?:Requests Made|Request Stats)"
TEXT_ROW = r"^={10,}\s*$|^[^|]*\|.*\||^\S{1,24} {20,}$"

START = "|".join((BOX_TITLE, BOX_TOP, CSV_HEAD, PIPE_TITLE, PIPE_TOP, GUIDELLM_CSV, TEXT_HEAD, MD_METRIC, GRID_TOP,
                  RUN_HEAD, KEY_VALUE_HEAD, SPACED_HEAD))
CONTINUATION = "|".join((BOX_ROW, CSV_ROW, PIPE_ROW, CSV_ANY_ROW, TEXT_ROW, GRID_ROW, SPACED_ROW))
ORPHAN = "|".join((MD_HEAD, HEADLESS_ROW))
NEEDLES = ("Metrics", "┏━", "Statistic ┃", "Metric ┃", "Run Info,", "Metric,", "Statistic,", "Info", "Statistics",
           "Stats", "|=", "Metadata", "Throughput", "Latency", "TTFT", "TPOT", "ITL", "+---", "╒═══", "┌───",
           "ttft_", "_ttft", "Key")

# Tables of one report are at most this many lines apart (blank lines between them).
GAP = 3
NUMBER = regex.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
STATS = {"avg": "mean", "mean": "mean", "value": "mean", "p50": "median", "median": "median", "mdn": "median",
         "std": "std", "max": "max", "p90": "p90", "p95": "p95", "p99": "p99"}
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


def _number(cell: str) -> float | None:
    """A cell's value: `4,110,623,430`, `--->  1,764.61` (a user's marker), `1.8 ± 0.4`
    (GuideLLM's interval: its mean), `3.2*`; None for `N/A` and blanks."""
    found = NUMBER.search(cell.replace(",", ""))
    return float(found.group()) if found else None


def _unit(name: str) -> tuple[str, str | None]:
    """`Time To First Token (ms)` -> ("time to first token", "ms")."""
    found = regex.match(r"^(.*?)\s*\(([^()]*)\)\s*$", name.strip())
    if not found:
        return name.strip().lower(), None
    return found.group(1).lower(), found.group(2).strip().lower()


def metric_rows(header: list[str], rows: list[list[str]]) -> dict[str, object]:
    """The bench columns of a table with one metric per row and one statistic per column."""
    stats = [STATS.get(h.strip().lower()) for h in header]
    out: dict[str, object] = {}
    extra: list[dict[str, str]] = []
    for cells in rows:
        name, unit = _unit(cells[0])
        values = dict(zip(stats[1:], (_number(c) for c in cells[1:])))
        metric = METRIC_ROWS.get(name)
        if metric:
            scale = TO_MS.get(unit or "ms", 1.0)
            for stat, value in values.items():
                if stat in LATENCY_STATS and value is not None:
                    out.setdefault(f"{metric}_{stat}", value * scale)
        elif name in TOTAL_ROWS and values.get("mean") is not None:
            out.setdefault(TOTAL_ROWS[name], values["mean"])
        elif any(v is not None for v in values.values()):
            printed = next(c.strip() for c in cells[1:] if _number(c) is not None)
            extra.append({"key": cells[0].strip(), "value": printed})
    if extra:
        out["extra"] = extra
    return out


Section = tuple[list[str], list[list[str]]]


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
            below[TOTAL_ROWS[_unit(name)[0]]] = _number(value)
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
                name, unit = _unit(last)
                paths[i] += [name, unit] if unit else [name]
    return ["/".join(p) for p in paths]


def unwrapped(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """GuideLLM 0.2's text table rows joined again where a terminal wrapped them at its
    width: every row of a table (between two `=` rules) has as many `|` as its separator
    row (`---|---`), so a row goes on while it has fewer, or with a line of no `|` (the tail
    of its last cell). Rows that a wide terminal left whole pass through as they are."""
    kinds = [("rule" if regex.match(r"^=+\s*$", t) else "sep" if regex.match(r"^[-|\s]*-[-|\s]*$", t) else "row")
             for _, t in lines]
    pieces: list[tuple[int, str, str]] = []  # a wrapped rule or separator is one again
    for (no, text), kind in zip(lines, kinds):
        if pieces and pieces[-1][2] == kind != "row":
            pieces[-1] = (pieces[-1][0], pieces[-1][1] + text, kind)
        else:
            pieces.append((no, text, kind))
    out: list[tuple[int, str]] = []
    table: list[tuple[int, str, str]] = []
    for piece in [*pieces, (0, "", "rule")]:
        if piece[2] != "rule":
            table.append(piece)
            continue
        out += _rows_of(table)
        out += [(piece[0], piece[1].rstrip())] if piece[1] else []
        table = []
    return out


def _rows_of(table: list[tuple[int, str, str]]) -> list[tuple[int, str]]:
    """The rows of one table's pieces, joined by the separator's count of `|`."""
    pipes = next((t.count("|") for _, t, kind in table if kind == "sep"), None)
    rows: list[tuple[int, str, str]] = []
    for no, text, kind in table:
        last = rows[-1] if rows else None
        if pipes and last and kind == "row" == last[2] and (last[1].count("|") < pipes or "|" not in text):
            rows[-1] = (last[0], last[1] + text, kind)
        else:
            rows.append((no, text, kind))
    return [(no, text.rstrip()) for no, text, _ in rows]


def text_rows(lines: list[tuple[int, str]]) -> list[dict[str, object]]:
    """GuideLLM 0.2's text tables, unwrapped and given the outer pipes of the later releases'
    tables, which guidellm_rows reads (the same header spans: `Metadata ||||` covers four
    columns)."""
    framed = []
    for no, text in unwrapped(lines):
        if regex.match(r"^=+$", text):
            framed.append((no, "|" + text + "|"))
        elif "|" in text:
            framed.append((no, "|" + text + "|"))
    return guidellm_rows(framed)


def load_level(name: str) -> dict[str, object]:
    """GuideLLM's load level from its benchmark's name (the tables print it, benchmarks.json
    gives its parts): `concurrent@8` is 8 streams, `constant@26.21` and
    `poisson@5` a request rate, `synchronous` one stream at a time."""
    kind, _, level = name.partition("@")
    out: dict[str, object] = {"label": name}
    if kind == "synchronous":
        out["max_concurrency"] = 1
    elif kind == "concurrent" and _number(level) is not None:
        out["max_concurrency"] = int(_number(level))
    elif kind in ("constant", "poisson", "asynchronous") and _number(level) is not None:
        out["request_rate"] = _number(level)  # 0.1 named a fixed rate `asynchronous@2.00 req/sec`
    return out


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
    name, unit = _unit(regex.sub(r"\s*\[[^\]]*\]", "", column))
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
            _guidellm_cell(result, column, _number(cell))
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
        for key, value in metric_rows(header, rows).items():
            if key == "extra":
                out["extra"] = [*out.get("extra", []), *value]
            else:
                out.setdefault(key, value)
    return out


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
            elif path in GUIDELLM_CSV_COLUMNS and _number(cell) is not None:
                column, scale = GUIDELLM_CSV_COLUMNS[path]
                row[column] = _number(cell) * scale
            elif group in GUIDELLM_CSV_LATENCY and name.startswith("successful") and STATS.get(
                    stat.replace("std dev", "std")) and _number(cell) is not None:
                metric, scale = GUIDELLM_CSV_LATENCY[group]
                row[f"{metric}_{STATS[stat.replace('std dev', 'std')]}"] = _number(cell) * scale
        out.append(row)
    return out


def generic_tables(lines: list[tuple[int, str]]) -> list[dict[str, object]]:
    """The results of each table of a report, read by loganalyze/formats/text_tables.py: a table ends
    where the report's lines skip one (a blank line) or where a markdown header that no
    rule is drawn above starts the next one."""
    starts = [i for i, (no, text) in enumerate(lines)
              if i == 0 or no != lines[i - 1][0] + 1
              or (regex.match(MD_HEAD, text) and not regex.match(text_tables.RULE, lines[i - 1][1]))]
    return [run for a, b in zip(starts, [*starts[1:], len(lines)]) for run in text_tables.read(lines[a:b])]


def headless_rows(lines: list[tuple[int, str]]) -> list[dict[str, object]]:
    """Box rows pasted without their header, read as the one client's table of their width
    (loganalyze/formats/text_tables.py HEADLESS): `partial`, as what they are comes from their width."""
    known = text_tables.headless(lines)
    if not known:
        return []
    tool, header, body = known
    result = metric_rows(header, body)
    if not any(key != "extra" for key in result):
        return []
    return [{"line_no": lines[0][0], "tool": tool, "partial": True, **result}]


def read_report(lines: list[tuple[int, str]]) -> list[dict[str, object]]:
    """The results of one report's tables (line number and text of each of their lines)."""
    first = next((t for _, t in lines if not regex.match(PIPE_TITLE, t)), "")
    if regex.match(GUIDELLM_CSV, first):
        return guidellm_csv(lines)
    if any(regex.match(shape, first) for shape in (GRID_TOP, RUN_HEAD, KEY_VALUE_HEAD, MD_METRIC, MD_HEAD, SPACED_HEAD)):
        return generic_tables(lines)
    if regex.match(HEADLESS_ROW, first):
        return headless_rows(lines)
    if first.lstrip().startswith("|"):
        return guidellm_rows(lines)
    if regex.match(r"^=+\s*$", first) or regex.match(TEXT_HEAD, first):
        return text_rows([(no, t) for no, t in lines if not regex.match(PIPE_TITLE, t)])
    if any(regex.search(r"┃\s*Benchmark\s*┃", t) for _, t in lines):
        return benchmark_box(lines)
    result = metric_result([t for _, t in lines if not regex.match(BOX_TITLE, t)] or [""])
    return [{"line_no": lines[0][0], **result}] if len(result) > 1 else []


def _reports(rows: pl.DataFrame) -> list[list[int]]:
    """Row indices of the table groups of each report: groups at most GAP lines apart."""
    reports: list[list[int]] = []
    end = None
    for i, (line_no, span) in enumerate(zip(rows["line_no"], rows["span"])):
        if end is None or line_no - end > GAP:
            reports.append([])
        reports[-1].append(i)
        end = line_no + span - 1
    return reports


def tables(rows: pl.DataFrame) -> pl.DataFrame:
    """Handler of the table kind: one bench row per result, on the line of its run (the
    first line of a metric table, the benchmark's row of a GuideLLM summary)."""
    rows = rows.sort("line_no")
    parts = []
    for report in _reports(rows):
        lines = [(no + k, text) for i in report
                 for no, body in [(rows["line_no"][i], rows["body"][i])]
                 for k, text in enumerate(body.split("\n"))]
        results = read_report(lines)
        if not results:  # a table that is no result: its lines go back to unparsed
            parts.append(rows[report].with_columns(unread=pl.lit(True)))
            continue
        found = pl.DataFrame(results, schema_overrides={k: v for k, v in BENCH.items()}, strict=False)
        template = rows[report[0]].drop("line_no")
        parts.append(pl.concat([template] * found.height).hstack(found.select(
            [c for c in found.columns if c in BENCH or c == "line_no"])))
    return pl.concat(parts, how="diagonal_relaxed") if parts else rows.clear()
