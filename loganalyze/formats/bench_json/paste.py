"""JSON read as users paste it into tickets: lone surrogates dropped, a document found after a
fence or a few lines of prose, one cut short closed at the last prefix that closes."""

from __future__ import annotations

import bisect
import itertools
import json
import re

import polars as pl


def _no_surrogates(obj: object) -> object:
    """JSON data with lone surrogates (`"\\ud800"`, valid JSON, not valid UTF-8) as U+FFFD."""
    if isinstance(obj, str):
        return obj.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(obj, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_no_surrogates(v) for v in obj]
    return obj


_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def loads(text: str) -> object:
    obj = json.loads(text)
    return _no_surrogates(obj) if _SURROGATE.search(text) else obj


def pasted(lines: list[str]) -> list[tuple[int, int, object]]:
    """The JSON documents pasted into a ticket: (first, last) index of each one's lines and
    its value, in order.

    A document opens on a line of its own (`{`, `[`), at the end of a line of prose or log
    (`... - evalscope - INFO - {`), or, after a line that is no JSON, with a member of an
    object whose opening brace was left out (`"errorRate": 0.0,`: a fragment copied from a
    results file). It ends where its brackets close, and may be cut short (the post, or the
    stored copy, ended inside it; a fence closes it too): then it is cut back line by line
    until what is left parses once its open brackets are closed. The file's text is joined
    once and each document decoded where it stands, so a long file costs one pass."""
    paste = Paste(lines)
    out, i = [], 0
    while i < len(lines):
        opening = document_opening(lines[i], i == 0 or not JSONISH.match(lines[i - 1]))
        if opening is None:
            i += 1
            continue
        last, value = paste.document(i, opening)
        if value is not None:
            out.append((i, last, value))
        i = last + 1 if value is not None else max(last, i + 1)
    return out


MEMBER = re.compile(r'^"[^"]+"\s*:\s*\S')

JSONISH = re.compile(r'^\s*(?:"|[{}\[\],]|-?\d|true\b|false\b|null\b)')  # a line inside a JSON document


def document_opening(line: str, after_prose: bool) -> str | None:
    """How a JSON document opens on this line (`{`, `[`, or `{` before a member that
    follows a line of prose), None where none does."""
    text = line.strip()
    if text in ("{", "["):
        return text
    if MEMBER.match(text):
        return "{" if after_prose else None
    if text.endswith("{") and not text.startswith("}"):
        return "{"
    return None


class Paste:
    """A pasted text joined once, with where each line and each fence starts."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.text = "\n".join(lines)
        self.starts = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
        self.fences = [i for i, line in enumerate(lines) if line.strip().startswith("```")]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def document(self, start: int, opening: str) -> tuple[int, object | None]:
        """(index of its last line, value) of the document opening on line `start`; where no
        prefix of it parses, (index of the line it breaks on, None): no document of its
        own starts on its lines before that one, so the search goes on from there."""
        after = bisect.bisect_right(self.fences, start)
        end = self.fences[after] if after < len(self.fences) else len(self.lines)
        line = self.lines[start]
        if MEMBER.match(line.strip()):  # a fragment: decoded with the brace it left out
            text, at, shift = "{" + self.text[self.starts[start]:self.starts[end]], 0, self.starts[start] - 1
        else:
            text, at, shift = self.text, self.starts[start] + len(line.rstrip()) - 1, 0
        try:
            value, stop = json.JSONDecoder().raw_decode(text, at)
            if self.line_of(stop - 1 + shift) < end:
                return self.line_of(stop - 1 + shift), _no_surrogates(value)
            broken = end - 1
        except json.JSONDecodeError as e:
            broken = min(self.line_of(e.pos + shift), end - 1)  # the line it was cut on, or interrupted by
        for last in range(broken, max(start, broken - CUT_SEARCH) - 1, -1):
            cut = text[at:self.starts[last + 1] - shift].rstrip().rstrip(",")
            try:
                return last, loads(cut + _closers(cut))
            except ValueError:
                continue
        return broken, None


PROSE = 5  # lines of fence or prose the first pasted document may follow

CUT_SEARCH = 40  # lines back from a cut to find a prefix that closes


def _closers(text: str) -> str:
    """The brackets that close what `text` leaves open (strings respected)."""
    stack, quoted, escaped = [], False, False
    for ch in text:
        if quoted:
            escaped, quoted = (False, quoted) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            quoted = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    return "".join(reversed(stack))


def objects(frame: pl.DataFrame) -> list[tuple[int, list[int], object]]:
    """(line_no, lines it spans, parsed object) for each JSON value of the file."""
    first = frame["text"][0]
    try:
        loads(first)
        lines_mode = True
    except ValueError:
        lines_mode = False
    if not lines_mode:
        numbers = frame["line_no"].to_list()
        try:
            docs = [(numbers, loads("\n".join(frame["text"].to_list())))]
        except ValueError:
            docs = [(numbers[first:last + 1], doc) for first, last, doc in pasted(frame["text"].to_list())]
        return [(int(span[0]), span if i == 0 else [], v) for span, doc in docs
                for i, v in enumerate(doc if isinstance(doc, list) else [doc])]
    out = []
    for line_no, text in frame.select("line_no", "text").iter_rows():
        try:
            out.append((line_no, [line_no], loads(text)))
        except ValueError:
            continue
    return out
