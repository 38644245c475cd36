"""NVML's raw answers in words, and GPU processes joined with what the host knows about them."""

from __future__ import annotations

import psutil

from xfertop.model.gpu import GpuProcess

#: Clock event (throttle) reason bits, in words. Same bits under both NVML names.
THROTTLE_WORDS = {
    0x1: "idle",
    0x2: "app clocks",
    0x4: "power cap",
    0x8: "hw slowdown",
    0x10: "sync boost",
    0x20: "sw thermal",
    0x40: "hw thermal",
    0x80: "power brake",
    0x100: "display clocks",
    0x200: "board limit",
    0x400: "reliability",
}


def throttle_words(bits: int | None) -> tuple[str, ...]:
    """Each set reason bit in words; a bit this version does not know shows as its hex value."""
    if not bits:
        return ()
    words = [word for bit, word in THROTTLE_WORDS.items() if bits & bit]
    unknown = bits & ~sum(THROTTLE_WORDS)
    return (*words, f"reason 0x{unknown:x}") if unknown else tuple(words)


def cuda_version_text(version: int | None) -> str | None:
    """NVML gives 13000 for CUDA 13.0 and 12040 for 12.4."""
    return None if version is None else f"{version // 1000}.{version % 1000 // 10}"


def host_process(pid: int, gpu_memory_bytes: int | None) -> GpuProcess:
    """A GPU process joined with what the host says about it; gone or forbidden leaves None."""
    user = command = None
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            user = process.username()
            command = " ".join(process.cmdline()) or process.name()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        pass  # another container's pid, or it ended between NVML's answer and ours
    return GpuProcess(pid=pid, gpu_memory_bytes=gpu_memory_bytes, user=user, command=command)
