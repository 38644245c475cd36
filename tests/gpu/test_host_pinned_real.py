"""On a real GPU: CUDA pinned memory of a watched process shows up as shared memory, not locked memory.

Run on the GPU machine: ``XFERTOP_RESULTS_DIR=$OUT pytest -m gpu tests/gpu/test_host_pinned_real.py``.
The H200 probe (docs/host-memory.md) saw 1 GiB of pin_memory() raise RssShmem by exactly 1 GiB.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpu_results import write_result
from xfertop.sources.host.proc_memory import smaps_bytes_by_pathname
from xfertop.sources.host.source import HostSource

pytestmark = pytest.mark.gpu
pytest.importorskip("torch")

PINNED_BYTES = 256 << 20
CHILD = r"""
import sys, torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
print("cuda", flush=True); sys.stdin.readline()
pinned = torch.empty(int(sys.argv[1]), dtype=torch.uint8).pin_memory(); pinned.fill_(1)
print("pinned", flush=True); sys.stdin.readline()
"""


def test_pinned_memory_of_a_watched_process_is_shmem_not_locked() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(PINNED_BYTES)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "cuda"
        host = HostSource()
        host.watch_pids([child.pid])
        before = host.sample_once().processes[0]
        before_smaps = smaps_bytes_by_pathname(Path(f"/proc/{child.pid}/smaps").read_text())
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "pinned"
        after = host.sample_once().processes[0]
        after_smaps = smaps_bytes_by_pathname(Path(f"/proc/{child.pid}/smaps").read_text())
    finally:
        child.stdin.close()
        child.wait(timeout=60)
    grown = {
        path: after_smaps[path].get("Rss", 0) - before_smaps.get(path, {}).get("Rss", 0)
        for path in after_smaps
    }
    write_result(
        "host_pinned_real",
        {
            "before": before.__dict__ | {"children": None},
            "after": after.__dict__ | {"children": None},
            "rss_growth_by_pathname": {p: b for p, b in grown.items() if b >= 1 << 20},
        },
    )
    assert after.shmem_rss_bytes is not None and before.shmem_rss_bytes is not None
    assert after.shmem_rss_bytes - before.shmem_rss_bytes >= PINNED_BYTES
    assert after.locked_bytes == before.locked_bytes
    assert after.pinned_vm_bytes == before.pinned_vm_bytes
    assert after.pinned_bytes is None
