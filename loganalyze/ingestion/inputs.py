"""The inputs of an ingest: arguments expanded (folders, local globs, object globs) and
cut into the chunks that one commit each publishes."""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from loganalyze import objstore
from loganalyze.errors import LoganalyzeError

CHUNK_FILES = 1000  # a many-file ingest commits every CHUNK_FILES files or CHUNK_BYTES of input (see chunks)
CHUNK_BYTES = 1 << 30


def expand_inputs(args: Iterable[str | Path]) -> list[str]:
    """Arguments with their globs expanded: object URLs by listing, local patterns that name
    no file (quoted, so the shell left them) with `**` across folders, a folder as every
    file below it (hidden ones left out), in name order."""
    out: list[str] = []
    for arg in map(str, args):
        if objstore.is_url(arg):
            out += objstore.expand(arg)
        elif Path(arg).is_dir():
            files = [str(p) for p in sorted(Path(arg).rglob("*")) if p.is_file()
                     and not any(part.startswith(".") for part in p.relative_to(arg).parts)]
            if not files:
                raise LoganalyzeError(f"{arg}: is a directory with no files to ingest")
            out += files
        elif any(c in arg for c in "*?[") and not Path(arg).exists():
            out += sorted(glob.glob(arg, recursive=True)) or [arg]
        else:
            out.append(arg)
    return out


def chunks(paths: list[str]) -> Iterator[list[str]]:
    """The inputs in order, cut where a chunk reaches CHUNK_FILES files or CHUNK_BYTES bytes
    (on disk; an object or standard input counts as none): what one commit publishes, so
    that staging stays bounded and a crash loses at most the chunk under way."""
    chunk: list[str] = []
    size = 0
    for path in paths:
        chunk.append(path)
        if path != "-" and not objstore.is_url(path):
            with contextlib.suppress(OSError):  # a missing file is an error where it is opened
                size += os.path.getsize(path)
        if len(chunk) >= CHUNK_FILES or size >= CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk
