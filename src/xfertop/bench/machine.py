"""Facts about the machine and the GPU's link: nvidia-smi for link and counters, sysfs for NUMA.

The link is read through nvidia-smi (not NVML) because xfertop.sources.nvml_api is the one module
allowed to import pynvml, and it has not landed; correctable-error counters need NVML field values,
so they read as unknown (None) until the bench can use that module.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import re
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from xfertop.bench.cases.system import numa_nodes, parse_cpulist
from xfertop.model.bench import LinkFacts, MachineFacts

_LINK_FIELDS = (
    "index",
    "name",
    "pci.bus_id",
    "driver_version",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.gen.gpumax",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "pstate",
)


@dataclass(frozen=True)
class SmiGpu:
    index: int
    name: str
    bus_id: str
    driver_version: str
    gen_current: int | None
    gen_max: int | None
    gen_gpu_max: int | None
    width_current: int | None
    width_max: int | None
    pstate: str | None


def _int_or_none(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def parse_smi_csv(text: str) -> list[SmiGpu]:
    """Parse `nvidia-smi --query-gpu=<_LINK_FIELDS> --format=csv,noheader,nounits`."""
    gpus = []
    for line in text.strip().splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) != len(_LINK_FIELDS):
            continue
        gpus.append(
            SmiGpu(
                int(f[0]),
                f[1],
                f[2],
                f[3],
                _int_or_none(f[4]),
                _int_or_none(f[5]),
                _int_or_none(f[6]),
                _int_or_none(f[7]),
                _int_or_none(f[8]),
                f[9] or None,
            )
        )
    return gpus


def query_smi() -> list[SmiGpu]:
    """Every GPU's link as nvidia-smi sees it now; [] when nvidia-smi is missing or fails.

    Drivers that do not know `pcie.link.gen.gpumax` are asked again without it (GPU max unknown).
    """
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    for fields in (_LINK_FIELDS, tuple(f if f != "pcie.link.gen.gpumax" else "index" for f in _LINK_FIELDS)):
        out = subprocess.run(
            [smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if out.returncode == 0:
            gpus = parse_smi_csv(out.stdout)
            if fields is _LINK_FIELDS:
                return gpus
            return [dataclasses.replace(g, gen_gpu_max=None) for g in gpus]
    return []


def replay_counters() -> dict[int, int]:
    """GPU index -> PCIe 'Replays Since Reset', from `nvidia-smi -q`."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return {}
    out = subprocess.run([smi, "-q"], capture_output=True, text=True, timeout=60, check=False)
    return parse_replays(out.stdout) if out.returncode == 0 else {}


def parse_replays(text: str) -> dict[int, int]:
    counts = [int(m) for m in re.findall(r"Replays Since Reset\s*:\s*(\d+)", text)]
    return dict(enumerate(counts))


def link_facts(gpu: SmiGpu, replays_before: dict[int, int], replays_after: dict[int, int]) -> LinkFacts:
    before, after = replays_before.get(gpu.index), replays_after.get(gpu.index)
    delta = after - before if before is not None and after is not None else None
    return LinkFacts(
        gpu.index,
        gpu.gen_current,
        gpu.width_current,
        gpu.gen_max,
        gpu.width_max,
        gpu.gen_gpu_max,
        gpu.pstate,
        delta,
        None,
        "nvidia-smi",
    )


def sysfs_bus_id(smi_bus_id: str) -> str:
    """nvidia-smi's '00000000:06:00.0' -> sysfs '0000:06:00.0'."""
    domain, _, rest = smi_bus_id.lower().partition(":")
    return f"{int(domain, 16):04x}:{rest}"


def _pci_dir(gpu_index: int) -> Path | None:
    for gpu in query_smi():
        if gpu.index == gpu_index:
            return Path("/sys/bus/pci/devices") / sysfs_bus_id(gpu.bus_id)
    return None


def gpu_numa_node(gpu_index: int) -> int | None:
    path = _pci_dir(gpu_index)
    try:
        node = int((path / "numa_node").read_text()) if path else -1
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None


def gpu_local_cpus(gpu_index: int) -> tuple[int, ...]:
    path = _pci_dir(gpu_index)
    try:
        return tuple(parse_cpulist((path / "local_cpulist").read_text())) if path else ()
    except OSError:
        return ()


def machine_facts(
    backend: str, gpu_index: int, *, torch_version: str | None, cuda_version: str | None, gpus: list[SmiGpu]
) -> MachineFacts:
    return MachineFacts(
        hostname=socket.gethostname(),
        backend=backend,
        gpu_names=tuple(g.name for g in gpus),
        driver_version=gpus[0].driver_version if gpus else None,
        cuda_version=cuda_version,
        torch_version=torch_version,
        python_version=platform.python_version(),
        cpu_count=os.cpu_count() or 1,
        numa_nodes=max(1, len(numa_nodes())),
        gpu_numa_node=gpu_numa_node(gpu_index) if gpus else None,
        process_cpus=tuple(sorted(os.sched_getaffinity(0))),
        gpu_local_cpus=gpu_local_cpus(gpu_index) if gpus else (),
    )
