"""GPUs that go and come back while the app runs (a GPU lost, a driver reset): the GPU area shows one pane
per GPU in index order, keeps the panes of GPUs that stay, and never raises."""

from __future__ import annotations

from textual.pilot import Pilot

from ui.sample_states import FROZEN_TIME, gpu
from xfertop.model.gpu import GpuState
from xfertop.sources.bundle import Sources
from xfertop.ui.app import XfertopApp
from xfertop.ui.gpu_pane import GpuPane
from xfertop.ui.messages import GpuStateUpdated

_NO_DRIVER = (
    "the NVIDIA driver failed to start for an unknown reason (try nvidia-smi): showing host metrics only"
)


def _state(*indices: int, error: str | None = None) -> GpuState:
    return GpuState(timestamp=FROZEN_TIME, gpus=tuple(gpu(index) for index in indices), error=error)


def _app() -> XfertopApp:
    return XfertopApp(Sources(), start_sources=False, clock=lambda: FROZEN_TIME)


def _panes(app: XfertopApp) -> list[GpuPane]:
    return list(app.gpu_area.query_children(GpuPane))


async def _assert_shows(app: XfertopApp, pilot: Pilot, indices: tuple[int, ...]) -> list[GpuPane]:
    """One pane per GPU, in index order, one under the other, sharing the area alike, each showing its GPU."""
    await pilot.pause()
    panes = _panes(app)
    assert [pane.index for pane in panes] == list(indices)
    assert [pane.id for pane in panes] == [f"gpu-{index}" for index in indices]
    top = app.gpu_area.region.y
    rows = panes[0].region.height
    assert rows >= 2 and all(pane.region.height == rows for pane in panes)
    assert [pane.region.y for pane in panes] == [top + rows * row for row in range(len(panes))]
    for pane in panes:
        assert pane.render_line(0).text.startswith(f"{pane.index} H200")
    assert not app.query_one("#gpu-message").display
    assert app.is_running and app._exception is None
    return panes


async def test_gpus_that_go_and_come_back_keep_one_pane_each_in_index_order() -> None:
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        kept: dict[int, GpuPane] = {}
        for indices in ((0, 1), (0,), (1,), (0, 1)):
            app.post_message(GpuStateUpdated(_state(*indices)))
            panes = await _assert_shows(app, pilot, indices)
            for pane in panes:
                if pane.index in kept:  # a GPU that stayed keeps its pane
                    assert pane is kept[pane.index]
            kept = {pane.index: pane for pane in panes}
        app.post_message(GpuStateUpdated(_state(error=_NO_DRIVER)))
        await pilot.pause()
        assert _panes(app) == []
        message = app.query_one("#gpu-message")
        assert message.display and _NO_DRIVER in str(message.render())
        assert app.is_running and app._exception is None


async def test_a_gpu_back_before_its_old_pane_is_removed_gets_its_pane_once_it_is() -> None:
    # Two repaints with no event-loop trip between them (a resume, then the next sample): Textual still
    # holds the old panes' ids when the GPUs come back.
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(GpuStateUpdated(_state(0, 1, 2)))
        await _assert_shows(app, pilot, (0, 1, 2))
        for indices in ((0,), (0, 1, 2)):
            app.view.apply_gpu(_state(*indices))
            app.gpu_area.show(app.view.gpu)
        await _assert_shows(app, pilot, (0, 1, 2))
