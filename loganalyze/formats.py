"""What `loganalyze formats` shows: each known format, the releases it covers, its line
kinds with a sample line each; and the result of checking a format file against its samples.

The content is built as plain dicts (the JSON output) and rendered to text from them, so
both outputs say the same thing.
"""

from __future__ import annotations

from pathlib import Path

import parsers
from parsers.spec import LogFormat
from parsers.userformat import INSTALLED, SampleCheck, check, load

SAMPLE_CHARS = 100


def source_of(name: str, fmt: parsers.Format) -> str:
    """'built-in', or the file a user format came from."""
    user = INSTALLED.get(name)
    return str(user.path) if user is not None and user.format is fmt else "built-in"


def describe() -> list[dict]:
    """Every known format, in the order detection tries them."""
    out = []
    for name, fmt in parsers.FORMATS.items():
        lines = isinstance(fmt, LogFormat)
        kinds = [{"name": k.name, "table": k.table, "sample": k.samples[0] if k.samples else None}
                 for k in fmt.kinds] if lines else []
        out.append({"name": name, "description": fmt.description, "releases": fmt.releases,
                    "reads": "lines" if lines else "whole file", "embeddable": lines and fmt.embeddable,
                    "source": source_of(name, fmt), "kinds": kinds})
    return out


def _clip(text: str | None) -> str:
    if text is None:
        return "(no sample)"
    text = text.replace("\n", "⏎")
    return text if len(text) <= SAMPLE_CHARS else text[: SAMPLE_CHARS - 1] + "…"


def render_formats(formats: list[dict]) -> str:
    out = []
    for f in formats:
        notes = [f["source"]] + [f"releases {f['releases']}"] * bool(f["releases"])
        notes += ["reads the whole file"] * (f["reads"] != "lines") + ["embeddable: claims its lines in any file"] * f["embeddable"]
        out.append(f"{f['name']} ({', '.join(notes)}): {f['description']}")
        width = max((len(k["name"]) for k in f["kinds"]), default=0)
        out += [f"  {k['name']:<{width}}  -> {k['table']:<10} {_clip(k['sample'])}" for k in f["kinds"]]
    return "\n".join(out)


def check_file(path: Path) -> tuple[str, list[SampleCheck]]:
    """Load a definition (a bad one raises LoganalyzeError) and check every sample of it."""
    user = load(path)
    return user.format.name, check(user.format)


def render_check(path: Path, name: str, results: list[SampleCheck]) -> str:
    failed = [r for r in results if r.problem]
    out = [f"{path}: format {name}: {len(results)} sample(s), {len(results) - len(failed)} ok, {len(failed)} failed"]
    for r in results:
        if r.problem:
            out.append(f"  FAIL {r.kind}: {r.problem}\n       {_clip(r.sample)}")
        else:
            fields = " ".join(f"{k}={v}" for k, v in r.fields.items())
            out.append(f"  ok   {r.kind}: {fields or '(no fields)'}")
    return "\n".join(out)
