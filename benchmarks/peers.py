"""The CLI of this checkout or of a peer source tree as a child process, with its own figures.

A peer (`--peer DIR` in benchmarks/memory.py and benchmarks/many_files.py) is a source
tree such as `git archive <commit> | tar -x -C DIR`: the same interpreter runs its
`loganalyze.cli` with DIR first on PYTHONPATH. Taking turns with this checkout in one
run, both see the same load on a shared machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_cli(tree: Path | None, args: list[str], sample: Callable[[], int] | None = None) -> dict:
    """Exit code, wall time, CPU seconds (user + system, from wait4: the process and the worker
    processes it waited for), peak RSS (MB, the process's own), the last line on stderr when
    it failed, and the largest value `sample()` gave, read every 0.1 s meanwhile."""
    env = {**os.environ, "PYTHONPATH": str(tree or ROOT)}
    peak, running = [0], [True]

    def watch() -> None:
        while running[0]:
            peak[0] = max(peak[0], sample())
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True) if sample else None
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "loganalyze.cli", *args], cwd=tree or ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        if watcher:
            watcher.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        running[0] = False
        if watcher:
            watcher.join()
        err.seek(0)
        message = err.read().decode(errors="replace").strip().splitlines()
    code = os.waitstatus_to_exitcode(status)
    return {"rc": code, "wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "rss_mb": round(usage.ru_maxrss / 1024),
            "error": message[-1] if message and code else "", "sampled_max": peak[0]}
