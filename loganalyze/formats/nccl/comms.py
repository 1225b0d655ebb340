"""NCCL's communicator lines, into `nccl_comms`: init and destroy, version, the environment
and settings it reports, channels, init timings; and any other envelope line (`OTHER`,
kept so that NCCL lines never fall to the file's `unparsed`)."""

from __future__ import annotations

import polars as pl

from loganalyze.formats.nccl.lines import STRIP, chain, declared, envelope_match
from loganalyze.formats.spec import Handler, LineKind

I, F, S = pl.Int64, pl.Float64, pl.String

def _extract(**specs: tuple[str, pl.DataType]) -> Handler:
    """Optional fields found anywhere in the body, each by its own one-group regex.

    Used where fields come and go across releases in an order a single pattern cannot
    follow (init lines: nvmlDev, busId, commId, parent, color, key ...).
    """
    def add(rows: pl.DataFrame) -> pl.DataFrame:
        cols = []
        for name, (pattern, dtype) in specs.items():
            raw = pl.col("body").str.extract(pattern, 1)
            cols.append((raw.str.to_integer(base=10, strict=False) if dtype == I else raw.cast(dtype, strict=False)).alias(name))
        return rows.with_columns(cols)
    return add


def _init_what(rows: pl.DataFrame) -> pl.DataFrame:
    """`Init START` -> init_start, `Destroy COMPLETE` -> destroy_complete."""
    return rows.with_columns(what=pl.col("state").str.to_lowercase().str.replace(" ", "_")).drop("state")


def _comm(name: str, what: str, needle, pattern: str, samples: tuple[str, ...], *, match: str | None = None,
          types: dict | None = None, handler: Handler | None = None) -> LineKind:
    steps = (handler,) if handler else ()
    return LineKind(
        name=name, table="nccl_comms", needle=needle, match=match or envelope_match(pattern), pattern=pattern,
        types=types or {}, rewrites=STRIP, const={"what": what}, samples=samples,
        handler=chain(*steps, declared("nccl_comms")),
    )


INIT_REST = dict(
    nvml_dev=(r" nvmlDev (\d+)", I), bus_id=(r" busId ([0-9a-fA-F]+)", S), comm_id=(r" commId (0x[0-9a-fA-F]+)", S),
    parent=(r" parent (0x[0-9a-fA-F]+|\(nil\))", S), split_count=(r" (?:splitCount|childCount) (-?\d+)", I),
    color=(r" color (-?\d+)", I), key=(r" key (-?\d+)", I), used_bytes=(r" used (\d+) bytes", I),
)
TIMINGS = {f"{k}_s": (rf"\b{k} ([\d.]+)", F) for k in
           ("kernels", "alloc", "bootstrap", "allgathers", "topo", "graphs", "connections", "rest")}

COMM_KINDS = (
    _comm("version", "version", "NCCL version ",
          r"NCCL version (?P<version>\d+\.\d+\.\d+)[\w.-]*?(?:\+cuda(?P<cuda>[\d.]+))?", (
              "NCCL INFO NCCL version 2.26.5+cuda12.9", "NCCL version 2.8.2+cuda11.1",
          ), match=r"NCCL version \d+\.\d+\.\d+[\w.-]*\+cuda|^INFO NCCL version "),
    _comm("git_version", "git_version", "NCCL git version", r"NCCL git version (?P<value>.+)$",
          ("NCCL INFO NCCL git version master 1a2b3c4",)),
    _comm("cuda_driver", "cuda_driver", "cudaDriverVersion", r"cudaDriverVersion (?P<driver>\d+)",
          ("NCCL INFO cudaDriverVersion 12080",), types={"driver": I}),
    # Six forms from 2.4 to 2.30 (docs/formats-sources.md#communicator-init-lines); optional fields are picked out one by one.
    _comm("comm_init", "init", (" Init START", " Init COMPLETE", " Destroy COMPLETE", " Abort COMPLETE"),
          r"^(?:\[Rank \d+\] )?(?:(?P<api>nccl\w+) )?comm (?P<comm>0x[0-9a-fA-F]+|\(nil\)) rank (?P<rank>-?\d+) "
          r"nranks (?P<nranks>-?\d+) cudaDev (?P<cuda_dev>-?\d+).*?-\s*(?P<state>(?:Init|Destroy|Abort) (?:START|COMPLETE))",
          (
              "NCCL INFO comm 0x7fe3d4001980 rank 0 nranks 1 cudaDev 0 nvmlDev 0 - Init COMPLETE",
              "NCCL INFO comm 0x55d0c5a0 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE",
              "NCCL INFO comm 0x55d0c5a0 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0x1234abcd - Init COMPLETE",
              "NCCL INFO comm 0x560b5bb3c4b0 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 commId "
              "0x4aaa1c7a0b3bfb3d - Init START",
              "NCCL INFO ncclCommSplit comm 0x5e30 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 57000 parent 0x5d10 "
              "splitCount 1 color 0 key 0- Init START",
              "NCCL INFO [Rank 3] ncclCommInitRank comm 0x5e303a52bd70 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId "
              "57000 commId 0xadcb40d61cc1bc4b - Init START",
              "NCCL INFO comm 0x5e30 rank 0 nranks 2 cudaDev 0 busId 57000 commId 0xad - Destroy COMPLETE",
          ), types={"nranks": I, "cuda_dev": I}, handler=chain(_extract(**INIT_REST), _init_what)),
    _comm("comm_info", "comm_info", " nNodes ",
          r"^comm (?P<comm>0x[0-9a-fA-F]+|\(nil\)) rank (?P<rank>\d+) nRanks (?P<nranks>\d+) nNodes (?P<nnodes>\d+) "
          r"localRanks (?P<local_ranks>\d+) localRank (?P<local_rank>\d+)(?: MNNVL (?P<mnnvl>\d+))?",
          ("NCCL INFO comm 0x8a6f4b0 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0",),
          types={k: I for k in ("nranks", "nnodes", "local_ranks", "local_rank", "mnnvl")}),
    _comm("init_timings", "init_timings", "Init timings",
          r"^Init timings(?: - (?P<api>\w+))?: rank (?P<rank>\d+) nranks (?P<nranks>\d+) total (?P<init_s>[\d.]+)",
          ("NCCL INFO Init timings - ncclCommInitRank: rank 0 nranks 8 total 0.92 (kernels 0.21, alloc 0.01, "
           "bootstrap 0.05, allgathers 0.01, topo 0.22, graphs 0.02, connections 0.37, rest 0.03)",),
          types={"nranks": I, "init_s": F}, handler=_extract(**TIMINGS)),
    _comm("channels", "channels", " coll channels, ",
          r"^(?P<coll_channels>\d+) coll channels, (?:(?P<collnet_channels>\d+) collnet channels, )?"
          r"(?:(?P<nvls_channels>\d+) nvls channels, )?(?P<p2p_channels>\d+) p2p channels, "
          r"(?P<p2p_per_peer>\d+) p2p channels per peer",
          ("NCCL INFO 16 coll channels, 16 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p channels per peer",),
          types={k: I for k in ("coll_channels", "collnet_channels", "nvls_channels", "p2p_channels", "p2p_per_peer")}),
    _comm("cc_mode", "cc", "CC ", r"^CC (?P<cc>On|Off)(?:, Multi-GPU CC (?:On|Off))?(?:, workFifoBytes (?P<value>\d+))?",
          ("NCCL INFO CC Off, workFifoBytes 1048576",)),
    _comm("nvls_support", "nvls", "NVLS multicast support is",
          r"NVLS multicast support is (?P<nvls>not available|available) on dev (?P<cuda_dev>\d+)",
          ("NCCL INFO NVLS multicast support is not available on dev 7",), types={"cuda_dev": I}),
    _comm("env", "env", "set by environment to", r"^(?P<env_var>\S+) set by environment to (?P<env_value>.*?)\.?$",
          ("NCCL INFO NCCL_P2P_DISABLE set by environment to 1", "NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0.",
           "NCCL INFO NCCL_P2P_LEVEL set by environment to SYS")),
    _comm("network", "network", "Using network ", r"^Using network (?P<network>\S+)",
          ("NCCL INFO Using network Socket",)),
    _comm("bootstrap", "bootstrap", "Bootstrap", r"^Bootstrap ?: Using (?P<value>\S+)",
          ("NCCL INFO Bootstrap : Using eno1np0:10.0.0.1<0>", "NCCL INFO Bootstrap: Using bond0:10.0.0.1<0>")),
    _comm("net_ib", "net_ib", "NET/IB", r"^NET/IB ?: ?(?P<value>.*)$",
          ("NCCL INFO NET/IB : No device found.", "NCCL INFO NET/IB : Using [0]mlx5_bond_0:1/RoCE [RO]; OOB bond0:10.0.0.1<0>")),
    _comm("net_socket", "net_socket", "NET/Socket", r"^NET/Socket ?: ?(?P<value>.*)$",
          ("NCCL INFO NET/Socket : Using [0]eno1np0:10.0.0.1<0>",)),
    # NCCL 2.3-2.4 list each socket interface they take on a line of its own (nccl/243 of hold-out 11).
    _comm("net_interface", "net_socket", "NET : Using interface ", r"^NET : (?P<value>Using interface \S+)",
          ("NCCL INFO NET : Using interface lo:127.0.0.1<0>",)),
    _comm("net_plugin", "net_plugin", "NET/Plugin", r"^NET/Plugin ?: ?(?P<value>.*)$",
          ("NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
           "NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.")),
    _comm("profiler_plugin", "profiler_plugin", "PROFILER/Plugin", r"^PROFILER/Plugin ?: ?(?P<value>.*)$",
          ("NCCL INFO PROFILER/Plugin: Could not find: libnccl-profiler.so.",)),
    _comm("p2p_disabled", "p2p_disabled", "P2P is disabled between",
          r"P2P is disabled between (?:NVLINK )?connected GPUs (?P<value>\d+ and \d+)",
          ("NCCL INFO P2P is disabled between connected GPUs 1 and 3. You can repress this message with "
           "NCCL_IGNORE_DISABLED_P2P=1.",)),
    # 2.7-2.10's p2p.cc when CUDA says the two devices cannot access each other's memory: NCCL
    # goes through host memory between them (nccl/291 of hold-out 16: an 8-GPU PCIe server).
    _comm("p2p_not_enabled", "p2p_disabled", "Could not enable P2P between",
          r"Could not enable P2P between (?P<value>dev \d+\(=[0-9a-f]+\) and dev \d+\(=[0-9a-f]+\))",
          ("NCCL INFO Could not enable P2P between dev 1(=1b000) and dev 0(=1a000)",)),
    _comm("affinity", "affinity", "Setting affinity for GPU",
          r"Setting affinity for GPU (?P<cuda_dev>\d+) to (?P<value>\S+)",
          ("NCCL INFO Setting affinity for GPU 0 to ffffffff,00000000,ffffffff",), types={"cuda_dev": I}),
    _comm("p2p_chunksize", "p2p_chunksize", "P2P Chunksize set to", r"P2P Chunksize set to (?P<value>\d+)",
          ("NCCL INFO P2P Chunksize set to 131072",)),
)


# Any other envelope line: kept (message in `value`) so NCCL lines never fall to `unparsed`
# of the file's own format.
OTHER = _comm("nccl_other", "other", ("INFO ", "TRACE ", "CALL ", "ABORT "), r"^(?P<value>.*)$",
              ("NCCL INFO Using non-device net plugin version 0",), match=r"^(?:INFO|TRACE|CALL|ABORT) ")

