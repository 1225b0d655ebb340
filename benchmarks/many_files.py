"""A many-file ingest: files/s, peak RSS and how much it holds in staging, against peers.

    python benchmarks/many_files.py                          # 10,000 logs of 200 lines, this checkout
    python benchmarks/many_files.py --peer /tmp/before       # and another checkout, taking turns
    python benchmarks/many_files.py --files 5000 --peer /tmp/before --rounds 2   # then peers first
    python benchmarks/many_files.py --files 2000 --lines 2000 --format vllm      # vLLM V1 logs

The logs are benchmarks/fleet.py's gzipped SGLang server logs (`Decode batch` lines, one
a second), under --dir/logs-<files>x<lines>/<cluster>/<host>.log.gz; with `--format vllm`,
a benchmarks/generate.py vLLM V1 log (95% access lines) cut into files of --lines lines
(the first holds the startup block), plain text. Each ingest is
`loganalyze ingest <folder> --store <fresh> --run bench -q` as a child process
(benchmarks/peers.py), this checkout and each peer in turn, in reverse order every other
round: wall time, files/s, CPU milliseconds per file (user + system of the ingest and its
worker processes: on a shared machine the figure that moves least with the load), the
parent's peak RSS, the load average, and the most staging
folders (`<store>/.tmp/*`, one per file staged and not yet committed) seen at once,
sampled every 0.1 s: a one-commit ingest holds every file there until its end, a
chunked one (loganalyze/ingestion/inputs.py `chunks`) one chunk.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from fleet import write_logs  # noqa: E402
from generate import generate  # noqa: E402
from peers import run_cli  # noqa: E402


def staging_folders(store: Path) -> int:
    try:
        return sum(1 for _ in os.scandir(store / ".tmp"))
    except OSError:
        return 0


def write_vllm_logs(folder: Path, files: int, lines: int) -> None:
    """`files` vLLM logs of `lines` lines each, cut from one generated log (polars slices, no loop per line)."""
    folder.mkdir(parents=True)
    big = folder / "all.log"
    generate(big, "vllm", files * lines * 200)  # vLLM access lines are ~95 bytes: enough bytes for all
    text = pl.read_csv(big, has_header=False, new_columns=["text"], separator="\x1f", quote_char=None)
    big.unlink()
    for i in range(files):
        part = text.slice(i * lines, lines)
        part.write_csv(folder / f"host{i:05d}.log", include_header=False, quote_style="never")


def ingest(tree: Path | None, logs: Path, store: Path, files: int) -> dict:
    """One ingest of the folder into a fresh store (removed after), with the load average at its end."""
    shutil.rmtree(store, ignore_errors=True)
    got = run_cli(tree, ["ingest", str(logs), "--store", str(store), "--run", "bench", "-q"],
                  sample=lambda: staging_folders(store))
    shutil.rmtree(store, ignore_errors=True)
    got["files_per_s"] = round(files / got["wall_s"], 1)
    got["cpu_ms_per_file"] = round(got["cpu_s"] / files * 1000, 1)
    got["most_staged"] = got.pop("sampled_max")
    got["load_average"] = os.getloadavg()[0]
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--lines", type=int, default=200)
    ap.add_argument("--format", choices=["sglang", "vllm"], default="sglang")
    ap.add_argument("--peer", type=Path, action="append", default=[], help="another source tree to measure too")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "loganalyze-many")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of all trees, in reverse order every other round")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    logs = args.dir / f"logs-{args.format}-{args.files}x{args.lines}"
    if not logs.exists():
        shutil.rmtree(logs.with_suffix(".part"), ignore_errors=True)
        (write_vllm_logs if args.format == "vllm" else write_logs)(logs.with_suffix(".part"), args.files, args.lines)
        os.rename(logs.with_suffix(".part"), logs)
    size = sum(p.stat().st_size for p in logs.rglob("*.log*"))
    out: dict = {"format": args.format, "files": args.files, "lines_per_file": args.lines,
                 "mb_on_disk": round(size / 1e6, 1),
                 "cpus": len(os.sched_getaffinity(0)), "load_average_before": os.getloadavg()[0]}
    store = args.dir / "store"
    trees = list({"this": None, **{str(p): p.resolve() for p in args.peer}}.items())
    for r in range(args.rounds):
        for name, tree in trees[::-1] if r % 2 else trees:
            got = ingest(tree, logs, store, args.files)
            out.setdefault(name, []).append(got)
            print(f"round {r + 1} {name:24s} rc {got['rc']}  {got['wall_s']:8.1f} s  {got['files_per_s']:6.1f} files/s"
                  f"  {got['cpu_ms_per_file']:6.1f} CPU-ms/file"
                  f"  peak RSS {got['rss_mb']:5,} MB  at most {got['most_staged']:,} files staged  load "
                  f"{got['load_average']:.1f}  {got['error'][:100]}", file=sys.stderr)
    out["load_average_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
