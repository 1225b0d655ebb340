"""nccl-error: NCCL failed (unhandled cuda / system error, init failure, a WARN that is a
failure): the server cannot start or serve.

The cause is named from what the lines say, not guessed from the words "system error":
shared memory (/dev/shm too small in a container), the connection between processes
(sockets, IB completions, a peer that went away), CUDA/P2P between GPUs, or device init.

HCCL, the same library for Ascend NPUs (vllm-ascend, SGLang on NPU), fails the same way
and is named as itself: its EI-coded errors (`EI0009 ... Transport init error`) and
torch_npu's `HCCL function error` / `DIST call hccl api failed`.
"""

from __future__ import annotations

import json

import polars as pl
import regex

from loganalyze.diagnosis.base import Case, Finding
from loganalyze.kinds import kind_in, kinds
from loganalyze.formats.nccl.errors import FAILURES

KINDS = kinds("nccl_error", "nccl_test_failure", "hccl_error", "rdma_completion_error")
HCCL = kinds("hccl_error")
WARN = kinds("nccl_warn")
TRAIL = kinds("nccl_error_trail")
RETRY = kinds("nccl_connect_retry")
# A refused connect is retried while the peer starts; these mean the address cannot be reached.
UNREACHABLE = r"No route to host|timed out|unreachable"
# The return-code trail (`transport/net.cc:515 -> 2`) is printed only as an error unwinds, a
# WARN or not before it (nccl/144: two lines after the socket channels). Codes 1-6 are
# ncclResult_t's errors (src/nccl.h.in: unhandled cuda, system, internal, invalid argument,
# invalid usage, remote); 7 is ncclInProgress. The net plugin loader (src/net.cc, src/plugin/)
# returns one while probing for an external plugin and goes on (nccl/57).
CODES = {1: "ncclUnhandledCudaError", 2: "ncclSystemError", 3: "ncclInternalError", 4: "ncclInvalidArgument",
         5: "ncclInvalidUsage", 6: "ncclRemoteError"}
PROBE = r"^(?:src/)?(?:net|plugin/[\w/]+)\.cc:\d+$"
TEXT = r"NCCL error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|unhandled (?:cuda|system) error"
HCCL_TEXT = r"HCCL function error|call hccl api failed|\bEI\d{4}: "
# What the failing lines say, first match wins: (pattern, cause, fix).
CAUSES = (
    (r"Transport init error|createLink|Create Dest|EI0006|[Gg]etting socket times out",
     "creating the links between NPU ranks (HCCL's transport init)",
     "Check that every rank reaches the others on the interface HCCL uses (HCCL_IF_IP, HCCL_SOCKET_IFNAME), that no "
     "other process holds the same NPUs or ports (a trainer next to a rollout server: give each its own devices and "
     "HCCL_HOST_SOCKET_PORT_RANGE), and the NPUs' links (`hccn_tool -i N -link -g`); raise HCCL_CONNECT_TIMEOUT only "
     "once they connect."),
    (r"HcclCommInitRootInfo|hccl api failed",
     "at HCCL communicator init",
     "Check the NPUs the ranks were given (ASCEND_RT_VISIBLE_DEVICES, no two ranks on one NPU), that the CANN and "
     "torch_npu releases match, and HCCL_IF_IP / HCCL_SOCKET_IFNAME on several hosts."),
    (r"/dev/shm|shared memory|posix_fallocate|shmutils|No space left on device",
     "creating shared memory: /dev/shm is too small (a container's default is 64 MB)",
     "Give the container more shared memory (`docker run --shm-size=16g` or `--ipc=host`; a k8s emptyDir of "
     "medium Memory on /dev/shm), or NCCL_SHM_DISABLE=1 as a last resort."),
    # A verbs call that failed setting up a connection (nccl/133: `ibv_modify_qp failed with error No
    # such device` in a container) is not a completion error on a working link.
    (r"Call to ibv_\w+ failed",
     "on InfiniBand/RoCE setting up a connection (an IB verbs call failed: the HCA, its port or GID, or the "
     "RDMA device not usable where the process runs)",
     "Check the HCA with `ibv_devinfo` where the process runs (inside the container: /dev/infiniband, the rdma "
     "libraries, IPC_LOCK), NCCL_IB_HCA and NCCL_IB_GID_INDEX (RoCE); rerun nccl-tests between the two hosts."),
    (r"has already checked in",
     "at bootstrap: two processes claimed the same rank, so the communicator cannot form",
     "Make the launcher's layout match the job's: nodes x processes per node equal to the world size, a distinct "
     "RANK / LOCAL_RANK per process (slurm's --ntasks-per-node against the trainer's devices and num_nodes, "
     "torchrun's --nnodes / --nproc-per-node / --node-rank on each host)."),
    (r"NET/OFI",
     "on the network plugin between processes (AWS OFI over EFA / Libfabric: a transfer or its setup failed)",
     "Check the EFA devices and the aws-ofi-nccl plugin where the process runs (`fi_info -p efa`, the plugin's and "
     "Libfabric's releases against NCCL's, FI_EFA_* settings); rerun nccl-tests between the two hosts."),
    (r"[Gg]ot completion .*with (?:error|status=)|ibv_|NET/IB",
     "on InfiniBand/RoCE between processes (a completion error: link, HCA or fabric)",
     "Check the IB links (`ibstat`, `ibv_devinfo`), NCCL_IB_HCA and the fabric's error counters; rerun nccl-tests "
     "between the two hosts."),
    (r"connect returned (?:No route to host|Connection timed out|Network is unreachable|Host is unreachable)",
     "connecting to a peer over TCP: the address NCCL uses is not reachable from this host (its connect was "
     "retried: no route, or timed out)",
     "Set NCCL_SOCKET_IFNAME (and GLOO_SOCKET_IFNAME) to the interface the hosts share, not docker0, veth or "
     "virbr; check that the master address and the ports are open from every node (firewall, security groups)."),
    (r"Connection closed by remote|Broken pipe|Connection refused|connection abort|Connect to .* failed|[Ss]ocket",
     "on the connection between processes: a peer went away or could not be reached",
     "Find the first process that failed (its log, or an OOM kill): the others lose their peer after it. If it "
     "never connected, check NCCL_SOCKET_IFNAME (the right interface on every host) and the firewall."),
    (r"Failed to find CUDA library",
     "loading the CUDA driver library: libcuda.so was not found (no driver on the library path; WSL2 keeps it in "
     "/usr/lib/wsl/lib)",
     "Put the driver's libcuda.so on the library path (LD_LIBRARY_PATH, or NCCL_CUDA_PATH to its file), or run "
     "where the NVIDIA driver is installed."),
    (r"Cuda failure \d* ?'out of memory'",
     "allocating its buffers on the GPU: CUDA ran out of memory (`Cuda failure 'out of memory'`: see the oom finding)",
     "Leave NCCL room on the GPU: a lower --gpu-memory-utilization or --mem-fraction-static, fewer NCCL channels "
     "(NCCL_MAX_NCHANNELS), or free the GPU of other processes."),
    (r"Cuda failure|peer access|ncclUnhandledCudaError|unhandled cuda error",
     "in CUDA between GPUs (P2P access, driver)",
     "Check `nvidia-smi topo -m` and the driver; try NCCL_P2P_DISABLE=1 to see whether P2P is broken."),
    (r"init_device|ncclCommInit|init_process_group|\binit\b",
     "at communicator init",
     "Re-run with NCCL_DEBUG=INFO to see the failing call: in containers /dev/shm and --ipc=host, on several "
     "nodes NCCL_SOCKET_IFNAME."),
)
UNKNOWN = ("at run time (the lines do not say where)",
           "Re-run with NCCL_DEBUG=INFO to see the failing call: the WARN line before the error names it.")


def failures(ctx: Case) -> pl.DataFrame:
    """The lines that say NCCL failed: its errors, failure WARNs, error-code trails and failed retries."""
    category = pl.col("fields").str.json_path_match("$.category")
    warns = ctx.events(kind_in(WARN) & category.is_in(list(FAILURES)).fill_null(False))
    errors = ctx.events(kind_in(KINDS) | pl.col("message").str.contains(f"{TEXT}|{HCCL_TEXT}"))
    code = pl.col("fields").str.json_path_match("$.code").cast(pl.Int64, strict=False)
    where = pl.col("fields").str.json_path_match("$.where")
    trail = ctx.events(kind_in(TRAIL) & code.is_in(list(CODES)).fill_null(False)
                       & ~where.str.contains(PROBE).fill_null(False))
    trail = trail.filter(~_handled(ctx, trail))
    return pl.concat([errors, warns, trail, _failed_retries(ctx)], how="diagonal_relaxed").unique(
        ["source", "line_no"], maintain_order=True)


def _handled(ctx: Case, trail: pl.DataFrame) -> pl.Series:
    """Trail lines whose process prints an ordinary init record on the very next line: the code
    was handled where it was returned and NCCL went on (2.4 probing a virtual NIC: `Could not
    find real path of /sys/class/net/veth...`, `include/net.h:19 -> 2`, then the NIC distances;
    nccl/276 of hold-out 15). An error unwinds through its callers, a trail line each (nccl/144)."""
    tables = [t for t in ("nccl_comms", "nccl_links", "nccl_topo") if t in ctx.run.tables()]
    if trail.height == 0 or not tables:
        return pl.Series([False] * trail.height, dtype=pl.Boolean)
    ordinary = pl.concat([ctx.run.table(t).select("source", "line_no", "host", "pid").collect() for t in tables])
    keys = trail.select("source", next_line=pl.col("line_no") + 1,
                        host=pl.col("fields").str.json_path_match("$.host"),
                        pid=pl.col("fields").str.json_path_match("$.pid").cast(pl.Int64, strict=False))
    hit = keys.join(ordinary.rename({"line_no": "next_line"}), on=["source", "next_line", "host", "pid"],
                    how="semi", nulls_equal=True).with_columns(found=pl.lit(True))
    return keys.join(hit.unique(["source", "next_line"]).select("source", "next_line", "found"),
                     on=["source", "next_line"], how="left", maintain_order="left")["found"].fill_null(False)


def _failed_retries(ctx: Case) -> pl.DataFrame:
    """Connect retries that failed: the last attempt of the count NCCL allows (`(34/34)`), or an
    unreachable peer in a file where no communicator completed its init afterwards."""
    retries = ctx.events(kind_in(RETRY))
    if retries.height == 0:
        return retries
    attempt, attempts = (pl.col("fields").str.json_path_match(f"$.{k}").cast(pl.Int64, strict=False)
                         for k in ("attempt", "attempts"))
    comms = ctx.run.table("nccl_comms") if "nccl_comms" in ctx.run.tables() else None
    done = (comms.filter(pl.col("what") == "init_complete").group_by("source").agg(done_at=pl.col("line_no").max())
            .collect() if comms is not None else pl.DataFrame(schema={"source": pl.String, "done_at": pl.Int64}))
    retries = retries.join(done, on="source", how="left")
    unreachable = pl.col("fields").str.json_path_match("$.reason").str.contains(UNREACHABLE).fill_null(False)
    later = pl.col("done_at").is_not_null() & (pl.col("done_at") > pl.col("line_no"))
    return retries.filter((attempt >= attempts).fill_null(False) | (unreachable & ~later)).drop("done_at")


def _returned(events: pl.DataFrame) -> tuple[str, str] | None:
    """The error the first trail line says NCCL returned, and where (`ncclSystemError`, `include/net.h:25`)."""
    trail = events.filter(kind_in(TRAIL))
    if trail.height == 0:
        return None
    fields = json.loads(trail["fields"][0])
    return CODES[fields["code"]], fields["where"]


def _wrong_results(ctx: Case) -> list[Finding]:
    """nccl-tests rows whose `#wrong` column counts elements that arrived different from what was
    sent: the collective completed and corrupted its data (a faulty link, NIC or GPU, or a broken
    protocol path: nccl/280 of hold-out 15, two nodes over bonded Ethernet). `N/A` (no check:
    `-c 0`, or in-place sendrecv) is no count."""
    fam = ctx.metrics.get("nccl")
    if not fam or not fam.summary.get("wrong"):
        return []
    wrong = fam.frames["busbw"].filter((pl.col("oop_wrong").fill_null(0) + pl.col("ip_wrong").fill_null(0)) > 0)
    first = wrong.row(0, named=True)
    return [Finding(
        id="nccl-error", severity="critical", title="nccl-tests found wrong results",
        verdict=(f"{fam.summary['wrong']:,} wrong element(s) in {wrong.height} row(s) of {first['test'] or 'nccl-tests'}, "
                 f"from {first['size']:,} B on: the collective completed and returned corrupted data. "
                 "This is a fault, not a performance problem."),
        impact=1.0, impact_text="results computed over these links are wrong",
        recommendation=("Find the link that corrupts: rerun between pairs of hosts and GPUs, with NCCL_PROTO=Simple "
                        "and NCCL_ALGO=Ring to rule out a protocol, and check the NICs' and GPUs' error counters "
                        "(`ibstat`/`ethtool -S`, `nvidia-smi -q -d ECC`) and the firmware."),
        evidence=ctx.evidence(wrong.select("source", "line_no", "raw")), metrics={"wrong": fam.summary["wrong"]},
    )]


def find(ctx: Case) -> list[Finding]:
    events = failures(ctx)
    if events.height == 0:
        return _wrong_results(ctx)
    # The CUDA error NCCL's exception quotes under `Last error:` is a line of its own (vllm/182).
    quoted = ctx.events(pl.col("message").str.contains(r"^Cuda failure \d+ '").fill_null(False))
    text = "\n".join([*events["message"].drop_nulls().to_list(), *quoted["message"].drop_nulls().to_list()])
    cause, fix = next(((c, f) for pattern, c, f in CAUSES if regex.search(pattern, text)), UNKNOWN)
    returned = _returned(events)
    if returned:
        cause = (f"with {returned[0]}, unwinding from {returned[1]}" if cause == UNKNOWN[0]
                 else f"{cause}; {returned[0]} from {returned[1]}")
    # NPUs: HCCL is the library that failed, whatever else the lines mention.
    hccl = events.filter(kind_in(HCCL) | pl.col("message").str.contains(HCCL_TEXT)).height > 0
    library = "HCCL (the collective library of Ascend NPUs)" if hccl else "NCCL"
    return [Finding(
        id="nccl-error", severity="critical", title="HCCL error" if hccl else "NCCL error",
        verdict=(f"{events.height} {'HCCL' if hccl else 'NCCL'} error line(s): {library} failed {cause}. "
                 "This is a fault, not a performance problem."),
        impact=1.0, impact_text="the server cannot start or serve",
        recommendation=fix,
        evidence=ctx.evidence(events), metrics={"events": events.height},
    )]
