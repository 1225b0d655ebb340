"""Fuzz: every format's own sample lines, mutated, must ingest without an exception and with
every line accounted for (lines_by_table + blank == lines read == lines in the file).

Mutations: bit flips, truncation, a duplicated field, a very long field, random bytes, a
splice of two samples, a foreign prefix. NUL bytes are left out (a file starting with one
is refused as binary, tested in test_store_faults). One hypothesis example is one file of
many mutated lines, since an ingest costs about the same for 10 lines as for 500.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from random import Random

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import loganalyze as la
from loganalyze import formats
from loganalyze.errors import LoganalyzeError
from store_helpers import counts, rows_on_disk

PREFIXES = (b"[2025-01-01 10:00:00] ", b"[2025-01-01 10:00:00 TP3] ", b"INFO 01-02 03:04:05 [engine.py:12] ",
            b"2025-01-01T10:00:00.123456789Z ", b"host:123:456 [0] NCCL INFO ", b"sglang-1  | ")
FILLERS = (b"9", b"x", b"#", b" ", b"%", b", ", b": ", b"\xff", b"\x1b[0m", b"\r")
EXPECTED_ERRORS = ("no text lines", "empty file")
LONG_LINES = 8_000  # per format, in the long run


def samples_of(name: str) -> list[bytes]:
    """The format's own sample lines; a format without any (a structured file) gets every
    line format's, which must all end up in `unparsed`."""
    def of(fmt: formats.Format) -> list[bytes]:
        return [s.encode() for kind in getattr(fmt, "kinds", ()) for s in kind.samples]

    return of(formats.FORMATS[name]) or [s for other in formats.FORMATS.values() for s in of(other)]


def mutate(line: bytes, rng: Random, samples: list[bytes]) -> bytes:
    op = rng.choices(range(7), weights=(3, 3, 3, 1, 2, 2, 2))[0]
    out = bytearray(line)
    if op == 0 and out:
        for _ in range(rng.randint(1, 8)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    elif op == 1:
        del out[rng.randrange(len(out) + 1):]
    elif op == 2:
        fields = bytes(out).split(b", ")
        at = rng.randrange(len(fields))
        fields.insert(at, fields[at])
        out = bytearray(b", ".join(fields))
    elif op == 3:
        at = rng.randrange(len(out) + 1)
        out[at:at] = rng.choice(FILLERS) * int(10 ** rng.uniform(3, 5))
    elif op == 4:
        out = bytearray(rng.randbytes(rng.randint(1, 300)))
    elif op == 5:
        other = rng.choice(samples)
        out = out[: rng.randrange(len(out) + 1)] + other[rng.randrange(len(other) + 1):]
    else:
        out[0:0] = rng.choice(PREFIXES)
    return bytes(out).replace(b"\0", b"\1")


def check_ingest(name: str, data: bytes) -> int:
    """Ingest one fuzzed file; returns the lines it holds."""
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    with tempfile.TemporaryDirectory() as tmp:
        path, store = Path(tmp) / "fuzz.log", Path(tmp) / "s"
        path.write_bytes(data)
        try:
            src = la.ingest([path], run="f", store=store, as_format=name).sources[0]
        except LoganalyzeError as e:
            assert any(m in str(e) for m in EXPECTED_ERRORS), e
            return 0
        assert src.lines == lines
        assert sum(src.lines_by_table.values()) + src.blank == src.lines
        assert counts(store)["f"] == src.tables == rows_on_disk(store).get("f", {})
    return lines


def fuzz(name: str, examples: int, lines: tuple[int, int]) -> tuple[int, int]:
    """Run `examples` hypothesis examples, files of `lines` mutated lines; returns the files and
    lines ingested. Each file comes from a drawn seed: drawing every mutation from hypothesis
    itself would overrun its buffer and quietly leave most examples out."""
    samples = samples_of(name)
    files = total = 0

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck),
              phases=(Phase.explicit, Phase.generate))  # a failing seed is its own minimal example
    @given(seed=st.integers(0, 2**64 - 1), n=st.integers(*lines), end=st.sampled_from([b"\n", b"", b"\r\n"]))
    def one_file(seed, n, end):
        nonlocal files, total
        rng = Random(seed)
        total += check_ingest(name, b"\n".join(mutate(rng.choice(samples), rng, samples) for _ in range(n)) + end)
        files += 1

    one_file()
    return files, total


@pytest.mark.parametrize("name", list(formats.FORMATS))
def test_fuzz_fast(name):
    files, _ = fuzz(name, examples=10, lines=(1, 200))
    assert files == 10


@pytest.mark.long
@pytest.mark.parametrize("name", list(formats.FORMATS))
def test_fuzz_long(name):
    files, lines = fuzz(name, examples=10, lines=(800, 900))
    assert files == 10 and lines >= LONG_LINES
