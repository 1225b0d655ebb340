"""nccl-bandwidth: what nccl-tests measured against what the topology should give.

Large-message busbw is compared with the public reference for the GPU class
(docs/formats-sources.md#reference-bandwidths; sources in docs/findings-nccl.md); a busbw
that falls off above some size is flagged too. The `# Avg bus bandwidth` line is never
used: it averages in the latency-bound sizes. A healthy measurement gives no finding: a note
that busbw is as expected reads as an alarm on a healthy log (nccl/273, nccl/17); the class
and reference it was held to stay in the finding's metrics when there is one.
"""

from __future__ import annotations

import re

import polars as pl

from loganalyze.diagnosis.base import Case, Finding

COMM_SHARE = 0.3  # same assumption as nccl-transport: allreduce share of a TP decode step
PCIE_LOW = 15.0  # below ~15 GB/s on Gen4/Gen5: SHM fallback, ACS/IOMMU redirect, x8 link or SYS hops
NVLINK_MIN = 60.0  # above any PCIe x16 figure (Gen5 ~64 GB/s raw per direction): NVLink in use
FAR_BELOW = 0.5  # NVSwitch systems: below half the reference
BOX_GPUS = 8  # GPUs in one server of the usual kind: more ranks than this span several (or an NVL rack)
NVLINK_RACK = r"GB200|GB300|NVL\d"  # hosts of one NVLink domain (NVL72 trays): several hosts, still NVLink
RDMA_LOW = 8.0  # GB/s (64 Gb/s): below what one 100 Gb IB/RoCE NIC carries; GPUDirect boxes ship 100-400 Gb
DATACENTER = r"H100|H200|H800|H20\b|A100|A800|B200|B100|SXM|HBM"  # GPUs sold in boxes with RDMA NICs

# (class, name pattern, reference busbw GB/s, source) - the first pattern that matches wins.
REFERENCES = (
    ("H800 NVLink", r"H800", 215.0, "NVIDIA/nccl#1374 (8x H800: ~215 GB/s)"),
    ("NVSwitch", r"SXM|HBM3|H200|B200|B100|GB200|GH200|H20\b|A800", 370.0,
     "NVIDIA/nccl-tests#212 (8x H100 NVSwitch: ~370 GB/s Ring, ~480 NVLS)"),
    ("PCIe", r"PCIe|PCIE|GeForce|RTX|\bL4\b|L20|L40|A10\b|A40|T4|A6000|A5000|A4000|Blackwell",
     27.0, "8-GPU PCIe ring 20-35 GB/s (NVIDIA/nccl#1639: 28 GB/s on 8x RTX 5090; "
     "tinygrad/open-gpu-kernel-modules#36: 25.7-25.95 GB/s on 4x RTX 4090)"),
)


def classify(devices: list[str], busbw: float) -> tuple[str, float | None, str]:
    """(GPU class, reference busbw, source). Measured NVLink-class bandwidth overrides the name:
    PCIe cards with an NVLink bridge exist (2x H100 PCIe: 115 GB/s, NVIDIA/nccl#1161)."""
    if busbw >= NVLINK_MIN:
        for cls, pattern, ref, src in REFERENCES[:2]:
            if any(pl.Series(devices, dtype=pl.String).str.contains(pattern)):
                return cls, ref, src
        return "NVLink", None, "NVIDIA/nccl#1161 (2x H100 PCIe + NVLink bridge: 115-116 GB/s)"
    names = pl.Series(devices, dtype=pl.String)
    for cls, pattern, ref, src in REFERENCES:
        if names.len() and names.str.contains(pattern).any():
            return cls, ref, src
    return "unknown", None, "rule of thumb: below ~15 GB/s on PCIe Gen4/Gen5 is abnormal"


def _gb(size: int) -> str:
    return f"{size / 2**30:g} GiB" if size >= 2**30 else f"{size / 2**20:g} MiB" if size >= 2**20 else f"{size / 1024:g} KiB"


def _rows(perf: pl.DataFrame, *sizes: int) -> pl.DataFrame:
    return perf.filter(pl.col("size").is_in(list(sizes))).select("source", "line_no", "raw")


def _slower(low: float) -> str:
    """How much slower a busbw `low` (a fraction) below the reference is; 0 GB/s is no rate at all."""
    return f"~{1 / (1 - low):.1f}x slower" if low < 1 else "stalled (0 GB/s)"


def find(ctx: Case) -> list[Finding]:
    fam = ctx.metrics.get("nccl")
    if not fam or not fam.summary.get("perf_rows"):
        return []
    s, perf = fam.summary, fam.frames["busbw"].filter(pl.col("busbw").is_not_null())
    busbw, size, n = s["busbw_large"], s["busbw_large_size"], s.get("perf_nranks")
    # No large messages measured, or a busbw of 0 at large sizes (the figure of a process that
    # ran alone, nranks 1: nccl-tests built without MPI=1, or one job per node): no verdict.
    if busbw is None or busbw == 0 or n == 1:
        return [_collapse(ctx, s, perf, {"collapse_size": s["collapse_size"]})] if s.get("collapse_size") else []
    if (s.get("perf_hosts") or 0) > 1 and not any(re.search(NVLINK_RACK, d) for d in s.get("perf_devices") or []):
        # Ranks on several hosts (nccl/129: two A3 Mega nodes, 338 GB/s): the network between the
        # nodes bounds busbw, and every reference here is one box's; only a figure below any RDMA
        # NIC's is a verdict (nccl/272: 5.8 GB/s over RoCE between H100 nodes).
        found = _below_rdma(ctx, s, perf)
        return found + ([_collapse(ctx, s, perf, {"collapse_size": s["collapse_size"]})] if s.get("collapse_size") else [])
    cls, ref, src = classify(s.get("perf_devices") or [], busbw)
    test = ", ".join(s.get("perf_tests") or []) or "nccl-tests"
    devices = f", {', '.join(s['perf_devices'])}" if s.get("perf_devices") else ""
    ranks = f"{n} ranks, worked out from busbw/algbw" if n and s.get("perf_nranks_inferred") else f"{n or '?'} ranks"
    where = f"{busbw:g} GB/s busbw at {_gb(size)} ({test}, {ranks}{devices})"
    decode = (f" At decode sizes (8 KB-1 MB) the median time is {s['time_decode_us_median']:g} us per call."
              if s.get("time_decode_us_median") is not None else "")
    metrics = {k: s.get(k) for k in ("busbw_large", "busbw_large_size", "busbw_peak", "busbw_decode_median",
                                     "time_decode_us_median", "collapse_size", "perf_nranks", "perf_devices")}
    metrics.update(gpu_class=cls, reference_busbw=ref)
    found = []
    low = _low(cls, ref, busbw)
    if low is not None:
        floor = f"{cls} reference" if ref else "floor"  # no GPU named: only the rule of thumb's floor
        found.append(Finding(
            id="nccl-bandwidth", severity="warning", title=f"NCCL busbw far below the {floor}",
            verdict=f"{where} is {low:.0%} below the {floor} of {ref or PCIE_LOW:g} GB/s ({src}).{decode}",
            impact=round(low * COMM_SHARE, 3),
            impact_text=f"collectives {_slower(low)} than the reference; ~{low * COMM_SHARE:.0%} of decode "
                        f"throughput if allreduce is {COMM_SHARE:.0%} of a step (assumed)",
            recommendation="Run with NCCL_DEBUG=INFO and look at the transport lines (SHM instead of P2P?), "
                           "`nvidia-smi topo -m` (SYS/PHB hops), `lspci -vv` link width (x8?) and ACS/IOMMU settings.",
            evidence=ctx.evidence(_rows(perf, size)), metrics=metrics, confidence="high" if ref else "medium",
        ))
    if s.get("collapse_size"):
        found.append(_collapse(ctx, s, perf, metrics))
    return found


def _below_rdma(ctx: Case, s: dict, perf: pl.DataFrame) -> list[Finding]:
    """Across hosts over IB/RoCE between data-center GPUs, busbw under RDMA_LOW: the NIC's speed is
    not in the log, so the floor is the slowest NIC such boxes ship with, and confidence is low."""
    busbw, size = s["busbw_large"], s["busbw_large_size"]
    rdma = any(t.startswith("NET/IB") for t in s.get("transports") or {}) or "IB" in (s.get("networks") or [])
    devices = s.get("perf_devices") or []
    if busbw >= RDMA_LOW or not rdma or not any(re.search(DATACENTER, d) for d in devices):
        return []
    test = ", ".join(s.get("perf_tests") or []) or "nccl-tests"
    low = 1 - busbw / RDMA_LOW
    return [Finding(
        id="nccl-bandwidth", severity="warning", title="NCCL busbw between nodes below any RDMA NIC's",
        verdict=f"{busbw:g} GB/s busbw at {_gb(size)} ({test}, {s['perf_hosts']} hosts, {', '.join(devices)}) "
                f"over IB/RoCE is below the {RDMA_LOW:g} GB/s that even one 100 Gb NIC carries. "
                "The log does not give the NICs' speed, so the floor is the slowest such boxes ship with.",
        impact=round(low * COMM_SHARE, 3),
        impact_text=f"inter-node collectives {_slower(low)} than one 100 Gb NIC allows",
        recommendation="Check which NICs NCCL uses (NCCL_IB_HCA, `NET/IB : Using` lines) against the GPUs per "
                       "node, the NIC's link rate (`ibstat`), GPUDirect RDMA and PCIe placement of NIC and GPUs.",
        evidence=ctx.evidence(_rows(perf, size)), metrics={"busbw_large": busbw, "floor": RDMA_LOW,
                                                           "perf_hosts": s["perf_hosts"]},
        confidence="low",
    )]


def _low(cls: str, ref: float | None, busbw: float) -> float | None:
    """Fraction below the reference when it counts as far below, else None."""
    if cls in ("PCIe", "unknown") and busbw < PCIE_LOW:
        return 1 - busbw / (ref or PCIE_LOW)
    if ref and cls not in ("PCIe", "unknown") and busbw < FAR_BELOW * ref:
        return 1 - busbw / ref
    return None


def _collapse(ctx: Case, s: dict, perf: pl.DataFrame, metrics: dict) -> Finding:
    at = s["collapse_size"]
    before = perf.filter(pl.col("size") < at).sort("busbw")
    peak = before.row(-1, named=True)
    after = perf.filter(pl.col("size") >= at).sort("busbw")
    worst = after.row(0, named=True)
    drop = 1 - worst["busbw"] / peak["busbw"]
    return Finding(
        id="nccl-bandwidth", severity="warning", title=f"NCCL busbw collapses above {_gb(at)}",
        verdict=f"busbw reaches {peak['busbw']:g} GB/s at {_gb(peak['size'])} but falls to {worst['busbw']:g} GB/s "
                f"from {_gb(at)} on ({drop:.0%} lower) and does not recover.",
        impact=round(drop * COMM_SHARE * 0.5, 3),
        impact_text="large collectives (prefill, weight sync) slow down; decode-size messages are unaffected",
        recommendation="Large sizes that stop scaling point at host-memory or PCIe-switch saturation, a buffer/"
                       "protocol switch (try NCCL_PROTO=Simple, NCCL_BUFFSIZE) or thermal/power throttling; "
                       "compare out-of-place and in-place columns and rerun with NCCL_DEBUG=INFO.",
        evidence=ctx.evidence(_rows(perf, peak["size"], at)), metrics=metrics, confidence="medium",
    )
