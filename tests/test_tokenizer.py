"""The compiled tokenizer (loganalyze/formats/_tokenizer.c) against the regexes it stands for, its
kind ids against polars' literal `str.contains`, and on hostile input: long lines, NUL
bytes, invalid UTF-8, CR-only files, bad buffers.

The regexes below are the tokenizer's definition (its header, docs/speed.md), applied
with polars as a second reading of the same rule; no code of the package uses them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pyarrow as pa
import polars as pl
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from loganalyze import formats
from loganalyze.formats import _tokenizer, classify, fields, keys, sglang, vllm
from loganalyze.formats.spec import Key, LineKind

VALUE = r"([^ ,]+?)\.?(?:[ ,]|$)"
PAIR = r"[,.] [#A-Za-z][^:,]*?: [^ ,]+"


def by_regex(kind: LineKind, body: pl.Series) -> pl.DataFrame:
    """Each key's text (`(?:^|[,.] )KEY SEP VALUE`, first match) and the unknown pairs."""
    out = {}
    for i, k in enumerate(kind.keys):
        out[f"k{i}"] = body.str.extract(rf"(?:^|[,.] ){regex.escape(k.key)}{regex.escape(kind.key_sep)}{VALUE}", 1)
    if kind.extra:
        known = [k.key for k in kind.keys]
        pairs = body.str.extract_all(PAIR).list.eval(
            pl.element().str.replace(r"^[,.] ", "").str.splitn(": ", 2).struct.rename_fields(["key", "value"]))
        out["extra"] = pairs.list.filter(~pl.element().struct.field("key").is_in(known)).cast(keys.PAIRS)
    return pl.DataFrame(out) if out else pl.DataFrame()


def by_tokenizer(kind: LineKind, body: pl.Series) -> pl.DataFrame:
    texts, pairs = keys.key_texts(kind, body)
    out = {f"k{i}": t if t is not None else pl.repeat(None, body.len(), dtype=pl.String, eager=True)
           for i, t in enumerate(texts)}
    if pairs is not None:
        out["extra"] = pairs
    return pl.DataFrame(out) if out else pl.DataFrame()


def same(kind: LineKind, bodies: list[str | None]) -> None:
    body = pl.Series("body", bodies, dtype=pl.String)
    assert_frame_equal(by_tokenizer(kind, body), by_regex(kind, body))


KINDS = [k for f in (sglang.FORMAT, vllm.FORMAT) for k in f.kinds if k.keys]
ODD = LineKind(name="odd", table="t", needle="x", key_sep="=", extra=True, keys=(
    Key("a", "a"), Key("a.b", "ab"), Key("p(99)", "p", pl.Int64), Key("a b", "a2"), Key("é", "e")))
FRAGMENTS = [" ", ",", ".", ":", ": ", ", ", ". ", "=", "#", "a", "1", "0.5", "1.", "..", "%", "\n", "\x00", "é",
             "True", "\t", "\r"]


@st.composite
def line(draw, kind: LineKind) -> str:
    names = [k.key + kind.key_sep for k in kind.keys] + ["#x: ", "Zz: ", "p: "]
    return "".join(draw(st.lists(st.sampled_from(names + FRAGMENTS), max_size=16)))


@pytest.mark.parametrize("kind", KINDS + [ODD], ids=[k.name for k in KINDS] + ["odd"])
def test_tokenizer_finds_what_the_regexes_find_on_the_samples(kind):
    samples = [s for k in KINDS for s in k.samples]
    same(kind, samples + [None, "", " ", ", ", "#running-req: ", "#running-req: 1.", "#running-req: ."])


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_tokenizer_finds_what_the_regexes_find_on_any_line(data):
    kind = data.draw(st.sampled_from(KINDS + [ODD]))
    same(kind, data.draw(st.lists(line(kind), min_size=1, max_size=20)))


def test_a_key_whose_value_is_empty_is_looked_for_further_on():
    kind = LineKind(name="t", table="t", needle="x", keys=(Key("#token", "tokens", pl.Int64),))
    same(kind, ["#token: , #token: 5", "#token:  #token: 6", "x, #token: 7.", "x. #token: 8, y"])
    texts, _ = keys.key_texts(kind, pl.Series(["#token: , #token: 5", "x, #token: 7.", "x,#token: 9"]))
    assert texts[0].to_list() == ["5", "7", None]


def test_very_long_lines_and_many_pairs_are_read_whole():
    """A 400 KB stats line with 40,000 pairs, a 20 MB line, and lines that make a naive
    scan quadratic (`. a. a. a` with no colon): every key and pair found, as the regexes do."""
    pairs = ", ".join(f"k{i}: {i}" for i in range(40_000))
    wide = "Decode batch, #running-req: 3, " + pairs + ", #queue-req: 9"
    assert len(wide) > 400_000
    kind = sglang.KINDS[0]
    same(kind, [wide])
    texts, extra = keys.key_texts(kind, pl.Series([wide]))
    assert texts[0][0] == "3" and extra.list.len()[0] == 40_000
    same(kind, [". a" * 2_000, ", #" * 2_000 + ": 1"])
    texts, extra = keys.key_texts(kind, pl.Series([". a" * 2_000_000, ", #" * 2_000_000 + ": 1",
                                                   "#running-req: " + "9" * 20_000_000]))
    assert texts[0].str.len_bytes().to_list() == [None, None, 20_000_000]
    assert extra.list.len().to_list() == [0, 1, 0]


def test_nul_bytes_and_non_ascii_text_pass_through():
    kind = sglang.KINDS[0]
    lines = ["Decode batch, #running-req: 3\x00, #queue-req: \x001", "\x00\x00", "#token: 5\ufffd, x\u2502y: 2",
             "Decode batch, #running-req: 日本, #queue-req: 1"]
    same(kind, lines)
    texts, _ = keys.key_texts(kind, pl.Series(lines))
    assert texts[0].to_list() == ["3\x00", None, None, "日本"]


def test_a_sliced_column_is_read_from_its_offset():
    kind = sglang.KINDS[0]
    body = pl.Series(["#running-req: 1", "#running-req: 2", "#running-req: 3"]).slice(1, 2)
    assert keys.key_texts(kind, body)[0][0].to_list() == ["2", "3"]


def test_bad_buffers_are_refused_not_read():
    arrow = pa.array(["#a: 1", "#a: 2"], type=pa.large_string())
    validity, offsets, data = arrow.buffers()
    bad = pa.py_buffer(pa.array([0, 5, 999], type=pa.int64()).buffers()[1])
    with pytest.raises(ValueError, match="offsets"):
        _tokenizer.tokenize(2, 0, None, bad, data, (b"#a: ",), (), False)
    backwards = pa.py_buffer(pa.array([0, 5, 2], type=pa.int64()).buffers()[1])
    with pytest.raises(ValueError, match="offsets"):
        _tokenizer.tokenize(2, 0, None, backwards, data, (b"#a: ",), (), False)
    with pytest.raises(ValueError, match="smaller"):
        _tokenizer.tokenize(3, 0, None, offsets, data, (b"#a: ",), (), False)
    with pytest.raises(ValueError, match="smaller"):
        _tokenizer.tokenize(2, 0, b"", offsets, data, (b"#a: ",), (), False)
    with pytest.raises(ValueError, match="smaller"):
        _tokenizer.tokenize(-1, 0, None, offsets, data, (b"#a: ",), (), False)
    with pytest.raises(TypeError):
        _tokenizer.tokenize(2, 0, None, offsets, data, ("#a: ",), (), False)


def first_kind_by_polars(needles: list[tuple[str, ...]], msg: pl.Series, start: int = 0) -> list[int]:
    """The first kind from `start` on with a needle the row contains, by one polars
    `str.contains(literal=True)` per needle; -1 for none (a null row has none)."""
    ids = pl.repeat(-1, msg.len(), dtype=pl.Int32, eager=True)
    for at in reversed(range(start, len(needles))):
        hit = pl.repeat(False, msg.len(), eager=True)
        for n in needles[at]:
            hit = hit | msg.str.contains(n, literal=True).fill_null(False)
        ids = pl.select(pl.when(hit).then(at).otherwise(ids)).to_series()
    return ids.to_list()


def same_kinds(needles: list[tuple[str, ...]], lines: list[str | None], start: int = 0) -> None:
    msg = pl.Series("msg", lines, dtype=pl.String)
    assert keys.KindIds(needles, msg).first(start).to_list() == first_kind_by_polars(needles, msg, start)


@pytest.mark.parametrize("fmt", [f for f in formats.FORMATS.values() if getattr(f, "kinds", None)],
                         ids=lambda f: f.name)
def test_kind_ids_are_what_literal_contains_finds_on_every_sample(fmt):
    needles = [classify.kind_needles(k) for k in fmt.kinds if not k.fallback]
    samples = [s for k in fmt.kinds for s in k.samples] + [None, "", " "]
    same_kinds(needles, samples)
    same_kinds(needles, samples, len(needles) // 2)


NEEDLE_BITS = ["a", "ab", "b", " ", ": ", "\x00", "é", "日", "/", "abcdefghij", "aab"]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_kind_ids_are_what_literal_contains_finds_on_any_line(data):
    """Needles of one byte, of more than 8 (past the one-word compare), sharing their first
    two bytes (one chain), with NULs and non-ASCII; lines cut anywhere."""
    needles = data.draw(st.lists(st.lists(st.sampled_from(NEEDLE_BITS), min_size=1, max_size=3).map(tuple),
                                 min_size=1, max_size=6))
    lines = data.draw(st.lists(st.one_of(st.none(), st.lists(st.sampled_from(NEEDLE_BITS + FRAGMENTS), max_size=12)
                                         .map("".join)), min_size=1, max_size=12))
    same_kinds(needles, lines, data.draw(st.integers(0, len(needles))))


def test_kind_ids_on_long_lines_slices_and_bad_buffers():
    """A needle at the end of a 20 MB line, or cut by it; a sliced column; buffers that lie."""
    long = "x" * 20_000_000
    needles = [("Decode batch",), ("xy",), ("x",)]
    same_kinds(needles, [long + "Decode batch", long + "Decode batc", long, "xy" * 200_000])
    ids = keys.KindIds(needles, pl.Series(["x", "Decode batch", "xy"]).slice(1, 2))
    assert ids.first().to_list() == [0, 1]
    assert ids.first(1, pl.Series([1, 0, 1], dtype=pl.UInt32)).to_list() == [1, -1, 1]
    arrow = pa.array(["ab", "cd"], type=pa.large_string())
    _, offsets, data = arrow.buffers()
    bad = pa.py_buffer(pa.array([0, 2, 999], type=pa.int64()).buffers()[1])
    with pytest.raises(ValueError, match="offsets"):
        _tokenizer.classify(2, 0, None, bad, data, ((b"a",),), 0, None)
    with pytest.raises(ValueError, match="listed row"):
        _tokenizer.classify(2, 0, None, offsets, data, ((b"a",),), 0, pa.array([2], type=pa.int64()).buffers()[1])
    with pytest.raises(ValueError, match="listed row"):
        _tokenizer.classify(2, 0, None, offsets, data, ((b"a",),), 0, pa.array([-1], type=pa.int64()).buffers()[1])
    with pytest.raises(ValueError, match="smaller"):
        _tokenizer.classify(3, 0, None, offsets, data, ((b"a",),), 0, None)
    with pytest.raises(ValueError, match="smaller"):
        _tokenizer.classify(2, 0, b"", offsets, data, ((b"a",),), 0, None)
    with pytest.raises(ValueError, match="smaller"):
        _tokenizer.classify(2, 0, None, offsets, data, ((b"a",),), -1, None)
    with pytest.raises(TypeError):
        _tokenizer.classify(2, 0, None, offsets, data, (("a",),), 0, None)
    with pytest.raises(TypeError):
        _tokenizer.classify(2, 0, None, offsets, data, (b"a",), 0, None)


@pytest.mark.parametrize("text", [b"Decode batch, #running-req: 3\r[x] Decode batch, #running-req: 4\r",
                                  b"Decode batch, #running-req: \xff\xfe3, #queue-req: 1\n" * 5000 + b"#token: \x00\x001\n",
                                  b"[2026-01-02 03:00:00 TP0] Decode batch, #running-req: 5" + b", k: v" * 70_000 + b"\n"])
def test_hostile_files_ingest_with_every_line_accounted_for(tmp_path, ingest_one, text):
    """CR-only line ends, invalid UTF-8, NUL bytes (past the first 64 KiB, where the reader
    would call the file binary) and a 400 KB line reach the tokenizer through the reader:
    each line ends in a table or in `unparsed`."""
    log = tmp_path / "server.log"
    log.write_bytes(text)
    result, run = ingest_one(log, **{"as_format": "sglang"} if b"\r" in text else {})
    [source] = result.sources
    assert sum(source.lines_by_table.values()) == source.lines
    if b"#running-req: 5" in text:
        stats = run.table("stats").collect()
        assert stats["running"].to_list() == [5] and stats["extra"].list.len().to_list() == [70_000]


def test_key_columns_cast_the_first_key_that_reads():
    """Two keys of one column: the first in the kind's order whose text casts wins."""
    kind = LineKind(name="t", table="t", needle="x", keys=(Key("#token", "tokens", pl.Int64),
                                                          Key("#full token", "tokens", pl.Int64)))
    rows = pl.DataFrame({"body": ["#token: x, #full token: 5", "#full token: 6, #token: 7", "nothing"]})
    got = fields.key_columns(kind, rows)
    assert got["__k_tokens"].to_list() == [5, 7, None] and got["__kok"].to_list() == [True, True, False]


@pytest.mark.long
def test_atheris_finds_no_difference_and_asan_no_bad_read(tmp_path):
    """tests/fuzz_tokenizer.py for 20 s on the installed tokenizer (results against the
    regexes), then every input it kept on a build under AddressSanitizer."""
    pytest.importorskip("atheris")
    libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not shutil.which("gcc") or not os.path.isabs(libasan):
        pytest.skip("gcc with AddressSanitizer needed")
    harness, corpus, asan = Path(__file__).with_name("fuzz_tokenizer.py"), tmp_path / "corpus", tmp_path / "asan"
    corpus.mkdir()
    asan.mkdir()
    source = Path(_tokenizer.__file__).parent / "_tokenizer.c"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer",
                    f"-I{sysconfig.get_paths()['include']}", str(source),
                    "-o", str(asan / f"_tokenizer{sysconfig.get_config_var('EXT_SUFFIX')}")], check=True)
    fuzz = subprocess.run([sys.executable, str(harness), str(Path(_tokenizer.__file__).parent), str(corpus),
                           "-max_total_time=20", "-rss_limit_mb=2048"], capture_output=True, text=True, cwd=tmp_path)
    assert fuzz.returncode == 0, fuzz.stderr[-3000:]
    assert len(list(corpus.iterdir())) > 10
    env = {**os.environ, "LD_PRELOAD": libasan, "ASAN_OPTIONS": "detect_leaks=0"}
    replay = subprocess.run([sys.executable, str(harness), str(asan), str(corpus), "-runs=0"],
                            capture_output=True, text=True, cwd=tmp_path, env=env)
    assert replay.returncode == 0 and "ERROR: AddressSanitizer" not in replay.stderr, replay.stderr[-3000:]
