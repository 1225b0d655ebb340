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

_COMPILED = tuple(re.compile(rule) for rule in RULES)
_PY_REPLACEMENT = r"\g<1>" + MARK + r"\g<3>"
_POLARS_REPLACEMENT = "${1}" + MARK + "${3}"


def redact(text: str) -> str:
    """The text with every secret replaced by REDACTED."""
    for rule in _COMPILED:
        text = rule.sub(_PY_REPLACEMENT, text)
    return text


def redact_obj(obj: Any) -> Any:
    """JSON-like data (dicts, lists, strings, numbers) with every string redacted, keys included."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact_obj(k): redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v) for v in obj]
    return obj


def redact_expr(expr: pl.Expr) -> pl.Expr:
    """A polars string expression with every secret replaced: the vectorised `redact`."""
    for rule in RULES:
        expr = expr.str.replace_all(rule, _POLARS_REPLACEMENT)
    return expr


def redact_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with every String column redacted (nested columns are left to their readers)."""
    cols = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    return frame.with_columns(redact_expr(pl.col(c)) for c in cols) if cols else frame
