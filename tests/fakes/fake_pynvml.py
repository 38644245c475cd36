"""A fake of the pynvml module, replaying what a real H200 answered (tests/fixtures/h200/).

Honest where it matters to xfertop: the answers, error classes and codes of the recording; the PCIe
byte counters are 32-bit and wrap; a field read takes ~0.16 ms per field and stamps each field with
the wall time in microseconds; ``nvmlDeviceGetPcieThroughput`` blocks for its 20 ms window and
answers KB/s. Other calls answer at once (their recorded latencies are a few ms at most).
A call the binding lacks is simply absent (AttributeError), as in an old nvidia-ml-py.
"""

from __future__ import annotations

import bisect
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "h200"
PROBE = json.loads((FIXTURES / "nvml_probe.json").read_text())
CALLS: dict[str, Any] = PROBE["nvml"]["calls"]
CONSTANTS: dict[str, int] = PROBE["nvml"]["constants"]
#: Calls xfertop makes that the probe recorded under another name (same answer on the H200).
ALIASES = {"nvmlDeviceGetEnforcedPowerLimit": "nvmlDeviceGetPowerManagementLimit"}
MODULUS = 2**32
FIELD_READ_S = 0.00016  # per field: 0.32 ms for TX+RX on the H200
THROUGHPUT_WINDOW_S = 0.020


class NVMLError(Exception):
    """Like pynvml's: ``NVMLError(code)`` builds the subclass named after the code."""

    _by_code: dict[int, type[NVMLError]] = {}  # noqa: RUF012 - a registry, as in pynvml

    def __new__(cls, value: int) -> NVMLError:
        if cls is NVMLError:
            cls = NVMLError._by_code.get(value, NVMLError)
        obj = Exception.__new__(cls)
        obj.value = value
        return obj

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return f"NVML error {self.value}"


def _error_classes() -> dict[str, type[NVMLError]]:
    classes = {}
    for name, code in CONSTANTS.items():
        if name.startswith("NVML_ERROR_"):
            words = name.removeprefix("NVML_ERROR_").title().replace("_", "")
            cls = type(f"NVMLError_{words}", (NVMLError,), {})
            NVMLError._by_code[code] = cls
            classes[cls.__name__] = cls
    return classes


ERROR_CLASSES = _error_classes()


class FakeClock:
    """A wall clock the test moves; ``sleep`` advances it instead of waiting."""

    def __init__(self, now_s: float = 1_795_977_852.0) -> None:
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s

    def sleep(self, seconds: float) -> None:
        self.now_s += seconds


class Traffic:
    """Cumulative (unwrapped) TX and RX bytes as a function of seconds since the GPU appeared."""

    def bytes_at(self, t_s: float) -> tuple[int, int]:
        raise NotImplementedError


@dataclass
class SteadyTraffic(Traffic):
    rx_bytes_per_s: float = 0.0
    tx_bytes_per_s: float = 0.0

    def bytes_at(self, t_s: float) -> tuple[int, int]:
        return int(self.tx_bytes_per_s * t_s), int(self.rx_bytes_per_s * t_s)


class RecordedTraffic(Traffic):
    """The H200 trace (idle, pinned H2D, idle, D2H, idle), looped; interpolated between its ~5.6 ms polls."""

    def __init__(self) -> None:
        trace = json.loads((FIXTURES / "pcie_counter_trace.json").read_text())
        samples = trace["samples_ns_tx_rx_rettx_retrx"]
        self.phases = trace["phases"]
        self.t0_ns = samples[0][0]
        self.times_s = [(s[0] - self.t0_ns) / 1e9 for s in samples]
        self.tx, self.rx = [0], [0]
        for before, after in itertools.pairwise(samples):
            self.tx.append(self.tx[-1] + (after[1] - before[1]) % MODULUS)
            self.rx.append(self.rx[-1] + (after[2] - before[2]) % MODULUS)
        self.length_s = self.times_s[-1]

    def phase_span_s(self, phase: str) -> tuple[float, float]:
        """Start and end of a recorded phase, in seconds of the trace."""
        entry = next(p for p in self.phases if p["phase"] == phase)
        return (entry["t0_ns"] - self.t0_ns) / 1e9, (entry["t1_ns"] - self.t0_ns) / 1e9

    def payload_bytes_per_s(self, phase: str) -> float:
        entry = next(p for p in self.phases if p["phase"] == phase)
        return entry["payload_bytes"] / ((entry["t1_ns"] - entry["t0_ns"]) / 1e9)

    def bytes_at(self, t_s: float) -> tuple[int, int]:
        loops, within_s = divmod(max(t_s, 0.0), self.length_s)
        return (
            int(loops * self.tx[-1] + self._interpolate(self.tx, within_s)),
            int(loops * self.rx[-1] + self._interpolate(self.rx, within_s)),
        )

    def _interpolate(self, cumulative: list[int], t_s: float) -> float:
        i = min(max(bisect.bisect_right(self.times_s, t_s) - 1, 0), len(self.times_s) - 2)
        t_a, t_b = self.times_s[i], self.times_s[i + 1]
        share = (t_s - t_a) / (t_b - t_a)
        return cumulative[i] + share * (cumulative[i + 1] - cumulative[i])


@dataclass(eq=False)
class FakeGpu:
    """One GPU. Set ``lost`` to make it fall off the bus; put call names in ``not_supported``
    (e.g. "nvmlDeviceGetPowerUsage", "nvmlDeviceGetPcieThroughput") and field ids in
    ``fields_not_supported`` to make them answer NOT_SUPPORTED."""

    index: int
    traffic: Traffic = field(default_factory=SteadyTraffic)
    processes: list[Any] = field(default_factory=list)
    not_supported: set[str] = field(default_factory=set)
    fields_not_supported: set[int] = field(default_factory=set)
    answers: dict[str, Any] = field(default_factory=dict)
    lost: bool = False
    #: GPM (Hopper or newer): the H200 has it. False: isSupportedDevice 0, as on an A100 or older.
    gpm: bool = True
    born_s: float = 0.0
    counter_offsets: tuple[int, int] = (983_911_744, 2_112_665_548)  # the recorded TX, RX values

    def check(self, call: str) -> None:
        """Raise what the GPU would: GPU_IS_LOST once lost, NOT_SUPPORTED where configured."""
        if self.lost:
            raise NVMLError(CONSTANTS["NVML_ERROR_GPU_IS_LOST"])
        base = call.split("_")[0] if call.endswith(("_SM", "_MEM", "_RX", "_TX")) else call
        if base in self.not_supported:
            raise NVMLError(CONSTANTS["NVML_ERROR_NOT_SUPPORTED"])

    def answer(self, call: str) -> Any:
        self.check(call)
        if call in self.answers:
            return self.answers[call]
        recorded = CALLS[ALIASES.get(call, call)]
        if recorded.get("error"):
            raise NVMLError(int(recorded["error"].rsplit(":", 1)[1]))
        return _as_struct(recorded["value"])

    def reset_counters(self, tx_value: int = 0, rx_value: int = 0, now_s: float = 0.0) -> None:
        """A driver reload: the counters start again from the given values."""
        tx, rx = self.traffic.bytes_at(now_s - self.born_s)
        self.counter_offsets = ((tx_value - tx) % MODULUS, (rx_value - rx) % MODULUS)

    def counters(self, now_s: float) -> tuple[int, int]:
        tx, rx = self.traffic.bytes_at(now_s - self.born_s)
        return (tx + self.counter_offsets[0]) % MODULUS, (rx + self.counter_offsets[1]) % MODULUS


def _as_struct(value: Any) -> Any:
    if isinstance(value, dict):
        fields = dict(value)
        if "busId" in fields:  # a ctypes char array: pynvml hands it over as bytes
            fields["busId"] = fields["busId"].encode()
        return SimpleNamespace(**fields)
    return value


@dataclass
class FakeGpmSample:
    """A GPM sample buffer: what the GPU had counted when it was filled (cumulative bytes, not wrapped)."""

    t_s: float = 0.0
    tx_bytes: int = 0
    rx_bytes: int = 0
    freed: bool = False


class FakeGpmMetricsGet:
    """pynvml's c_nvmlGpmMetricsGet_t, as far as callers use it."""

    def __init__(self) -> None:
        self.version = 0
        self.numMetrics = 0
        self.sample1: FakeGpmSample | None = None
        self.sample2: FakeGpmSample | None = None
        self.metrics = [SimpleNamespace(metricId=0, nvmlReturn=0, value=0.0) for _ in range(8)]


class FakePynvml:
    """Stands in for the pynvml module: pass it as ``NvmlApi(lib=FakePynvml(...))``."""

    NVMLError = NVMLError

    def __init__(
        self,
        gpus: list[FakeGpu] | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        init_error: str | None = None,
        missing_in_binding: frozenset[str] = frozenset(),
    ) -> None:
        self.missing_in_binding = missing_in_binding
        self.gpus = gpus if gpus is not None else [FakeGpu(0)]
        self.clock, self.sleep = clock, sleep
        self.init_error = init_error
        self.calls: list[str] = []
        self.gpm_samples: list[FakeGpmSample] = []
        for gpu in self.gpus:
            gpu.born_s = clock()
        for name, code in CONSTANTS.items():
            setattr(self, name, code)
        for name, cls in ERROR_CLASSES.items():
            setattr(self, name, cls)

    @classmethod
    def h200s(cls, count: int, **kwargs: Any) -> FakePynvml:
        """``count`` H200s, each with its own index, UUID and bus id."""
        gpus = []
        for index in range(count):
            gpu = FakeGpu(index)
            gpu.answers["nvmlDeviceGetUUID"] = f"GPU-b8361e20-a5c9-4f2b-b69b-77be6f3fb3{index:02x}"
            gpu.answers["nvmlDeviceGetPciInfo"] = _as_struct(
                {**CALLS["nvmlDeviceGetPciInfo"]["value"], "busId": f"00000000:{0x18 + index:02x}:00.0"}
            )
            gpus.append(gpu)
        return cls(gpus, **kwargs)

    # -- lifecycle and system ------------------------------------------------------------------
    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise NVMLError(CONSTANTS[self.init_error])

    def nvmlShutdown(self) -> None:
        self.calls.append("nvmlShutdown")

    def nvmlSystemGetDriverVersion(self) -> str:
        return CALLS["nvmlSystemGetDriverVersion"]["value"]

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return CALLS["nvmlSystemGetCudaDriverVersion"]["value"]

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        return self.gpus[index]

    # -- per device: replayed answers ----------------------------------------------------------
    def __getattr__(self, name: str) -> Callable[..., Any]:
        recorded = CALLS.get(ALIASES.get(name, name))
        if (
            not name.startswith("nvmlDevice")
            or recorded is None
            or name in self.missing_in_binding
            or recorded.get("error") == "missing in binding"
        ):
            raise AttributeError(name)  # the binding has no such call
        return lambda gpu: self._call(gpu, name)

    def _call(self, gpu: FakeGpu, name: str) -> Any:
        self.calls.append(name)
        return gpu.answer(name)

    def nvmlDeviceGetClockInfo(self, gpu: FakeGpu, clock_type: int) -> int:
        return self._call(gpu, "nvmlDeviceGetClockInfo_" + ("SM" if clock_type == 1 else "MEM"))

    def nvmlDeviceGetTemperature(self, gpu: FakeGpu, sensor: int) -> int:
        return self._call(gpu, "nvmlDeviceGetTemperature")

    def nvmlDeviceGetComputeRunningProcesses(self, gpu: FakeGpu) -> list[Any]:
        self.calls.append("nvmlDeviceGetComputeRunningProcesses")
        gpu.check("nvmlDeviceGetComputeRunningProcesses")
        return list(gpu.processes)

    def nvmlDeviceGetPcieThroughput(self, gpu: FakeGpu, counter: int) -> int:
        """KB/s over the next 20 ms, blocking for them, as the real call does."""
        direction = "_RX" if counter == CONSTANTS.get("NVML_PCIE_UTIL_RX_BYTES", 1) else "_TX"
        self._call(gpu, "nvmlDeviceGetPcieThroughput" + direction)
        start_s = self.clock()
        self.sleep(THROUGHPUT_WINDOW_S)
        end_s = self.clock()  # once: bytes and seconds of the same window
        before = gpu.traffic.bytes_at(start_s - gpu.born_s)
        after = gpu.traffic.bytes_at(end_s - gpu.born_s)
        column = 1 if direction == "_RX" else 0
        return int((after[column] - before[column]) / (end_s - start_s) / 1000)

    def nvmlDeviceGetFieldValues(self, gpu: FakeGpu, field_ids: list[int]) -> list[SimpleNamespace]:
        self.calls.append("nvmlDeviceGetFieldValues")
        gpu.check("nvmlDeviceGetFieldValues")
        values = []
        for field_id in field_ids:
            self.sleep(FIELD_READ_S)
            now_s = self.clock()
            ret, number = self._field(gpu, field_id, now_s)
            values.append(
                SimpleNamespace(
                    fieldId=field_id,
                    nvmlReturn=ret,
                    valueType=1,
                    timestamp=int(now_s * 1e6) if ret == 0 else 0,
                    value=SimpleNamespace(uiVal=number),
                )
            )
        return values

    # -- GPM: as the H200 answered (benchmarks/nvml_costs.py): supported, PCIe in MiB/s between samples --
    NVML_GPM_METRICS_GET_VERSION = 1

    def nvmlGpmQueryDeviceSupport(self, gpu: FakeGpu) -> SimpleNamespace:
        self.calls.append("nvmlGpmQueryDeviceSupport")
        gpu.check("nvmlGpmQueryDeviceSupport")
        return SimpleNamespace(version=1, isSupportedDevice=int(gpu.gpm))

    def nvmlGpmSampleAlloc(self) -> FakeGpmSample:
        sample = FakeGpmSample()
        self.gpm_samples.append(sample)
        return sample

    def nvmlGpmSampleFree(self, sample: FakeGpmSample) -> None:
        sample.freed = True

    def nvmlGpmSampleGet(self, gpu: FakeGpu, sample: FakeGpmSample) -> FakeGpmSample:
        self.calls.append("nvmlGpmSampleGet")
        gpu.check("nvmlGpmSampleGet")
        if not gpu.gpm:
            raise NVMLError(CONSTANTS["NVML_ERROR_NOT_SUPPORTED"])
        sample.t_s = self.clock()
        sample.tx_bytes, sample.rx_bytes = gpu.traffic.bytes_at(sample.t_s - gpu.born_s)
        return sample

    c_nvmlGpmMetricsGet_t = FakeGpmMetricsGet

    def nvmlGpmMetricsGet(self, request: FakeGpmMetricsGet) -> FakeGpmMetricsGet:
        self.calls.append("nvmlGpmMetricsGet")
        earlier, later = request.sample1, request.sample2
        seconds = later.t_s - earlier.t_s
        for metric in request.metrics[: request.numMetrics]:
            column = {20: "tx_bytes", 21: "rx_bytes"}.get(metric.metricId)
            if column is None or seconds <= 0:
                metric.nvmlReturn = CONSTANTS["NVML_ERROR_NOT_SUPPORTED"]
                continue
            metric.nvmlReturn = 0
            metric.value = (getattr(later, column) - getattr(earlier, column)) / seconds / 2**20
        return request

    def _field(self, gpu: FakeGpu, field_id: int, now_s: float) -> tuple[int, int]:
        if field_id in gpu.fields_not_supported:
            return CONSTANTS["NVML_ERROR_NOT_SUPPORTED"], 0
        tx, rx = gpu.counters(now_s)
        recorded = {f["fieldId"]: f["value"] for f in CALLS["field_values"]["value"]}
        if field_id in (197, 198):
            return 0, tx if field_id == 197 else rx
        if field_id in recorded:
            return 0, gpu.answers.get(f"field_{field_id}", recorded[field_id])
        return CONSTANTS["NVML_ERROR_INVALID_ARGUMENT"], 0  # as the recording answered an unknown id


class TopologyPynvml(FakePynvml):
    """The shared H200 fake plus the topology calls, answering as the H200 did (h200_probe.txt):
    MemoryAffinity [0x1], NvLinkState NOT_SUPPORTED; multi-GPU boards set ``nvlinks``."""

    def __init__(
        self,
        gpus: list[FakeGpu],
        memory_affinity: list[int] | None = None,
        nvlinks: dict[int, list[str]] | None = None,
    ) -> None:
        super().__init__(gpus)
        self.memory_affinity = memory_affinity or [0x1, 0, 0, 0]
        self.nvlinks = nvlinks or {}
        self.nvlink_state_calls = 0

    def nvmlDeviceGetMemoryAffinity(self, gpu: FakeGpu, node_set_size: int, scope: int) -> list[int]:
        gpu.answer("nvmlDeviceGetIndex")
        return self.memory_affinity[:node_set_size]

    def nvmlDeviceGetNvLinkState(self, gpu: FakeGpu, link: int) -> int:
        self.nvlink_state_calls += 1
        gpu.answer("nvmlDeviceGetIndex")
        if gpu.index not in self.nvlinks:
            raise NVMLError(CONSTANTS["NVML_ERROR_NOT_SUPPORTED"])
        return 1 if link < len(self.nvlinks[gpu.index]) else 0

    def nvmlDeviceGetNvLinkRemotePciInfo_v2(self, gpu: FakeGpu, link: int) -> Any:
        return SimpleNamespace(busId=self.nvlinks[gpu.index][link].encode())


def gpus_on_buses(*bus_ids: str) -> list[FakeGpu]:
    """Recorded H200s at the given bus ids (NVML's spelling, "00000000:18:00.0"), indexed in order."""
    gpus = []
    for index, bus_id in enumerate(bus_ids):
        gpu = FakeGpu(index)
        gpu.answers["nvmlDeviceGetUUID"] = f"GPU-b8361e20-a5c9-4f2b-b69b-77be6f3fb3{index:02x}"
        gpu.answers["nvmlDeviceGetPciInfo"] = _as_struct(
            {**CALLS["nvmlDeviceGetPciInfo"]["value"], "busId": bus_id}
        )
        gpus.append(gpu)
    return gpus
