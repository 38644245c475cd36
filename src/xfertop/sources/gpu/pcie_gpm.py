"""PCIe RX/TX from GPM (GPU performance monitoring, Hopper or newer): all the time, two calls per sample.

GPM keeps its own counters in the GPU; ``nvmlGpmMetricsGet`` turns two samples of them into average
rates over the time between the samples, whatever its length. So one read per display period covers the
whole period, where the 32-bit byte counters (pcie_poller.py) need a read every ~45 ms at Gen5 x16
(each ~0.33 ms of driver CPU on the H200) to never wrap. GPM's count is close to the byte counters' but
not the same: docs/gpu-source.md has both, measured side by side on the H200.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.gpu.pcie_poller import CounterRates

METRIC_PCIE_TX_PER_SEC = 20  # NVML_GPM_METRIC_PCIE_TX_PER_SEC, MiB/s: device-to-host
METRIC_PCIE_RX_PER_SEC = 21  # NVML_GPM_METRIC_PCIE_RX_PER_SEC, MiB/s: host-to-device
_METRICS = (METRIC_PCIE_TX_PER_SEC, METRIC_PCIE_RX_PER_SEC)
MIB = 2**20
#: NVML asks for samples at least 100 ms apart (the GPU refreshes its GPM counters that often).
MIN_INTERVAL_S = 0.1


class GpmPcie:
    """One GPU's GPM PCIe rates. ``take`` returns the averages since the previous ``take``.

    Two sample buffers take turns: the newest becomes the next baseline. A take sooner than
    ``MIN_INTERVAL_S`` after the last one returns the last rates again instead of a shorter window.
    Build it with :meth:`open`, which says None where the GPU or binding has no GPM.
    """

    def __init__(
        self, api: NvmlApi, handle: Any, buffers: tuple[Any, Any], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._api, self._handle, self._clock = api, handle, clock
        self._buffers = list(buffers)
        self._baseline_s = clock()
        self._last = CounterRates(None, None, 0.0, 0.0)

    @classmethod
    def open(cls, api: NvmlApi, handle: Any, clock: Callable[[], float] = time.monotonic) -> GpmPcie | None:
        """Start measuring (the first sample is the baseline), or None where GPM cannot serve."""
        if not api.gpm_supported(handle):
            return None
        first, second = api.gpm_buffer(), api.gpm_buffer()
        if first is None or second is None or not api.gpm_read(handle, first):
            for buffer in (first, second):
                if buffer is not None:
                    api.gpm_free(buffer)
            return None
        return cls(api, handle, (first, second), clock)

    def take(self) -> CounterRates:
        now_s = self._clock()
        wall_s = now_s - self._baseline_s
        if wall_s < MIN_INTERVAL_S:
            return self._last
        baseline, later = self._buffers
        if not self._api.gpm_read(self._handle, later):
            # Keep the baseline: the next answer covers this period too.
            return CounterRates(None, None, 0.0, wall_s)
        metrics = self._api.gpm_metrics(baseline, later, _METRICS)
        self._buffers.reverse()
        self._baseline_s = now_s
        tx, rx = metrics[METRIC_PCIE_TX_PER_SEC], metrics[METRIC_PCIE_RX_PER_SEC]
        covered = tx is not None and rx is not None
        self._last = CounterRates(
            rx * MIB if rx is not None else None,
            tx * MIB if tx is not None else None,
            1.0 if covered else 0.0,
            wall_s,
        )
        return self._last

    def close(self) -> None:
        for buffer in self._buffers:
            self._api.gpm_free(buffer)
        self._buffers = []
