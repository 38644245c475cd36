"""Paint the panes' changed lines in the repaint that changed them, not a few event-loop trips later.

Textual's way from a widget's ``refresh()`` to the terminal takes several trips through the event loop:
the widget posts itself a Prompt; its message loop wakes, sees the refresh and posts Update to the
screen; the screen's loop wakes and resumes its 60 Hz update timer; the timer's task wakes, sleeps up to
1/60 s, composes the dirty regions and writes them, then sleeps once more before it parks. At 4 Hz that
was ~15 of the main thread's task steps and 2 of its ~42 event-loop wakeups per repaint.

While a ``Frame`` is open (the app's repaint), a ``FramePainted`` widget's repaint only marks its lines
dirty, as ``Widget.refresh`` does, and joins the frame; when the frame closes, its widgets go to the
screen's compositor and the update is written, as the screen's update timer would do it. A refresh that
needs a layout or leaves work for the widget's idle handler (a table column that must grow), or a frame
closing while another screen is on top or a layout is pending, goes Textual's own way. Private to
Textual (pinned at 8.2.8; tests/ui/test_frame.py replays what is written and compares it with a fresh
render).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from textual.app import App
from textual.geometry import Region
from textual.widget import Widget


class Frame:
    """The widgets repainted since ``open()``, painted together when it closes."""

    def __init__(self, app: App[Any]) -> None:
        self._app = app
        self._widgets: set[Widget] | None = None
        #: A refresh in this frame went Textual's way (a layout, a widget's idle work): so does the frame.
        self._deferred = False
        #: Repaints written straight to the compositor (what tests check the shortcut by).
        self.painted = 0

    @property
    def is_open(self) -> bool:
        return self._widgets is not None

    def add(self, widget: Widget) -> None:
        assert self._widgets is not None
        self._widgets.add(widget)

    def defer(self) -> None:
        """Paint this frame Textual's way: painting now could paint a widget before its layout or its
        idle handler ran (the compositor renders every widget with dirty lines in the frame's rows)."""
        self._deferred = True

    @contextmanager
    def open(self) -> Iterator[None]:
        if self._widgets is not None:  # nested: the outer frame paints
            yield
            return
        self._widgets, self._deferred = set(), False
        try:
            yield
        finally:
            widgets, self._widgets = self._widgets, None
            if widgets:
                self._paint(widgets)

    def _paint(self, widgets: set[Widget]) -> None:
        app = self._app
        screen = app.screen
        compositor = getattr(screen, "_compositor", None)
        direct = (
            compositor is not None
            and not self._deferred
            and not app._batch_count
            and screen.is_current
            and screen in compositor
            and not (
                screen._layout_required
                or screen._scroll_required
                or screen._repaint_required
                or screen._recompose_required
            )
            and all(
                not widget._layout_required
                and not widget.idle_work_pending()  # type: ignore[attr-defined]
                and widget.screen is screen
                for widget in widgets
            )
        )
        if not direct or compositor is None:
            for widget in widgets:  # what Widget.refresh would have left for the widget's idle handler
                widget._repaint_required = True
                widget.check_idle()
            return
        painted = {widget for widget in widgets if widget.display}
        if not painted:
            return
        # Widgets already waiting for the screen's update timer are left to it: one may still have work for
        # its idle handler (a table's new column widths), and painting it now would paint it stale.
        waiting = set(screen._dirty_widgets) - painted
        compositor.update_widgets(painted)
        screen._compositor_refresh()  # composes the dirty regions, writes them, clears the screen's set
        screen._dirty_widgets.update(waiting)
        self.painted += 1


class FramePainted:
    """Mixin, before the Widget class in the bases: repaints inside the app's open frame join it."""

    def idle_work_pending(self) -> bool:
        """Whether the widget left work for its idle handler, which only the Prompt of Textual's own
        refresh would run (a DataTable measures changed column widths there): then it goes that way."""
        return False

    def refresh(
        self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False
    ) -> Any:
        frame = getattr(self.app, "frame", None)  # type: ignore[attr-defined]
        if not isinstance(frame, Frame) or not frame.is_open:
            return super().refresh(  # type: ignore[misc]
                *regions, repaint=repaint, layout=layout, recompose=recompose
            )
        if (
            layout
            or recompose
            or not repaint
            or not self._is_mounted  # type: ignore[attr-defined]
            or self.idle_work_pending()
        ):
            frame.defer()
            return super().refresh(  # type: ignore[misc]
                *regions, repaint=repaint, layout=layout, recompose=recompose
            )
        # Widget.refresh's repaint, without the Prompt that would wake this widget's message loop.
        widget: Any = self
        widget._layout_cache.clear()
        widget._set_dirty(*regions)
        widget.clear_cached_dimensions()
        widget._rich_style_cache.clear()
        frame.add(widget)
        return self
