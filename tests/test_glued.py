"""Records whose newlines were lost are read one by one (loganalyze/formats/glued.py), and the MPI
tags `mpirun --tag-output` puts inside a line are taken out (loganalyze/wrappers.py).

The property tests run every one-line sample of every kind of the formats: glued after
another record of its format, with or without a space between, it gives the fields it
gives alone, and so does the record before it; with an MPI tag in front of it and the
same tag inside it, between two columns, it gives the fields it gives bare.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from test_leaders import PLACE, SEPARATOR

import loganalyze as la
from loganalyze import formats
from loganalyze.ingestion.dispatch import parse_batch
from loganalyze.wrappers import unwrap
from loganalyze.formats import glued, sglang, vllm
from loganalyze.formats.prefix import prefix_groups
from loganalyze.formats.spec import Context, LogFormat

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
RAY_JOINED = REAL / "vllm" / "44_v0-0.2.7-asyncllmengine-ray-prefix-joined-one-line.log"
TAGGED_ROWS = REAL / "nccl" / "103_all-reduce-perf-mpi-tag-output-rank-0-glued-busbw-collapse-above-32mb.log"
FORMATS = [f for f in formats.FORMATS.values() if isinstance(f, LogFormat)]
GLUED = [f for f in FORMATS if f.record_start]
# A header in each format's own layout, for the samples that are a message alone.
HEADER = {"vllm": "INFO 01-05 10:00:01 [loggers.py:122] ", "sglang": "[2026-01-05 10:00:01 TP0] ",
          "nccl": "host1:1:1 [0] "}
STATS_START = {"vllm": vllm.STATS_START, "sglang": sglang.STATS_START}
NCCL_GLUED = REAL / "nccl" / "85_wsl2-records-joined-on-one-line-libcuda-not-found.log"
CTX = dict(year=2026, base_date="2026-01-01")


def _one_line_samples(fmt: LogFormat) -> list[tuple[str, str]]:
    """(kind, sample) for each one-line sample of a kind that neither carries state from
    line to line nor takes the lines after it."""
    return [(k.name, s) for k in fmt.kinds if not (k.carry or k.continuation) for s in k.samples if "\n" not in s]


def _with_header(fmt: LogFormat, line: str) -> str:
    """`line` as a record with a header: its own, or the format's put in front of it (a
    record with no header glued to one with a header is cut only where one of the
    format's `record_marks` occurs twice: tests below glue bare stats records)."""
    stats_start = STATS_START.get(fmt.name)
    whole = pl.Series([line]).str.contains(f"^{glued.TAG}(?:{fmt.record_start})").item() \
        and not (stats_start and pl.Series([line]).str.contains(f"^(?:{stats_start})").item())
    return line if whole else HEADER[fmt.name] + line


def _records(fmt: LogFormat) -> list[str]:
    """The one-line samples as records that start where the format says one starts (NCCL's
    PyTorch lines have no NCCL envelope: nothing tells where one of them starts in a line)."""
    records = [_with_header(fmt, s) for _, s in _one_line_samples(fmt)]
    return [r for r in records if pl.Series([r]).str.contains(f"^{glued.TAG}(?:{fmt.record_start})").item()]


def _rows_by_line(fmt: LogFormat, lines: list[str], message: bool = True) -> dict[int, list[str]]:
    """Each line's rows over all tables (fields only, not where they came from, the message
    text only where `message`), as sorted reprs, from the same dispatch as an ingest."""
    raw = pl.DataFrame({"line_no": range(1, len(lines) + 1), "raw": lines}, schema={"line_no": pl.Int64, "raw": pl.String})
    frame = unwrap(raw.with_columns(text=pl.col("raw")), 2026)
    tables, _ = parse_batch(frame, fmt, Context(source="s", **CTX))
    out: dict[int, list[str]] = {}
    for table, parts in tables.items():
        for df in parts:
            keep = sorted(c for c in df.columns if c not in PLACE | {"glued"} | ({"message"} if not message else set())
                          and not c.endswith("_right"))
            for row, line_no in zip(df.select(keep).to_dicts(), df["line_no"]):
                out.setdefault(line_no, []).append(f"{table}: {row}")
    return {n: sorted(rows) for n, rows in out.items()}


def test_the_formats_whose_records_can_be_glued_declare_where_one_starts():
    assert {f.name for f in GLUED} == set(HEADER)


@pytest.mark.parametrize("fmt", GLUED, ids=lambda f: f.name)
@pytest.mark.parametrize("gap", [" ", ""], ids=["space", "none"])
def test_every_record_glued_after_another_parses_the_same(fmt, gap):
    records = _records(fmt)
    alone = _rows_by_line(fmt, [x for r in records for x in (r, SEPARATOR)])
    joined = _rows_by_line(fmt, [x for a, b in zip(records, records[1:]) for x in (a + gap + b, SEPARATOR)])
    wrong = []
    for i, (a, b) in enumerate(zip(records, records[1:])):
        want = sorted(alone.get(2 * i + 1, []) + alone.get(2 * i + 3, []))
        if joined.get(2 * i + 1, []) != want:
            wrong.append(f"{(a + gap + b)[:160]}\n  want: {want}\n  got:  {joined.get(2 * i + 1, [])}")
    assert records and not wrong, f"{len(wrong)} glued pairs parse differently:\n" + "\n".join(wrong[:10])


# Another writer's output that a record begins in the middle of (sglang/214: the end of
# Python's `Extension modules:` list).
OTHER_WRITER = "numpy.random._bounded_integers"


@pytest.mark.parametrize("fmt", GLUED, ids=lambda f: f.name)
def test_a_record_begun_inside_another_writers_output_gives_its_fields(fmt):
    """A record after text no format reads gives the kinds and fields it gives alone. (A
    record whose kind a format finds anywhere in a line is read in the first pass, the other
    writer's text left in its message.)"""
    records = _records(fmt)
    alone = _rows_by_line(fmt, [x for r in records for x in (r, SEPARATOR)], message=False)
    inside = _rows_by_line(fmt, [x for r in records for x in (OTHER_WRITER + r, SEPARATOR)], message=False)
    own = {n: [r for r in rows if not r.startswith("unparsed: ")] for n, rows in inside.items()}  # the other writer's
    wrong = [f"{(OTHER_WRITER + r)[:160]}\n  want: {alone.get(2 * i + 1)}\n  got:  {own.get(2 * i + 1)}"
             for i, r in enumerate(records) if own.get(2 * i + 1) != alone.get(2 * i + 1)]
    assert records and not wrong, f"{len(wrong)} records parse differently:\n" + "\n".join(wrong[:10])


def test_an_interleaved_line_keeps_the_other_writers_text_unparsed(tmp_path):
    """sglang/214: SGLang's `Received sigquit` begins inside a faulthandler frame (whose
    function name goes on the next line), the scheduler's exception after Python's module
    list. The frame stays the dump's, the list is its own record (a fatal error's), and the
    exception takes the traceback below it."""
    src = la.ingest([REAL / "sglang" / "214_eagle3-sigquit-interleaved-scheduler-exception.log"], run="r",
                    store=tmp_path).sources[0]
    assert src.lines - src.blank == sum(src.lines_by_table.values()) and src.glued == {"events": 2}
    events = la.open_run("r", tmp_path).table("events").collect().sort("line_no", "span")
    assert events.select("line_no", "kind", "span").rows() == [
        (1, "stack_dump", 2), (2, "child_failed", 1), (5, "fatal_error", 1), (5, "exception", 8)]


@pytest.mark.parametrize("fmt", [f for f in GLUED if f.name in STATS_START], ids=lambda f: f.name)
def test_stats_records_glued_without_their_headers_parse_the_same(fmt):
    """`... GPU KV cache usage: 0.1%Avg prompt throughput: ...`: a stats message is a record start too."""
    msgs = [prefix_groups(fmt.prefix, pl.Series([s])).struct.field("msg")[0] for k in fmt.kinds if k.table == "stats"
            for s in k.samples if "\n" not in s]
    msgs = [m for m in msgs if pl.Series([m]).str.contains(f"^(?:{fmt.record_start})").item()]
    alone = _rows_by_line(fmt, [x for m in msgs for x in (m, SEPARATOR)])
    joined = _rows_by_line(fmt, [x for a, b in zip(msgs, msgs[1:]) for x in (a + " " + b, SEPARATOR)])
    for i in range(len(msgs) - 1):
        assert joined.get(2 * i + 1) == sorted(alone[2 * i + 1] + alone[2 * i + 3]), msgs[i + 1]
    assert len(msgs) >= 2


def _tag_inside(line: str, tag: str) -> str | None:
    """`line` behind `tag`, with the tag again glued to the end of a token in its second
    half where a number follows (where mpirun cut nccl-tests' rows), or None where none does."""
    gaps = [m for m in pl.Series([line]).str.extract_all(r"\S\s+[-+]?\d").item()]
    if not gaps:
        return None
    at = line.rfind(gaps[-1]) + 1
    return tag + line[:at] + tag + line[at:]


# NCCL reads `[0] NCCL INFO` as the device (as tests/test_leaders.py's NOT_FOR): no tag for it.
TAGGED = [(f, tag) for tag in ("[1,0]<stdout>:", "[0]") for f in FORMATS if not (f.name == "nccl" and tag == "[0]")]


@pytest.mark.parametrize(("fmt", "tag"), TAGGED, ids=[f"{f.name}-{t}" for f, t in TAGGED])
def test_an_mpi_tag_inside_a_line_is_taken_out(fmt, tag):
    pairs = [(s, t) for _, s in _one_line_samples(fmt) if (t := _tag_inside(s, tag))]
    bare = _rows_by_line(fmt, [x for s, _ in pairs for x in (s, SEPARATOR)])
    tagged = _rows_by_line(fmt, [x for _, t in pairs for x in (t, SEPARATOR)])
    wrong = [t for i, (_, t) in enumerate(pairs) if bare.get(2 * i + 1) != tagged.get(2 * i + 1)]
    assert pairs and not wrong, f"{len(wrong)} tagged lines parse differently: {wrong[:5]}"


def test_nccls_own_device_brackets_are_no_tags():
    line = "[0] host1:13571:13571 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0"
    got = unwrap(pl.DataFrame({"raw": [line], "text": [line]}), 2026)["text"][0]
    assert got == line


def test_a_line_of_five_ray_stats_records_is_five_stats_rows(tmp_path):
    src = la.ingest([RAY_JOINED], run="r", store=tmp_path).sources[0]
    assert src.lines == 1 and src.lines_by_table == {"stats": 1} and src.glued == {"stats": 4} and src.tables["stats"] == 5
    stats = la.open_run("r", tmp_path).table("stats").collect()
    assert stats["line_no"].to_list() == [1] * 5
    assert stats["gen_throughput"].to_list() == [0.0, 77.3, 77.3, 76.8, 76.4]
    assert stats["token_usage"].to_list() == [0.001, 0.002, 0.003, 0.004, 0.005]
    assert stats["ts"].dt.strftime("%H:%M:%S").to_list() == ["11:26:53", "11:26:58", "11:27:03", "11:27:08", "11:27:13"]
    # Cut at the same places, the rows' raw text is the line again.
    assert "".join(stats.sort("ts")["raw"]) == RAY_JOINED.read_text().rstrip("\n")


def test_nccl_tests_rows_with_tags_inside_are_rows(tmp_path):
    src = la.ingest([TAGGED_ROWS], run="n", store=tmp_path).sources[0]
    assert src.format == "nccl-tests" and src.lines_by_table == {"nccl_perf": 10}
    rows = la.open_run("n", tmp_path).table("nccl_perf").collect().sort("line_no")
    assert rows["size"][0] == 1048576 and rows["oop_time_us"][0] == 1626.5 and rows["ip_busbw"][0] == 0.87
    assert rows["oop_busbw"].to_list()[5:7] == [29.5, 5.27]


def test_a_start_with_nothing_after_it_stays_with_the_next():
    """A header printed twice in front of one message (a logger whose output another
    logger prints again) is one record, not two."""
    line = "(APIServer pid=1) INFO 01-25 11:26:53 [launcher.py:1] INFO 01-25 11:26:53 [api_server.py:2] Started"
    frame = pl.DataFrame({"line_no": [1], "raw": [line], "text": [line]})
    assert glued.split(frame, glued.record_starts([formats.FORMATS["vllm"]]))["text"].to_list() == [line]


def test_lines_without_a_mark_twice_are_not_searched():
    line = "INFO 01-25 11:26:53 [loggers.py:1] Avg prompt throughput: 0.0 tokens/s, Running: 1 reqs"
    frame = pl.DataFrame({"line_no": [1], "raw": [line], "text": [line]})
    assert glued.split(frame, glued.Starts(r"Running", (".py:",), None))["glued"].to_list() == [0]


def test_records_of_one_line_are_claimed_one_by_one(tmp_path):
    """An NCCL record after a vLLM one on the same line: NCCL claims its own row only, and
    the line is still counted once (a fuzz case: the whole line was taken as claimed)."""
    log = tmp_path / "two.log"
    log.write_text("INFO 01-05 10:00:01 [api_server.py:1] Some message. INFO 01-05 10:00:02 [worker.py:2] "
                   "host1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n")
    src = la.ingest([log], run="t", store=tmp_path / "s", as_format="vllm").sources[0]
    assert sum(src.lines_by_table.values()) == src.lines == 1
    assert src.tables["events"] == 1 and src.lines_by_table["events"] == 1  # vLLM's record: its fallback event
    assert sum(n for t, n in src.tables.items() if t.startswith("nccl")) == 1


def test_a_line_of_nccl_records_is_one_row_per_record(tmp_path):
    """nccl/85 (a WSL2 log pasted without its newlines): each `host:pid:tid [dev] NCCL ...`
    record and the bare `NCCL version` line is cut into a row of its own, the host with it,
    so the WARN is read for what it says (libcuda.so not found), not with the socket and
    channel records glued after it."""
    src = la.ingest([NCCL_GLUED], run="n", store=tmp_path).sources[0]
    assert src.lines - src.blank == 2 and sum(src.lines_by_table.values()) == 2
    assert src.glued == {"nccl_comms": 6, "nccl_links": 3}
    run = la.open_run("n", tmp_path)
    (warn,) = run.table("events").collect().to_dicts()
    assert warn["message"].endswith("libcuda.so: cannot open shared object file: No such file or directory")
    assert '"category":"cuda_library_missing"' in warn["fields"]
    comms = run.table("nccl_comms").collect()
    assert comms.filter(pl.col("kind") == "version")["raw"].to_list() == ["NCCL version 2.18.1+cuda12.1 "]
    assert comms["host"].drop_nulls().unique().to_list() == ["host1"]
