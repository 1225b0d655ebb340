"""Read an input file as batches of lines, whatever its compression (loganalyze/containers.py).

Why batches: a server log may be gigabytes; every later step works on a bounded polars
frame of lines at a time, so memory does not grow with the input.

Why an `Input` opened once: a log may still be written, rotated or rewritten while we
read it. Hashing and parsing the same open file, up to the size it had when opened, makes
the stored sha256 and the parsed lines describe the same bytes.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import lzma
import os
import shutil
import stat
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from loganalyze.containers import ZIP_MAGIC, unwrapped
from loganalyze.errors import LoganalyzeError

BATCH_BYTES = 16 * 1024 * 1024
LONG_LINE_BYTES = 1 << 20  # longer lines are kept, truncated, in `unparsed`, with their length
KEPT_BYTES = 4 * LONG_LINE_BYTES + 8  # of a line longer than a batch: enough for LONG_LINE_BYTES characters
LONG_LINE_MARK = r" \[loganalyze: line of \d+ bytes, truncated\]$"  # what ends a truncated line
# What str.strip_chars() empties, also behind a ticket's `> ` quoting, a Ray / vLLM process
# tag, a launcher's host label (`node1: `, `0: `, `[default0]:`; loganalyze/wrappers.py
# HOST_LABEL) or Open MPI's output tag (`[1,4]<stdout>:`), which print an empty line so, and
# behind the timestamp a log shipper puts before every line (CloudWatch, `kubectl logs
# --timestamps`): a stamp with no message is an empty line too.
_STAMP = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?:? ?"
BLANK = (r"^(?:(?:> ?|\(\w*\s*pid=\d+[^()]*\) ?|\[default\d+\]:|\[\d+,\d+\]<std(?:out|err)>: ?|" + _STAMP
         + r"|[\w.-]*\d[\w.-]*: ?)+)?\s*$")
ANSI = r"\x1b\[[0-9;?]*[A-Za-z]"
HASH_BLOCK = 1 << 20
DRAIN_BLOCK = 8 << 20

OPEN_ERRORS = {
    errno.ENOENT: "no such file",
    errno.ELOOP: "symlink loop (too many levels of symbolic links)",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ENOTDIR: "a component of the path is not a directory",
}
NOT_A_FILE = {
    stat.S_IFDIR: "is a directory, not a log file",
    stat.S_IFIFO: "is a named pipe (FIFO), not a file; pipe it in with '-' instead",
    stat.S_IFCHR: "is a character device, not a log file",
    stat.S_IFBLK: "is a block device, not a log file",
    stat.S_IFSOCK: "is a socket, not a log file",
}


@dataclass
class ReadStats:
    """What the reader saw, for the ingest report."""

    lines: int = 0
    blank: int = 0
    bytes_read: int = 0
    bad_utf8: int = 0
    long_lines: int = 0


@dataclass
class Input:
    """An input file opened once, with the size, sha256 and mtime it had when opened."""

    path: Path
    fd: int
    size: int
    sha256: str
    mtime: float

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Input:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Snapshot(io.RawIOBase):
    """The first `size` bytes of an open file, hashed as they are read."""

    def __init__(self, fd: int, size: int):
        self.fd, self.size, self.pos = fd, size, 0
        self.hash = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        # Straight into the caller's buffer: no copy (hashing releases the GIL).
        view = memoryview(buf).cast("B")[: max(0, min(len(buf), self.size - self.pos))]
        n = os.preadv(self.fd, [view], self.pos) if len(view) else 0
        self.pos += n
        self.hash.update(view[:n])
        return n

    def drain(self) -> str:
        """Hash what the decompressor left unread (trailing bytes) and return the digest."""
        buf = bytearray(DRAIN_BLOCK)
        while self.readinto(buf):
            pass
        return self.hash.hexdigest()


def _changed(path: Path) -> LoganalyzeError:
    return LoganalyzeError(f"{path}: changed while being read (rewritten or truncated); ingest it again "
                           "once it is complete")


def open_input(path: Path) -> Input:
    """Open a log file and hash it; every way it cannot be a log is a one-line error.

    O_NONBLOCK keeps a FIFO from blocking the open; the checks run on the open file
    (fstat), so a path swapped after the check cannot slip through.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise LoganalyzeError(f"{path}: {OPEN_ERRORS.get(e.errno, e.strerror)}") from None
    try:
        st = os.fstat(fd)
        kind = stat.S_IFMT(st.st_mode)
        if kind != stat.S_IFREG:
            raise LoganalyzeError(f"{path}: {NOT_A_FILE.get(kind, 'not a regular file')}")
        if st.st_size == 0:
            raise LoganalyzeError(f"{path}: empty file")
        os.set_blocking(fd, True)
        snap = _Snapshot(fd, st.st_size)
        digest = snap.drain()
        if snap.pos != st.st_size:
            raise _changed(path)
        return Input(path, fd, st.st_size, digest, st.st_mtime)
    except OSError as e:
        os.close(fd)
        raise LoganalyzeError(f"{path}: cannot read ({e.strerror})") from None
    except BaseException:
        os.close(fd)
        raise


def spool_stdin(folder: Path) -> Path:
    """Copy standard input to a file in `folder` so it can be hashed and read like a file."""
    path = folder / "stdin"
    try:
        with open(path, "wb") as out:
            if sys.stdin is None:  # started with standard input closed (<&-)
                raise LoganalyzeError("'-' reads standard input, but it is closed")
            shutil.copyfileobj(sys.stdin.buffer, out, HASH_BLOCK)
    except OSError as e:
        raise LoganalyzeError(f"cannot keep standard input in {folder} ({e.strerror})") from None
    return path


def _lines_blocks(f: io.BufferedIOBase, batch_bytes: int) -> Iterator[tuple[bytes, int]]:
    """Yield byte chunks that end on a line boundary (the last one may not), each with the
    number of bytes left out of its first line.

    A last line without a line end is part of the chunk before it (one batch is held back
    for it), so that it is parsed with the lines above it: a traceback's last frame, a
    dump's last line, pasted from a ticket without a final newline.

    A file whose first batch has CRs and no LF has CR line ends: its CRs become LFs.

    A line longer than a batch is gathered in a list, not by repeated concatenation, until
    it holds more than KEPT_BYTES; the rest of it is counted, not kept (the line is kept
    truncated to LONG_LINE_BYTES anyway, see _truncate_long), so a 200 MB line costs no
    more memory than a few batches.
    """
    pending: list[bytes] = []
    pending_bytes = dropped = 0
    cr_only = None
    held: tuple[bytes, int] | None = None  # the chunk before, which a last line without LF joins
    while block := f.read(batch_bytes):
        if cr_only is None:  # a file whose lines end in CR alone (classic Mac, some serial consoles)
            cr_only = b"\n" not in block and b"\r" in block
        if cr_only:
            block = block.replace(b"\r", b"\n")
        cut = block.rfind(b"\n")
        if cut < 0:
            if dropped or pending_bytes > KEPT_BYTES:
                if not dropped:  # the head kept ends on a whole character
                    pending[-1], dropped = _whole_utf8(pending[-1])
                dropped += len(block)
            else:
                pending.append(block)
                pending_bytes += len(block)
            continue
        start = 0
        if dropped or pending_bytes > KEPT_BYTES:  # the long line ends in this block
            if not dropped:
                pending[-1], dropped = _whole_utf8(pending[-1])
            start = block.find(b"\n")
            dropped += start
        if held is not None:
            yield held
        held = b"".join([*pending, memoryview(block)[start : cut + 1]]), dropped  # a view: copied once, by join
        pending, pending_bytes, dropped = [block[cut + 1 :]], len(block) - cut - 1, 0
    if held is not None and pending_bytes and not dropped and pending_bytes <= KEPT_BYTES:
        held, pending_bytes = (held[0] + b"".join(pending), held[1]), 0
    if held is not None:
        yield held
    if pending_bytes:
        yield b"".join(pending), dropped


def _whole_utf8(head: bytes) -> tuple[bytes, int]:
    """`head` without a character cut short at its end (its last character goes when it is
    multi-byte, whole or not: simpler, and it is past what is kept), and the bytes taken off."""
    end = len(head)
    while end > max(0, len(head) - 4) and head[end - 1] & 0xC0 == 0x80:  # continuation bytes
        end -= 1
    if end > 0 and head[end - 1] >= 0xC0:  # the lead byte of the cut character
        end -= 1
    return head[:end], len(head) - end


def _chunks(src: Input, batch_bytes: int) -> Iterator[tuple[bytes, int]]:
    """Line-aligned chunks of the decompressed input, with the bytes left out of each one's
    first line (_lines_blocks); then check the bytes were the hashed ones."""
    raw = _Snapshot(src.fd, src.size)
    try:
        with unwrapped(os.pread(src.fd, 4, 0), raw, src.fd) as f:
            yield from _lines_blocks(f, batch_bytes)
            digest = raw.drain()
    except (EOFError, gzip.BadGzipFile, zlib.error, lzma.LZMAError) as e:
        raise LoganalyzeError(f"{src.path}: truncated or corrupt compressed file ({e})") from None
    except OSError as e:
        if e.errno is None:  # no I/O error: bz2's "Invalid data stream" is an OSError too
            raise LoganalyzeError(f"{src.path}: truncated or corrupt compressed file ({e})") from None
        raise LoganalyzeError(f"{src.path}: cannot read ({e.strerror})") from None
    except Exception as e:  # zstandard raises its own ZstdError
        if type(e).__name__ == "ZstdError":
            raise LoganalyzeError(f"{src.path}: truncated or corrupt zstd file ({e})") from None
        raise
    if raw.pos != src.size or digest != src.sha256:
        raise _changed(src.path)


def _not_text(chunk: bytes) -> str | None:
    """Why the first chunk is no text log, or None. An archive (the folder of logs attached to a
    ticket) is named as one: what to do with it is clear, where 'binary data' is not."""
    if chunk.startswith(ZIP_MAGIC):
        return "a zip archive, not a text log: unpack it and ingest the folder (loganalyze ingest FOLDER)"
    if chunk[257:262] == b"ustar":  # a tar header, the archive's first member
        return "a tar archive, not a text log: unpack it and ingest the folder (loganalyze ingest FOLDER)"
    return "binary data, not a text log" if b"\x00" in chunk[:65536] else None


def read_batches(source: Input | Path, stats: ReadStats, batch_bytes: int = BATCH_BYTES) -> Iterator[pl.DataFrame]:
    """Yield frames of (line_no, text): decoded, CR and ANSI codes removed (a line a progress
    bar redrew with CRs as it was shown last), 1-based numbers.

    Blank lines are counted in `stats` and not yielded: they carry nothing to keep. A blank
    line quoted in a ticket (`> `) or printed by a process behind its tag (`(RayWorkerWrapper
    pid=1384) `, nccl/126 and vllm/137 of hold-out 5) or a launcher's label is blank too. A
    log pasted indented (inside a Markdown list item, a quoted mail, an editor's selection) loses the
    indentation that all of its first batch's lines share, on every line of it. A
    Path is opened (and hashed) here; an `Input` is read as it was when opened.
    """
    if not isinstance(source, Input):
        with open_input(Path(source)) as src:
            yield from read_batches(src, stats, batch_bytes)
        return
    first, indent = True, None
    for chunk, left_out in _chunks(source, batch_bytes):
        why = _not_text(chunk) if first else None
        if why:
            raise LoganalyzeError(f"{source.path}: {why}")
        first = False
        stats.bytes_read += len(chunk) + left_out
        lines, bad = _split_lines(chunk)
        stats.bad_utf8 += bad
        if b"\x1b" in chunk:
            lines = lines.str.replace_all(ANSI, "")
        if b"\r" in chunk:
            lines = _as_shown(lines)
        if len(chunk) > LONG_LINE_BYTES:
            lines = _truncate_long(lines, stats, left_out)
        frame = lines.to_frame("text").with_columns(
            line_no=pl.int_range(stats.lines + 1, stats.lines + 1 + len(lines), dtype=pl.Int64),
        )
        stats.lines += len(lines)
        blank = frame["text"].str.contains(BLANK)
        blanks = int(blank.sum())
        stats.blank += blanks
        frame = frame.filter(~blank) if blanks else frame
        if indent is None:  # the first batch decides for the file
            indent = common_indent(frame["text"])
        if indent:
            frame = frame.with_columns(pl.col("text").str.strip_prefix(indent))
        yield frame.select("line_no", "text")


def common_indent(text: pl.Series) -> str:
    """The spaces and tabs that every one of `text` starts with ('' where one starts otherwise).

    An excerpt of a traceback's frames alone (`  File "...", line 9`) keeps its indentation:
    it is the traceback's own, which tells a frame from its source line."""
    if text.is_empty() or text[0][:1] not in (" ", "\t"):  # most files: no column pass
        return ""
    lead = text.str.extract(r"^([ \t]*)", 1)
    shortest = lead.gather(lead.str.len_bytes().arg_min())[0]
    if not shortest or not text.str.starts_with(shortest).all() or text.str.starts_with(shortest + 'File "').any():
        return ""
    return shortest


def _as_shown(lines: pl.Series) -> pl.Series:
    """A line with carriage returns inside as a terminal shows it: its last non-blank part.

    tqdm redraws a bar with `\r`, so a log holds `\rLoading ... 25% Completed | 1/4` or a
    bar and a log line on one line (`... 9.50it/s]\r[2026-01-05 10:00:01 TP0] Decode ...`):
    the part after the last CR is what was printed last."""
    has = lines.str.contains("\r", literal=True)
    if not has.any():
        return lines
    shown = lines.str.split("\r").list.eval(pl.element().filter(pl.element().str.strip_chars() != "")).list.last()
    return pl.select(pl.when(has).then(shown.fill_null("")).otherwise(lines)).to_series().alias(lines.name)


def _truncate_long(lines: pl.Series, stats: ReadStats, left_out: int = 0) -> pl.Series:
    """Lines over LONG_LINE_BYTES cut to that many characters, their byte length said at the
    end (of the first line, `left_out` bytes more than it holds: the reader kept only its head)."""
    size = lines.str.len_bytes()
    if left_out:
        size = size + pl.Series([left_out], dtype=size.dtype).extend_constant(0, len(size) - 1)
    long = size > LONG_LINE_BYTES
    if not long.any():
        return lines
    stats.long_lines += int(long.sum())
    cut = lines.str.head(LONG_LINE_BYTES) + pl.lit(" [loganalyze: line of ") + size.cast(pl.String) \
        + pl.lit(" bytes, truncated]")
    return pl.select(pl.when(long).then(cut).otherwise(lines)).to_series().alias(lines.name)


def _split_lines(chunk: bytes) -> tuple[pl.Series, int]:
    """The chunk's lines without their CR LF / LF, and how many U+FFFD its decoding holds.

    Valid UTF-8 (the usual case) is split by polars without a Python string per line;
    otherwise Python decodes it, each bad byte sequence becoming U+FFFD. Both keep a CR
    inside a line and take off one CR before the LF (or at the end of the chunk).
    """
    try:
        lines = pl.read_lines(chunk, name="text")["text"]
        return lines, (chunk.count("\ufffd".encode()) if b"\xef" in chunk else 0)  # memchr first
    except Exception:  # invalid UTF-8 (or a polars without read_lines)
        text = chunk.decode("utf-8", errors="replace")
        split = text.split("\n")
        if split and split[-1] == "":
            split.pop()
        return pl.Series("text", split, dtype=pl.String).str.strip_suffix("\r"), text.count("\ufffd")
