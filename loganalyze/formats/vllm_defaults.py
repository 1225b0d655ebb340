"""vLLM's default `max_num_seqs` per release (docs/formats-sources.md#default-max_num_seqs-per-release).

A user-set `max_num_seqs` is logged only in `non-default args` (0.9+) or the full
`args: Namespace(...)` dump (0.4-0.8.5); when neither is in the log, the concurrency cap
is vLLM's default, which depends on the release, the engine (V0 or V1) and, from 0.8.5,
on the GPU's memory (and from 0.9.2 on whether it is an A100).
"""

from __future__ import annotations

import re

V0_DEFAULT = 256

# (first release, default below the memory tier, default at or above it, tier in GiB,
#  device names kept out of the upper tier). The V1 engine became the default in 0.8.0.
DEFAULTS: tuple[tuple[tuple[int, int, int], int, int, float, tuple[str, ...]], ...] = (
    ((0, 0, 0), 256, 256, 0.0, ()),
    ((0, 8, 0), 1024, 1024, 0.0, ()),
    ((0, 8, 5), 256, 1024, 70.0, ()),
    ((0, 9, 2), 256, 1024, 70.0, ("a100",)),
    ((0, 33, 0), 256, 1024, 70.0, ("a100", "gb10", "dgx spark")),
)

# Every value the default has taken: a plateau of `running` at one of them, with requests
# waiting, is the default at work even where the log names no release.
EVERY_DEFAULT = frozenset({V0_DEFAULT} | {v for row in DEFAULTS for v in row[1:3]})


def parse_version(version: str | None) -> tuple[int, int, int] | None:
    """(major, minor, patch) from '0.10.1', 'v0.6.3.post1', '0.19.1rc1', '0.11.1.dev12+g…'."""
    if not version:
        return None
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", version.strip())
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def default_max_num_seqs(version: str | None, gpu_mem_gb: float | None = None, *,
                         v0: bool = False, device_name: str | None = None) -> int | None:
    """vLLM's default max_num_seqs for `version`, or None when it cannot be known.

    `gpu_mem_gb` is the GPU's total memory in GiB (vLLM compares it with 70 GiB). None is
    returned for an unknown version, or for a release whose default depends on the GPU
    memory when that is not given and the tiers differ. `v0` marks the V0 engine, which
    always defaults to 256 (V0 stats lines say `Pending`, V1 ones `Waiting`).
    """
    parsed = parse_version(version)
    if parsed is None:
        return None
    if v0:
        return V0_DEFAULT
    _, low, high, tier, excluded = [row for row in DEFAULTS if row[0] <= parsed][-1]
    if low == high:
        return low
    if device_name and any(name in device_name.lower() for name in excluded):
        return low
    if gpu_mem_gb is None:
        return None
    return high if gpu_mem_gb >= tier else low
