"""The compiled tokenizer's two passes over a column of messages (loganalyze/formats/_tokenizer.c):
the values of a kind's declared keys, one pass per line, and which kind's needles each
line holds (a kind id per line); this module moves the column in and the results out as
Arrow buffers, with no Python per line.

What the tokenizer finds is what the regexes in its header find (docs/speed.md): a key's
value is the first `KEY SEP value` that starts the line or follows `, ` or `. `; an unknown
pair is `, key: value` with a key that starts with `#` or a letter.
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa

from loganalyze.formats import _tokenizer
from loganalyze.formats.spec import LineKind

PAIRS = pl.List(pl.Struct({"key": pl.String, "value": pl.String}))


def _arrow(column: tuple, n: int) -> pa.Array:
    """A large_string array from the tokenizer's (null_count, validity, offsets, data), without a copy."""
    nulls, validity, offsets, data = column
    buffers = [pa.py_buffer(validity), pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(pa.large_string(), n, buffers, nulls)


def _pairs(found: tuple, n: int) -> pl.Series:
    """The unknown pairs of each row as a list of {key, value}."""
    nulls, validity, offsets, keys, values = found
    count = len(keys[2]) // 8 - 1
    struct = pa.StructArray.from_arrays([_arrow(keys, count), _arrow(values, count)], names=["key", "value"])
    lists = pa.Array.from_buffers(pa.large_list(struct.type), n, [pa.py_buffer(validity), pa.py_buffer(offsets)],
                                  nulls, children=[struct])
    return pl.Series(lists).cast(PAIRS)


def _buffers(texts: pl.Series) -> tuple[int, int, object, object, object]:
    """(rows, offset, validity, offsets, data) of the column as one large_string Arrow array."""
    arrow = texts.to_arrow(compat_level=pl.CompatLevel.oldest())  # large_string: offsets and bytes
    if isinstance(arrow, pa.ChunkedArray):
        arrow = arrow.combine_chunks()
    validity, offsets, data = arrow.buffers()
    return len(arrow), arrow.offset, validity, offsets, data if data is not None else b""


class KindIds:
    """The kind ids of one column of messages (loganalyze/formats/_tokenizer.c `classify`): the
    column is handed to the tokenizer once, then looked at as often as the caller asks."""

    def __init__(self, needles: list[tuple[str, ...]], msg: pl.Series):
        self.kinds = tuple(tuple(n.encode() for n in own) for own in needles)
        self.column = _buffers(msg)

    def first(self, start: int = 0, rows: pl.Series | None = None) -> pl.Series:
        """Per row (or per row of `rows`, indices into the column), the index of the first
        kind from `start` on with a needle the row contains (a byte search, as polars'
        `str.contains(literal=True)`); -1 for a null row or one that holds none."""
        listed = None
        if rows is not None:
            at = rows.cast(pl.Int64).to_arrow()
            listed = at.buffers()[1].slice(at.offset * 8, len(at) * 8)
        found = _tokenizer.classify(*self.column, self.kinds, start, listed)
        n = self.column[0] if rows is None else rows.len()
        return pl.Series("kind_id", pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(found)]))


def key_texts(kind: LineKind, body: pl.Series) -> tuple[list[pl.Series | None], pl.Series | None]:
    """The text of each of `kind.keys` in each row of `body` (None for a key that no row
    has), and with `kind.extra` the pairs whose key is not one of the kind's."""
    needles = tuple((k.key + kind.key_sep).encode() for k in kind.keys)
    known = tuple(k.key.encode() for k in kind.keys) if kind.extra else ()
    n = body.len()
    columns, pairs = _tokenizer.tokenize(*_buffers(body), needles, known, kind.extra)
    texts = [pl.Series(_arrow(c, n)) if c is not None else None for c in columns]
    return texts, _pairs(pairs, n) if kind.extra else None
