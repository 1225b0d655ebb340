"""The values of a kind's declared keys in a column of message bodies, read by the compiled
tokenizer (loganalyze/formats/_tokenizer.c) in one pass per line; this module moves the column in
and the found values out as Arrow buffers, with no Python per line.

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


def key_texts(kind: LineKind, body: pl.Series) -> tuple[list[pl.Series | None], pl.Series | None]:
    """The text of each of `kind.keys` in each row of `body` (None for a key that no row
    has), and with `kind.extra` the pairs whose key is not one of the kind's."""
    arrow = body.to_arrow(compat_level=pl.CompatLevel.oldest())  # large_string: offsets and bytes
    if isinstance(arrow, pa.ChunkedArray):
        arrow = arrow.combine_chunks()
    validity, offsets, data = arrow.buffers()
    needles = tuple((k.key + kind.key_sep).encode() for k in kind.keys)
    known = tuple(k.key.encode() for k in kind.keys) if kind.extra else ()
    n = len(arrow)
    columns, pairs = _tokenizer.tokenize(n, arrow.offset, validity, offsets, data if data is not None else b"",
                                         needles, known, kind.extra)
    texts = [pl.Series(_arrow(c, n)) if c is not None else None for c in columns]
    return texts, _pairs(pairs, n) if kind.extra else None
