"""A kind's fields from its lines: by key (`key: value` pairs, read by the compiled
tokenizer, loganalyze/formats/keys.py) or by the named groups of its regex, typed."""

from __future__ import annotations

import polars as pl
import regex

from loganalyze.formats import keys
from loganalyze.formats.common import fraction
from loganalyze.formats.spec import LineKind


def _cast(expr: pl.Expr, dtype: pl.DataType, percent: bool = False, commas: bool = True) -> pl.Expr:
    """Typed value of a text field; `commas` False for text that has none (a key's value)."""
    if dtype == pl.Boolean:
        return pl.when(expr.is_in(["True", "true"])).then(True).when(expr.is_in(["False", "false"])).then(False)
    if percent:
        return fraction(expr.str.strip_suffix("%").cast(pl.Float64, strict=False))
    if dtype in (pl.Int64, pl.Float64):
        return (expr.str.replace_all(",", "") if commas else expr).cast(dtype, strict=False)
    if isinstance(dtype, pl.List):
        return expr.str.split(",").list.eval(pl.element().str.strip_chars().cast(dtype.inner, strict=False))
    return expr.cast(dtype, strict=False)


def key_columns(kind: LineKind, rows: pl.DataFrame) -> pl.DataFrame:
    """`rows` with the kind's key columns (`__k_<column>`), `__extra` and `__kok` (some key found).

    The compiled tokenizer finds each key's text (loganalyze/formats/keys.py); several keys may fill
    one column (`#running-req` / `#running_req`): the first in the kind's order whose text
    casts wins. Values never hold a comma, so numbers are cast as they are.
    """
    texts, pairs = keys.key_texts(kind, rows["body"])
    cols: dict[str, pl.Expr] = {}
    got: list[pl.Expr] = []
    for k, text in zip(kind.keys, texts):
        raw = pl.lit(text) if text is not None else pl.lit(None, pl.String)
        value = _cast(raw, k.dtype, k.percent, commas=False)
        cols[k.column] = pl.coalesce(cols[k.column], value) if k.column in cols else value
        got.append(raw.is_not_null())
    exprs = [e.alias(f"__k_{c}") for c, e in cols.items()]
    if pairs is not None:
        exprs.append(pl.lit(pairs).alias("__extra"))
    return rows.with_columns(*exprs, __kok=pl.any_horizontal(got) if got else pl.lit(False))


def extract(kind: LineKind, rows: pl.DataFrame) -> pl.DataFrame:
    """Turn the rows of one kind into typed columns; rows that yield nothing get `ok` false.

    Several keys may fill one column (`token usage` / `full token usage`): the first
    present wins. With `pack`, the named groups go into one JSON column instead.
    """
    body = rows["body"]  # a rewrite that matches no line changes nothing (one test for all of them, usually)
    if len(kind.rewrites) < 2 or body.str.contains("|".join(f"(?:{p})" for p, _ in kind.rewrites)).any():
        for pattern, replacement in kind.rewrites:
            if body.str.contains(pattern).any():
                body = body.str.replace_all(pattern, replacement)
    rows = rows.with_columns(body=body)
    cols: dict[str, pl.Expr] = {}
    got: list[pl.Expr] = []
    if kind.pattern:
        names = list(regex.compile(kind.pattern).groupindex)
        groups = pl.col("body").str.extract_groups(kind.pattern)
        for n in names:
            cols[n] = _cast(groups.struct.field(n), kind.types.get(n, pl.String))
        got.append(pl.col("body").str.contains(kind.pattern))
    temporary: list[str] = []
    if kind.keys or kind.extra:
        rows = key_columns(kind, rows)
        for column in dict.fromkeys(k.column for k in kind.keys):
            value = pl.col(f"__k_{column}")
            cols[column] = pl.coalesce(cols[column], value) if column in cols else value
            temporary.append(f"__k_{column}")
        if kind.keys:
            got.append(pl.col("__kok"))
        temporary.append("__kok")
        if kind.extra:
            cols["extra"] = pl.col("__extra")
            temporary.append("__extra")
    if kind.pack and cols:
        exprs = [pl.struct([e.alias(n) for n, e in cols.items()]).struct.json_encode().alias(kind.pack)]
    else:
        exprs = [e.alias(n) for n, e in cols.items()]
    ok = pl.any_horizontal(got) if got else pl.lit(True)
    consts = [pl.lit(v).alias(c) for c, v in kind.const.items()]
    return rows.with_columns(*exprs, *consts, ok=ok).drop(temporary)
