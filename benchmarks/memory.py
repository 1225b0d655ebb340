"""Peak RSS of `loganalyze ingest` on hostile lines and on a big log of ordinary ones.

    python benchmarks/memory.py                              # every shape, this checkout
    python benchmarks/memory.py --peer /tmp/before           # and another checkout, in the same run
    python benchmarks/memory.py --shapes line-200m,line-400k --json /tmp/memory.json

The shapes (generated under --dir unless there already):

* `line-200m`: an SGLang `Decode batch` line with 200 MB after its fields, between two
  ordinary lines (the issue's hostile input: a regex built from the line, then the line
  held several times over; a file of that line alone is refused, as no line of it is read);
* `line-400k`: 2,000 ordinary SGLang lines with one 400 KB `Decode batch` line between them;
* `normal-1g`: 1 GB of ordinary SGLang lines (benchmarks/generate.py).

Each ingest is a child process waited for with os.wait4, so its peak RSS (ru_maxrss) is
its own; a peer (`--peer DIR`, a source tree such as `git archive` of another commit, see
benchmarks/peers.py) runs the same commands, taking turns with this checkout.
tests/test_store_faults.py holds the bounds (`pytest -m long`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
DECODE = ("[2026-01-02 03:04:05 TP0] Decode batch, #running-req: 48, #token: 9000, token usage: 0.10, "
          "gen throughput (token/s): 849.00, #queue-req: 0, ")

sys.path.insert(0, str(HERE))
from generate import generate  # noqa: E402
from peers import run_cli  # noqa: E402


def long_line_log(path: Path, line_bytes: int, around: int) -> None:
    """`around` ordinary lines, then one `Decode batch` line of `line_bytes`, then `around` more."""
    ordinary = "".join(f"[2026-01-02 03:{i // 60 % 60:02d}:{i % 60:02d} TP0] Decode batch, #running-req: {i % 50}, "
                       "#token: 900, token usage: 0.10, gen throughput (token/s): 849.00, #queue-req: 0\n"
                       for i in range(around))
    block = "y" * (1 << 20)
    with open(path, "w") as f:
        f.write(ordinary + DECODE)
        rest = line_bytes - len(DECODE)
        for _ in range(rest >> 20):
            f.write(block)
        f.write("y" * (rest & ((1 << 20) - 1)) + "\n" + ordinary)


SHAPES: dict[str, Callable[[Path], None]] = {
    "line-200m": lambda p: long_line_log(p, 200 * 10**6, 1),
    "line-400k": lambda p: long_line_log(p, 400 * 10**3, 1000),
    "normal-1g": lambda p: generate(p, "sglang", 10**9),
}


def peak_rss(tree: Path | None, log: Path, store: Path) -> dict:
    """`loganalyze ingest LOG` into a fresh store (removed after), as benchmarks/peers.py runs it."""
    shutil.rmtree(store, ignore_errors=True)
    try:
        return run_cli(tree, ["ingest", str(log), "--store", str(store), "-q", "--run", "r"])
    finally:
        shutil.rmtree(store, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated subset of {','.join(SHAPES)}")
    ap.add_argument("--peer", type=Path, action="append", default=[], help="another source tree to measure too")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "loganalyze-memory")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    trees = {"this": None, **{str(p): p.resolve() for p in args.peer}}
    out: dict = {}
    for shape in args.shapes.split(","):
        log = args.dir / f"{shape}.log"
        if not log.exists():
            SHAPES[shape](log)
        out[shape] = {"bytes": log.stat().st_size}
        for name, tree in trees.items():
            out[shape][name] = got = peak_rss(tree, log, args.dir / "store")
            print(f"{shape:10s} {name:24s} rc {got['rc']}  {got['wall_s']:7.2f} s  peak RSS {got['rss_mb']:6,} MB"
                  f"  {got['error'][:100]}", file=sys.stderr)
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
