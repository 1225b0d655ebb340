"""Benchmark results printed as text tables of any drawing (loganalyze/formats/text_tables.py): grids,
pipe and markdown tables of runs or of metrics, and rows pasted without their header, each
read from a real paste into the bench columns."""

from __future__ import annotations

import pytest

from conftest import sample
from loganalyze.formats import text_tables


def rows(run) -> list[dict]:
    return run.table("bench").sort("line_no").collect().to_dicts()


def numbered(prefix: str) -> list[tuple[int, str]]:
    return list(enumerate(sample("bench", prefix).read_text().splitlines(), start=1))


def test_tabulate_grid_of_runs_one_row_each(ingest_one):
    """bench/69: sglang bench_serving results as a `+----+` grid, one row per max_concurrency."""
    _, run = ingest_one(sample("bench", "69_"))
    one, four = rows(run)
    assert (one["max_concurrency"], four["max_concurrency"]) == (1, 4)
    assert (one["ttft_mean"], one["ttft_median"], one["tpot_p99"]) == (138.884, 139.747, 9.21)
    assert (four["ttft_p99"], four["output_throughput"]) == (1278.265, 376.367)


def test_ais_bench_grid_of_metrics_reads_the_total_stage(ingest_one):
    """bench/67: one result from `Stage total` rows with Average, Median, P90, P99 columns;
    Min and P75 are no bench columns; N of the per-request rows (E2EL, TTFT: one sample a
    completed request) is the requests that completed."""
    _, run = ingest_one(sample("bench", "67_"))
    (row,) = rows(run)
    assert row["tool"] == "ais_bench" and row["line_no"] == 2  # the grid's top border
    assert (row["e2e_mean"], row["e2e_p99"], row["ttft_mean"], row["ttft_median"]) == (91610.4, 130826.5, 7437.1, 4633.0)
    assert row["completed"] == 128


def test_evalscope_key_value_grid(ingest_one):
    """bench/62: evalscope's `Key | Value` grid, its rows read by their labels' words."""
    _, run = ingest_one(sample("bench", "62_"))
    (row,) = rows(run)
    assert (row["completed"], row["failed"], row["max_concurrency"]) == (20, 0, 1)
    assert (row["duration_s"], row["output_throughput"], row["e2e_mean"]) == (605.768, 32.2219, 30287.4)


@pytest.mark.parametrize(("prefix", "first"), [("68_", (1, 128, 128, 212.8, 29.5)), ("72_", (1, 128, 128, 92.7, 38.7))])
def test_markdown_tables_of_runs(ingest_one, prefix, first):
    """bench/68 and 72: one markdown row per run, under two reports' own headers (`Concurrency`
    / `Concur`, `TTFT (ms)` / `TTFT Avg (ms)`)."""
    _, run = ingest_one(sample("bench", prefix))
    found = rows(run)
    assert len(found) == 4
    head = found[0]
    assert (head["max_concurrency"], head["input_len"], head["output_len"], head["ttft_mean"], head["tpot_mean"]) == first
    assert [r["max_concurrency"] for r in found] == [1, 32, 1, 32]


def test_headerless_box_rows_read_by_the_one_client_of_their_width(ingest_one):
    """bench/66: AIPerf rows without the header: read as AIPerf's table, marked partial."""
    _, run = ingest_one(sample("bench", "66_"))
    (row,) = rows(run)
    assert (row["tool"], row["partial"]) == ("aiperf", True)
    assert (row["output_throughput"], row["request_throughput"], row["completed"]) == (5388.43, 1.8, 100)


def test_headerless_percentile_rows_read_as_evalscope_seconds_layout(ingest_one):
    """bench/233: evalscope's nine-cell percentile rows without their header: read as its
    0.15-1.6 table (seconds), only the percentiles that are bench columns, marked partial."""
    _, run = ingest_one(sample("bench", "233_"))
    (row,) = rows(run)
    assert (row["tool"], row["partial"]) == ("evalscope", True)
    assert (row["ttft_median"], row["ttft_p99"], row["itl_p99"]) == (0.0, 0.0, None)  # `nan` is no value
    assert (round(row["e2e_median"], 1), round(row["e2e_p99"], 1)) == (89155.9, 92180.4)
    assert row["output_throughput"] is None  # the per-request throughput column is no run's


def test_percentile_grid_completes_the_summary_above_it(ingest_one):
    """bench/278: evalscope's `Percentile results:` grid (header rule drawn with dashes, as its
    border) adds its percentiles to the `Benchmarking summary:` run above it: one run."""
    _, run = ingest_one(sample("bench", "278_"))
    (row,) = [r for r in rows(run) if r["kind"] == "result_table"]
    assert (row["completed"], row["max_concurrency"], row["output_throughput"]) == (200, 5, 50.9187)
    assert (row["ttft_mean"], row["ttft_median"], round(row["ttft_p99"], 1)) == (441.5, 346.4, 2029.8)
    assert (round(row["e2e_median"], 1), round(row["e2e_p99"], 1), row["itl_p99"]) == (19771.3, 63345.9, 240.1)


def test_headerless_rows_of_no_known_width_are_not_read():
    """The ais_bench grid's body without its header has no known client's width: not guessed."""
    body = [(no, text) for no, text in numbered("67_") if no >= 5 and "│" in text]
    assert body and text_tables.headless(body) is None


def test_cut_block_and_text_summary(ingest_one):
    """bench/65: a block whose banner a paste cut starts again at its duration row; bench/63:
    ai-on-gke's text summary, found by its `Successful/total requests` row."""
    _, run = ingest_one(sample("bench", "65_"))
    first, second = rows(run)
    assert (first["duration_s"], first["ttft_mean"], first["partial"]) == (506.31, 70.57, True)
    assert second["duration_s"] == 502.48
    _, run = ingest_one(sample("bench", "63_"), name="gke")
    (row,) = rows(run)
    assert (row["completed"], row["failed"], row["ttft_mean"]) == (60, 0, 440.0)


NVIDIA_SMI = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 450.57       Driver Version: 450.57       CUDA Version: 11.0     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  TITAN Xp            On   | 00000000:17:00.0 Off |                  N/A |
| 23%   39C    P8     9W / 250W |      7MiB / 12196MiB |      0%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
"""


def test_a_table_that_is_no_result_stays_in_unparsed(ingest_one, tmp_path):
    """nvidia-smi's grid pasted above a server log starts a table that no bench column
    names: its lines are no bench row, so they must be kept in `unparsed`, not counted typed."""
    log = tmp_path / "smi-then-sglang.log"
    log.write_text(NVIDIA_SMI + sample("sglang", "01_").read_text())
    _, run = ingest_one(log)
    assert run.table("bench").collect().height == 0
    unparsed = run.table("unparsed").sort("line_no").collect()
    assert unparsed["line_no"].to_list()[:10] == list(range(1, 11))


def test_plain_table_of_spaces_reads_the_columns_its_header_names(ingest_one):
    """bench/92: Model Analyzer's console, columns two or more spaces apart and no rules. The
    header's words decide: `Concurrency`, `p99 Time To First Token (ms)`, `p99 Inter Token
    Latency (ms)` and `Output Token Throughput` map; `Throughput (infer/sec)` and `p99 Latency
    (ms)` name no one bench column and are not read. The GPU table under it (other widths, no
    measure in its header) gives no result."""
    result, run = ingest_one(sample("bench", "92_"))
    (row,) = rows(run)
    assert (row["line_no"], row["max_concurrency"], row["ttft_p99"], row["itl_p99"]) == (3, 1, 47704.6, 11.3)
    assert row["output_throughput"] == 76192.3
    assert row["request_throughput"] is None and row["e2e_p99"] is None


def test_plain_rows_of_another_width_are_not_read():
    """A row whose cells do not line up with the header's (an empty cell, a line of another
    table) is no row of it: never read into the wrong columns."""
    lines = numbered("92_")
    header, body = text_tables.spaced_cells([lines[1], lines[2], lines[6]])  # a GPU row under the inference header
    assert len(header[0]) == 12 and [no for no, _ in body] == [3]
