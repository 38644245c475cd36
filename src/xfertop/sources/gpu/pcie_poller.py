"""A background thread that reads every GPU's PCIe byte counters often enough that none can wrap."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xfertop.sources.gpu.nvml_api import GpuLost, NvmlApi
from xfertop.sources.gpu.pcie_counter import CounterUnwrapper, poll_interval_s

FIELD_TX_BYTES = 197  # NVML_FI_DEV_PCIE_COUNT_TX_BYTES: device-to-host
FIELD_RX_BYTES = 198  # NVML_FI_DEV_PCIE_COUNT_RX_BYTES: host-to-device
_FIELDS = (FIELD_TX_BYTES, FIELD_RX_BYTES)


@dataclass(frozen=True)
class PolledGpu:
    index: int
    handle: Any
    #: The fastest the link can signal: sets the poll interval and the reset check.
    wire_bytes_per_s: float


@dataclass(frozen=True)
class CounterRates:
    """Average rates over the wall time since the previous ``take``, and how much of it they cover."""

    rx_bytes_per_s: float | None
    tx_bytes_per_s: float | None
    coverage: float
    wall_s: float


def counters_answer(api: NvmlApi, handle: Any) -> bool:
    """Whether this GPU answers both byte counters (drivers before R555 say NOT_SUPPORTED per field)."""
    readings = api.field_values(handle, _FIELDS)
    return all(readings[field] is not None for field in _FIELDS)


class PcieCounterPoller:
    """Reads fields 197/198 of every GPU at one interval: the shortest that any of their links needs.

    ``poll_once`` is one round (used by the thread and by tests with a fake clock); ``take`` returns
    a GPU's averages since its previous take. ``clock`` must be the clock of the field timestamps
    (wall time for real NVML, whose fields are stamped in microseconds since the epoch).
    """

    def __init__(
        self, api: NvmlApi, gpus: Sequence[PolledGpu], clock: Callable[[], float] = time.time
    ) -> None:
        self._api = api
        self._gpus = tuple(gpus)
        self._clock = clock
        self.interval_s = min((poll_interval_s(gpu.wire_bytes_per_s) for gpu in self._gpus), default=0.02)
        self._rx = {gpu.index: CounterUnwrapper(gpu.wire_bytes_per_s) for gpu in self._gpus}
        self._tx = {gpu.index: CounterUnwrapper(gpu.wire_bytes_per_s) for gpu in self._gpus}
        now_s = clock()
        self._window_start_s = {gpu.index: now_s for gpu in self._gpus}
        self._lost: set[int] = set()
        self._lock = threading.Lock()
        self._polled = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.polls = 0
        #: The last unexpected failure of a poll, in words (the thread carries on).
        self.last_error: str | None = None
        #: CPU time the polling thread has used, in seconds (what this accuracy costs).
        self.cpu_s = 0.0

    def poll_once(self) -> None:
        for gpu in self._gpus:
            if gpu.index in self._lost:
                continue
            try:
                readings = self._api.field_values(gpu.handle, _FIELDS)
            except GpuLost:
                self._lost.add(gpu.index)  # the GPU source reports it; nothing left to count here
                continue
            with self._lock:
                for field, unwrapper in ((FIELD_RX_BYTES, self._rx), (FIELD_TX_BYTES, self._tx)):
                    reading = readings[field]
                    if reading is None:
                        unwrapper[gpu.index].forget()
                    else:
                        unwrapper[gpu.index].add(reading.value, reading.timestamp_s)
        with self._polled:
            self.polls += 1
            self._polled.notify_all()

    def wait_for_polls(self, count: int, timeout_s: float) -> bool:
        """Block until ``count`` rounds have been read in all (a window needs two), or the timeout."""
        with self._polled:
            return self._polled.wait_for(lambda: self.polls >= count, timeout=timeout_s)

    def take(self, index: int) -> CounterRates:
        with self._lock:
            now_s = self._clock()
            wall_s = now_s - self._window_start_s[index]
            self._window_start_s[index] = now_s
            rx, tx = self._rx[index].take(), self._tx[index].take()
        covered_s = min(rx.covered_s, tx.covered_s)
        coverage = min(1.0, covered_s / wall_s) if wall_s > 0 else 0.0
        return CounterRates(rx.bytes_per_s(), tx.bytes_per_s(), coverage, wall_s)

    # -- the thread -------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None and self._gpus:
            self._thread = threading.Thread(target=self._run, name="xfertop-pcie-counters", daemon=True)
            self._thread.start()

    def stop(self, timeout_s: float = 1.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        cpu_start_s = time.thread_time()
        next_poll_s = time.monotonic()
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception as exc:  # a counter thread that dies silently would freeze every rate
                self.last_error = f"PCIe counter poll failed: {type(exc).__name__}: {exc}"
            self.cpu_s = time.thread_time() - cpu_start_s
            next_poll_s += self.interval_s
            delay_s = next_poll_s - time.monotonic()
            if delay_s < 0:  # we fell behind: poll now, do not burst to catch up
                next_poll_s, delay_s = time.monotonic(), 0.0
            self._stop.wait(delay_s)
