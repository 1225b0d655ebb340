"""AIPerf's server-metrics exports: `server_metrics_export.json` and `.csv` (AIPerf 0.13), and
the scrapes themselves, `server_metrics_export.jsonl`.

While it runs its load, AIPerf scrapes the server's Prometheus `/metrics` about once a
second and writes, per metric series, statistics over the profiling phase: for a gauge
(vLLM's `num_requests_running`, `kv_cache_usage_perc`) avg, min, max, std and p1-p99; for a
counter (`num_preemptions`) its increase over the phase (`total`) and rates; for a
histogram the count and sum added and estimated percentiles, with its buckets. Both files
hold the same statistics; only the JSON says when (the phase's start and end), so only its
rows carry `ts` (the end) and `since` (the start).

Each statistic is a row of the `metrics` table a `/metrics` scrape fills
(loganalyze/formats/prometheus.py): `name` as AIPerf prints it (counters without `_total`), `labels`
as Prometheus text (`engine="0",model_name="m"`, keys sorted as vLLM prints them), `stat`
the statistic (a scrape's own samples have none), `value`, `endpoint` the server scraped.
A histogram's buckets are rows of `<name>_bucket` with an `le` label and stat `total`,
as Prometheus names them; an info metric (`vllm:cache_config_info`) is one row of value 1
whose labels are its keys. How the tables count a series once when a scrape and an export
both hold it: docs/formats-sources.md#server-metrics.

The JSONL (`--server-metrics-formats jsonl`) is one scrape of one endpoint a line: its
`timestamp_ns`, `endpoint_url` and every metric family's samples as the endpoint gave them
(a counter or gauge `value`, a histogram's cumulative buckets with `sum` and `count`, a
summary's quantiles). Each sample is a row as a `/metrics` scrape's would be
(loganalyze/formats/prometheus.py): `ts` and `scrape_ts_ms` the scrape's time, a histogram's
buckets `<name>_bucket` rows with their `le`, its `<name>_sum` and `<name>_count`.

The Parquet (`--server-metrics-formats parquet`) is the same scrapes as a table, one sample a
row: `endpoint_url`, `metric_name`, `metric_type`, `unit`, `description`, `timestamp_ns`, a
column per label, `value`, and for a histogram one row per bucket (`bucket_le`,
`bucket_count`, the series' `sum` and `count` repeated). The reader hands its rows over as
lines of JSON (loganalyze/reader.py); each row is a `metrics` row as the JSONL's sample would
be, a bucket row a `<name>_bucket` row with its `le`, and the `+Inf` row also gives `<name>_sum`
and `<name>_count`. AIPerf writes a counter as its increase since the first scrape of the
profiling phase, not since the server started (docs/formats-sources.md#server-metrics).
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

import polars as pl

from loganalyze.formats.parse import Parsed
from loganalyze.formats.spec import Context, FileFormat
from loganalyze.formats.prometheus import TABLES as PROMETHEUS_TABLES

CSV_TITLE = "# AIPerf Server Metrics Export"
CSV_HEADER = re.compile(r"^Endpoint,(?:Type,)?Metric,")
# The CSV's columns that hold a statistic; the others between Unit and Description are labels.
STAT_COLUMN = re.compile(r"^(?:avg|min|max|std|total|count|sum|rate(?:_avg|_min|_max|_std)?|count_rate|sum_rate|"
                         r"p\d+(?:\.\d+)?(?:_estimate)?)$")


@dataclass
class Series:
    """One metric series as either export holds it."""

    line_no: int
    endpoint: str
    name: str
    metric_type: str
    help: str
    labels: dict[str, str]
    stats: dict[str, float]
    buckets: dict[str, float] = field(default_factory=dict)
    raw: str = ""


def label_text(labels: dict[str, str]) -> str:
    """Labels as a Prometheus sample prints them, keys sorted (vLLM's own order)."""
    return ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))


def _number(value: object) -> float | None:
    try:
        return float(value) if value not in (None, "") and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def json_series(doc: dict, frame: pl.DataFrame) -> list[Series]:
    """The series of the JSON export; each row's line is the line that opens its metric."""
    keys = frame.select("line_no", key=pl.col("text").str.extract(r'^\s*"([^"]+)": \{\s*$')) \
        .drop_nulls("key").unique("key", keep="first")
    opens = dict(zip(keys["key"].to_list(), keys["line_no"].to_list()))
    first = int(frame["line_no"][0])
    metrics = doc.get("metrics") if isinstance(doc.get("metrics"), dict) else {}
    out = []
    for name, metric in metrics.items():
        if not isinstance(metric, dict):
            continue
        for s in metric.get("series") or []:
            if not isinstance(s, dict):
                continue
            stats = {k: v for k, v in ((k, _number(v)) for k, v in (s.get("stats") or {}).items()) if v is not None}
            buckets = {k: v for k, v in ((k, _number(v)) for k, v in (s.get("buckets") or {}).items()) if v is not None}
            out.append(Series(opens.get(name, first), _endpoint(s.get("endpoint_url") or ""), name,
                              str(metric.get("type") or ""), str(metric.get("description") or ""),
                              {str(k): str(v) for k, v in (s.get("labels") or {}).items()}, stats, buckets,
                              json.dumps({"metric": name, **s}, separators=(",", ":"))))
    return out


def _endpoint(url: str) -> str:
    """`http://127.0.0.1:8000/metrics` as the CSV prints it: `127.0.0.1:8000`."""
    return re.sub(r"^\w+://|/metrics$", "", url)


def csv_series(texts: list[str], numbers: list[int]) -> tuple[list[Series], list[int]]:
    """The series of the CSV export and the lines read: one section per metric type, each
    under its header row; the info section (`Endpoint,Metric,Key,Value`) holds one row per
    label of a series. A line before the first header (not a comment) is not read."""
    out: list[Series] = []
    header: list[str] = []
    claimed: list[int] = []
    for line_no, text in zip(numbers, texts):
        cells = _cells(text)
        if cells is None:
            continue
        if CSV_HEADER.match(text) or text.startswith("#"):
            header = cells if CSV_HEADER.match(text) else header
            claimed.append(line_no)
            continue
        if not header:
            continue
        claimed.append(line_no)
        row = dict(zip(header, cells))
        if "Key" in row:
            _add_info(out, row, line_no, text)
            continue
        columns = header[header.index("Unit") + 1:header.index("Description")] \
            if "Unit" in header and "Description" in header else []
        stats = {c: v for c in columns if STAT_COLUMN.match(c) and (v := _number(row.get(c))) is not None}
        labels = {c: row[c] for c in columns if not STAT_COLUMN.match(c) and row.get(c)}
        buckets = dict(pair.split("=", 1) for pair in (row.get("buckets") or "").split(";") if "=" in pair)
        out.append(Series(line_no, row.get("Endpoint", ""), row.get("Metric", ""), row.get("Type", ""),
                          row.get("Description", ""), labels, stats,
                          {k: n for k, v in buckets.items() if (n := _number(v)) is not None}, text))
    return out, claimed


def _cells(text: str) -> list[str] | None:
    """One CSV line's cells (each line on its own: a quote left open must not swallow the
    lines below it), None where it is no CSV."""
    try:
        return next(csv.reader([text]), [])
    except csv.Error:
        return None


def _add_info(out: list[Series], row: dict[str, str], line_no: int, text: str) -> None:
    """An info row (one label of an info metric) folded into the series the row before
    opened, or opening its own: the JSON's one series whose labels are all the keys."""
    last = out[-1] if out else None
    if last is None or last.metric_type != "info" or (last.name, last.endpoint) != (row.get("Metric"),
                                                                                   row.get("Endpoint")):
        last = Series(line_no, row.get("Endpoint", ""), row.get("Metric", ""), "info", row.get("Description", ""),
                      {}, {}, raw=text)
        out.append(last)
    last.labels[row["Key"]] = row.get("Value", "")


def rows(series: list[Series], since: datetime | None, until: datetime | None) -> list[dict]:
    """One `metrics` row per statistic of each series, and per bucket of a histogram."""
    out = []
    for s in series:
        base = {"line_no": s.line_no, "kind": "server_metric", "raw": s.raw, "endpoint": s.endpoint,
                "metric_type": s.metric_type, "help": s.help, "ts": until, "since": since}
        labels = label_text(s.labels)
        if s.metric_type == "info":
            out.append({**base, "name": s.name, "labels": labels, "value": 1.0})
            continue
        out += [{**base, "name": s.name, "labels": labels, "stat": stat, "value": value}
                for stat, value in s.stats.items()]
        out += [{**base, "name": f"{s.name}_bucket", "labels": label_text({**s.labels, "le": le}), "stat": "total",
                 "value": value} for le, value in s.buckets.items()]
    return out


def _when(text: object) -> datetime | None:
    """AIPerf's phase start or end (ISO, the UTC wall clock its logs print)."""
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


# A scrape line's start: AIPerf writes `endpoint_url` or `timestamp_ns` first (releases differ).
SCRAPE = re.compile(r'^\{"(?:endpoint_url|timestamp_ns)":')
# A histogram's buckets: `histogram` in the releases of the real line (bench/93), `buckets` in later docs.
BUCKETS = ("histogram", "buckets")
# A row of the Parquet export, as the reader gives it: its endpoint, then its metric's name.
SERIES_ROW = re.compile(r'^\{"endpoint_url":"[^"]*","metric_name":')
QUANTILES = ("summary", "quantiles")


def scrape_rows(line_no: int, record: dict) -> list[dict]:
    """The `metrics` rows of one JSONL scrape: one per sample, bucket and quantile."""
    ns = record.get("timestamp_ns")
    when = datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).replace(tzinfo=None) if isinstance(ns, (int, float)) else None
    base = {"line_no": line_no, "kind": "server_scrape", "endpoint": _endpoint(str(record.get("endpoint_url") or "")),
            "ts": when, "scrape_ts_ms": ns / 1e6 if when else None}
    out = []
    metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
    for name, samples in metrics.items():
        for sample in samples if isinstance(samples, list) else []:
            if not isinstance(sample, dict):
                continue
            labels = {str(k): str(v) for k, v in (sample.get("labels") or {}).items()}
            row = {**base, "raw": json.dumps({"metric": name, **sample}, separators=(",", ":"))}
            buckets = next((sample[k] for k in BUCKETS if isinstance(sample.get(k), dict)), None)
            quantiles = next((sample[k] for k in QUANTILES if isinstance(sample.get(k), dict)), None)
            if buckets is not None or quantiles is not None:
                kind, key, family = ("histogram", "le", buckets) if buckets is not None else ("summary", "quantile",
                                                                                            quantiles)
                own = f"{name}_bucket" if buckets is not None else name
                out += [{**row, "name": own, "labels": label_text({**labels, key: str(k)}), "value": v,
                         "metric_type": kind} for k, v0 in family.items() if (v := _number(v0)) is not None]
                out += [{**row, "name": f"{name}_{part}", "labels": label_text(labels), "value": v, "metric_type": kind}
                        for part in ("sum", "count") if (v := _number(sample.get(part))) is not None]
            elif (v := _number(sample.get("value"))) is not None:
                out.append({**row, "name": name, "labels": label_text(labels), "value": v})
    return out


def scrapes(frame: pl.DataFrame) -> tuple[list[dict], list[int]]:
    """The rows of every JSONL scrape and the lines read; a line that is no scrape (cut
    short, another object) is not read."""
    out, claimed = [], []
    for line_no, text in zip(frame["line_no"].to_list(), frame["text"].to_list()):
        try:
            record = json.loads(text)
        except ValueError:
            continue
        if isinstance(record, dict) and "metrics" in record and ("timestamp_ns" in record or "endpoint_url" in record):
            out += scrape_rows(line_no, record)
            claimed.append(line_no)
    return out, claimed


# The Parquet export's own columns; every other column is a label (AIPerf's ServerMetricsParquetExporter).
SERIES_COLUMNS = ("endpoint_url", "metric_name", "metric_type", "unit", "description", "timestamp_ns", "value", "sum",
                  "count", "bucket_le", "bucket_count")


def series_rows(frame: pl.DataFrame) -> tuple[pl.DataFrame | None, list[int]]:
    """The `metrics` rows of the Parquet export's rows (each a line of JSON), and the lines
    read; a line that is no such row (cut short, another object) is not read."""
    whole = frame.filter(pl.col("text").str.starts_with('{"') & pl.col("text").str.ends_with("}"))
    keys = whole.select(pl.col("text").str.extract_all(r'"([A-Za-z_][A-Za-z0-9_.:-]*)":').explode()
                        .str.slice(1).str.strip_suffix('":').unique().sort())["text"].drop_nulls().to_list()
    numbers = {"timestamp_ns": pl.Int64, "value": pl.Float64, "sum": pl.Float64, "count": pl.Float64,
               "bucket_count": pl.Float64}
    dtype = pl.Struct([pl.Field(k, numbers.get(k, pl.String)) for k in keys])
    try:
        rows = whole.select("line_no", "text", row=pl.col("text").str.json_decode(dtype)).unnest("row")
    except pl.exceptions.PolarsError:  # a line that is no JSON object after all
        return None, []
    needed = ("metric_name", "timestamp_ns")
    if any(c not in rows.columns for c in needed):
        return None, []
    rows = rows.filter(pl.col("metric_name").is_not_null() & pl.col("timestamp_ns").is_not_null())
    rows = rows.with_columns(*(pl.lit(None, pl.Float64).alias(c) for c in ("value", "sum", "count", "bucket_count")
                               if c not in rows.columns),
                             *(pl.lit(None, pl.String).alias(c) for c in ("endpoint_url", "metric_type", "description",
                                                                          "bucket_le") if c not in rows.columns))
    labels = sorted(c for c in rows.columns if c not in SERIES_COLUMNS and c not in ("line_no", "text"))
    rows = rows.with_columns(le=pl.col("bucket_le"))

    def label_expr(keys: list[str]) -> pl.Expr:
        pairs = [pl.when(pl.col(k).is_not_null()).then(pl.format('{}="{}"', pl.lit(k), pl.col(k).cast(pl.String)))
                 for k in keys]
        return pl.concat_str(pairs, separator=",", ignore_nulls=True) if pairs else pl.lit("")

    ns = pl.col("timestamp_ns").cast(pl.Int64)
    base = dict(line_no="line_no", raw="text", kind=pl.lit("server_scrape"), metric_type="metric_type",
                help="description", endpoint=pl.col("endpoint_url").str.replace(r"^\w+://", "").str.replace(r"/metrics$", ""),
                ts=pl.from_epoch(ns // 1000, time_unit="us"), scrape_ts_ms=ns / 1e6)
    bucket = pl.col("bucket_le").is_not_null()
    plain = rows.filter(~bucket & pl.col("value").is_not_null()).select(
        **base, name="metric_name", labels=label_expr(labels), value="value")
    buckets = rows.filter(bucket & pl.col("bucket_count").is_not_null()).select(
        **base, name=pl.col("metric_name") + "_bucket", labels=label_expr(sorted([*labels, "le"])), value="bucket_count")
    totals = [rows.filter(pl.col("bucket_le") == "+Inf").select(
        **base, name=pl.col("metric_name") + f"_{part}", labels=label_expr(labels), value=part)
        .filter(pl.col("value").is_not_null()) for part in ("sum", "count")]
    out = pl.concat([plain, buckets, *totals], how="vertical_relaxed").sort("line_no", maintain_order=True)
    return out, rows["line_no"].to_list()


def _parsed(frame: pl.DataFrame, found: list[dict] | pl.DataFrame | None, claimed: list[int]) -> Parsed:
    schema = {c: t for c, t in PROMETHEUS_TABLES["metrics"].items() if c != "source"}
    if isinstance(found, pl.DataFrame):
        found = found.select(pl.col(c).cast(t) if c in found.columns else pl.lit(None, t).alias(c)
                             for c, t in schema.items()) if found.height else None
    else:
        found = pl.DataFrame(found, schema=schema) if found else None
    tables = {"metrics": found} if found is not None else {}
    claimed = sorted(set(claimed)) if found is not None else []
    return Parsed(tables=tables, lines={"metrics": len(claimed)} if claimed else {},
                  claimed=frame["line_no"].is_in(claimed), claimed_lines=pl.Series(claimed, dtype=pl.Int64))


def read(frame: pl.DataFrame, ctx: Context) -> Parsed:
    texts, numbers = frame["text"].to_list(), frame["line_no"].to_list()
    since = until = None
    if SERIES_ROW.match(texts[0].lstrip()):
        return _parsed(frame, *series_rows(frame))
    if SCRAPE.match(texts[0].lstrip()):
        return _parsed(frame, *scrapes(frame))
    if texts[0].lstrip().startswith("{"):
        try:
            doc = json.loads("\n".join(texts))
        except ValueError:
            doc = None
        if not isinstance(doc, dict):  # cut short or not the export: nothing of it is read
            return Parsed(tables={}, lines={}, claimed=pl.Series([False] * frame.height))
        summary = doc.get("summary") if isinstance(doc.get("summary"), dict) else {}
        since, until = _when(summary.get("start_time")), _when(summary.get("end_time"))
        series, claimed = json_series(doc, frame), numbers
    else:
        series, claimed = csv_series(texts, numbers)
    return _parsed(frame, rows(series, since, until), claimed)


def sniff(head: str) -> float:
    """AIPerf's server-metrics JSON (its summary names the scraped endpoints), JSONL (a scrape
    a line: its endpoint, its time in ns and its metrics), Parquet (a sample a row: its
    endpoint, metric name and time in ns) or CSV (its title comment, or a
    section header `Endpoint,Type,Metric,Unit,...`)."""
    if head.lstrip().startswith("{") and '"endpoints_configured"' in head and '"metrics"' in head:
        return 1.0
    if SCRAPE.match(head.lstrip()) and '"timestamp_ns":' in head and '"metrics":' in head:
        return 1.0
    if SERIES_ROW.match(head.lstrip()) and '"timestamp_ns":' in head:
        return 1.0
    first = next((line for line in head.split("\n") if line.strip()), "")
    if first.startswith(CSV_TITLE) or re.match(r"^Endpoint,Type,Metric,Unit,", first):
        return 1.0
    return 0.0


def one_record_a_line(head: str) -> bool:
    """The JSONL (a scrape a line) and the Parquet export (a sample a row) read batch by
    batch: no row of theirs needs another; the JSON and CSV are documents, read whole."""
    first = head.lstrip()
    return bool(SERIES_ROW.match(first) or SCRAPE.match(first))


FORMAT = FileFormat(
    name="server-metrics",
    description=("AIPerf's server_metrics_export.json, .csv, .jsonl and .parquet (the server's Prometheus metrics "
                 "over a run)"),
    sniff=sniff,
    read=read,
    by_batch=one_record_a_line,
    releases="AIPerf 0.13",
    row_kinds=("server_metric", "server_scrape"),
)
