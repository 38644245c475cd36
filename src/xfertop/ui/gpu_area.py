"""All GPUs stacked, or the reason there are none ("no NVIDIA driver found: showing host metrics only")."""

from __future__ import annotations

from textual.await_remove import AwaitRemove
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from xfertop.model.gpu import GpuState
from xfertop.ui.gpu_pane import CHART_ROWS, GpuPane

#: A GPU pane is at most this tall (its figures, a chart title, 7 chart rows, the time axis): enough for
#: the charts to show shape; the rows beyond go to the jobs (xfertop.tcss: the area and the jobs share the
#: free rows, the area up to its cap).
MAX_PANE_ROWS = 10
#: On smaller terminals a pane is at most a quarter of the screen, and never below chart height.
_SCREEN_SHARE = 4


def pane_rows_cap(screen_rows: int) -> int:
    """How tall one GPU pane may grow on a terminal ``screen_rows`` high."""
    return max(CHART_ROWS, min(MAX_PANE_ROWS, screen_rows // _SCREEN_SHARE))


def rows_per_gpu(gpu_count: int, area_rows: int) -> int:
    """Each GPU's share of the area's rows (at most ``pane_rows_cap`` each, xfertop.tcss): charts from
    gpu_pane.CHART_ROWS rows on, two lines with sparklines when fewer, one line when less than two."""
    if gpu_count == 0:
        return 2
    return max(area_rows // gpu_count, 1)


class GpuArea(VerticalScroll, can_focus=False):
    def __init__(self) -> None:
        super().__init__(id="gpus")
        self._indices: tuple[int, ...] = ()
        self._height: int | None = None
        #: The area's max-height: ``pane_rows_cap`` rows per GPU (None: no GPU, as tall as its message).
        self._cap: int | None = None
        #: The screen's rows and the room the jobs leave, as last given to ``fit``.
        self._screen: tuple[int, int | None] = (0, None)
        self._message_text = ""
        self._message = Static("waiting for the first GPU sample…", id="gpu-message")
        self._panes: list[GpuPane] = []  # kept rather than queried each period
        #: GPUs whose pane is being removed: its id is taken until Textual has pruned it.
        self._leaving: set[int] = set()
        #: The GPUs of the last state shown; ``_indices`` lacks those waiting for their old pane's removal.
        self._wanted: tuple[int, ...] = ()

    def compose(self):
        yield self._message

    def show(self, state: GpuState | None) -> None:
        """Make the panes match the GPUs in ``state``, in index order, and mark them all for repaint."""
        if state is None or not self.is_attached:
            # Not attached: an update that arrived as the app closed (CI once raised NoScreen from a replay).
            return
        indices = self._wanted = tuple(sorted({gpu.index for gpu in state.gpus}))
        if indices != self._indices:
            self._match_panes(indices)
            self._height = None  # shared again among the panes there are now
            self.fit(*self._screen)
        message = state.error or "no GPUs visible to NVML: showing host metrics only"
        if not indices and message != self._message_text:  # an update relayouts the whole screen
            self._message_text = message
            self._message.update(message)
        self._message.display = not indices
        # No GPU: the area is one line and the process table takes the free rows (xfertop.tcss).
        self.screen.set_class(not indices, "no-gpus")
        self._size_panes()
        for pane in self._panes:
            pane.update_lines()

    def on_resize(self) -> None:
        self._size_panes()

    def fit(self, screen_rows: int, room: int | None = None) -> None:
        """Let the area grow to ``pane_rows_cap`` rows per GPU on a screen ``screen_rows`` high, and to no
        more than ``room`` rows (what the jobs leave), one line at least (when the screen or the other
        panes changed: ``_size_panes`` tightens it again)."""
        self._screen = (screen_rows, room)
        count = len(self._wanted)
        cap = count * pane_rows_cap(screen_rows)
        # At least one line: the area scrolls through the rest of the GPUs (the jobs come first).
        self._set_cap(max(min(cap, room), 1) if count and room is not None else cap if count else None)

    def _set_cap(self, cap: int | None) -> None:
        if cap != self._cap:  # set only when changed: it relayouts the screen
            self._cap = cap
            self.styles.max_height = cap

    def _size_panes(self) -> None:
        """Share the area's rows among the GPU panes (set only when changed: it relayouts the screen);
        rows a whole share cannot use go back to the jobs."""
        count = len(self._panes)
        rows = rows_per_gpu(count, self.size.height)
        if count and rows < pane_rows_cap(self.app.size.height):
            room = self._screen[1]
            self._set_cap(count * rows if room is None else max(1, min(count * rows, room)))
        one_line = rows == 1
        if rows != self._height:
            self._height = rows
            self.set_class(one_line, "one-line")
            for pane in self._panes:
                pane.set_class(one_line, "one-line")
                pane.styles.height = rows

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
                if self._height is not None:
                    pane.styles.height = self._height
                    pane.set_class(self._height == 1, "one-line")
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
            self._height = None
            self._size_panes()
