"""All GPUs stacked, or the reason there are none ("no NVIDIA driver found: showing host metrics only")."""

from __future__ import annotations

from textual.await_remove import AwaitRemove
from textual.containers import VerticalScroll
from textual.widget import Widget

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
        #: GPUs whose pane is being removed: its id is taken until Textual has pruned it.
        self._leaving: set[int] = set()
        #: The GPUs of the last state shown; ``_indices`` lacks those waiting for their old pane's removal.
        self._wanted: tuple[int, ...] = ()

    def compose(self):
        yield self._message

    def show(self, state: GpuState | None, terminal_rows: int) -> None:
        """Make the panes match the GPUs in ``state``, in index order, and mark them all for repaint."""
        if state is None:
            return
        indices = self._wanted = tuple(sorted({gpu.index for gpu in state.gpus}))
        if indices != self._indices:
            self._match_panes(indices)
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

    def _match_panes(self, indices: tuple[int, ...]) -> None:
        """Keep the panes of GPUs that stay (no repaint), remove those of GPUs gone, mount new ones in place.

        Textual removes a widget a few event-loop trips later and its id stays taken until then, so a GPU
        back before its old pane is gone gets its pane once the removal is done (``_removed``).
        """
        gone = [pane for pane in self._panes if pane.index not in indices]
        if gone:
            self._leaving.update(pane.index for pane in gone)
            self.call_later(self._removed, self.remove_children(gone), [pane.index for pane in gone])
        kept = {pane.index: pane for pane in self._panes if pane.index in indices}
        panes: list[GpuPane] = []
        anchor: Widget = self._message  # the message is the first child, the panes follow it
        for index in indices:
            pane = kept.get(index)
            if pane is None:
                if index in self._leaving:
                    continue
                pane = GpuPane(index)
                self.mount(pane, after=anchor)
            panes.append(pane)
            anchor = pane
        self._panes = panes
        self._indices = tuple(pane.index for pane in panes)

    async def _removed(self, removal: AwaitRemove, indices: list[int]) -> None:
        await removal
        self._leaving.difference_update(indices)
        if self._indices != self._wanted:  # a GPU came back meanwhile: its pane now, drawn as it mounts
            self._match_panes(self._wanted)
            for pane in self._panes:
                pane.set_class(self.has_class("one-line"), "one-line")
