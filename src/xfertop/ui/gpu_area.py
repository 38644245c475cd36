"""All GPUs stacked, or the reason there are none ("no NVIDIA driver found: showing host metrics only")."""

from __future__ import annotations

from textual.containers import VerticalScroll

from xfertop.model.gpu import GpuState
from xfertop.ui.frame import FramePainted
from xfertop.ui.gpu_pane import GpuPane
from xfertop.ui.quiet import QuietRender, QuietStatic

#: The GPU area may take this share of the terminal before panes drop to one line each.
_MAX_SHARE_OF_HEIGHT = 0.45


def lines_per_gpu(gpu_count: int, terminal_rows: int) -> int:
    """Two lines each when they fit in under half the screen (8 GPUs at 120x40), else one line each."""
    if gpu_count == 0:
        return 2
    return 2 if gpu_count * 2 <= terminal_rows * _MAX_SHARE_OF_HEIGHT else 1


class GpuArea(FramePainted, QuietRender, VerticalScroll, can_focus=False):
    def __init__(self) -> None:
        super().__init__(id="gpus")
        self._indices: tuple[int, ...] = ()
        self._height: int | None = None
        self._message_text = ""
        self._message = QuietStatic("waiting for the first GPU sample…", id="gpu-message")
        self._panes: list[GpuPane] = []  # kept rather than queried each period

    def compose(self):  # type: ignore[override]
        yield self._message

    def show(self, state: GpuState | None, terminal_rows: int) -> None:
        """Make the panes match the GPUs in ``state`` and mark them all for repaint."""
        if state is None:
            return
        indices = tuple(gpu.index for gpu in state.gpus)
        if indices != self._indices:
            self._indices = indices
            self.remove_children(GpuPane)
            self._panes = [GpuPane(index) for index in indices]
            self.mount_all(self._panes)
        message = state.error or "no GPUs visible to NVML: showing host metrics only"
        if not indices and message != self._message_text:  # an update relayouts the whole screen
            self._message_text = message
            self._message.update(message)
        self._message.display = not indices
        one_line = lines_per_gpu(len(indices), terminal_rows) == 1
        self.set_class(one_line, "one-line")
        for pane in self._panes:
            pane.set_class(one_line, "one-line")
            pane.update_lines()
        # The area is as tall as its panes, so the panes below it keep the rest.
        lines = 1 if one_line else 2
        height = max(len(indices) * lines, 1)
        if height != self._height:  # setting it, even unchanged, would relayout the screen
            self._height = height
            self.styles.height = height
