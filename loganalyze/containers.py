"""What a file holds beneath its container: the reader's bytes, whatever wraps them.

A log arrives compressed (gzip, zstd, xz, bzip2), as the rows of a Parquet export, or as UTF-16 text;
each is opened here as a stream of the plain UTF-8 lines it holds, so the reader
(loganalyze/reader.py) cuts lines, counts and hashes the same way for all of them.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import os

import polars as pl

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
PARQUET_MAGIC = b"PAR1"
XZ_MAGIC = b"\xfd7zX"  # of b"\xfd7zXZ\x00": the first four bytes are enough
BZ2_MAGIC = b"BZh"
ZIP_MAGIC = b"PK\x03\x04"  # no container of one log: the reader names it (reader._not_text)
UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
PARQUET_BATCH_ROWS = 10_000
JSON_KEY = r'"(?:[^"\\]|\\.)*"'
BUFFER = 1 << 20


class Refilled(io.RawIOBase):
    """A raw stream whose bytes come from its `_fill` (more bytes into `out`; False at the end)."""

    out: bytes  # what `_fill` gave last, and how far into it the reader is
    at: int

    def readable(self) -> bool:
        return True

    def _fill(self) -> bool:
        raise NotImplementedError

    def readinto(self, buf) -> int:
        while self.at >= len(self.out):
            if not self._fill():
                return 0
        n = min(len(buf), len(self.out) - self.at)
        memoryview(buf).cast("B")[:n] = memoryview(self.out)[self.at : self.at + n]
        self.at += n
        return n


class ZstdFrames(Refilled):
    """The decompressed bytes of one or more zstd frames; a frame cut short is an EOFError
    (as gzip raises for a truncated .gz), where zstandard's stream reader ends quietly."""

    FEED = 64 * 1024  # compressed bytes per call: bounds what one call decompresses

    def __init__(self, raw: io.RawIOBase):
        import zstandard

        self.raw, self.new = raw, zstandard.ZstdDecompressor().decompressobj
        self.obj, self.in_frame = self.new(), False
        self.out, self.at = b"", 0

    def _fill(self) -> bool:
        """Decompress more; False at the end of the input."""
        data = self.raw.read(self.FEED)
        if not data:
            if self.in_frame:
                raise EOFError("compressed file ended before the end of its zstd frame")
            return False
        chunks = []
        while data:
            chunks.append(self.obj.decompress(data))
            self.in_frame = True
            if not self.obj.eof:
                break
            data, self.obj, self.in_frame = self.obj.unused_data, self.new(), False
        self.out, self.at = b"".join(chunks), 0
        return True


class ParquetRows(Refilled):
    """A Parquet file's rows as lines of JSON, one row a line, its null cells left out.

    Why: some clients write their results as Parquet (AIPerf's server_metrics_export.parquet).
    Like a compressed file it is a container; what it holds is records, and a record a line
    keeps the reader's contract: every row ends in a table or in `unparsed` with its line
    number (its row number, from 1). Parquet's index is at its end, so the rows are read from
    the open file (`fd`) by row group, memory bounded by one group, not through the reader's
    sequential stream, which the reader then hashes to the end as for any container."""

    def __init__(self, fd: int):
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.file = os.fdopen(os.dup(fd), "rb")
        try:
            self.batches = pq.ParquetFile(self.file).iter_batches(PARQUET_BATCH_ROWS)
        except (pa.ArrowException, OSError) as e:  # cut short, or no Parquet file after all
            self.file.close()
            raise EOFError(f"not a readable Parquet file: {e}") from None
        self.out, self.at = b"", 0

    def close(self) -> None:
        self.file.close()
        super().close()

    def _fill(self) -> bool:
        batch = next(self.batches, None)
        if batch is None:
            return False
        # One JSON encode of the whole row, then its null cells cut out: the first cell's with
        # the comma after it, any other's with the comma before (a key is a JSON string).
        lines = pl.from_arrow(batch).select(pl.struct(pl.all()).struct.json_encode()
                                            .str.replace_all(rf',{JSON_KEY}:null', "")
                                            .str.replace(rf'^\{{{JSON_KEY}:null,?', "{")).to_series()
        self.out, self.at = (lines.str.join("\n")[0] + "\n").encode(), 0
        return True


class Utf16(Refilled):
    """UTF-16 text (with its byte-order mark) as UTF-8: what Windows PowerShell 5 writes for
    `docker logs vllm > server.log`, so a first log from a Windows desk is text, not binary."""

    FEED = 64 * 1024

    def __init__(self, raw: io.RawIOBase):
        self.raw, self.decoder = raw, codecs.getincrementaldecoder("utf-16")(errors="replace")
        self.out, self.at = b"", 0

    def _fill(self) -> bool:
        data = self.raw.read(self.FEED)
        self.out, self.at = self.decoder.decode(data or b"", final=not data).encode(), 0
        return bool(data) or bool(self.out)


def unwrapped(magic: bytes, raw: io.RawIOBase, fd: int) -> io.BufferedIOBase:
    """The bytes `raw` (the open file `fd`, read from its start) holds, by its first bytes
    (`magic`): decompressed, a Parquet file's rows, UTF-16 text as UTF-8, or as they are."""
    if magic == PARQUET_MAGIC:
        return io.BufferedReader(ParquetRows(fd), BUFFER)
    if magic.startswith(GZIP_MAGIC):
        return gzip.GzipFile(fileobj=io.BufferedReader(raw, BUFFER), mode="rb")
    if magic == ZSTD_MAGIC:
        return io.BufferedReader(ZstdFrames(raw), BUFFER)
    if magic == XZ_MAGIC:
        return lzma.LZMAFile(io.BufferedReader(raw, BUFFER))
    if magic.startswith(BZ2_MAGIC):
        return bz2.BZ2File(io.BufferedReader(raw, BUFFER))
    if magic[:2] in UTF16_BOMS:
        return io.BufferedReader(Utf16(raw), BUFFER)
    return io.BufferedReader(raw, BUFFER)
