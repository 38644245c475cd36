"""The GPU link and its error counters through NVML (sources.gpu.nvml_api, the one pynvml boundary)."""

from __future__ import annotations

import os
from typing import Any

from xfertop.bench.machine import LinkReading, SmiLinkReader
from xfertop.sources.gpu.nvml_api import GpuLost, NvmlApi
from xfertop.sources.gpu.source import FIELD_CORRECTABLE_ERRORS


class NvmlLinkReader:
    source = "NVML"

    def __init__(self, api: NvmlApi) -> None:
        self.api = api

    def _reading(self, index: int, handle: Any, counters: bool) -> LinkReading:
        q = self.api.query
        pci = q("nvmlDeviceGetPciInfo", handle)
        bus_id = getattr(pci, "busId", "") if pci is not None else ""
        pstate = q("nvmlDeviceGetPerformanceState", handle)
        replays = correctable = None
        if counters:
            replays = q("nvmlDeviceGetPcieReplayCounter", handle)
            field = self.api.field_values(handle, (FIELD_CORRECTABLE_ERRORS,))[FIELD_CORRECTABLE_ERRORS]
            correctable = field.value if field is not None else None
        return LinkReading(
            index=index,
            name=q("nvmlDeviceGetName", handle) or f"GPU {index}",
            bus_id=bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id),
            driver_version=self.api.system("nvmlSystemGetDriverVersion") or "",
            gen_current=q("nvmlDeviceGetCurrPcieLinkGeneration", handle),
            gen_max=q("nvmlDeviceGetMaxPcieLinkGeneration", handle),
            gen_gpu_max=q("nvmlDeviceGetGpuMaxPcieLinkGeneration", handle),
            width_current=q("nvmlDeviceGetCurrPcieLinkWidth", handle),
            width_max=q("nvmlDeviceGetMaxPcieLinkWidth", handle),
            pstate=None if pstate is None else f"P{int(pstate)}",
            replays=replays,
            correctable_errors=correctable,
        )

    def read(self, counters: bool = True) -> list[LinkReading]:
        readings = []
        for index in range(self.api.device_count()):
            try:
                handle = self.api.query("nvmlDeviceGetHandleByIndex", index)
                if handle is not None:
                    readings.append(self._reading(index, handle, counters))
            except GpuLost:
                continue
        return readings

    def busy_pids(self, index: int) -> tuple[int, ...]:
        """Other processes computing on this GPU now (this process excluded)."""
        handle = self.api.query("nvmlDeviceGetHandleByIndex", index)
        try:
            running = self.api.query("nvmlDeviceGetComputeRunningProcesses", handle) if handle else None
        except GpuLost:
            return ()
        return tuple(sorted({int(p.pid) for p in running or ()} - {os.getpid()}))

    def close(self) -> None:
        self.api.shutdown()


def open_link_reader(api: NvmlApi | None = None) -> NvmlLinkReader | SmiLinkReader:
    """NVML where it starts, else nvidia-smi."""
    api = api or NvmlApi()
    return NvmlLinkReader(api) if api.init() is None else SmiLinkReader()
