"""What each NVML call xfertop makes costs (wall and CPU), and whether GPM can replace the counter poller.

Run on a GPU machine:  python benchmarks/nvml_costs.py OUT_DIR
Writes OUT_DIR/nvml_costs.json and prints a summary:
1. the PCIe counter read (fields 197/198) through pynvml and through a raw ctypes call with a reused
   buffer, and every per-sample query of the GPU source: median wall and thread CPU time per call;
2. GPM (Hopper or newer): whether it answers, what a sample costs, and its PCIe RX/TX rates against the
   byte counters (polled every 10 ms) and the payload during a pinned H2D loop, a D2H loop and idle.
Without a GPU it says so in one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

MODULUS = 2**32
CHUNK_BYTES = 256 * 2**20


def cost(fn: Any, calls: int = 200) -> dict:
    walls, cpus = [], []
    for _ in range(calls):
        w0, c0 = time.perf_counter(), time.thread_time()
        fn()
        cpus.append(time.thread_time() - c0)
        walls.append(time.perf_counter() - w0)
    return {
        "calls": calls,
        "wall_ms_median": 1e3 * statistics.median(walls),
        "wall_ms_max": 1e3 * max(walls),
        "cpu_ms_mean": 1e3 * sum(cpus) / calls,
    }


def call_costs(pynvml: Any, handle: Any) -> dict:
    results = {}
    fields = [197, 198]
    cost(lambda: pynvml.nvmlDeviceGetFieldValues(handle, fields), calls=50)  # warm-up, not recorded
    results["fields_197_198_pynvml"] = cost(lambda: pynvml.nvmlDeviceGetFieldValues(handle, fields))
    values = (pynvml.c_nvmlFieldValue_t * 2)()
    get_fields = pynvml._nvmlGetFunctionPointer("nvmlDeviceGetFieldValues")

    def raw() -> None:
        values[0].fieldId, values[1].fieldId = 197, 198
        get_fields(handle, ctypes.c_int32(2), values)

    results["fields_197_198_raw_ctypes"] = cost(raw)
    results["fields_197_198_pynvml_again"] = cost(lambda: pynvml.nvmlDeviceGetFieldValues(handle, fields))
    queries = {
        "UtilizationRates": lambda: pynvml.nvmlDeviceGetUtilizationRates(handle),
        "MemoryInfo": lambda: pynvml.nvmlDeviceGetMemoryInfo(handle),
        "PowerUsage": lambda: pynvml.nvmlDeviceGetPowerUsage(handle),
        "EnforcedPowerLimit": lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(handle),
        "ClocksEventReasons": lambda: pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle),
        "CurrPcieLinkGeneration": lambda: pynvml.nvmlDeviceGetCurrPcieLinkGeneration(handle),
        "CurrPcieLinkWidth": lambda: pynvml.nvmlDeviceGetCurrPcieLinkWidth(handle),
        "PcieReplayCounter": lambda: pynvml.nvmlDeviceGetPcieReplayCounter(handle),
        "field_173": lambda: pynvml.nvmlDeviceGetFieldValues(handle, [173]),
        "ClockInfo_SM": lambda: pynvml.nvmlDeviceGetClockInfo(handle, 1),
        "ClockInfo_MEM": lambda: pynvml.nvmlDeviceGetClockInfo(handle, 2),
        "Temperature": lambda: pynvml.nvmlDeviceGetTemperature(handle, 0),
        "ComputeRunningProcesses": lambda: pynvml.nvmlDeviceGetComputeRunningProcesses(handle),
        "fields_batch_10": lambda: pynvml.nvmlDeviceGetFieldValues(
            handle, [197, 198, 173, 155, 154, 150, 151, 152, 153, 156]
        ),
    }
    for name, fn in queries.items():
        try:
            results[name] = cost(fn, calls=50)
        except pynvml.NVMLError as exc:
            results[name] = {"error": str(exc)}
    return results


class Counters:
    """Fields 197/198 every 10 ms, unwrapped: the reference the GPM rates are judged against."""

    def __init__(self, pynvml: Any, handle: Any) -> None:
        self.pynvml, self.handle = pynvml, handle
        self.tx = self.rx = 0
        self.last = self._read()

    def _read(self) -> tuple[int, int]:
        values = self.pynvml.nvmlDeviceGetFieldValues(self.handle, [197, 198])
        return int(values[0].value.ullVal), int(values[1].value.ullVal)

    def poll(self) -> None:
        tx, rx = self._read()
        self.tx += (tx - self.last[0]) % MODULUS
        self.rx += (rx - self.last[1]) % MODULUS
        self.last = (tx, rx)


def poller_costs(seconds: float = 5.0) -> dict:
    """xfertop's poller thread alone, idle GPU, for ``seconds``: its CPU per read."""
    from xfertop.sources.gpu.nvml_api import NvmlApi
    from xfertop.sources.gpu.pcie_counter import link_wire_bytes_per_s
    from xfertop.sources.gpu.pcie_poller import PcieCounterPoller, PolledGpu

    api = NvmlApi()
    if api.init() is not None:
        return {"error": "NVML did not start"}
    handle = api.query("nvmlDeviceGetHandleByIndex", 0)
    result: dict[str, Any] = {}
    poller = PcieCounterPoller(api, [PolledGpu(0, handle, link_wire_bytes_per_s(5, 16))])
    poller.start()
    time.sleep(seconds)  # a measuring window
    poller.stop()
    result["poller_thread"] = {
        "seconds": seconds,
        "polls": poller.polls,
        "interval_ms": poller.interval_s * 1e3,
        "cpu_ms_per_poll": 1e3 * poller.cpu_s / max(1, poller.polls),
        "cpu_share_of_one_core": poller.cpu_s / seconds,
    }
    api.shutdown()
    return result


def gpm_phase(pynvml: Any, handle: Any, torch: Any, phase: str, seconds: float) -> dict:
    counters = Counters(pynvml, handle)
    s1, s2 = pynvml.nvmlGpmSampleAlloc(), pynvml.nvmlGpmSampleAlloc()
    moved = [0]
    halt = threading.Event()

    def copies() -> None:
        if phase == "idle":
            return
        host = torch.empty(CHUNK_BYTES, dtype=torch.uint8).pin_memory()
        host.fill_(1)
        device = torch.empty(CHUNK_BYTES, dtype=torch.uint8, device="cuda")
        while not halt.is_set():
            if phase == "h2d":
                device.copy_(host, non_blocking=True)
            else:
                host.copy_(device, non_blocking=True)
            torch.cuda.synchronize()
            moved[0] += CHUNK_BYTES

    worker = threading.Thread(target=copies, daemon=True)
    worker.start()
    time.sleep(0.5)  # warm-up: buffers allocated and the loop running
    counters.poll()  # the baseline: bytes from here on
    moved0, c_tx0, c_rx0 = moved[0], counters.tx, counters.rx
    t0 = time.perf_counter()
    pynvml.nvmlGpmSampleGet(handle, s1)
    while time.perf_counter() - t0 < seconds:
        time.sleep(0.01)
        counters.poll()
    pynvml.nvmlGpmSampleGet(handle, s2)
    wall = time.perf_counter() - t0
    moved1, c_tx1, c_rx1 = moved[0], counters.tx, counters.rx
    halt.set()
    worker.join()
    get = pynvml.c_nvmlGpmMetricsGet_t()
    get.version = pynvml.NVML_GPM_METRICS_GET_VERSION
    get.sample1, get.sample2 = s1, s2
    ids = [
        pynvml.NVML_GPM_METRIC_PCIE_TX_PER_SEC,
        pynvml.NVML_GPM_METRIC_PCIE_RX_PER_SEC,
        pynvml.NVML_GPM_METRIC_SM_UTIL,
        pynvml.NVML_GPM_METRIC_GRAPHICS_UTIL,
    ]
    get.numMetrics = len(ids)
    for i, metric in enumerate(ids):
        get.metrics[i].metricId = metric
    pynvml.nvmlGpmMetricsGet(get)
    metrics = {
        str(m): {"value": get.metrics[i].value, "return": get.metrics[i].nvmlReturn}
        for i, m in enumerate(ids)
    }
    pynvml.nvmlGpmSampleFree(s1)
    pynvml.nvmlGpmSampleFree(s2)
    mib = 2**20
    gpm_tx = get.metrics[0].value * mib
    gpm_rx = get.metrics[1].value * mib
    counter_tx, counter_rx = (c_tx1 - c_tx0) / wall, (c_rx1 - c_rx0) / wall
    payload = (moved1 - moved0) / wall
    return {
        "phase": phase,
        "wall_s": wall,
        "payload_bytes_per_s": payload,
        "counter_rx_bytes_per_s": counter_rx,
        "counter_tx_bytes_per_s": counter_tx,
        "gpm_rx_bytes_per_s": gpm_rx,
        "gpm_tx_bytes_per_s": gpm_tx,
        "gpm_metrics": metrics,
        "gpm_rx_over_counter_rx": gpm_rx / counter_rx if counter_rx > 1e6 else None,
        "gpm_tx_over_counter_tx": gpm_tx / counter_tx if counter_tx > 1e6 else None,
    }


def gpm(pynvml: Any, handle: Any) -> dict:
    result: dict[str, Any] = {}
    try:
        support = pynvml.nvmlGpmQueryDeviceSupport(handle)
        result["supported"] = bool(support.isSupportedDevice)
    except pynvml.NVMLError as exc:
        result["supported"] = False
        result["error"] = str(exc)
        return result
    if not result["supported"]:
        return result
    sample = pynvml.nvmlGpmSampleAlloc()
    result["sample_get_cost"] = cost(lambda: pynvml.nvmlGpmSampleGet(handle, sample), calls=50)
    pynvml.nvmlGpmSampleFree(sample)
    import torch

    result["phases"] = []
    for phase in ("h2d", "d2h", "idle"):
        try:
            result["phases"].append(gpm_phase(pynvml, handle, torch, phase, 3.0))
        except pynvml.NVMLError as exc:
            result["phases"].append({"phase": phase, "error": str(exc)})
    # Short windows: 120 ms and 250 ms (GPM asks for samples >= 100 ms apart).
    for seconds in (0.12, 0.25):
        try:
            result["phases"].append(gpm_phase(pynvml, handle, torch, "h2d", seconds) | {"window_s": seconds})
        except pynvml.NVMLError as exc:
            result["phases"].append({"phase": f"h2d {seconds}", "error": str(exc)})
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args()
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:
        print(f"nvml_costs: no NVML ({exc})", file=sys.stderr)
        return 2
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    document = {
        "gpu": pynvml.nvmlDeviceGetName(handle),
        "driver": pynvml.nvmlSystemGetDriverVersion(),
        "calls": call_costs(pynvml, handle),
        "poller": poller_costs(),
        "gpm": gpm(pynvml, handle),
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "nvml_costs.json").write_text(json.dumps(document, indent=2, default=str))
    for name, figures in document["calls"].items():
        print(f"{name:28s} {figures}")
    print(json.dumps(document["poller"], indent=1))
    print(json.dumps(document["gpm"], indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
