"""Record what a real GPU answers, so the NVML fake and the /proc pinned-memory parser are shaped after it.

Run on the GPU machine: python benchmarks/h200_probe.py OUT_DIR
Writes OUT_DIR/nvml_probe.json (every NVML answer we use, with its latency) and
OUT_DIR/pcie_counter_trace.json (raw 32-bit PCIe byte counters polled every ~5 ms during a
pinned H2D copy loop, with the payload bytes moved) and OUT_DIR/proc_pinned.json (what CUDA pinned
host memory looks like in /proc/self/status, smaps_rollup and maps).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pynvml as N


def read_lines(path: str) -> list[str]:
    return Path(path).read_text().splitlines(keepends=True)


def write_json(path: str, value: object, **kwargs: object) -> None:
    with open(path, "w") as f:
        json.dump(value, f, **kwargs)


def timed(fn, *args):
    t0 = time.perf_counter()
    try:
        value = fn(*args)
        err = None
    except N.NVMLError as exc:  # record the real error class name and code
        value, err = None, f"{type(exc).__name__}:{exc.value}"
    except Exception as exc:
        value, err = None, f"{type(exc).__name__}:{exc}"
    return {"ms": (time.perf_counter() - t0) * 1e3, "value": to_jsonable(value), "error": err}


def to_jsonable(v):
    if isinstance(v, (bytes,)):
        return v.decode(errors="replace")
    if isinstance(v, (list, tuple)):
        return [to_jsonable(x) for x in v]
    if hasattr(v, "_fields_"):
        return {name: to_jsonable(getattr(v, name)) for name, *_ in v._fields_}
    if isinstance(v, (int, float, str, type(None), bool)):
        return v
    return repr(v)


FIELDS = {
    197: "PCIE_COUNT_TX_BYTES",
    198: "PCIE_COUNT_RX_BYTES",
    173: "CORRECTABLE",
    169: "L0_TO_RECOVERY",
    176: "BAD_TLP",
    95: "REPLAY_ROLLOVER",
    94: "REPLAY",
}


def field_values(h, ids):
    out = []
    for fv in N.nvmlDeviceGetFieldValues(h, ids):
        vt = fv.valueType
        val = {
            0: fv.value.dVal,
            1: fv.value.uiVal,
            2: fv.value.ulVal,
            3: fv.value.ullVal,
            4: fv.value.sllVal,
        }.get(vt)
        out.append(
            {
                "fieldId": fv.fieldId,
                "ret": fv.nvmlReturn,
                "valueType": vt,
                "value": val,
                "timestamp": fv.timestamp,
            }
        )
    return out


def probe_nvml():
    t0 = time.perf_counter()
    N.nvmlInit()
    init_ms = (time.perf_counter() - t0) * 1e3
    h = N.nvmlDeviceGetHandleByIndex(0)
    calls = {"init_ms": init_ms}
    simple = [
        "nvmlDeviceGetName",
        "nvmlDeviceGetUUID",
        "nvmlDeviceGetPciInfo",
        "nvmlDeviceGetPciInfo_v3",
        "nvmlDeviceGetMemoryInfo",
        "nvmlDeviceGetUtilizationRates",
        "nvmlDeviceGetCurrPcieLinkGeneration",
        "nvmlDeviceGetCurrPcieLinkWidth",
        "nvmlDeviceGetMaxPcieLinkGeneration",
        "nvmlDeviceGetMaxPcieLinkWidth",
        "nvmlDeviceGetGpuMaxPcieLinkGeneration",
        "nvmlDeviceGetPcieSpeed",
        "nvmlDeviceGetPcieLinkMaxSpeed",
        "nvmlDeviceGetPcieReplayCounter",
        "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetEnforcedPowerManagementLimit",
        "nvmlDeviceGetPowerManagementLimit",
        "nvmlDeviceGetTemperature",
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons",
        "nvmlDeviceGetComputeProcesses",
        "nvmlDeviceGetGraphicsProcesses",
        "nvmlDeviceGetPerformanceState",
        "nvmlDeviceGetNumaNodeId",
        "nvmlDeviceGetIndex",
        "nvmlDeviceGetMinorNumber",
        "nvmlDeviceGetMigMode",
        "nvmlDeviceGetVirtualizationMode",
        "nvmlDeviceGetBrand",
        "nvmlDeviceGetArchitecture",
    ]
    for name in simple:
        fn = getattr(N, name, None)
        if fn is None:
            calls[name] = {"error": "missing in binding"}
            continue
        args = (h, N.NVML_TEMPERATURE_GPU) if name == "nvmlDeviceGetTemperature" else (h,)
        calls[name] = timed(fn, *args)
    calls["nvmlDeviceGetClockInfo_SM"] = timed(N.nvmlDeviceGetClockInfo, h, N.NVML_CLOCK_SM)
    calls["nvmlDeviceGetClockInfo_MEM"] = timed(N.nvmlDeviceGetClockInfo, h, N.NVML_CLOCK_MEM)
    calls["nvmlDeviceGetMaxClockInfo_SM"] = timed(N.nvmlDeviceGetMaxClockInfo, h, N.NVML_CLOCK_SM)
    calls["nvmlDeviceGetPcieThroughput_RX"] = timed(
        N.nvmlDeviceGetPcieThroughput, h, N.NVML_PCIE_UTIL_RX_BYTES
    )
    calls["nvmlDeviceGetPcieThroughput_TX"] = timed(
        N.nvmlDeviceGetPcieThroughput, h, N.NVML_PCIE_UTIL_TX_BYTES
    )
    calls["nvmlDeviceGetCpuAffinity"] = timed(N.nvmlDeviceGetCpuAffinity, h, 4)
    calls["nvmlDeviceGetMemoryAffinity"] = timed(N.nvmlDeviceGetMemoryAffinity, h, 4, 0)
    calls["nvmlSystemGetDriverVersion"] = timed(N.nvmlSystemGetDriverVersion)
    calls["nvmlSystemGetCudaDriverVersion"] = timed(N.nvmlSystemGetCudaDriverVersion)
    calls["nvmlSystemGetNVMLVersion"] = timed(N.nvmlSystemGetNVMLVersion)
    calls["nvmlDeviceGetCount"] = timed(N.nvmlDeviceGetCount)
    calls["nvmlDeviceGetProcessUtilization"] = timed(N.nvmlDeviceGetProcessUtilization, h, 0)
    t0 = time.perf_counter()
    fv = field_values(h, list(FIELDS))
    calls["field_values"] = {"ms": (time.perf_counter() - t0) * 1e3, "value": fv}
    t0 = time.perf_counter()
    fv = field_values(h, [99999])
    calls["field_values_bogus"] = {"ms": (time.perf_counter() - t0) * 1e3, "value": fv}
    consts = {
        k: getattr(N, k)
        for k in dir(N)
        if k.startswith(
            ("nvmlClocksEventReason", "nvmlClocksThrottleReason", "NVML_ERROR_", "NVML_FI_DEV_PCIE")
        )
    }
    return {"calls": calls, "constants": consts, "binding_version": getattr(N, "__version__", None)}


def counter_trace(torch, out_dir):
    h = N.nvmlDeviceGetHandleByIndex(0)
    src = torch.empty(256 << 20, dtype=torch.uint8).pin_memory()
    src.fill_(1)
    dst = torch.empty_like(src, device="cuda")
    dst.copy_(src)
    torch.cuda.synchronize()
    samples, stop = [], threading.Event()

    def poll():
        while not stop.is_set():
            t = time.perf_counter_ns()
            fv = field_values(h, [197, 198])
            samples.append([t, fv[0]["value"], fv[1]["value"], fv[0]["ret"], fv[1]["ret"]])
            time.sleep(0.005)

    th = threading.Thread(target=poll)
    th.start()
    time.sleep(0.3)
    phases = []
    for direction in ("h2d", "idle", "d2h"):
        t0 = time.perf_counter_ns()
        n = 0
        while time.perf_counter_ns() - t0 < 1.0e9:
            if direction == "h2d":
                dst.copy_(src, non_blocking=True)
                n += src.numel()
            elif direction == "d2h":
                src.copy_(dst, non_blocking=True)
                n += src.numel()
            else:
                time.sleep(0.01)
            torch.cuda.synchronize()
        phases.append({"phase": direction, "t0_ns": t0, "t1_ns": time.perf_counter_ns(), "payload_bytes": n})
    time.sleep(0.3)
    stop.set()
    th.join()
    write_json(
        os.path.join(out_dir, "pcie_counter_trace.json"),
        {"samples_ns_tx_rx_rettx_retrx": samples, "phases": phases},
    )


def proc_view():
    status = {
        line.split(":")[0]: line.split(":", 1)[1].strip()
        for line in read_lines("/proc/self/status")
        if line.startswith(("Vm", "Rss"))
    }
    rollup = Path("/proc/self/smaps_rollup").read_text()
    maps = [line.strip() for line in read_lines("/proc/self/maps") if "nvidia" in line or "uvm" in line]
    return {
        "status": status,
        "smaps_rollup": rollup,
        "nvidia_maps_count": len(maps),
        "nvidia_maps_head": maps[:40],
    }


def nvidia_smaps():
    """Sum Rss/Locked/Size per mapped file name from /proc/self/smaps."""
    sums, cur = {}, None
    for line in read_lines("/proc/self/smaps"):
        parts = line.split()
        if "-" in parts[0] and len(parts) >= 5:
            cur = parts[5] if len(parts) >= 6 else "[anon]"
            sums.setdefault(cur, {})
        elif cur and parts[0].endswith(":") and len(parts) >= 2 and parts[1].isdigit():
            d = sums[cur]
            d[parts[0][:-1]] = d.get(parts[0][:-1], 0) + int(parts[1])
    return {
        k: {f: v for f, v in d.items() if f in ("Size", "Rss", "Locked", "Pss", "Anonymous")}
        for k, d in sums.items()
        if "nvidia" in k or k == "[anon]" or "uvm" in k
    }


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    result = {"nvml": probe_nvml()}
    import torch

    torch.cuda.init()
    torch.zeros(1, device="cuda")
    result["proc_after_cuda_init"] = proc_view()
    result["smaps_after_cuda_init"] = nvidia_smaps()
    pinned = torch.empty(1 << 30, dtype=torch.uint8).pin_memory()
    result["proc_after_1GiB_pinned"] = proc_view()
    result["smaps_after_1GiB_pinned"] = nvidia_smaps()
    result["host_memory_stats"] = (
        dict(torch.cuda.host_memory_stats()) if hasattr(torch.cuda, "host_memory_stats") else None
    )
    del pinned
    result["torch"] = torch.__version__
    write_json(os.path.join(out_dir, "nvml_probe.json"), result, indent=1, default=repr)
    counter_trace(torch, out_dir)
    print("probe ok")


if __name__ == "__main__":
    main()
