"""Fleet ingest speed: files/s and MB/s of the local and Ray executors on many small server logs.

    python benchmarks/fleet.py                       # 400 logs of 2,000 lines, local then ray
    python benchmarks/fleet.py --files 1000 --lines 500 --executors ray --cpus 2
    python benchmarks/fleet.py --s3                  # store and inputs on a moto server (127.0.0.1)

Each log is a gzipped SGLang server log (`Decode batch` lines, one a second; every tenth
server KV-bound with a queue, so diagnosis has findings). Figures are wall time of
`loganalyze.ingest` end to end: list, read, hash, parse, write Parquet, publish. Ray's
start-up is timed apart (a long-lived cluster pays it once). README.md "Fleet scale"
reasons from these numbers to N nodes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def server_log(i: int, lines: int) -> bytes:
    """Server i's log: whole columns formatted by polars, no Python loop per line."""
    bad = i % 10 == 0
    n = pl.int_range(0, lines, eager=True)
    frame = pl.DataFrame({"n": n}).with_columns(
        ts=(pl.datetime(2026, 11, 29, 10) + pl.duration(seconds=pl.col("n"))).dt.strftime("%Y-%m-%d %H:%M:%S"),
        running=pl.lit(380 if bad else 40) + (pl.col("n") + i) % 7,
        usage=pl.lit(0.97 if bad else 0.41) + ((pl.col("n") % 3) / 100),
        tput=pl.lit(900.0 + i) + (pl.col("n") % 13),
        queue=pl.lit(1500 if bad else 0) + pl.col("n") % 5 * (1 if bad else 0),
    )
    text = frame.select(pl.format(
        "[{} TP0] Decode batch. #running-req: {}, #token: {}, token usage: {}, gen throughput (token/s): {}, "
        "#queue-req: {}", "ts", "running", pl.col("running") * 900, pl.col("usage").round(2), "tput", "queue"))
    return gzip.compress(("\n".join(text.to_series()) + "\n").encode(), compresslevel=1)


def write_logs(folder: Path, files: int, lines: int) -> list[Path]:
    """`files` logs under folder/<cluster>/<host>.log.gz (clusters of 50 hosts)."""
    paths = []
    for i in range(files):
        path = folder / f"c{i // 50}" / f"host{i:04d}.log.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(server_log(i, lines))
        paths.append(path)
    return paths


def timed(executor: str, inputs: list[str], store: str) -> float:
    import loganalyze as la

    start = time.perf_counter()
    la.ingest(inputs, store=store, executor=executor)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=400)
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--executors", default="local,ray")
    ap.add_argument("--cpus", type=int, default=os.cpu_count())
    ap.add_argument("--s3", action="store_true", help="store and inputs on a moto S3 server on 127.0.0.1")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    paths = write_logs(work / "logs", args.files, args.lines)
    size = sum(p.stat().st_size for p in paths)
    raw = args.files * len(gzip.decompress(paths[1].read_bytes()))
    inputs, store_of = [str(p) for p in paths], lambda e: str(work / f"store-{e}")
    if args.s3:
        inputs, store_of = s3_setup(work / "logs")
    out = {"files": args.files, "lines_per_file": args.lines, "gz_mb": size / 1e6, "raw_mb": raw / 1e6,
           "cpus": args.cpus}
    for executor in args.executors.split(","):
        if executor == "ray":
            import ray

            start = time.perf_counter()
            ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
            out["ray_start_s"] = time.perf_counter() - start
            timed("ray", inputs[:args.cpus], store_of("warmup"))  # workers imported, as in a long-lived cluster
        seconds = timed(executor, inputs, store_of(executor))
        out[executor] = {"s": round(seconds, 2), "files_per_s": round(args.files / seconds, 1),
                       "raw_mb_per_s": round(raw / 1e6 / seconds, 1)}
    print(json.dumps(out, indent=1))


def s3_setup(logs: Path):
    """A moto server on 127.0.0.1 holding the logs; returns the input URL glob and a store URL per executor."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1",
                      LOGANALYZE_S3_ENDPOINT=f"http://127.0.0.1:{server._server.server_address[1]}")
    s3 = boto3.client("s3", endpoint_url=os.environ["LOGANALYZE_S3_ENDPOINT"])
    for bucket in ("logs", "fleet"):
        s3.create_bucket(Bucket=bucket)
    for p in sorted(logs.rglob("*.log.gz")):
        s3.upload_file(str(p), "logs", str(p.relative_to(logs)))
    return ["s3://logs/**/*.log.gz"], lambda e: f"s3://fleet/{e}"


if __name__ == "__main__":
    main()
