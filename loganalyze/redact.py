"""Secret redaction for everything loganalyze prints or writes.

Logs get attached to tickets; server logs carry `--api-key`, Hugging Face tokens in
launch commands, credentials in URLs and `*_TOKEN=` environment dumps. Every path by
which data leaves the store (text, JSON, Markdown, CSV, the HTML report, `query` and its
error messages, `export`) passes its strings through `redact` (plain strings),
`redact_obj` (JSON-like data) or `redact_frame` (polars, vectorised), unless the user
turns it off explicitly (`--no-redact`).

Two kinds of rule:

- text rules (`RULES`, one table below, grouped by the shape they catch): a regex with
  three groups, `(prefix)(secret)(suffix)`, replaced by `prefixREDACTEDsuffix`. They use
  only syntax that Python's `re` and polars' Rust regex agree on (no look-around, no
  backreferences), so both redact the same text the same way. A value is redacted
  whatever it is (`api_key=None` too): without look-ahead, "every value of a
  secret-named key" is the rule.
- key rules: in a mapping (`redact_obj`) or in key/value rows (the `config` table, the
  `extra` pairs), the value of a secret-named key (`SECRET_KEY`) is replaced whole, since
  a bare value (`hunter2`) has no shape to catch.

LLM servers name many things `..._token` that are no secret (`time_to_first_token`,
`eos_token`, `per_token`): keys whose word before `token` is one of `TOKEN_METRIC_WORDS`
are left alone, in both kinds of rule.

Why not detect-secrets (on PyPI): it scans line by line in Python and reports findings;
this module has to rewrite millions of rows inside polars (no Python loop per row), so
its patterns must run in polars' regex engine. The table here is the one place to add a
shape; tests/test_redact.py holds a corpus of shapes it must catch and lines it must leave.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

MARK = "REDACTED"

# A bare value runs until whitespace, a quote or a closing delimiter; a quoted one to its closing quote.
_VALUE = r"""([^\s'",;)}\]]+)"""
_KV = r"""['"]?[ \t]*[:=][ \t]*"""  # between a key (maybe quoted) and its value, on one line

# Words that name a secret wherever they end a key: api_key, client_secret, DB_PASSWORD, AccountKey, ...
_SECRET_WORD = (r"(?:api[_-]?key|apikey|secret|password|passwd|passphrase|access[_-]?key|private[_-]?key|"
                r"account[_-]?key|secret[_-]?key|auth[_-]?key|signing[_-]?key|encryption[_-]?key)")
_KEY_PREFIX = r"(?:[a-z0-9]+[_.-])*[a-z0-9]*"

# `<word>_token` keys that are metrics or tokenizer settings, not credentials.
TOKEN_METRIC_WORDS = ("first", "per", "inter", "next", "last", "output", "input", "prompt", "bos", "eos", "pad",
                      "unk", "sep", "cls", "mask", "special", "start", "end", "stop", "draft", "image", "video",
                      "audio", "vision", "think", "tool", "decoder", "reasoning", "completion", "generated", "new",
                      "total", "avg", "mean", "max", "min", "num", "sum", "count", "cached", "cache")
_PROTECT = "\ue000"  # a private-use character, set inside `first_token` while the rules run, then taken out
_PROTECT_RULE = r"(?i)(\b(?:[a-z0-9]+_)*(?:" + "|".join(TOKEN_METRIC_WORDS) + r")[_-]t)(oken)"
_UNPROTECT_RULE = r"(?i)(t)" + _PROTECT + r"(oken)"


def _keyed(key: str, sep: str = _KV, flags: str = "(?i)") -> tuple[str, ...]:
    """Rules for `key<sep>value`: a double-quoted value, a single-quoted one, a bare one."""
    prefix = flags + r"(\b" + key + sep
    return (prefix + r'")([^"\r\n]*)(")', prefix + r"')([^'\r\n]*)(')", prefix + ")" + _VALUE + "()")


def _pem_body_line() -> str:
    """A whole line of 64 base64 characters, one of them not hex (so a sha256 is not one)."""
    firsts = "|".join(f"[0-9a-fA-F]{{{k}}}[g-zG-Z+/][A-Za-z0-9+/]{{{63 - k}}}" for k in range(64))
    return r"(?m)(^)((?:" + firsts + r")|[A-Za-z0-9+/]{8,63}={1,2})($)"


RULES: tuple[str, ...] = (
    # private keys: a PEM block whole (multi-line text), or its lines one by one (a table row each)
    r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)([\s\S]*?)(-----END [A-Z0-9 ]*PRIVATE KEY-----)",
    r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)([^\r\n]*)()",
    _pem_body_line(),
    # command-line flags: --api-key X, --api-key=X, --hf-token X, --db-password 'X'; mysql -pX
    r"""(?i)((?:^|[\s'"\[(,=])--(?:[a-z0-9]+-)*(?:api-key|token|secret|password|passwd)(?:=|\s+)['"]?)""" + _VALUE
    + "()",
    r"""(\bmysql(?:dump|admin|sh)?(?:[ \t]+\S+)*?[ \t]+-p)([^\s'"]+)()""",
    # keys naming a secret, in any case, with = or :  api_key=X, "password": "two words",
    # aws_secret_access_key = X, secret_access_key: X, PGPASSWORD=X, AccountKey=X;, Password=X;
    *_keyed(_KEY_PREFIX + _SECRET_WORD),
    *_keyed(r"(?:[a-z0-9]+_)+pwd"),  # MYSQL_PWD=X
    # token keys: hf_token: X, auth_token='X', "token": "X", token=X (a bare `token:` is SGLang's `#token: 1234`)
    *_keyed(r"(?:[a-z0-9]+_)+token"),  # underscores only: SGLang's `#cached-token: 0` is a count
    *_keyed(r"token", sep=r"[ \t]*=[ \t]*"),
    r"""(?i)(['"]token['"][ \t]*:[ \t]*")([^"\r\n]*)(")""",
    r"""(?i)(['"]token['"][ \t]*:[ \t]*)""" + _VALUE + "()",
    # environment: HF_TOKEN=X, OPENAI_API_KEY=X, AWS_SECRET_ACCESS_KEY=X, PGPASSWORD=X
    *_keyed(r"[A-Z][A-Z0-9_]*(?:_TOKEN|_KEY|SECRET|PASSWORD|PASSWD|_PWD)", sep=r"[ \t]*=[ \t]*", flags=""),
    # HTTP headers: Authorization: Bearer X / Basic X, a bare `Bearer X`, Cookie and Set-Cookie to the line's end
    r"""(?i)(\b(?:proxy-)?authorization['"]?[ \t]*[:=][ \t]*['"]?(?:bearer\s+|basic\s+|token\s+)?)""" + _VALUE + "()",
    r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/-]+=*)()",
    r"""(?i)(\b(?:set-)?cookie['"]?[ \t]*:[ \t]*['"]?)([^'"\r\n]+)()""",
    # URLs: scheme://user:password@host (password with @ or / in it; redis://:pw@host), ?key=X&token=Y
    r"""(?i)(\b[a-z][a-z0-9+.-]*://[^\s:/@'"]*:)([^\s'"]+)(@)""",
    r"""(?i)([?&](?:key|api[_-]?key|apikey|token|access[_-]?token|auth|sig|signature|password|secret|"""
    r"""x-amz-signature|x-amz-credential|x-amz-security-token)=)([^\s&#'"]+)()""",
    # token shapes that are secrets wherever they appear
    r"()(\bhf_[A-Za-z0-9]{20,})()",
    r"()(\bhf_[a-z0-9]{0,40}[A-Z][A-Za-z0-9]{4,})()",  # a short Hugging Face token: mixed case, unlike hf_config
    r"()(\bsk-[A-Za-z0-9][A-Za-z0-9_-]{15,})()",
    r"()(\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)()",
    r"()(\bgh[pousr]_[A-Za-z0-9]{30,})()",
    r"()(\bgithub_pat_[A-Za-z0-9_]{20,})()",
    r"()(\bglpat-[A-Za-z0-9_-]{20,})()",
    r"()(\bxox[abposr]-[A-Za-z0-9-]{10,})()",
    r"()(\bnvapi-[A-Za-z0-9_-]{20,})()",
    r"()(\bAIza[0-9A-Za-z_-]{35})()",
    r"()(\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)()",  # a JWT: two base64 JSON parts
)

# A mapping key that names a secret: its string value is redacted whatever it looks like
# (JSON output holds `"api_key": "X"` as two separate strings, out of the text rules' reach).
_SECRET_KEY = (r"(?:[a-z0-9]+[_.-])*[a-z0-9]*(?:" + _SECRET_WORD[3:-1] + r"|token|pwd|cookie|authorization|"
               r"credentials?|connection[_-]?string)")
SECRET_KEY = re.compile("(?i)" + _SECRET_KEY)
_METRIC_KEY = r"(?:[a-z0-9]+[_.-])*(?:" + "|".join(TOKEN_METRIC_WORDS) + r")[_-]token"
METRIC_KEY = re.compile("(?i)" + _METRIC_KEY)
_SECRET_KEY_FULL = f"(?i)^(?:{_SECRET_KEY})$"
_METRIC_KEY_FULL = f"(?i)^(?:{_METRIC_KEY})$"

_COMPILED = tuple(re.compile(rule) for rule in RULES)
_PY_REPLACEMENT = r"\g<1>" + MARK + r"\g<3>"
_POLARS_REPLACEMENT = "${1}" + MARK + "${3}"
_PROTECT_PY, _UNPROTECT_PY = re.compile(_PROTECT_RULE), re.compile(_UNPROTECT_RULE)


def secret_key(key: str) -> bool:
    """Whether a mapping key names a secret (`api_key`, `hf_token`), not a metric (`time_to_first_token`)."""
    return bool(SECRET_KEY.fullmatch(key)) and not METRIC_KEY.fullmatch(key)


def redact(text: str) -> str:
    """The text with every secret replaced by REDACTED."""
    text = _PROTECT_PY.sub(r"\g<1>" + _PROTECT + r"\g<2>", text)
    for rule in _COMPILED:
        text = rule.sub(_PY_REPLACEMENT, text)
    return _UNPROTECT_PY.sub(r"\g<1>\g<2>", text)


def redact_obj(obj: Any) -> Any:
    """JSON-like data (dicts, lists, strings, numbers) with every string redacted, keys included,
    and the value of a secret-named key (`api_key`, `hf_token`, ...) replaced whole."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact_obj(k): MARK if isinstance(k, str) and isinstance(v, (str, int, float))
                and not isinstance(v, bool) and secret_key(k) else redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v) for v in obj]
    return obj


def redact_expr(expr: pl.Expr) -> pl.Expr:
    """A polars string expression with every secret replaced: the vectorised `redact`."""
    expr = expr.str.replace_all(_PROTECT_RULE, "${1}" + _PROTECT + "${2}")
    for rule in RULES:
        expr = expr.str.replace_all(rule, _POLARS_REPLACEMENT)
    return expr.str.replace_all(_UNPROTECT_RULE, "${1}${2}")


def secret_key_expr(key: pl.Expr) -> pl.Expr:
    """True where a key column names a secret (the vectorised `secret_key`); null keys are not secret."""
    return (key.str.contains(_SECRET_KEY_FULL) & ~key.str.contains(_METRIC_KEY_FULL)).fill_null(False)


def _pairs(fields: dict[str, pl.DataType]) -> bool:
    return fields.get("key") == pl.String and fields.get("value") == pl.String


def _redact_nested(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr | None:
    """`expr` with every string inside it redacted, through lists and structs; None if it holds none.
    A struct of `key` and `value` (the `extra` pairs) has the value of a secret-named key replaced whole."""
    if dtype == pl.String:
        return redact_expr(expr)
    if isinstance(dtype, pl.List):
        inner = _redact_nested(pl.element(), dtype.inner)
        return None if inner is None else expr.list.eval(inner)
    if isinstance(dtype, pl.Struct):
        fields = {f.name: f.dtype for f in dtype.fields}
        exprs = {name: e for name, t in fields.items() if (e := _redact_nested(pl.field(name), t)) is not None}
        if _pairs(fields):
            exprs["value"] = pl.when(secret_key_expr(pl.field("key"))).then(pl.lit(MARK)).otherwise(exprs["value"])
        return expr.struct.with_fields([e.alias(n) for n, e in exprs.items()]) if exprs else None
    return None


def redact_frame(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """The frame, eager or lazy (a query result streams through), with every string redacted,
    nested ones too (the `extra` key/value pairs); in key/value rows (the config table) the
    value of a secret-named key is replaced whole, as `redact_obj` does for a dict, and its
    number (`value_num`) is dropped."""
    schema = frame.collect_schema()
    exprs = {name: e for name, dtype in schema.items() if (e := _redact_nested(pl.col(name), dtype)) is not None}
    if _pairs(dict(schema)):
        secret = secret_key_expr(pl.col("key"))
        exprs["value"] = pl.when(secret).then(pl.lit(MARK)).otherwise(exprs["value"])
        if "value_num" in schema:
            exprs["value_num"] = pl.when(secret).then(None).otherwise(pl.col("value_num"))
    return frame.with_columns(e.alias(name) for name, e in exprs.items()) if exprs else frame
