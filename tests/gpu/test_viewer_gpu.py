"""The live view and `--once --json` against real NVML: what the CPU machine can only fake.

Run on the GPU machine: `pytest -m gpu tests/gpu/test_viewer_gpu.py`. The copy load is a pinned H2D loop
in a child process (CUDA torch), so the link is busy while the view is sampled.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from xfertop.sources.bundle import Sources
from xfertop.sources.gpu.source import GpuSource
from xfertop.sources.host.source import HostSource
from xfertop.ui.app import XfertopApp
from xfertop.ui.gpu_pane import GpuPane
from xfertop.ui.messages import GpuStateUpdated

pytestmark = pytest.mark.gpu

PINNED_H2D_LOOP = textwrap.dedent("""
    import torch
    src = torch.empty(256 * 1024 * 1024, dtype=torch.uint8).pin_memory()
    dst = torch.empty_like(src, device="cuda")
    print("ready", flush=True)
    while True:
        dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()
""")


@pytest.fixture
def busy_link() -> Iterator[None]:
    pytest.importorskip("torch")
    load = subprocess.Popen([sys.executable, "-c", PINNED_H2D_LOOP], stdout=subprocess.PIPE, text=True)
    try:
        assert load.stdout is not None and load.stdout.readline().strip() == "ready"
        yield
    finally:
        load.kill()
        load.wait()


def test_once_json_reports_real_gpus_measured_by_counters(busy_link: None) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "xfertop", "--once", "--json"], capture_output=True, text=True, timeout=120
    )
    document = json.loads(result.stdout)
    assert document["gpus"], document["driver"]["error"]
    busiest = max(document["gpus"], key=lambda gpu: gpu["pcie"]["rx_bytes_per_s"] or 0)
    assert busiest["pcie"]["method"] in ("gpm", "counter", "sampled")
    assert busiest["pcie"]["rx_bytes_per_s"] > 5e9, "a pinned H2D loop should move more than 5 GB/s"
    assert " of " in busiest["link_summary"]["rx_label"] and "(Gen" in busiest["link_summary"]["rx_label"]


async def test_gpu_pane_labels_real_traffic_against_the_link(busy_link: None) -> None:
    app = XfertopApp(Sources(gpu=GpuSource(interval_s=0.25), host=HostSource(interval_s=0.5)))
    busy = asyncio.Event()

    def hook(message: object) -> None:
        if isinstance(message, GpuStateUpdated) and any(
            (gpu.pcie.rx_bytes_per_s or 0) > 5e9 for gpu in message.state.gpus
        ):
            busy.set()

    async with app.run_test(size=(160, 48), message_hook=hook) as pilot:
        try:
            await asyncio.wait_for(busy.wait(), timeout=10)
        except TimeoutError:
            pytest.fail("no GPU showed more than 5 GB/s RX within 10 s of a pinned copy loop")
        await pilot.pause()
        text = " ".join(str(pane.render()) for pane in app.query(GpuPane))
        assert "GB/s of " in text and "(Gen" in text
