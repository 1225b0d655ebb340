"""The run store's backend for an S3-compatible object store (`s3://bucket/prefix`), and inputs read from one.

The store (loganalyze/store.py) is the same on every backend: a source's table files are
written first, then one write of the catalog lists them, and readers trust only what the
catalog lists, so no partly written source is ever visible. What this backend's
primitives rest on, and why:

- No rename: parts are staged under `.tmp/<id>/` and copied to their final keys when
  published. A PUT is atomic (an object is whole or absent), so the catalog's row counts
  are checked against the objects present rather than against Parquet footers.
- No lock: the catalog is replaced by a conditional PUT (If-Match on the ETag that was
  read, If-None-Match for the first one). Of two concurrent writers one wins; the other
  re-reads the catalog and publishes again (a new run<N> if the name was taken).
  `rm` and `check --repair` change the catalog the same way; `rm` then deletes only the
  run's objects older than the catalog it wrote (`unlisted`).
- Leftovers (staging, unlisted table files) are removed only once older than
  `LEFTOVER_AGE`, so that one writer's cleanup never takes a concurrent writer's parts.

Endpoint: `--s3-endpoint` / $LOGANALYZE_S3_ENDPOINT, else $AWS_ENDPOINT_URL, else AWS.
Region and credentials: the usual AWS variables and files (boto3 reads them).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import polars as pl

from loganalyze.backend import schema_options, verified_rows
from loganalyze.errors import LoganalyzeError
from loganalyze.formats.tables import Schema

LEFTOVER_AGE = timedelta(hours=1)
COMMIT_TRIES = 20
COPY_THREADS = 16
CONFLICT = {"PreconditionFailed", "ConditionalRequestConflict"}
CATALOG = "catalog.json"
RUN_FOLDER = re.compile(r"([^/]+/run=[^/]+/)([^/]+)\Z")


def is_url(arg: str | Path | None) -> bool:
    return str(arg or "").startswith("s3://")


def split_url(url: str) -> tuple[str, str]:
    """(bucket, key) of `s3://bucket/key`; a URL without a bucket is an error."""
    bucket, _, key = url[len("s3://"):].partition("/")
    if not bucket:
        raise LoganalyzeError(f"{url}: no bucket (use s3://bucket/prefix)")
    return bucket, key


def endpoint() -> str | None:
    return os.environ.get("LOGANALYZE_S3_ENDPOINT") or os.environ.get("AWS_ENDPOINT_URL") or None


def client(endpoint_url: str | None):
    """A boto3 S3 client: boto3, not pyarrow's S3FileSystem, because only it can make the
    catalog write conditional."""
    try:
        import boto3
    except ImportError:
        raise LoganalyzeError("s3:// needs boto3: pip install 'loganalyze[s3]'") from None
    return boto3.client("s3", endpoint_url=endpoint_url)


@contextlib.contextmanager
def s3_errors(url: str, doing: str) -> Iterator[None]:
    """A refused or failed request as one line naming the object store."""
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        raise LoganalyzeError("s3:// needs boto3: pip install 'loganalyze[s3]'") from None

    try:
        yield
    except ClientError as e:
        raise LoganalyzeError(f"{url}: cannot {doing} ({e.response['Error'].get('Code')}: "
                              f"{e.response['Error'].get('Message')})") from None
    except BotoCoreError as e:
        raise LoganalyzeError(f"{url}: cannot {doing} ({e})") from None


def list_objects(s3, bucket: str, prefix: str) -> Iterator[dict]:
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        yield from page.get("Contents", [])


def glob_regex(pattern: str) -> re.Pattern:
    """`*` and `?` within one path segment, `**/` across any number of them (as in a shell with globstar)."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        else:
            out += {"*": "[^/]*", "?": "[^/]"}.get(pattern[i], re.escape(pattern[i]))
            i += 1
    return re.compile(out + r"\Z")


def expand(url: str) -> list[str]:
    """The object URLs a `s3://bucket/key` (which may hold * ? **) names, sorted; none is an error."""
    bucket, key = split_url(url)
    if not any(c in key for c in "*?"):
        return [url]
    fixed = key[:min(key.index(c) for c in "*?" if c in key)]
    match = glob_regex(key)
    with s3_errors(url, "list objects"):
        keys = [o["Key"] for o in list_objects(client(endpoint()), bucket, fixed[:fixed.rfind("/") + 1])]
    found = sorted(f"s3://{bucket}/{k}" for k in keys if match.match(k))
    if not found:
        raise LoganalyzeError(f"{url}: no object matches")
    return found


def download(url: str, folder: Path) -> Path:
    """Copy an object to a local file with the object's modification time, so that the
    reader (which needs a file to hash and re-read) and the year guess work as for a local file."""
    bucket, key = split_url(url)
    target = folder / f"input-{uuid.uuid4().hex[:8]}{Path(key).suffix}"
    with s3_errors(url, "read the object"), open(target, "wb") as f:
        obj = client(endpoint()).get_object(Bucket=bucket, Key=key)  # one request: bytes and time
        shutil.copyfileobj(obj["Body"], f, 1 << 20)
    stamp = obj["LastModified"].timestamp()
    os.utime(target, (stamp, stamp))
    return target


class S3Backend:
    """A run store's objects under `s3://bucket/prefix` (loganalyze/backend.py `Backend` is
    the contract). Picklable (the client is made again where it is used), so Ray
    tasks can write into it."""

    local = False

    def __init__(self, url: str):
        self.root = url.rstrip("/")
        self.bucket, prefix = split_url(self.root)
        self.prefix = prefix.strip("/")
        self.endpoint = endpoint()
        self._s3 = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_s3": None}

    @property
    def s3(self):
        if self._s3 is None:
            self._s3 = client(self.endpoint)
        return self._s3

    def key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def name(self, key: str) -> str:
        return f"s3://{self.bucket}/{self.key(key)}"

    def _objects(self, folder: str) -> Iterator[dict]:
        """The objects under `folder` (a key ending in '/', or '' for the whole store), keys relative to the store."""
        base = self.key("") if self.prefix else ""
        for obj in list_objects(self.s3, self.bucket, base + folder):
            yield {**obj, "Key": obj["Key"][len(base):]}

    # -- the catalog ------------------------------------------------------------------
    def version(self) -> None:
        """None: asking would cost a request, so the store keeps the catalog it read first (a snapshot)."""
        return None

    def read_catalog(self) -> tuple[bytes, str] | None:
        """The catalog's bytes and ETag (for the conditional PUT); None: no catalog yet."""
        with s3_errors(self.name(CATALOG), "read the catalog"):  # first: it says when boto3 is missing
            from botocore.exceptions import ClientError

            try:
                obj = self.s3.get_object(Bucket=self.bucket, Key=self.key(CATALOG))
            except ClientError as e:
                if e.response["Error"].get("Code") in ("NoSuchKey", "404"):
                    return None
                raise
            return obj["Body"].read(), obj["ETag"]

    def put_catalog(self, data: bytes, token: str | None) -> bool:
        """One conditional PUT (If-Match on the ETag read, If-None-Match for the first);
        False when another writer replaced the catalog first."""
        from botocore.exceptions import ClientError

        condition = {"IfMatch": token} if token else {"IfNoneMatch": "*"}
        try:
            self.s3.put_object(Bucket=self.bucket, Key=self.key(CATALOG), Body=data, **condition)
        except ClientError as e:
            if e.response["Error"].get("Code") in CONFLICT:
                return False
            raise LoganalyzeError(f"{self.name(CATALOG)}: cannot write the catalog "
                                  f"({e.response['Error'].get('Code')})") from None
        return True

    # -- locking ----------------------------------------------------------------------
    def writing(self) -> contextlib.AbstractContextManager[None]:
        """No lock: every catalog PUT is conditional, cleanup takes only old objects, and rm
        only what is older than the catalog it wrote."""
        return contextlib.nullcontext()

    # -- table files ------------------------------------------------------------------
    def new_staging(self) -> tuple[str, Path]:
        """A staging prefix, and a local folder for what must be a file first (standard input, a downloaded input)."""
        return f".tmp/{uuid.uuid4().hex}", Path(tempfile.mkdtemp(prefix="loganalyze-"))

    def write(self, key: str, data: bytes | memoryview) -> None:
        with s3_errors(self.name(key), "stage tables"):
            self.s3.put_object(Bucket=self.bucket, Key=self.key(key), Body=bytes(data))

    def publish(self, moves: list[tuple[str, str]]) -> None:
        """Server-side copies, COPY_THREADS at a time: each is a round trip, and a fleet
        ingest publishes a few per file (the same bytes again if a commit is retried)."""
        def copy(move: tuple[str, str]) -> None:
            self.s3.copy_object(Bucket=self.bucket, Key=self.key(move[1]),
                                CopySource={"Bucket": self.bucket, "Key": self.key(move[0])})

        with s3_errors(self.root, "publish tables"), ThreadPoolExecutor(COPY_THREADS) as pool:
            list(pool.map(copy, moves))

    def unpublish(self, keys: list[str]) -> None:
        """Nothing: without a lock, another writer may have published the same keys since
        (the same source into the same run); what stays is a leftover for a later cleanup."""

    def delete(self, keys: list[str]) -> None:
        """Remove objects, and every object under a key ending in '/'."""
        with s3_errors(self.root, "delete objects"):
            found = [o["Key"] for k in keys if k.endswith("/") for o in self._objects(k)]
            found = [self.key(k) for k in found + [k for k in keys if not k.endswith("/")]]
            for i in range(0, len(found), 1000):
                self.s3.delete_objects(Bucket=self.bucket,
                                       Delete={"Objects": [{"Key": k} for k in found[i:i + 1000]]})

    def list(self, folder: str) -> list[str]:
        """Names of the objects in `folder` (a key ending in '/'): one LIST request (paged)."""
        with s3_errors(self.root, "list a table"):
            return [o["Key"][len(folder):] for o in self._objects(folder)]

    def run_folders(self) -> dict[str, list[tuple[str, bool]]]:
        """Every `<table>/run=<run>/` with its objects, settled once older than LEFTOVER_AGE
        (a younger one may be a concurrent writer's, published before its catalog PUT)."""
        old = datetime.now(timezone.utc) - LEFTOVER_AGE
        found: dict[str, list[tuple[str, bool]]] = {}
        with s3_errors(self.root, "list the store"):
            for obj in self._objects(""):
                if (m := RUN_FOLDER.match(obj["Key"])) and not obj["Key"].startswith(".tmp/"):
                    found.setdefault(m[1], []).append((m[2], obj["LastModified"] < old))
        return found

    def has_tables(self) -> bool:
        return any(name.endswith(".parquet") for entries in self.run_folders().values() for name, _ in entries)

    def abandoned(self) -> list[str]:
        """Staged objects older than LEFTOVER_AGE: a live writer's are younger."""
        old = datetime.now(timezone.utc) - LEFTOVER_AGE
        with s3_errors(self.root, "list the store"):
            return [o["Key"] for o in self._objects(".tmp/") if o["LastModified"] < old]

    def unlisted(self, folders: list[str]) -> list[str]:
        """The objects written before the catalog was: a writer whose commit comes later read
        that catalog first and published its objects again after (its PUT on the catalog it
        read before failed), so none of the objects it lists is taken. Objects of the same
        second are left, as leftovers for a later cleanup."""
        with s3_errors(self.name(CATALOG), "read the catalog"):
            written = self.s3.head_object(Bucket=self.bucket, Key=self.key(CATALOG))["LastModified"]
        with s3_errors(self.root, "list the store"):
            return [o["Key"] for folder in folders for o in self._objects(folder) if o["LastModified"] < written]

    # -- reading ----------------------------------------------------------------------
    def read_rows(self, name: str) -> int:
        """From a copy of the object in a temporary file, read row group by row group: a large
        table is never held in memory whole (its bytes, then its decoded columns)."""
        with tempfile.TemporaryFile() as copy:
            self.s3.download_fileobj(self.bucket, name.removeprefix(f"s3://{self.bucket}/"), copy)
            copy.seek(0)
            return verified_rows(copy)

    def rows(self, names: list[str]) -> None:
        """None: an object is whole or absent (a PUT is atomic), so only presence is checked;
        footers are not fetched to list a table."""
        return None

    def line_range(self, name: str) -> tuple[None, None]:
        return None, None

    def storage_options(self) -> dict[str, str]:
        """How polars reaches the objects: the endpoint here, credentials and region from the AWS variables."""
        options = {"aws_endpoint_url": self.endpoint, "aws_allow_http": "true"} if self.endpoint else {}
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        return {**options, **({"aws_region": region} if region else {})}

    def scan(self, names: list[str], schema: Schema | None) -> pl.LazyFrame:
        return pl.scan_parquet(names, storage_options=self.storage_options(), glob=False, **schema_options(schema))
