"""``solar hw probe``: a chip file for this machine's CPU, so bounds can be checked against
runs on the host.

Every number is chosen so that a bound computed with it stays a *lower* bound of any real
run: compute peaks are theoretical ceilings (the widest vector unit the ISA offers × two FMA
pipes per core × the highest clock the core may reach), never a measured rate below them,
and the DRAM bandwidth is the most any of several STREAM-like kernels moved (write-allocate
counted), raised later by ``solar headroom`` whenever a run is seen to move more.
"""

from __future__ import annotations

import os
import platform
import re
import time
from dataclasses import dataclass, field

import numpy as np

# An unknown (virtualized) boost clock is taken as this multiple of the reported frequency:
# turbo on server x86 parts is at most ~1.45x base (e.g. EPYC 9654 2.4 -> 3.7 GHz).
UNKNOWN_TURBO = 1.5
FMA_PIPES = 2  # the most FMA pipes per core on current x86/Arm server cores


@dataclass
class HostFacts:
    """What the probe reads about this machine's CPU before measuring anything."""

    model: str
    cores: int
    lanes_fp32: int  # fp32 lanes of the widest vector unit
    isa: str
    clock_hz: float
    clock_source: str
    flags: set[str] = field(default_factory=set)
    l2_per_core: int = 0
    llc_bytes: int = 0
    mem_bytes: int = 0


def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" in line:
                    k, v = line.split(":", 1)
                    info.setdefault(k.strip(), v.strip())
    except OSError:
        pass
    return info


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _cache_sizes() -> tuple[int, int]:
    """(L2 per core, last-level cache total) from sysfs."""
    l2, llc, llc_level = 0, 0, 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for d in sorted(os.listdir(base)):
            if not d.startswith("index"):
                continue
            level = _read_int(f"{base}/{d}/level") or 0
            with open(f"{base}/{d}/type") as f:
                kind = f.read().strip()
            with open(f"{base}/{d}/size") as f:
                size = _parse_size(f.read().strip())
            if kind == "Instruction":
                continue
            if level == 2:
                l2 = size
            if level >= llc_level:  # total of the last level: size x instances
                shared = _shared_count(f"{base}/{d}/shared_cpu_list")
                llc, llc_level = size * max(1, (os.cpu_count() or 1) // max(shared, 1)), level
    except OSError:
        pass
    return l2, llc


def _shared_count(path: str) -> int:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return 1
    n = 0
    for part in text.split(","):
        a, _, b = part.partition("-")
        n += (int(b) - int(a) + 1) if b else 1
    return n


def _parse_size(text: str) -> int:
    m = re.match(r"(\d+)\s*([KMG]?)", text)
    if not m:
        return 0
    return int(m.group(1)) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[m.group(2)]


def facts() -> HostFacts:
    """The host CPU's model, cores, vector width, ceiling clock and cache and memory sizes."""
    info = _cpuinfo()
    flags = set(info.get("flags", info.get("Features", "")).split())
    arch = platform.machine().lower()
    if "avx512f" in flags:
        lanes, isa = 16, "AVX-512"
    elif "avx2" in flags or "avx" in flags:
        lanes, isa = 8, "AVX2" if "avx2" in flags else "AVX"
    elif arch in ("aarch64", "arm64"):
        lanes, isa = (16, "SVE-512") if "sve" in flags else (4, "NEON")
    else:
        lanes, isa = 4, "SSE"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    mx = _read_int("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    if mx:
        clock, src = mx * 1e3, "cpufreq cpuinfo_max_freq"
    else:
        mhz = float(info.get("cpu MHz", 0) or 0)
        bogo = float(info.get("bogomips", info.get("BogoMIPS", 0)) or 0) / 2
        base = max(mhz, bogo) * 1e6 or 3.0e9
        clock, src = base * UNKNOWN_TURBO, (f"no cpufreq (virtual machine): {UNKNOWN_TURBO}x the reported "
                                           f"{base / 1e9:.2f} GHz as a ceiling for turbo")
    l2, llc = _cache_sizes()
    mem = 0
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        pass
    return HostFacts(info.get("model name", platform.processor() or arch), cores, lanes, isa, clock, src,
                     flags, l2, llc, mem)


def _streams_kernels():
    """STREAM-like kernels (numba, all cores) and the bytes each moves per element of ``a``."""
    import numba

    @numba.njit(parallel=True, fastmath=True, cache=False)
    def triad(a, b, c, s):  # pragma: no cover - compiled
        for i in numba.prange(a.shape[0]):
            a[i] = b[i] + s * c[i]

    @numba.njit(parallel=True, fastmath=True, cache=False)
    def copy(a, b, c, s):  # pragma: no cover - compiled
        for i in numba.prange(a.shape[0]):
            a[i] = b[i]

    @numba.njit(parallel=True, fastmath=True, cache=False)
    def read(a, b, c, s):  # pragma: no cover - compiled
        acc = 0.0
        for i in numba.prange(b.shape[0]):
            acc += b[i]
        return acc

    # counted generously (write-allocate included even where streaming stores may skip it):
    # a larger figure only makes the bound lower, never invalid
    return {"triad": (triad, 4 * 8), "copy": (copy, 3 * 8), "read": (read, 8)}


def stream_bandwidth(n_bytes: int = 0, min_reps: int = 10, min_time_s: float = 0.3) -> tuple[float, str]:
    """The most bytes/s any of three STREAM-like kernels (triad, copy, read-only sum) moved
    over arrays far larger than the last-level cache, best of at least ``min_reps`` runs and
    ``min_time_s`` each; with the kernel that set it."""
    llc = _cache_sizes()[1] or 32 * 1024**2
    n = max(n_bytes, 8 * llc, 64 * 1024**2) // 8
    a = np.zeros(n)
    b = np.ones(n)
    c = np.full(n, 2.0)
    best_bw, best_name = 0.0, ""
    for name, (kernel, bytes_per_elem) in _streams_kernels().items():
        kernel(a, b, c, 3.0)  # compile and touch the pages
        best, reps, t_start = float("inf"), 0, time.perf_counter()
        while reps < min_reps or time.perf_counter() - t_start < min_time_s:
            t0 = time.perf_counter()
            kernel(a, b, c, 3.0)
            best = min(best, time.perf_counter() - t0)
            reps += 1
        bw = bytes_per_elem * n / best
        if bw > best_bw:
            best_bw, best_name = bw, name
    return best_bw, best_name


def probe(measure: bool = True) -> dict:
    """The host chip as a TOML-ready mapping (same schema as hardware/*.toml)."""
    f = facts()
    vec_fp32 = f.cores * f.lanes_fp32 * 2 * FMA_PIPES * f.clock_hz
    vector = {"fp32": vec_fp32, "fp64": vec_fp32 / 2, "fp16": vec_fp32, "bf16": vec_fp32}
    matrix = {}
    notes = []
    if "avx512_bf16" in f.flags or "amx_bf16" in f.flags:
        matrix["bf16"] = vec_fp32 * 2  # vdpbf16ps: two bf16 products per fp32 lane
        notes.append("bf16 dot products (AVX512_BF16): 2x the fp32 FMA rate")
    if "avx512_vnni" in f.flags or "avx_vnni" in f.flags:
        matrix["int8"] = vec_fp32 * 4  # vpdpbusd: four int8 products per 32-bit lane
        notes.append("int8 dot products (VNNI): 4x the fp32 FMA rate")
    if "amx_tile" in f.flags:
        # AMX: 1024 bf16 MACs / cycle / core (Intel SPR optimization manual) -> 2048 FLOP
        matrix["bf16"] = f.cores * 2048 * f.clock_hz
        matrix["int8"] = f.cores * 4096 * f.clock_hz
        notes.append("AMX tiles: 1024 bf16 / 2048 int8 MACs per cycle per core")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    bw, kernel = stream_bandwidth() if measure else (0.0, "")
    src_vec = (f"{f.cores} cores x {f.lanes_fp32} fp32 lanes ({f.isa}) x 2 FLOP/FMA x {FMA_PIPES} FMA pipes "
               f"(a ceiling: no x86/Arm core issues more) x {f.clock_hz / 1e9:.2f} GHz ({f.clock_source})")
    return {
        "name": "host",
        "display_name": f"host CPU: {f.model} ({f.cores} cores)",
        "clock_hz": f.clock_hz,
        "sm_count": f.cores,
        "dram_bytes_per_s": bw or 1e11,
        "dram_capacity_bytes": float(f.mem_bytes or 0),
        "l2_bytes": int(f.llc_bytes or f.l2_per_core * f.cores),
        "smem_per_sm_bytes": int(f.l2_per_core or 1024 * 1024),
        "vector": vector,
        "matrix": matrix,
        "sfu": {"fp32": vec_fp32},
        # the types no matrix instruction of this CPU takes: their contractions run on the
        # vector units (PyTorch's CPU defaults never lower an fp32 GEMM to bf16 AMX tiles)
        "unsupported": {"matrix": [d for d in ("fp64", "fp32", "tf32", "fp16", "fp8", "fp4")
                                   if d not in matrix]} if matrix else {},
        "sources": {
            "clock_hz": f.clock_source,
            "vector": src_vec,
            "matrix": "; ".join(notes) or "no matrix unit: contractions run on the vector units",
            "sfu": "no special-function unit: transcendentals run as vector code; counted at the FMA rate, "
                   "which over-estimates their speed (keeps the bound a lower bound)",
            "dram_bytes_per_s": (f"measured: the most any STREAM-like kernel (triad, copy, read-only sum; "
                                 f"numba, all cores) moved over arrays 8x the last-level cache, best of >= 10 "
                                 f"runs each, write-allocate counted; set by {kernel}; load average "
                                 f"{load:.2f} while probing; raised later whenever a measured run moves "
                                 "more (solar headroom)") if measure else "not measured",
            "l2_bytes": "sysfs: last-level cache (the on-chip capacity of the cache-aware bound)",
            "smem_per_sm_bytes": "sysfs: L2 per core",
            "sm_count": "cores this process may run on (sched_getaffinity)",
        },
    }


# Bumped whenever the probe changes what it measures: a profile written by an older probe is
# probed again on first use (v1 took one kernel's best of 5 runs and could be taken under load).
PROBE_VERSION = 2
_HEADER = "# solar hw probe v{v}"


def to_toml(d: dict) -> str:
    """A probed chip description as the text of a chip file, with a dated header."""
    lines = [_HEADER.format(v=PROBE_VERSION) + f", {time.strftime('%Y-%m-%d %H:%M:%S')}; every figure is a "
             "ceiling so bounds stay lower bounds."]
    tables = {k: v for k, v in d.items() if isinstance(v, dict)}
    for k, v in d.items():
        if not isinstance(v, dict):
            lines.append(f"{k} = {_val(v)}")
    for t, vals in tables.items():
        if not vals:
            continue
        lines += ["", f"[{t}]"] + [f"{k} = {_val(v)}" for k, v in vals.items()]
    return "\n".join(lines) + "\n"


def _val(v) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(_val(x) for x in v) + "]"
    if isinstance(v, int):
        return str(v)
    return repr(float(v))


def host_toml_path() -> str:
    """Where the probed chip file for this machine is kept."""
    base = os.environ.get("SOLAR_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "solar-lsp")
    return os.path.join(base, "host.toml")


def ensure_host_toml(refresh: bool = False) -> str:
    """Probe once and keep the file; ``--hw host`` reads it. A new probe of a current file never
    lowers its bandwidth: the profile is a ceiling, and a probe taken under load reads low."""
    path = host_toml_path()
    current = _current(path)
    if refresh or not current:
        d = probe()
        if current:
            keep_higher_bandwidth(d, path)
        _write(path, to_toml(d))
    return path


def keep_higher_bandwidth(d: dict, path: str) -> float | None:
    """Keep the DRAM figure of the file at ``path`` in ``d`` when it is the higher one; returns
    the figure kept from the file (None when the new probe is the higher or there is no file)."""
    import tomllib
    try:
        with open(path, "rb") as f:
            old = float(tomllib.load(f).get("dram_bytes_per_s", 0.0))
    except (OSError, tomllib.TOMLDecodeError, ValueError):
        return None
    new = float(d.get("dram_bytes_per_s", 0.0))
    if old <= new:
        return None
    d["dram_bytes_per_s"] = old
    d["sources"]["dram_bytes_per_s"] = (
        f"kept {old / 1e9:.1f} GB/s from the earlier profile: this probe measured only "
        f"{new / 1e9:.1f} GB/s (other work on the machine?), and the figure is a ceiling")
    return old


def _current(path: str) -> bool:
    """The file exists and was written by this version of the probe."""
    try:
        with open(path) as f:
            first = f.readline()
    except OSError:
        return False
    return first.startswith(_HEADER.format(v=PROBE_VERSION) + ",")


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + f".{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def raise_dram_bandwidth(path: str, seen_bytes_per_s: float, how: str) -> float | None:
    """A run moved more bytes/s than the profile says this machine can: the probe was low
    (taken under load, say). Raise the figure to what was seen, so the profile stays a ceiling;
    the old figure, or None when nothing changed."""
    import tomllib
    try:
        with open(path, "rb") as f:
            d = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError):
        return None
    old = float(d.get("dram_bytes_per_s", 0.0))
    if seen_bytes_per_s <= old:
        return None
    d["dram_bytes_per_s"] = seen_bytes_per_s
    d.setdefault("sources", {})["dram_bytes_per_s"] = (
        f"raised from {old / 1e9:.1f} GB/s (the probe) to {seen_bytes_per_s / 1e9:.1f} GB/s: {how}")
    _write(path, to_toml(d))
    return old
