"""Turn configuration dumps into (key, value) rows.

Server arguments are printed as a Python repr (`ServerArgs(a=1, b='x', c=[1, 2])`) or a
dict repr; values may hold commas inside quotes and brackets, so they are split by a
small tokenizer. These lines are rare (one per server start), which is why a Python
function per line is acceptable here and nowhere else.
"""

from __future__ import annotations

import polars as pl

OPEN, CLOSE = "([{", ")]}"


def split_items(text: str) -> list[str]:
    """Split `a=1, b='x, y', c=[1, 2]` at top-level commas; an unfinished tail is dropped."""
    items, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in OPEN:
            depth += 1
        elif ch in CLOSE:
            depth -= 1
            if depth < 0:
                items.append(text[start:i])
                return [t.strip() for t in items if t.strip()]
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
        i += 1
    if not quote and depth == 0:
        items.append(text[start:])
    return [t.strip() for t in items if t.strip()]


def repr_pairs(dump: str) -> list[list[str]]:
    """Pairs [key, raw value] from `ServerArgs(...)`, `Name(...)` or `{...}` reprs."""
    dump = dump.replace("\n", "")
    opened = min((i for i in (dump.find("("), dump.find("{")) if i >= 0), default=-1)
    if opened < 0:
        return []
    is_dict = dump[opened] == "{"
    pairs = []
    for item in split_items(dump[opened + 1 :]):
        key, sep, value = item.partition(": " if is_dict else "=")
        if not sep:
            continue
        pairs.append([key.strip().strip("'\""), value.strip()])
    return pairs


def typed(value: pl.Expr) -> dict[str, pl.Expr]:
    """Columns value (unquoted text), value_num and value_type from a raw repr value."""
    quoted = value.str.contains(r"^'.*'$|^\".*\"$")
    num = value.cast(pl.Float64, strict=False)
    kind = (
        pl.when(value.is_in(["None", "null"])).then(pl.lit("none"))
        .when(value.is_in(["True", "False", "true", "false"])).then(pl.lit("bool"))
        .when(quoted).then(pl.lit("str"))
        .when(num.is_not_null() & value.str.contains(r"^-?\d+$")).then(pl.lit("int"))
        .when(num.is_not_null()).then(pl.lit("float"))
        .when(value.str.starts_with("[") | value.str.starts_with("(")).then(pl.lit("list"))
        .when(value.str.starts_with("{")).then(pl.lit("dict"))
        .otherwise(pl.lit("str"))
    )
    text = pl.when(quoted).then(value.str.slice(1, value.str.len_chars() - 2)).otherwise(value)
    as_num = pl.when(value.is_in(["True", "true"])).then(1.0).when(value.is_in(["False", "false"])).then(0.0).otherwise(num)
    return {"value": text, "value_num": as_num, "value_type": kind}


def explode_pairs(rows: pl.DataFrame, pairs: pl.Expr, origin: str) -> pl.DataFrame:
    """One config row per [key, value] pair in the list column given by `pairs`."""
    keep = [c for c in ("line_no", "ts", "rank", "kind", "raw", "process", "level") if c in rows.columns]
    out = (
        rows.select(*keep, _pairs=pairs)
        .explode("_pairs")
        .filter(pl.col("_pairs").is_not_null())
        .with_columns(key=pl.col("_pairs").list.get(0), _raw=pl.col("_pairs").list.get(1))
    )
    return out.with_columns(**typed(pl.col("_raw")), origin=pl.lit(origin)).drop("_pairs", "_raw")


def repr_dump(origin: str):
    """Handler for lines that hold a Python repr dump of settings."""

    def handle(rows: pl.DataFrame) -> pl.DataFrame:
        pairs = pl.col("body").map_elements(repr_pairs, return_dtype=pl.List(pl.List(pl.String)))
        return explode_pairs(rows, pairs, origin)

    return handle


def key_equals_value(origin: str):
    """Handler for `a=1, b=2` lines whose values hold no commas: fully vectorised."""

    def handle(rows: pl.DataFrame) -> pl.DataFrame:
        split = pl.element().str.splitn("=", 2)
        pairs = pl.col("body").str.extract_all(r"[A-Za-z_]\w*=[^,\s]+").list.eval(
            pl.concat_list(split.struct.field("field_0"), split.struct.field("field_1"))
        )
        return explode_pairs(rows, pairs, origin)

    return handle


def config_value(key: str, origin: str):
    """Handler for a line that sets one setting: the kind's pattern captures `value`, `key` names it.

    SGLang's "Max running requests is reset to 48" is such a line; a repr dump or an
    `a=1, b=2` line, which set many, use `repr_dump` or `key_equals_value`.
    """

    def handle(rows: pl.DataFrame) -> pl.DataFrame:
        keep = [c for c in ("line_no", "ts", "rank", "kind") if c in rows.columns]
        return rows.select(*keep, key=pl.lit(key), **typed(pl.col("value")), origin=pl.lit(origin))

    return handle


FLAG = r"--[\w-]+(?:[= ](?:'[^']*'|\"[^\"]*\"|[^-\s\\]\S*|-\d\S*))?"


def command_flags(origin: str, aliases: dict[str, str]):
    """Handler for a server's command line (the kind's pattern captures its `args`): one config
    row per `--flag value` (`True` for a switch), named by the setting it sets. `aliases` maps
    flag names to settings (`tp` and `tp-size` to `tp_size`); a flag that is the prefix of
    exactly one of them is that one, as argparse reads it (`--speculative-algo`); any other
    keeps its own name, `-` read as `_`."""

    def setting(flag: str) -> str:
        if flag in aliases:
            return aliases[flag]
        longer = {field for name, field in aliases.items() if name.startswith(flag)}
        return longer.pop() if len(longer) == 1 else flag.replace("-", "_")

    def handle(rows: pl.DataFrame) -> pl.DataFrame:
        flag = pl.element()
        pairs = pl.col("args").str.extract_all(FLAG).list.eval(pl.concat_list(
            flag.str.extract(r"^--([\w-]+)", 1), flag.str.extract(r"(?s)^--[\w-]+[= ](.*)$", 1).fill_null("True")))
        out = explode_pairs(rows, pairs, origin)
        names = {name: setting(name) for name in out["key"].unique().to_list()}  # the few distinct flags
        return out.with_columns(key=pl.col("key").replace_strict(names))

    return handle
