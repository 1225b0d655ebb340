"""The run store on an S3-compatible object store (`s3://bucket/prefix`), and inputs read from one.

Same layout and the same rule as the local store (loganalyze/store.py): a source's table
files are written first, then one PUT of the catalog object lists them, and readers
trust only what the catalog lists, so no partly written source is ever visible. What differs, and why:

- No rename: parts are staged under `.tmp/<id>/` and copied to their final keys when
  published. A PUT is atomic (an object is whole or absent), so the catalog's row counts
  are checked against the objects present rather than against Parquet footers.
- No lock: the catalog is replaced by a conditional PUT (If-Match on the ETag that was
  read, If-None-Match for the first one). Of two concurrent writers one wins; the other
  re-reads the catalog and publishes again (a new run<N> if the name was taken).
  `rm` and `check --repair` still need the lock, so they work on local stores only.
- Leftovers (staging, unlisted table files) are removed only once older than
  `LEFTOVER_AGE`, so that one writer's cleanup never takes a concurrent writer's parts.

Endpoint: `--s3-endpoint` / $LOGANALYZE_S3_ENDPOINT, else $AWS_ENDPOINT_URL, else AWS.
Region and credentials: the usual AWS variables and files (boto3 reads them).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path

import polars as pl

from loganalyze.errors import LoganalyzeError
from loganalyze.store import CATALOG, SOURCE_ID, Store, _catalog_problem, _next_run_name, _now, add_sources
from parsers.tables import SCHEMAS, conform, empty

LEFTOVER_AGE = timedelta(hours=1)
COMMIT_TRIES = 20
COPY_THREADS = 16
CONFLICT = {"PreconditionFailed", "ConditionalRequestConflict"}
PART = re.compile(r"/run=([^/]+)/([0-9a-f]{16})-\d{5}\.parquet\Z")


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


class S3Staging:
    """A source's parts PUT under the store's `.tmp/<id>/`; `dir` is a local folder for
    what must be a file first (standard input, a downloaded input)."""

    def __init__(self, store: S3Store):
        self.store = store
        self.key = store.key(".tmp", f"{uuid.uuid4().hex}")
        self.dir = Path(tempfile.mkdtemp(prefix="loganalyze-"))
        self.parts: dict[str, int] = {}
        self.rows: dict[str, int] = {}

    def part_key(self, table: str, n: int) -> str:
        return f"{self.key}/{table}/{n:05d}.parquet"

    def write(self, table: str, frame: pl.DataFrame) -> None:
        if frame.height == 0:
            return
        n = self.parts.get(table, 0)
        buf = io.BytesIO()
        conform(table, frame).write_parquet(buf, compression="zstd")
        self.store.put(self.part_key(table, n), buf.getvalue(), "stage tables")
        self.parts[table] = n + 1
        self.rows[table] = self.rows.get(table, 0) + frame.height

    def discard(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
        with contextlib.suppress(Exception):  # what stays is a leftover for a later cleanup
            self.store.delete([self.part_key(t, i) for t, n in self.parts.items() for i in range(n)])


class S3Store(Store):
    """A run store at `s3://bucket/prefix`. Picklable (the client is made again where it is
    used), so Ray tasks can write into it.

    It reads the catalog once and keeps it, with the table listings it makes, as a
    snapshot: a reader sees one catalog (as on a local store), and a fleet query or
    summary does not pay a request per table per server. Its own commits refresh it;
    a new S3Store sees other writers' commits.
    """

    def __init__(self, root: str | None = None):
        self.root = (root or os.environ["LOGANALYZE_STORE"]).rstrip("/")
        self.bucket, prefix = split_url(self.root)
        self.prefix = prefix.strip("/")
        self.endpoint = endpoint()
        self._s3 = None
        self._snapshot: dict | None = None
        self._listings: dict[tuple[str, str], dict[str, list[str]]] = {}
        self._ids: dict[str, frozenset[str]] = {}

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_s3": None}

    @property
    def s3(self):
        if self._s3 is None:
            self._s3 = client(self.endpoint)
        return self._s3

    def key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def put(self, key: str, data: bytes, doing: str, **condition: str) -> None:
        with s3_errors(self.url(key), doing):
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=data, **condition)

    def delete(self, keys: list[str]) -> None:
        with s3_errors(self.root, "delete objects"):
            for i in range(0, len(keys), 1000):
                if keys[i:i + 1000]:
                    self.s3.delete_objects(Bucket=self.bucket,
                                           Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]]})

    def lock(self) -> contextlib.AbstractContextManager[None]:
        """Refused: commands that hold the local lock across several writes (rm, check) have
        no object-store version yet; ingest does not lock (see commit)."""
        raise LoganalyzeError(f"store {self.root}: this command needs a local store (an object store has no lock)")

    def read_catalog(self) -> tuple[dict, str | None]:
        """The catalog and its ETag (None: no catalog yet, an empty store)."""
        from botocore.exceptions import ClientError

        url = self.url(self.key(CATALOG))
        try:
            obj = self.s3.get_object(Bucket=self.bucket, Key=self.key(CATALOG))
        except ClientError as e:
            if e.response["Error"].get("Code") in ("NoSuchKey", "404"):
                return {"version": 1, "runs": {}}, None
            raise
        try:
            cat = json.loads(obj["Body"].read())
        except ValueError as e:
            raise LoganalyzeError(f"{url}: damaged catalog ({e})") from None
        if problem := _catalog_problem(cat):
            raise LoganalyzeError(f"{url}: damaged catalog ({problem})")
        return cat, obj["ETag"]

    def catalog(self) -> dict:
        if self._snapshot is None:
            with s3_errors(self.url(self.key(CATALOG)), "read the catalog"):
                self._snapshot = self.read_catalog()[0]
        return self._snapshot

    def source_ids(self, run: str) -> frozenset[str]:
        """The ids of the sources `run` lists in the snapshot, kept with it."""
        if run not in self._ids:
            self._ids[run] = frozenset(s["id"] for s in self.runs().get(run, {}).get("sources", []))
        return self._ids[run]

    def staging(self) -> S3Staging:
        return S3Staging(self)

    def commit(self, run: str | None, staged: list[tuple[dict, S3Staging]]) -> tuple[str, list[bool]]:
        """Publish staged sources into `run` (a new run<N> if None) with one conditional
        catalog PUT; when another writer changed the catalog meanwhile, start over from it."""
        for _ in range(COMMIT_TRIES):
            with s3_errors(self.url(self.key(CATALOG)), "read the catalog"):
                cat, etag = self.read_catalog()
            name = run or _next_run_name(cat)
            entry_of_run = cat["runs"].get(name) or {"created": _now(), "sources": []}
            copies: list[tuple[str, str]] = []
            added = add_sources(entry_of_run, staged,
                                lambda sid, stage: copies.extend(self._final_keys(name, sid, stage)))
            self._copy(copies)
            if not any(added) or self._put_catalog({**cat, "runs": {**cat["runs"], name: entry_of_run}}, etag):
                self._snapshot, self._listings, self._ids = None, {}, {}
                return name, added
        raise LoganalyzeError(f"store {self.root}: the catalog changed {COMMIT_TRIES} times while publishing; "
                              "try again")

    def _put_catalog(self, cat: dict, etag: str | None) -> bool:
        """Whether the catalog was replaced; False when another writer replaced it first."""
        from botocore.exceptions import ClientError

        condition = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
        try:
            self.s3.put_object(Bucket=self.bucket, Key=self.key(CATALOG), Body=json.dumps(cat, indent=1).encode(),
                               **condition)
        except ClientError as e:
            if e.response["Error"].get("Code") in CONFLICT:
                return False
            raise LoganalyzeError(f"{self.url(self.key(CATALOG))}: cannot write the catalog "
                                  f"({e.response['Error'].get('Code')})") from None
        return True

    def _final_keys(self, run: str, source_id: str, stage: S3Staging) -> list[tuple[str, str]]:
        """(staged key, final key) of each of a source's parts."""
        return [(stage.part_key(table, i), self.key(table, f"run={run}", f"{source_id}-{i:05d}.parquet"))
                for table, n in stage.parts.items() for i in range(n)]

    def _copy(self, pairs: list[tuple[str, str]]) -> None:
        """Server-side copies, COPY_THREADS at a time: each is a round trip, and a fleet
        ingest publishes a few per file (the same bytes again if a commit is retried)."""
        def copy(pair: tuple[str, str]) -> None:
            self.s3.copy_object(Bucket=self.bucket, Key=pair[1], CopySource={"Bucket": self.bucket, "Key": pair[0]})

        with s3_errors(self.root, "publish tables"), ThreadPoolExecutor(COPY_THREADS) as pool:
            list(pool.map(copy, pairs))

    def leftovers(self) -> list[str]:
        """Keys of staging and of table files the catalog does not list, older than LEFTOVER_AGE."""
        runs = self.runs()
        listed = {(r, s["id"]) for r, run in runs.items() for s in run["sources"]}
        old = datetime.now(timezone.utc) - LEFTOVER_AGE
        found = []
        with s3_errors(self.root, "list the store"):
            for obj in list_objects(self.s3, self.bucket, self.key("") + "/" if self.prefix else ""):
                rest = obj["Key"][len(self.prefix) + 1:] if self.prefix else obj["Key"]
                part = PART.search(obj["Key"])
                stale = rest.startswith(".tmp/") or (part is not None and (part[1], part[2]) not in listed)
                if stale and obj["LastModified"] < old:
                    found.append(obj["Key"])
        return found

    def cleanup(self) -> list[str]:
        found = self.leftovers()
        self.delete(found)
        return [self.url(k) for k in found]

    def _listing(self, run: str, table: str) -> dict[str, list[str]]:
        """The table's objects in the run by source id: one LIST request for the whole run."""
        if (run, table) in self._listings:
            return self._listings[run, table]
        by_source: dict[str, list[str]] = {}
        with s3_errors(self.root, "list a table"):
            for obj in list_objects(self.s3, self.bucket, self.key(table, f"run={run}") + "/"):
                sid = obj["Key"].rsplit("/", 1)[1].split("-")[0]
                if SOURCE_ID.fullmatch(sid):
                    by_source.setdefault(sid, []).append(self.url(obj["Key"]))
        self._listings[run, table] = by_source
        return by_source

    def source_files(self, run: str, source_id: str, table: str) -> list[str]:
        return sorted(self._listing(run, table).get(source_id, []))

    def files(self, run: str, table: str) -> list[str]:
        """A table's objects in a run, for the sources the catalog lists; a source with rows
        in the catalog and no object is an error naming it."""
        listing, found = self._listing(run, table), []
        for src in self.run(run)["sources"]:
            if src["tables"].get(table) and not listing.get(src["id"]):
                raise LoganalyzeError(f"{self.url(self.key(table, f'run={run}'))}/{src['id']}-*.parquet: missing, the "
                                      f"catalog lists {src['tables'][table]} rows (source {src.get('path', src['id'])})")
            found += sorted(listing.get(src["id"], []))
        return found

    def storage_options(self) -> dict[str, str]:
        """How polars reaches the objects: the endpoint here, credentials and region from the AWS variables."""
        options = {"aws_endpoint_url": self.endpoint, "aws_allow_http": "true"} if self.endpoint else {}
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        return {**options, **({"aws_region": region} if region else {})}

    def scan(self, run: str, table: str, lines: Collection[int] | None = None) -> pl.LazyFrame:
        """As Store.scan; `lines` prunes nothing here (footers are not fetched to list a table)."""
        files = self.files(run, table)
        if not files:
            return empty(table).lazy() if table in SCHEMAS else pl.LazyFrame()
        return pl.scan_parquet(files, storage_options=self.storage_options(), glob=False)
