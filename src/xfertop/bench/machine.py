"""Facts about the machine and the GPU's link: NVML (through sources.nvml_api) or nvidia-smi, and sysfs.

NVML gives the link, the replay counter and the correctable-error field; where NVML cannot start, the
bench falls back to nvidia-smi, which has the link and replays but no correctable-error count (None).
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
class LinkReading:
    """One GPU's link as read now, with its cumulative error counters."""

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
    replays: int | None = None
    correctable_errors: int | None = None


def _int_or_none(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def parse_smi_csv(text: str) -> list[LinkReading]:
    """Parse `nvidia-smi --query-gpu=<_LINK_FIELDS> --format=csv,noheader,nounits`."""
    gpus = []
    for line in text.strip().splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) != len(_LINK_FIELDS):
            continue
        gpus.append(
            LinkReading(
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


def query_smi() -> list[LinkReading]:
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


def _delta(before: int | None, after: int | None) -> int | None:
    return after - before if before is not None and after is not None and after >= before else None


def link_facts(before: LinkReading, under_load: LinkReading, after: LinkReading, source: str) -> LinkFacts:
    """The link as read under load, with error-counter deltas from before the run to after it."""
    return LinkFacts(
        under_load.index,
        under_load.gen_current,
        under_load.width_current,
        under_load.gen_max,
        under_load.width_max,
        under_load.gen_gpu_max,
        under_load.pstate,
        _delta(before.replays, after.replays),
        _delta(before.correctable_errors, after.correctable_errors),
        source,
    )


def sysfs_bus_id(smi_bus_id: str) -> str:
    """nvidia-smi's '00000000:06:00.0' -> sysfs '0000:06:00.0'."""
    domain, _, rest = smi_bus_id.lower().partition(":")
    return f"{int(domain, 16):04x}:{rest}"


def _pci_dir(bus_id: str) -> Path:
    return Path("/sys/bus/pci/devices") / sysfs_bus_id(bus_id)


def gpu_numa_node(bus_id: str) -> int | None:
    """The NUMA node sysfs gives the GPU's PCIe device; None when unknown (-1 on hosts without the data)."""
    try:
        node = int((_pci_dir(bus_id) / "numa_node").read_text())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None


def gpu_local_cpus(bus_id: str) -> tuple[int, ...]:
    try:
        return tuple(parse_cpulist((_pci_dir(bus_id) / "local_cpulist").read_text()))
    except (OSError, ValueError):
        return ()


def machine_facts(
    backend: str,
    gpu_index: int,
    *,
    torch_version: str | None,
    cuda_version: str | None,
    gpus: list[LinkReading],
) -> MachineFacts:
    """Host, versions, NUMA and affinity. Assumes torch's and NVML's GPU order agree (no remapping
    CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER)."""
    bus_id = next((g.bus_id for g in gpus if g.index == gpu_index), None)
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
        gpu_numa_node=gpu_numa_node(bus_id) if bus_id else None,
        process_cpus=tuple(sorted(os.sched_getaffinity(0))),
        gpu_local_cpus=gpu_local_cpus(bus_id) if bus_id else (),
    )


class SmiLinkReader:
    """Link and replay counters through the nvidia-smi command (no correctable-error count)."""

    source = "nvidia-smi"

    def read(self, counters: bool = True) -> list[LinkReading]:
        gpus = query_smi()
        if not counters:
            return gpus
        replays = replay_counters()
        return [dataclasses.replace(g, replays=replays.get(g.index)) for g in gpus]

    def busy_pids(self, index: int) -> tuple[int, ...]:
        """Not asked of nvidia-smi: unknown, reported as none."""
        return ()

    def close(self) -> None:
        """Nothing to release."""
