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

This module finds the tables and the reports they make up; loganalyze/formats/box_tables.py reads
GenAI-Perf's and AIPerf's, loganalyze/formats/guidellm_tables.py GuideLLM's, and
loganalyze/formats/result_cells.py the cells all of them share.
"""

from __future__ import annotations

import polars as pl
import regex

from loganalyze.formats import text_tables
from loganalyze.formats.bench_tables import BENCH
from loganalyze.formats.box_tables import BOX_BELOW, benchmark_box, metric_result, metric_rows
from loganalyze.formats.guidellm_tables import guidellm_csv, guidellm_rows


BOX_TITLE = r"^\s*(?:NVIDIA )?(?:GenAI-Perf|AIPerf)\b.*\bMetrics\b|^\s*LLM Metrics\s*$"

# The top border, or the header row where a paste lost the border.
BOX_TOP = r"^[\s│]*┏━|^[\s│]*┃\s*(?:Statistic|Metric|Benchmark)\s*┃"

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

# A markdown table's header row that names what it measures, with or without its outer pipes
# and with bold cells (`|**Benchmark**|**Latency (ms)**|**Accept Length**|`, `bs | steps | ... |
# acc len`: SpecForge's bench_eagle3 tables pasted into issues, bench/295-296 of hold-out 15).
# Its first cell is a word, not a number: a header, not a row.
MD_TABLE_HEAD = (r"(?i)^\s*\|?\s*\**[A-Za-z][^|]{0,60}\|(?:[^|]*\|)*?\s*\**[^|]{0,40}"
                 r"\b(?:latency|throughput|ttft|tpot|acc(?:ept(?:ance)?)?[ _]len(?:gth)?)\b[^|]{0,40}(?:\||$)")

# Its rows where a table has two columns (`1 | 222.47`): one pipe with a cell either side.
MD_PAIR_ROW = r"^\s*[^|\s][^|]*\|\s*[^|\s][^|]*$"

# evalscope's summary as a markdown table (`| Key | Value |`).
KEY_VALUE_HEAD = r"^\s*\|\s*Key\s*\|\s*Value\s*\|\s*$"

# A row pasted without its header (text_tables.HEADLESS): AIPerf's box row (a quantity with its
# unit, then a number) or evalscope's percentile row (a percentile, then 8 numbers).
HEADLESS_ROW = (r"^\s*│\s*[A-Z][^│]*\([^│()]+\)\s*│\s*[-+]?\d[\d,.]*\s*│"
                r"|^\s*[|│]\s*(?:\d{1,2}%|min|max)\s*[|│](?:\s*(?:[-+]?\d[\d.]*|nan)\s*[|│]){8}\s*$")

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

# The widest line a table is read from, in characters: wider than any client draws. The
# reader's shape checks run in Python's backtracking `regex`, and some are quadratic in a
# line's length (a 93,000-space line took 80 s on MD_HEAD); a report with a wider line is
# no table (but a CSV export: `readable`), its lines stay in unparsed.
WIDEST = 4096

START = "|".join((BOX_TITLE, BOX_TOP, CSV_HEAD, PIPE_TITLE, PIPE_TOP, GUIDELLM_CSV, TEXT_HEAD, MD_METRIC, GRID_TOP,
                  RUN_HEAD, KEY_VALUE_HEAD, SPACED_HEAD, MD_TABLE_HEAD))

CONTINUATION = "|".join((BOX_ROW, CSV_ROW, PIPE_ROW, CSV_ANY_ROW, TEXT_ROW, GRID_ROW, SPACED_ROW, MD_PAIR_ROW))

ORPHAN = "|".join((MD_HEAD, HEADLESS_ROW))

NEEDLES = ("Metrics", "┏━", "Statistic ┃", "Metric ┃", "Run Info,", "Metric,", "Statistic,", "Info", "Statistics",
           "Stats", "|=", "Metadata", "Throughput", "Latency", "TTFT", "TPOT", "ITL", "+---", "╒═══", "┌───",
           "ttft_", "_ttft", "Key",
           # A markdown header in lower case (`bs | throughput | acc len`): its pipe with the word, since
           # the bare words are in every SGLang decode line (`gen throughput`, `accept len`).
           "| throughput", "|throughput", "| latency", "|latency", "| acc", "|acc")

# Tables of one report are at most this many lines apart (blank lines between them).
GAP = 3


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


def generic_tables(lines: list[tuple[int, str]]) -> list[dict[str, object]]:
    """The results of each table of a report, read by loganalyze/formats/text_tables.py: a table ends
    where the report's lines skip one (a blank line) or where a markdown header that no
    rule is drawn above starts the next one."""
    starts = [i for i, (no, text) in enumerate(lines)
              if i == 0 or no != lines[i - 1][0] + 1
              or (regex.match(MD_HEAD, text) and not regex.match(text_tables.RULE, lines[i - 1][1]))]
    out: list[dict[str, object]] = []
    for run in (run for a, b in zip(starts, [*starts[1:], len(lines)]) for run in text_tables.read(lines[a:b])):
        if run.pop(text_tables.PERCENTILES, False) and out:
            out[-1] = {**run, **out[-1]}  # a table of percentiles adds its tails to the run above it
        else:
            out.append(run)
    return out


def headless_rows(lines: list[tuple[int, str]]) -> list[dict[str, object]]:
    """Box rows pasted without their header, read as the one client's table of their width
    (loganalyze/formats/text_tables.py HEADLESS): `partial`, as what they are comes from their width."""
    known = text_tables.headless(lines)
    if not known:
        return []
    tool, header, body = known
    if header[0] == "Percentiles":
        found = text_tables.percentiles(header, list(enumerate(body)), lines[0][0])
        return [{**{k: v for k, v in run.items() if k != text_tables.PERCENTILES}, "tool": tool, "partial": True}
                for run in found]
    result = metric_rows(header, body)
    if not any(key != "extra" for key in result):
        return []
    return [{"line_no": lines[0][0], "tool": tool, "partial": True, **result}]


def read_report(lines: list[tuple[int, str]]) -> list[dict[str, object]]:
    """The results of one report's tables (line number and text of each of their lines)."""
    first = next((t for _, t in lines if not regex.match(PIPE_TITLE, t)), "")
    if regex.match(GUIDELLM_CSV, first):
        return guidellm_csv(lines)
    if any(regex.match(shape, first) for shape in (GRID_TOP, RUN_HEAD, KEY_VALUE_HEAD, MD_METRIC, MD_HEAD, SPACED_HEAD,
                                                    MD_TABLE_HEAD)):
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


def readable(lines: list[tuple[int, str]]) -> bool:
    """A report is read when no line of it is wider than WIDEST, or when it is a GuideLLM
    CSV export, whose rows (13,000 characters in a sweep) the csv module splits."""
    return bool(lines) and (regex.match(GUIDELLM_CSV, lines[0][1]) is not None
                            or all(len(text) <= WIDEST for _, text in lines))


def tables(rows: pl.DataFrame) -> pl.DataFrame:
    """Handler of the table kind: one bench row per result, on the line of its run (the
    first line of a metric table, the benchmark's row of a GuideLLM summary)."""
    rows = rows.sort("line_no")
    parts = []
    for report in _reports(rows):
        lines = [(no + k, text) for i in report
                 for no, body in [(rows["line_no"][i], rows["body"][i])]
                 for k, text in enumerate(body.split("\n"))]
        results = read_report(lines) if readable(lines) else []
        if not results:  # a table that is no result: its lines go back to unparsed
            parts.append(rows[report].with_columns(unread=pl.lit(True)))
            continue
        found = pl.DataFrame(results, schema_overrides={k: v for k, v in BENCH.items()}, strict=False)
        template = rows[report[0]].drop("line_no")
        parts.append(pl.concat([template] * found.height).hstack(found.select(
            [c for c in found.columns if c in BENCH or c == "line_no"])))
    return pl.concat(parts, how="diagonal_relaxed") if parts else rows.clear()
