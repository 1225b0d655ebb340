"""What `loganalyze formats` shows: each known format, the releases it covers, its line
kinds with a sample line each; and the result of testing a format against its samples
(a built-in format written out as a format file is loganalyze/formats/dump.py).

The content is built as plain dicts (the JSON output) and rendered to text from them, so
both outputs say the same thing.
"""

from __future__ import annotations

from pathlib import Path

from loganalyze import formats
from loganalyze.formats.spec import LogFormat
from loganalyze.errors import LoganalyzeError
from loganalyze.formats.samples import SampleResult, run_samples
from loganalyze.formats.userformat import load

SAMPLE_CHARS = 100


def source_of(name: str) -> str:
    """'built-in', or the file a user format came from."""
    path = formats.active().files.get(name)
    return str(path) if path is not None else "built-in"


def describe() -> list[dict]:
    """Every known format, in the order detection tries them."""
    out = []
    for name, fmt in formats.active().formats.items():
        lines = isinstance(fmt, LogFormat)
        kinds = [{"name": k.name, "table": k.table, "sample": k.samples[0] if k.samples else None}
                 for k in fmt.kinds] if lines else []
        out.append({"name": name, "description": fmt.description, "releases": fmt.releases,
                    "reads": "lines" if lines else "whole file", "embeddable": lines and fmt.embeddable,
                    "source": source_of(name), "kinds": kinds})
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


def file_samples(path: Path) -> tuple[str, list[SampleResult]]:
    """Load a definition (a bad one raises LoganalyzeError) and run every sample of it."""
    user = load(path)
    return user.format.name, run_samples(user.format)


def target_samples(target: str) -> tuple[str, str, list[SampleResult]]:
    """(what was tested, format name, results) for a format file, or a known format by name."""
    if Path(target).is_file():
        return (target, *file_samples(Path(target)))
    fmt = formats.active().formats.get(target)
    if isinstance(fmt, LogFormat):
        return source_of(target), target, run_samples(fmt)
    known = ", ".join(formats.active().line_formats())
    raise LoganalyzeError(f"{target}: no such format file, nor a format read line by line ({known})")


def render_samples(label: str | Path, name: str, results: list[SampleResult]) -> str:
    failed = [r for r in results if r.problem]
    out = [f"{label}: format {name}: {len(results)} sample(s), {len(results) - len(failed)} ok, {len(failed)} failed"]
    for r in results:
        if r.problem:
            out.append(f"  FAIL {r.kind}: {r.problem}\n       {_clip(r.sample)}")
        else:
            fields = " ".join(f"{k}={v}" for k, v in r.fields.items())
            out.append(f"  ok   {r.kind}: {fields or '(no fields)'}")
    return "\n".join(out)
