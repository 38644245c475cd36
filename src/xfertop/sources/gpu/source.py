"""The GPU source: NVML per GPU, with PCIe throughput that covers all the time (see docs/gpu-source.md)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xfertop import startup_trace
from xfertop.model.gpu import (
    GpuProcess,
    GpuSnapshot,
    GpuState,
    PcieErrors,
    PcieLink,
    PcieThroughput,
)
from xfertop.sources.base import PollingSource
from xfertop.sources.gpu.gpu_facts import HostProcesses, cuda_version_text, throttle_words
from xfertop.sources.gpu.nvml_api import GpuLost, NvmlApi
from xfertop.sources.gpu.pcie_counter import link_wire_bytes_per_s
from xfertop.sources.gpu.pcie_gpm import GpmPcie
from xfertop.sources.gpu.pcie_poller import PcieCounterPoller, PolledGpu, counters_answer

FIELD_CORRECTABLE_ERRORS = 173  # NVML_FI_DEV_PCIE_COUNT_CORRECTABLE_ERRORS
#: Reads the first window needs at least: a baseline and two intervals.
FIRST_WINDOW_POLLS = 3
#: nvmlDeviceGetPcieThroughput samples a 20 ms window per call (and blocks that long).
SAMPLED_WINDOW_S = 0.020
_PCIE_UTIL_TX, _PCIE_UTIL_RX = 0, 1  # NVML_PCIE_UTIL_TX_BYTES / RX_BYTES
_CLOCK_SM, _CLOCK_MEM, _TEMPERATURE_GPU = 1, 2, 0
#: How PCIe throughput is measured: "auto" uses GPM where the GPU has it (Hopper or newer), else the
#: byte counters, else the 20 ms sampler; "counters" never uses GPM; "off" measures none (`xfertop run`'s
#: summary wants the GPU's busy share, not a counter-polling thread in a run nobody watches).
PCIE_CHOICES = ("auto", "counters", "off")
#: Facts that change rarely are read at most this often: the PCIe error counters (replay counter and
#: field 173, 0.17 ms of driver time each on the H200) and the enforced power limit. Read every period
#: at 4 Hz they would be a fifth of the sampler's NVML time (docs/gpu-source.md); read every 2 s they
#: were still a fifth of the GPU thread's CPU at 1 Hz on an H100 (session 38, py-spy). An error shows up
#: within 5 s.
SLOW_FACTS_INTERVAL_S = 5.0


@dataclass
class _Gpu:
    """What is read once per GPU, plus the baselines for counter deltas."""

    index: int
    handle: Any
    name: str
    uuid: str
    bus_id: str
    gen_max: int | None
    width_max: int | None
    gen_gpu_max: int | None
    has_counters: bool = False
    gpm: GpmPcie | None = None
    replay_base: int | None = None
    correctable_base: int | None = None
    #: The slow facts as last read, and when (monotonic seconds).
    slow_read_s: float | None = None
    errors: PcieErrors | None = None
    power_limit_mw: int | None = None
    lost_reason: str | None = None


class GpuSource(PollingSource[GpuState]):
    """Every GPU NVML sees, once per ``interval_s``. Never raises for a missing driver or a lost GPU."""

    name = "gpu"

    def __init__(
        self,
        interval_s: float = 1.0,
        api: NvmlApi | None = None,
        first_window_s: float = 0.3,
        pcie: str = "auto",
        monotonic: Callable[[], float] = time.monotonic,
        host_processes: HostProcesses | None = None,
    ) -> None:
        super().__init__(interval_s)
        if pcie not in PCIE_CHOICES:
            raise ValueError(f"pcie must be one of {PCIE_CHOICES}, not {pcie!r}")
        self._pcie = pcie
        self._monotonic = monotonic
        self._api = api if api is not None else NvmlApi()
        #: Counter time gathered before the first sample, so ``--once`` still has PCIe rates.
        self._first_window_s = first_window_s
        self._setup_lock = threading.Lock()
        self._ready = False
        self._error: str | None = None
        self._gpus: list[_Gpu] = []
        self._poller: PcieCounterPoller | None = None
        self._driver_version: str | None = None
        self._cuda_driver_version: str | None = None
        self._notes: tuple[str, ...] = ()
        self._last_sample_s: float | None = None
        self._host_processes = host_processes if host_processes is not None else HostProcesses()

    @property
    def poller(self) -> PcieCounterPoller | None:
        return self._poller

    # -- PollingSource ---------------------------------------------------------------------------
    def sample(self) -> GpuState:
        self._ensure_setup()
        if self._error is not None:
            return GpuState(timestamp=time.time(), gpus=(), error=self._error)
        now_s = self._monotonic()
        elapsed_s = now_s - self._last_sample_s if self._last_sample_s is not None else self.interval_s
        self._last_sample_s = now_s
        gpus = tuple(self._snapshot(gpu, elapsed_s) for gpu in self._gpus)
        self._host_processes.forget_all_but({process.pid for gpu in gpus for process in gpu.processes})
        return GpuState(
            timestamp=time.time(),
            gpus=gpus,
            driver_version=self._driver_version,
            cuda_driver_version=self._cuda_driver_version,
            notes=self._notes + self._poller_notes(),
        )

    def _poller_notes(self) -> tuple[str, ...]:
        error = self._poller.last_error if self._poller is not None else None
        return (error,) if error else ()

    def stop(self, timeout_s: float = 2.0) -> None:
        started = self._thread is not None
        super().stop(timeout_s)
        if not started:  # sample_once users: the loop never ran, so close() was never called
            self.close()

    def close(self) -> None:
        if self._poller is not None:
            self._poller.stop()
        for gpu in self._gpus:
            if gpu.gpm is not None:
                gpu.gpm.close()
                gpu.gpm = None
        self._api.shutdown()

    # -- setup: slow-changing facts, read once -------------------------------------------------
    def _ensure_setup(self) -> None:
        with self._setup_lock:
            if self._ready:
                return
            self._ready = True
            startup_trace.mark("gpu: nvmlInit starts")
            self._error = self._api.init()
            startup_trace.mark(f"gpu: nvmlInit done ({self._error or 'ok'})")
            if self._error is not None:
                return
            api = self._api
            self._driver_version = api.system("nvmlSystemGetDriverVersion")
            self._cuda_driver_version = cuda_version_text(api.system("nvmlSystemGetCudaDriverVersion"))
            for index in range(api.device_count()):
                gpu = self._read_static(index)
                if gpu is not None:
                    self._gpus.append(gpu)
            self._start_pcie()
            startup_trace.mark(f"gpu: {len(self._gpus)} GPUs set up, PCIe measurement started")
        measuring = self._poller is not None or any(gpu.gpm is not None for gpu in self._gpus)
        if measuring and self._first_window_s > 0:
            self._stop.wait(self._first_window_s)  # a measuring window, not a synchronisation
            if self._poller is not None:
                # On a starved machine the window may hold too few reads for a rate: wait for some.
                self._poller.wait_for_polls(FIRST_WINDOW_POLLS, timeout_s=1.0)
            startup_trace.mark_once("gpu: first PCIe window over")

    def _read_static(self, index: int) -> _Gpu | None:
        api = self._api
        try:
            handle = api.query("nvmlDeviceGetHandleByIndex", index)
            if handle is None:
                return None
            pci = api.query("nvmlDeviceGetPciInfo", handle)
            bus_id = getattr(pci, "busId", None) if pci is not None else None
            return _Gpu(
                index=index,
                handle=handle,
                name=api.query("nvmlDeviceGetName", handle) or f"GPU {index}",
                uuid=api.query("nvmlDeviceGetUUID", handle) or "",
                bus_id=(bus_id.decode() if isinstance(bus_id, bytes) else bus_id) or "",
                gen_max=api.query("nvmlDeviceGetMaxPcieLinkGeneration", handle),
                width_max=api.query("nvmlDeviceGetMaxPcieLinkWidth", handle),
                gen_gpu_max=api.query("nvmlDeviceGetGpuMaxPcieLinkGeneration", handle),
            )
        except GpuLost:
            return None  # lost before we met it: nothing to show but its absence

    def _start_pcie(self) -> None:
        polled = []
        notes = []
        if self._pcie == "off":
            return
        for gpu in self._gpus:
            if self._pcie == "auto":
                try:
                    gpu.gpm = GpmPcie.open(self._api, gpu.handle)
                except GpuLost as exc:
                    gpu.lost_reason = str(exc)
                    continue
            if gpu.gpm is not None:
                continue  # GPM answers: the byte counters are not even asked (a field read is 0.3 ms)
            try:
                gpu.has_counters = counters_answer(self._api, gpu.handle)
            except GpuLost as exc:
                gpu.lost_reason = str(exc)
                continue
            if gpu.has_counters:
                # The higher of the host-capped and GPU maxima: polling too often costs only CPU,
                # too rarely loses data.
                gen = max((g for g in (gpu.gen_max, gpu.gen_gpu_max) if g), default=None)
                polled.append(PolledGpu(gpu.index, gpu.handle, link_wire_bytes_per_s(gen, gpu.width_max)))
            else:
                notes.append(
                    f"GPU {gpu.index}: the driver has no PCIe byte counters (R555 or newer has "
                    "them): RX/TX are 20 ms samples that miss most of the time"
                )
        self._notes = tuple(notes)
        if polled:
            self._poller = PcieCounterPoller(self._api, polled)
            self._poller.start()

    # -- one GPU, one sample ---------------------------------------------------------------------
    def _snapshot(self, gpu: _Gpu, elapsed_s: float) -> GpuSnapshot:
        if gpu.lost_reason is None:
            try:
                return self._read_live(gpu, elapsed_s)
            except GpuLost as exc:
                gpu.lost_reason = str(exc)
        return self._lost_snapshot(gpu)

    def _read_live(self, gpu: _Gpu, elapsed_s: float) -> GpuSnapshot:
        api, handle = self._api, gpu.handle
        util = api.query("nvmlDeviceGetUtilizationRates", handle)
        memory = api.query("nvmlDeviceGetMemoryInfo", handle)
        power_mw = api.query("nvmlDeviceGetPowerUsage", handle)
        self._read_slow_facts(gpu)
        limit_mw = gpu.power_limit_mw
        reasons = api.first_answer(
            ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"), handle
        )
        return GpuSnapshot(
            index=gpu.index,
            name=gpu.name,
            uuid=gpu.uuid,
            bus_id=gpu.bus_id,
            util_gpu_percent=_float(getattr(util, "gpu", None)),
            util_mem_percent=_float(getattr(util, "memory", None)),
            mem_used_bytes=getattr(memory, "used", None),
            mem_total_bytes=getattr(memory, "total", None),
            pcie=self._throughput(gpu, elapsed_s),
            link=PcieLink(
                gen_current=api.query("nvmlDeviceGetCurrPcieLinkGeneration", handle),
                width_current=api.query("nvmlDeviceGetCurrPcieLinkWidth", handle),
                gen_max=gpu.gen_max,
                width_max=gpu.width_max,
                gen_gpu_max=gpu.gen_gpu_max,
            ),
            errors=gpu.errors or PcieErrors(None, None),
            sm_clock_mhz=api.query("nvmlDeviceGetClockInfo", handle, _CLOCK_SM),
            mem_clock_mhz=api.query("nvmlDeviceGetClockInfo", handle, _CLOCK_MEM),
            power_w=power_mw / 1000 if power_mw is not None else None,
            power_limit_w=limit_mw / 1000 if limit_mw is not None else None,
            temperature_c=_float(api.query("nvmlDeviceGetTemperature", handle, _TEMPERATURE_GPU)),
            throttle_reasons=throttle_words(reasons),
            processes=self._processes(handle),
        )

    def _throughput(self, gpu: _Gpu, elapsed_s: float) -> PcieThroughput:
        if gpu.gpm is not None:
            rates = gpu.gpm.take()
            return PcieThroughput(rates.rx_bytes_per_s, rates.tx_bytes_per_s, "gpm", rates.coverage)
        if gpu.has_counters and self._poller is not None:
            rates = self._poller.take(gpu.index)
            return PcieThroughput(rates.rx_bytes_per_s, rates.tx_bytes_per_s, "counter", rates.coverage)
        if self._pcie == "off":
            return PcieThroughput(None, None, "none", None)
        # Units are KB/s (1000 bytes), each call blocks for its 20 ms window.
        rx_kb_per_s = self._api.query("nvmlDeviceGetPcieThroughput", gpu.handle, _PCIE_UTIL_RX)
        tx_kb_per_s = self._api.query("nvmlDeviceGetPcieThroughput", gpu.handle, _PCIE_UTIL_TX)
        if rx_kb_per_s is None and tx_kb_per_s is None:
            return PcieThroughput(None, None, "none", None)
        return PcieThroughput(
            rx_kb_per_s * 1000 if rx_kb_per_s is not None else None,
            tx_kb_per_s * 1000 if tx_kb_per_s is not None else None,
            "sampled",
            min(1.0, SAMPLED_WINDOW_S / elapsed_s) if elapsed_s > 0 else None,
        )

    def _read_slow_facts(self, gpu: _Gpu) -> None:
        now_s = self._monotonic()
        if gpu.slow_read_s is not None and now_s - gpu.slow_read_s < SLOW_FACTS_INTERVAL_S:
            return
        gpu.slow_read_s = now_s
        gpu.power_limit_mw = self._api.query("nvmlDeviceGetEnforcedPowerLimit", gpu.handle)
        gpu.errors = self._errors(gpu)

    def _errors(self, gpu: _Gpu) -> PcieErrors:
        replay = self._api.query("nvmlDeviceGetPcieReplayCounter", gpu.handle)
        field = self._api.field_values(gpu.handle, (FIELD_CORRECTABLE_ERRORS,))[FIELD_CORRECTABLE_ERRORS]
        correctable = field.value if field is not None else None
        if gpu.replay_base is None or (replay is not None and replay < gpu.replay_base):
            gpu.replay_base = replay  # first answer, or the counter restarted with the driver
        if gpu.correctable_base is None or (correctable is not None and correctable < gpu.correctable_base):
            gpu.correctable_base = correctable
        return PcieErrors(_delta(replay, gpu.replay_base), _delta(correctable, gpu.correctable_base))

    def _processes(self, handle: Any) -> tuple[GpuProcess, ...]:
        running = self._api.query("nvmlDeviceGetComputeRunningProcesses", handle) or ()
        join = self._host_processes.join
        return tuple(join(int(p.pid), getattr(p, "usedGpuMemory", None)) for p in running)

    @staticmethod
    def _lost_snapshot(gpu: _Gpu) -> GpuSnapshot:
        return GpuSnapshot(
            index=gpu.index,
            name=gpu.name,
            uuid=gpu.uuid,
            bus_id=gpu.bus_id,
            util_gpu_percent=None,
            util_mem_percent=None,
            mem_used_bytes=None,
            mem_total_bytes=None,
            pcie=PcieThroughput(None, None, "none", None),
            link=PcieLink(None, None, gpu.gen_max, gpu.width_max, gpu.gen_gpu_max),
            errors=PcieErrors(None, None),
            sm_clock_mhz=None,
            mem_clock_mhz=None,
            power_w=None,
            power_limit_w=None,
            temperature_c=None,
            throttle_reasons=(),
            processes=(),
            lost_reason=gpu.lost_reason,
        )


def _delta(value: int | None, base: int | None) -> int | None:
    return value - base if value is not None and base is not None else None


def _float(value: Any) -> float | None:
    return float(value) if value is not None else None
