"""The synthetic 2-socket 8-GPU server (tests/fixtures/{sysfs,proc}/synthetic_2s8g) behind the fake NVML."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from fakes.fake_pynvml import SteadyTraffic, TopologyPynvml, gpus_on_buses

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SYNTHETIC_SYSFS = FIXTURES / "sysfs" / "synthetic_2s8g"
SYNTHETIC_PROC = FIXTURES / "proc" / "synthetic_2s8g"
#: The eight GPUs' bus ids, NVML's spelling, in NVML's index order.
SYNTHETIC_BUS_IDS = (
    "00000000:18:00.0",
    "00000000:19:00.0",
    "00000000:3A:00.0",
    "00000000:3B:00.0",
    "00000000:9A:00.0",
    "00000000:9B:00.0",
    "00000000:BC:00.0",
    "00000000:BD:00.0",
)
#: Rank 0 (pid 4101) and rank 3 (pid 4104) of the synthetic /proc tree, and their GPUs.
RANK_GPUS = {4101: 0, 4104: 3}


def synthetic_nvml(load_gpu: int | None = 5) -> TopologyPynvml:
    """Eight H200s on the synthetic server's buses; ``load_gpu`` moves 20 GB/s host to device, and the
    two ranks' pids are in their GPUs' process lists."""
    gpus = gpus_on_buses(*SYNTHETIC_BUS_IDS)
    if load_gpu is not None:
        gpus[load_gpu].traffic = SteadyTraffic(rx_bytes_per_s=20e9)
    for pid, index in RANK_GPUS.items():
        gpus[index].processes.append(SimpleNamespace(pid=pid, usedGpuMemory=40 * 10**9))
    # Both nodes in the affinity: NVML cannot say either, so GPUs 6 and 7 stay unknown.
    return TopologyPynvml(gpus, memory_affinity=[0b11, 0, 0, 0])
