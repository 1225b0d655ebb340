"""Untrusted text made safe for where it is shown: a terminal, or Markdown.

Log lines, file names, host names, drafter and model names, config values all come
from the logs, so any of them may hold a terminal control sequence (an OSC 0 that
retitles the window, an OSC 8 hyperlink, a C1 CSI `\\x9b` that moves the cursor) or
Markdown/HTML (`<img onerror>`, a `|` that splits a table cell, backticks or a newline
and a fence that end a code block early).

- `terminal`: every C0 control but newline and tab, DEL, every C1 control and the
  bidirectional overrides become visible escapes (`\\x1b`, `\\x9b`, `\\u202e`), so
  text written to a terminal can only be text.
- `md_text`, `md_code`, `md_fence`, `md_cell`: Markdown prose with its syntax
  characters escaped, code spans and fenced blocks whose fence no content can close,
  table cells with `|` and newlines escaped.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def terminal(text: str) -> str:
    """Text with every control character (but newline and tab) shown as an escape, not obeyed."""
    return _CONTROL.sub(_visible, text)


def one_line(text: str) -> str:
    """Text on one line: CR and LF become the visible `\\r`, `\\n` (file names can hold them)."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~!&])")


def md_text(text: str) -> str:
    """Prose with Markdown's syntax characters escaped, on one line, controls made visible:
    a path like `a_b_c` or a `<tag>` shows as written instead of turning into emphasis or HTML."""
    return MD_SPECIAL.sub(r"\\\1", terminal(one_line(str(text))))


def _longest_run(text: str, char: str) -> int:
    runs = re.findall(re.escape(char) + "+", text)
    return max(map(len, runs), default=0)


def md_code(text: str, cell: bool = False) -> str:
    """An inline code span that no backtick inside the text can end; on one line; in a
    table cell (`cell`), `|` escaped as GitHub's tables require even inside code."""
    text = terminal(one_line(str(text)))
    if cell:
        text = text.replace("|", "\\|")
    fence = "`" * (_longest_run(text, "`") + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or fence != "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_fence(lines: list[str]) -> list[str]:
    """A fenced block of literal lines: each line kept on one line (a file name with a
    newline and a fence in it cannot end the block) and a fence longer than any run of
    backticks inside."""
    lines = [terminal(one_line(str(line))) for line in lines]
    fence = "`" * max(3, max((_longest_run(line, "`") for line in lines), default=0) + 1)
    return [fence, *lines, fence]


def md_cell(text: str) -> str:
    """A table cell of prose."""
    return md_text(text) or " "
