"""What this machine computes natively, so engines pick their number format and threads from it.

bfloat16 halves memory traffic where the hardware has it (CUDA GPUs from compute capability 8.0; x86 CPUs
with AVX512-BF16 or AMX), but a CPU with AVX2 only emulates it, several times slower than float32: a model
file says `dtype: bfloat16-if-native` and gets the faster of the two on each machine, never assumed.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from benchmarks.boundary_types import JsonObject

IF_NATIVE = "bfloat16-if-native"
BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
# Variables that change which kernels oneDNN and ATen pick, hence float32 results: numerics() records them.
NUMERICS_ENV = ("ONEDNN_DEFAULT_FPMATH_MODE", "DNNL_DEFAULT_FPMATH_MODE", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA",
                "DNNL_MAX_CPU_ISA")
# tcmalloc, which vLLM's CPU guide asks to preload: no PyPI wheel ships it; Debian's libtcmalloc-minimal4 (or
# google-perftools) puts it in the first folders, RHEL's gperftools-libs in /usr/lib64.
TCMALLOC = ("libtcmalloc_minimal.so.4", "libtcmalloc.so.4")
LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib")


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo (or the given text); empty where there is none (macOS)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return frozenset()
    for line in cpuinfo.splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def native_bf16(device: str, flags: frozenset[str] | None = None) -> bool:
    """Whether `device` ("cpu" or "cuda") computes bfloat16 without emulating it."""
    if device.startswith("cuda"):
        import torch

        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    return bool(BF16_CPU_FLAGS & (cpu_flags() if flags is None else flags))


def resolve_dtype(dtype: str, device: str, flags: frozenset[str] | None = None) -> str:
    """A model's dtype as the engine takes it: bfloat16-if-native -> bfloat16 or float32; others unchanged."""
    if dtype != IF_NATIVE:
        return dtype
    return "bfloat16" if native_bf16(device, flags) else "float32"


def numerics(device: str, dtype: str) -> JsonObject:
    """What a worker computes its numbers with, for manifest.json, so that two runs whose numbers differ can be
    told apart: the dtype its model runs in (the caller's: what it loaded), this process's torch settings that
    change float32 results (matmul precision, oneDNN and its float32 math mode, autocast, threads, the oneDNN
    and ATen variables where set) and the device: the CPU's bfloat16 flags, or the GPU's name."""
    import torch

    kind = "cuda" if device.startswith("cuda") else "cpu"
    mkldnn = torch.backends.mkldnn
    record: JsonObject = {
        "dtype": dtype, "device": device, "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "mkldnn": bool(mkldnn.is_available() and mkldnn.enabled), "autocast": torch.is_autocast_enabled(kind),
        "threads": torch.get_num_threads()}
    if fp32 := getattr(getattr(mkldnn, "matmul", None), "fp32_precision", None):
        record["mkldnn_matmul_fp32_precision"] = fp32
    if env := {name: os.environ[name] for name in NUMERICS_ENV if name in os.environ}:
        record["env"] = env
    if kind == "cuda":
        record["gpu"] = torch.cuda.get_device_name(torch.device(device))
        record["tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
    else:
        record["cpu_bf16_flags"] = sorted(BF16_CPU_FLAGS & cpu_flags())
    return record


def loaded_dtype(module) -> str:
    """The dtype a torch module's weights are in, e.g. "float32"."""
    return str(next(module.parameters()).dtype).removeprefix("torch.")


def tcmalloc(lib_dirs: Sequence[str] = LIB_DIRS) -> str | None:
    """The path of an installed tcmalloc, or None."""
    return next((str(Path(d) / name) for d in lib_dirs for name in TCMALLOC if (Path(d) / name).is_file()), None)


def rank_threads(ranks: int, cores: Sequence[int]) -> str:
    """VLLM_CPU_OMP_THREADS_BIND for a tensor-parallel CPU engine: the cores split into `ranks` equal runs,
    e.g. "0-7|8-15". vLLM's "auto" gives each rank a NUMA node of its own and refuses more ranks than nodes
    ("Not enough allowed NUMA nodes to bind threads"), which a one-socket machine always has."""
    per = len(cores) // ranks
    if per == 0:
        raise ValueError(f"tensor_parallel_size {ranks} on CPU needs a core per rank; this process may use "
                         f"{len(cores)}")
    ordered = sorted(cores)
    return "|".join(_core_list(ordered[i * per:(i + 1) * per]) for i in range(ranks))


def _core_list(run: list[int]) -> str:
    """vLLM's core list syntax: "3", "0-7" for consecutive cores, else "0,2,4"."""
    if run == list(range(run[0], run[-1] + 1)):
        return str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}"
    return ",".join(map(str, run))


def cpu_engine_env(lib_dirs: Sequence[str] = LIB_DIRS) -> dict[str, str]:
    """Environment of a vLLM CPU engine so that every core Ray gives it does model work.

    vLLM's CPU build keeps one core per rank for its scheduler process unless VLLM_CPU_NUM_OF_RESERVED_CPU
    says otherwise (vllm/utils/ompmultiprocessing.py); on a 2-core machine that left one thread of model
    work. The scheduler mostly waits on the model, so we reserve none; "auto" binds one OpenMP thread per
    physical core of the engine's CPU set. tcmalloc, where installed, is preloaded, since vLLM scored faster
    with it (docs/measurements.md, "tcmalloc"; perf/tcmalloc_prefill.py measures it).
    Intel OpenMP (the intel-openmp wheel) is not preloaded: it was slower there. Either vLLM variable, set in
    the driver's environment, is passed on as set: e.g. VLLM_CPU_OMP_THREADS_BIND=1 leaves core 0 to the
    driver and Ray (docs/measurements.md, "Where the tiny classifier's time goes against the offline `LLM`",
    measures that).
    """
    env = {name: os.environ.get(name, default) for name, default in
           (("VLLM_CPU_NUM_OF_RESERVED_CPU", "0"), ("VLLM_CPU_OMP_THREADS_BIND", "auto"))}
    if lib := tcmalloc(lib_dirs):
        env["LD_PRELOAD"] = ":".join(filter(None, [lib, os.environ.get("LD_PRELOAD")]))
    return env
