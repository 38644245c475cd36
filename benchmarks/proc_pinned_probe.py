"""What CUDA pinned host memory looks like in /proc: run on a GPU machine, read the JSON.

    python benchmarks/proc_pinned_probe.py "$OUT/proc_pinned"

Allocates 1 GiB of pinned host memory two ways and records /proc/self before and after each:
  1. ``torch.empty(..).pin_memory()``: torch's caching host allocator, cudaHostAlloc by default;
  2. the same with ``PYTORCH_CUDA_ALLOC_CONF=pinned_use_cuda_host_register:True`` (malloc +
     cudaHostRegister), in a child process because the setting is read once per process.
For each step it writes /proc/self/status, smaps_rollup, /proc/meminfo (Mlocked, Unevictable...),
smaps summed per mapped pathname (all of them: the H200 probe showed the 1 GiB lands as RssShmem in a
mapping whose name has no "nvidia"), and the full smaps block with VmFlags of every mapping of
256 MiB or more, into OUT_DIR/proc_pinned_<mode>.json. It also times reading
/proc/self/maps and /proc/self/smaps, since the viewer reads them for every watched process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

GIB = 1 << 30


def read_text(path: str) -> str:
    with open(path) as f:
        return f.read()


def timed_read_ms(path: str) -> float:
    started = time.perf_counter()
    read_text(path)
    return (time.perf_counter() - started) * 1e3


def smaps_by_pathname(smaps_text: str) -> dict[str, dict[str, int]]:
    """Every mapped pathname ("" = anonymous) with summed smaps fields in bytes, via xfertop's parser."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from xfertop.sources.host.proc_memory import smaps_bytes_by_pathname

    return smaps_bytes_by_pathname(smaps_text)


def large_mappings(smaps_text: str, min_bytes: int = 256 << 20) -> list[str]:
    """The full smaps block (header, fields, VmFlags) of every mapping of at least min_bytes."""
    blocks: list[list[str]] = []
    for line in smaps_text.splitlines():
        head = line.split(maxsplit=1)[0] if line.strip() else ""
        if head and not head.endswith(":") and "-" in head:
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
    big = []
    for block in blocks:
        start, _, end = block[0].split()[0].partition("-")
        if int(end, 16) - int(start, 16) >= min_bytes:
            big.append("\n".join(block))
    return big


def snapshot(label: str) -> dict[str, object]:
    smaps = read_text("/proc/self/smaps")
    return {
        "label": label,
        "status": read_text("/proc/self/status"),
        "smaps_rollup": read_text("/proc/self/smaps_rollup"),
        "meminfo": read_text("/proc/meminfo"),
        "smaps_by_pathname": smaps_by_pathname(smaps),
        "large_mappings_smaps": large_mappings(smaps),
        "read_maps_ms": timed_read_ms("/proc/self/maps"),
        "read_smaps_ms": timed_read_ms("/proc/self/smaps"),
        "read_smaps_rollup_ms": timed_read_ms("/proc/self/smaps_rollup"),
    }


def probe(mode: str, out_dir: Path) -> None:
    import torch

    steps = [snapshot("before_cuda_init")]
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    steps.append(snapshot("after_cuda_init"))
    started = time.perf_counter()
    pinned = torch.empty(GIB, dtype=torch.uint8).pin_memory()
    alloc_ms = (time.perf_counter() - started) * 1e3
    steps.append(snapshot("after_1GiB_pinned"))
    pinned.fill_(1)
    steps.append(snapshot("after_1GiB_pinned_touched"))
    stats = dict(torch.cuda.host_memory_stats()) if hasattr(torch.cuda, "host_memory_stats") else None
    del pinned
    torch.cuda.empty_cache()
    steps.append(snapshot("after_del_cached_by_allocator"))
    if hasattr(torch.cuda, "host_empty_cache"):
        torch.cuda.host_empty_cache()
        steps.append(snapshot("after_host_empty_cache"))
    result = {
        "mode": mode,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "torch": torch.__version__,
        "pin_alloc_ms": alloc_ms,
        "host_memory_stats": stats,
        "kernel": os.uname().release,
        "steps": steps,
    }
    path = out_dir / f"proc_pinned_{mode}.json"
    path.write_text(json.dumps(result, indent=1, default=repr))
    print(f"wrote {path}")


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: python benchmarks/proc_pinned_probe.py OUT_DIR [--mode host_alloc|host_register]")
        return 2
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    if "--mode" in sys.argv:
        probe(sys.argv[sys.argv.index("--mode") + 1], out_dir)
        return 0
    probe("host_alloc", out_dir)
    env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF="pinned_use_cuda_host_register:True")
    child = subprocess.run([sys.executable, __file__, str(out_dir), "--mode", "host_register"], env=env)
    return child.returncode


if __name__ == "__main__":
    raise SystemExit(main())
