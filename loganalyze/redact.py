"""Secret redaction for everything loganalyze prints or writes.

Logs get attached to tickets; server logs carry `--api-key`, Hugging Face tokens in
launch commands, credentials in URLs and `*_TOKEN=` environment dumps. Every output
path (text, JSON, Markdown, CSV, the HTML report) passes its strings through `redact`
(plain strings), `redact_obj` (JSON-like data) or `redact_frame` (polars, vectorised),
unless the user turns it off explicitly (`--no-redact`).

Each rule is a regex with three groups, `(prefix)(secret)(suffix)`, replaced by
`prefixREDACTEDsuffix`. The patterns use only syntax that Python's `re` and polars'
Rust regex agree on (no look-around, no backreferences), so both versions redact the
same text the same way. A key such as `api_key=None` is redacted too: a missing
look-ahead in the Rust engine makes "every value of a secret-named key" the rule.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

MARK = "REDACTED"

# A value runs until whitespace, a quote or a closing delimiter.
_VALUE = r"""([^\s'",;)}\]]+)"""
_SECRET_WORD = r"(?:api[_-]?key|apikey|secret|password|passwd)"

RULES: tuple[str, ...] = (
    # --api-key X, --api-key=X, --hf-token X, --db-password 'X'
    r"""(?i)((?:^|[\s'"\[(,=])--(?:[a-z0-9]+-)*(?:api-key|token|secret|password|passwd)(?:=|\s+)['"]?)""" + _VALUE + "()",
    # api_key=X, api_key='X', "api_key": "X", client_secret: X, password=X
    r"""(?i)(\b(?:[a-z0-9]+_)*""" + _SECRET_WORD + r"""['"]?\s*[:=]\s*['"]?)""" + _VALUE + "()",
    # hf_token=X, auth_token='X', "token": "X" (a bare `token:` is SGLang's `#token: 1234` count)
    r"""(?i)(\b(?:[a-z0-9]+_)*token\s*=\s*['"]?)""" + _VALUE + "()",
    r"""(?i)(['"](?:[a-z0-9]+_)*token['"]\s*:\s*['"]?)""" + _VALUE + "()",
    # environment: HF_TOKEN=X, OPENAI_API_KEY=X, AWS_SECRET_ACCESS_KEY=X, DB_PASSWORD=X
    r"""(\b[A-Z][A-Z0-9_]*_(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD)\s*=\s*['"]?)""" + _VALUE + "()",
    # Authorization: Bearer X / Basic X, and a bare `Bearer X`
    r"""(?i)(\bauthorization['"]?\s*[:=]\s*['"]?(?:bearer\s+|basic\s+|token\s+)?)""" + _VALUE + "()",
    r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/-]+=*)()",
    # scheme://user:password@host
    r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)([^\s@/]+)(@)",
    # token shapes that are secrets wherever they appear
    r"()(\bhf_[A-Za-z0-9]{20,})()",
    r"()(\bsk-[A-Za-z0-9][A-Za-z0-9_-]{15,})()",
    r"()(\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)()",
    r"()(\bgh[pousr]_[A-Za-z0-9]{30,})()",
)

# A mapping key that names a secret: its string value is redacted whatever it looks like
# (JSON output holds `"api_key": "X"` as two separate strings, out of the text rules' reach).
_SECRET_KEY = r"(?:[a-z0-9]+[_-])*(?:api[_-]?key|apikey|token|secret|password|passwd|access[_-]?key|private[_-]?key)"
SECRET_KEY = re.compile("(?i)" + _SECRET_KEY)

_COMPILED = tuple(re.compile(rule) for rule in RULES)
_PY_REPLACEMENT = r"\g<1>" + MARK + r"\g<3>"
_POLARS_REPLACEMENT = "${1}" + MARK + "${3}"


def redact(text: str) -> str:
    """The text with every secret replaced by REDACTED."""
    for rule in _COMPILED:
        text = rule.sub(_PY_REPLACEMENT, text)
    return text


def redact_obj(obj: Any) -> Any:
    """JSON-like data (dicts, lists, strings, numbers) with every string redacted, keys included,
    and the string value of a secret-named key (`api_key`, `hf_token`, ...) replaced whole."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact_obj(k): MARK if isinstance(v, str) and isinstance(k, str) and SECRET_KEY.fullmatch(k)
                else redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v) for v in obj]
    return obj


def redact_expr(expr: pl.Expr) -> pl.Expr:
    """A polars string expression with every secret replaced: the vectorised `redact`."""
    for rule in RULES:
        expr = expr.str.replace_all(rule, _POLARS_REPLACEMENT)
    return expr


def _redact_nested(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr | None:
    """`expr` with every string inside it redacted, through lists and structs; None if it holds none."""
    if dtype == pl.String:
        return redact_expr(expr)
    if isinstance(dtype, pl.List):
        inner = _redact_nested(pl.element(), dtype.inner)
        return None if inner is None else expr.list.eval(inner)
    if isinstance(dtype, pl.Struct):
        fields = [(f.name, _redact_nested(pl.field(f.name), f.dtype)) for f in dtype.fields]
        fields = [e.alias(name) for name, e in fields if e is not None]
        return expr.struct.with_fields(fields) if fields else None
    return None


def redact_frame(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """The frame, eager or lazy (a query result streams through), with every string redacted,
    nested ones too (the `extra` key/value pairs); in key/value rows (the config table) the
    value of a secret-named key is replaced whole, as `redact_obj` does for a dict."""
    schema = frame.collect_schema()
    exprs = {name: e for name, dtype in schema.items() if (e := _redact_nested(pl.col(name), dtype)) is not None}
    if schema.get("key") == pl.String and schema.get("value") == pl.String:
        secret = pl.col("key").str.contains(f"(?i)^{_SECRET_KEY}$").fill_null(False)
        exprs["value"] = pl.when(secret).then(pl.lit(MARK)).otherwise(exprs["value"])
    return frame.with_columns(e.alias(name) for name, e in exprs.items()) if exprs else frame
