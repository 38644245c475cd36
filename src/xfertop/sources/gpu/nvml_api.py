"""The NVML boundary: the only module that imports pynvml, so one fake replaces it in tests.

Every per-device query degrades to ``None`` where a GPU, driver or binding cannot answer, and a GPU
that stops answering raises :class:`GpuLost` (the caller marks that GPU lost and carries on).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

# Codes from nvml.h; read from the library where it has them (a fake may define fewer).
_CODE_DEFAULTS = {
    "NVML_ERROR_NOT_SUPPORTED": 3,
    "NVML_ERROR_NO_PERMISSION": 4,
    "NVML_ERROR_NOT_FOUND": 6,
    "NVML_ERROR_DRIVER_NOT_LOADED": 9,
    "NVML_ERROR_LIBRARY_NOT_FOUND": 12,
    "NVML_ERROR_FUNCTION_NOT_FOUND": 13,
    "NVML_ERROR_GPU_IS_LOST": 15,
    "NVML_ERROR_RESET_REQUIRED": 16,
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": 18,
    "NVML_ERROR_UNKNOWN": 999,
}

#: What a person reads when NVML cannot start, by error name.
_INIT_SENTENCES = {
    "NVML_ERROR_LIBRARY_NOT_FOUND": "no NVIDIA driver found (libnvidia-ml.so.1): showing host metrics only",
    "NVML_ERROR_DRIVER_NOT_LOADED": "the NVIDIA driver is installed but not loaded (is the nvidia kernel "
    "module loaded? try nvidia-smi): showing host metrics only",
    "NVML_ERROR_NO_PERMISSION": "no permission to open the NVIDIA device files (/dev/nvidia*): "
    "showing host metrics only",
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": "the NVIDIA library and kernel driver versions differ (a driver "
    "update without reboot?): showing host metrics only",
    "NVML_ERROR_UNKNOWN": "the NVIDIA driver failed to start for an unknown reason (try nvidia-smi): "
    "showing host metrics only",
}

#: Errors that mean "this GPU, driver or binding cannot answer this question": the value is None.
_UNANSWERED = (
    "NVML_ERROR_NOT_SUPPORTED",
    "NVML_ERROR_NOT_FOUND",
    "NVML_ERROR_NO_PERMISSION",
    "NVML_ERROR_FUNCTION_NOT_FOUND",
)
#: Errors that mean the GPU itself stopped answering.
_LOST_REASONS = {
    "NVML_ERROR_GPU_IS_LOST": "the GPU fell off the bus (GPU is lost): check dmesg for Xid errors",
    "NVML_ERROR_RESET_REQUIRED": "the GPU needs a reset before it answers again",
    "NVML_ERROR_UNKNOWN": "the GPU stopped answering (unknown NVML error): check dmesg for Xid errors",
}

NVML_SUCCESS = 0


class GpuLost(Exception):
    """A GPU stopped answering mid-run; ``str()`` is the reason in words."""


@dataclass(frozen=True)
class FieldReading:
    """One field value that answered: its integer value and when the driver read it (seconds)."""

    value: int
    timestamp_s: float


class NvmlApi:
    """A thin, forgiving wrapper over the pynvml module (or a fake with the same names)."""

    def __init__(self, lib: Any = None) -> None:
        self._lib = lib
        self._initialised = False

    # -- lifecycle ----------------------------------------------------------------------------
    def init(self) -> str | None:
        """Start NVML. Returns None on success, else one sentence saying why there are no GPUs."""
        if self._lib is None:
            try:
                import pynvml  # the one place: see tests/test_architecture.py
            except ImportError:
                return "the NVIDIA binding (nvidia-ml-py) is not installed: showing host metrics only"
            self._lib = pynvml
        try:
            self._lib.nvmlInit()
        except self._lib.NVMLError as exc:
            name = self._error_name(exc)
            return _INIT_SENTENCES.get(name, f"NVML failed to start ({exc}): showing host metrics only")
        except OSError as exc:  # a broken library file can fail in the loader itself
            return f"the NVIDIA library could not be loaded ({exc}): showing host metrics only"
        self._initialised = True
        return None

    def shutdown(self) -> None:
        if self._initialised:
            self._initialised = False
            # Shutting down a driver that went away is not worth a message.
            with contextlib.suppress(self._lib.NVMLError):
                self._lib.nvmlShutdown()

    @property
    def lib(self) -> Any:
        return self._lib

    def constant(self, name: str, default: int) -> int:
        return int(getattr(self._lib, name, default))

    # -- queries ------------------------------------------------------------------------------
    def device_count(self) -> int:
        count = self.system("nvmlDeviceGetCount")
        return int(count) if count is not None else 0

    def system(self, function: str, *args: Any) -> Any:
        """A query that is not about one GPU: None on any NVML error."""
        try:
            return _text(self.query(function, *args))
        except GpuLost:
            return None

    def query(self, function: str, *args: Any) -> Any:
        """Call ``lib.<function>(*args)``. None where unanswered; raises GpuLost if the GPU is gone."""
        fn = getattr(self._lib, function, None)
        if fn is None:  # an older binding without this call
            return None
        try:
            return _text(fn(*args))
        except self._lib.NVMLError as exc:
            name = self._error_name(exc)
            if name in _LOST_REASONS:
                raise GpuLost(_LOST_REASONS[name]) from exc
            if name in _UNANSWERED:
                return None
            return None  # timeouts and the like: a missing value this time, not a dead GPU

    def first_answer(self, functions: tuple[str, ...], *args: Any) -> Any:
        """The first of several equivalent calls (new name, then old) that answers."""
        for function in functions:
            value = self.query(function, *args)
            if value is not None:
                return value
        return None

    def field_values(self, handle: Any, field_ids: tuple[int, ...]) -> dict[int, FieldReading | None]:
        """Read several field values in one call. A field the GPU does not answer maps to None:
        the call can succeed while single fields say NOT_SUPPORTED, so each field is checked."""
        raw = self.query("nvmlDeviceGetFieldValues", handle, list(field_ids))
        if raw is None:
            return dict.fromkeys(field_ids)
        now_s = time.time()
        readings: dict[int, FieldReading | None] = {}
        for field_id, value in zip(field_ids, raw, strict=False):
            if getattr(value, "nvmlReturn", NVML_SUCCESS) != NVML_SUCCESS:
                readings[field_id] = None
                continue
            # The driver stamps each field in microseconds of wall time; 0 means "not stamped".
            stamp_us = int(getattr(value, "timestamp", 0) or 0)
            readings[field_id] = FieldReading(_field_int(value), stamp_us / 1e6 if stamp_us else now_s)
        return readings

    # -- GPM: GPU performance monitoring, Hopper or newer ------------------------------------------
    def gpm_supported(self, handle: Any) -> bool:
        support = self.query("nvmlGpmQueryDeviceSupport", handle)
        return bool(getattr(support, "isSupportedDevice", 0))

    def gpm_buffer(self) -> Any:
        """A sample buffer (free it with ``gpm_free``), or None."""
        return self.query("nvmlGpmSampleAlloc")

    def gpm_free(self, buffer: Any) -> None:
        with contextlib.suppress(self._lib.NVMLError):
            self._lib.nvmlGpmSampleFree(buffer)

    def gpm_read(self, handle: Any, buffer: Any) -> bool:
        """Fill ``buffer`` with the GPU's counters now. False where it did not answer; GpuLost if gone."""
        return self.query("nvmlGpmSampleGet", handle, buffer) is not None

    def gpm_metrics(self, earlier: Any, later: Any, metric_ids: tuple[int, ...]) -> dict[int, float | None]:
        """Each metric over the time between two filled buffers (rates per second); None where unanswered."""
        lib = self._lib
        request = lib.c_nvmlGpmMetricsGet_t()
        request.version = lib.NVML_GPM_METRICS_GET_VERSION
        request.sample1, request.sample2 = earlier, later
        request.numMetrics = len(metric_ids)
        for slot, metric_id in zip(request.metrics, metric_ids, strict=False):
            slot.metricId = metric_id
        if self.query("nvmlGpmMetricsGet", request) is None:
            return dict.fromkeys(metric_ids)
        return {
            metric_id: float(slot.value) if slot.nvmlReturn == NVML_SUCCESS else None
            for metric_id, slot in zip(metric_ids, request.metrics, strict=False)
        }

    def _error_name(self, exc: BaseException) -> str:
        code = getattr(exc, "value", None)
        for name, default in _CODE_DEFAULTS.items():
            if code == self.constant(name, default):
                return name
        return "NVML_ERROR_OTHER"


def _text(value: Any) -> Any:
    """Older bindings return bytes for strings."""
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _field_int(value: Any) -> int:
    """The integer in a field value's union, read by its declared type (1: uint, 3: ull, ...)."""
    union = value.value
    member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
    return int(getattr(union, member.get(int(value.valueType), "ullVal")))
