"""An atheris harness over the compiled tokenizer (loganalyze/formats/_tokenizer.c), its keys and its
kind ids, run by the long tests (tests/test_tokenizer.py): coverage-guided on the installed build, then the inputs it
kept replayed on a build under AddressSanitizer (gcc's ASan breaks atheris' coverage, so
the two are separate runs):

    python tests/fuzz_tokenizer.py MODULE_DIR CORPUS -max_total_time=30
    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \
        python tests/fuzz_tokenizer.py ASAN_MODULE_DIR CORPUS -runs=0

Each input becomes keys, a separator and a batch of lines of arbitrary bytes (NULs,
invalid UTF-8, no line end), given to the tokenizer as Arrow buffers; what it finds must
be what the regexes of its header find (Python's `re` on bytes), the kind ids what
Python's `in` finds, and bad buffers (offsets
out of range, short validity) must be refused with ValueError. MODULE_DIR holds the
`_tokenizer` module to fuzz (the sanitized build).
"""

from __future__ import annotations

import re
import struct
import sys

import atheris

sys.path.insert(0, sys.argv.pop(1))
import _tokenizer  # noqa: E402

VALUE = rb"([^ ,]+?)\.?(?:[ ,]|\Z)"
PAIR = re.compile(rb"[,.] [#A-Za-z][^:,]*?: [^ ,]+")


def expected(line: bytes, needles: list[bytes], known: set[bytes]) -> tuple[list, list]:
    found = []
    for needle in needles:
        m = re.search(rb"(?:\A|[,.] )" + re.escape(needle) + VALUE, line, re.S)
        found.append(m.group(1) if m else None)
    pairs = []
    for m in PAIR.finditer(line):
        key, value = m.group()[2:].split(b": ", 1)
        if key not in known:
            pairs.append((key, value))
    return found, pairs


def column(col: tuple | None, n: int) -> list:
    if col is None:
        return [None] * n
    _, validity, offsets, data = col
    ends = struct.unpack(f"<{n + 1}q", offsets)
    return [data[ends[i]:ends[i + 1]] if validity[i >> 3] >> (i & 7) & 1 else None for i in range(n)]


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    keys = [fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 6)) for _ in range(fdp.ConsumeIntInRange(0, 4))]
    sep = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 2))
    extra = fdp.ConsumeBool()
    lines = [fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 200)) for _ in range(fdp.ConsumeIntInRange(0, 6))]
    offset = fdp.ConsumeIntInRange(0, len(lines))
    if fdp.ConsumeIntInRange(0, 20) == 0:  # a bad buffer: must be refused, never read past
        ends = [fdp.ConsumeIntInRange(-5, 300) for _ in range(len(lines) + 1)]
        try:
            _tokenizer.tokenize(len(lines), 0, None, struct.pack(f"<{len(ends)}q", *ends), b"x" * 50,
                                tuple(k + sep for k in keys), tuple(keys), extra)
        except ValueError:
            pass
        try:
            _tokenizer.classify(len(lines), 0, None, struct.pack(f"<{len(ends)}q", *ends), b"x" * 50, (tuple(keys),), 0, None)
        except ValueError:
            pass
        return
    ends = [0]
    for line in lines:
        ends.append(ends[-1] + len(line))
    nulls = [fdp.ConsumeIntInRange(0, 5) == 0 for _ in lines]
    validity = bytearray((len(lines) + 7) // 8)
    for i, null in enumerate(nulls):
        if not null:
            validity[i >> 3] |= 1 << (i & 7)
    n = len(lines) - offset
    needles = [k + sep for k in keys]
    columns, pairs = _tokenizer.tokenize(n, offset, bytes(validity), struct.pack(f"<{len(ends)}q", *ends),
                                         b"".join(lines), tuple(needles), tuple(keys) if extra else (), extra)
    got = [column(c, n) for c in columns]
    if extra:
        _, _, list_ends, kcol, vcol = pairs
        m = len(kcol[2]) // 8 - 1
        bounds = struct.unpack(f"<{n + 1}q", list_ends)
        pair_list = list(zip(column(kcol, m), column(vcol, m)))
    for row in range(n):
        line, null = lines[offset + row], nulls[offset + row]
        want, want_pairs = expected(line, needles, set(keys)) if not null else ([None] * len(keys), [])
        assert [g[row] for g in got] == want, (line, needles, [g[row] for g in got], want)
        if extra:
            assert pair_list[bounds[row]:bounds[row + 1]] == want_pairs, (line, want_pairs)
    check_classify(fdp, n, offset, bytes(validity), struct.pack(f"<{len(ends)}q", *ends), lines, nulls, keys)


def check_classify(fdp: atheris.FuzzedDataProvider, n: int, offset: int, validity: bytes, offsets: bytes,
                   lines: list[bytes], nulls: list[bool], needles: list[bytes]) -> None:
    """The kind ids of the same rows, the needles taken as kinds of one or two: the first
    kind from `start` on with a needle the line contains (Python's `in`), -1 for none."""
    kinds = tuple(tuple(needles[i:i + 2]) for i in range(0, len(needles), 2))
    start = fdp.ConsumeIntInRange(0, len(kinds))
    got = struct.unpack(f"<{n}i", _tokenizer.classify(n, offset, validity, offsets, b"".join(lines), kinds, start, None))
    for row in range(n):
        line = lines[offset + row]
        want = -1 if nulls[offset + row] else next(
            (k for k in range(start, len(kinds)) if any(nd in line for nd in kinds[k])), -1)
        assert got[row] == want, (line, kinds, start, got[row], want)


if __name__ == "__main__":
    if "-runs=0" not in sys.argv:  # a replay needs no guidance
        atheris.instrument_all()  # the harness and the oracle: branches there guide the inputs
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
