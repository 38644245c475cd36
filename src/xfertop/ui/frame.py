"""Paint the panes' changed lines in the repaint that changed them, not a few event-loop trips later.

Textual's way from a widget's ``refresh()`` to the terminal takes several trips through the event loop:
the widget posts itself a Prompt; its message loop wakes, sees the refresh and posts Update to the
screen; the screen's loop wakes and resumes its 60 Hz update timer; the timer's task wakes, sleeps up to
1/60 s, composes the dirty regions and writes them, then sleeps once more before it parks. At 4 Hz that
was ~15 of the main thread's task steps and 2 of its ~42 event-loop wakeups per repaint.

While a ``Frame`` is open (the app's repaint), a ``FramePainted`` widget's repaint only marks its lines
dirty, as ``Widget.refresh`` does, and joins the frame; when the frame closes, its widgets go to the
screen's compositor and the update is written, as the screen's update timer would do it. A refresh that
needs a layout, or a frame closing while another screen is on top or a layout is pending, goes Textual's
own way. Private to Textual (pinned at 8.2.8; tests/ui/test_frame.py compares the result with Textual's
own path).
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
        #: Repaints written straight to the compositor (what tests check the shortcut by).
        self.painted = 0

    @property
    def is_open(self) -> bool:
        return self._widgets is not None

    def add(self, widget: Widget) -> None:
        assert self._widgets is not None
        self._widgets.add(widget)

    @contextmanager
    def open(self) -> Iterator[None]:
        if self._widgets is not None:  # nested: the outer frame paints
            yield
            return
        self._widgets = set()
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
        direct = (compositor is not None and not app._batch_count and screen.is_current
                  and screen in compositor
                  and not (screen._layout_required or screen._scroll_required or screen._repaint_required
                           or screen._recompose_required)
                  and all(not widget._layout_required and widget.screen is screen for widget in widgets))
        if not direct:
            for widget in widgets:  # what Widget.refresh would have left for the widget's idle handler
                widget._repaint_required = True
                widget.check_idle()
            return
        dirty = screen._dirty_widgets
        dirty.update(widget for widget in widgets if widget.display)
        if dirty:
            compositor.update_widgets(dirty)
            screen._compositor_refresh()  # composes the dirty regions, writes them, clears the set
            self.painted += 1


class FramePainted:
    """Mixin, before the Widget class in the bases: repaints inside the app's open frame join it."""

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False,
                recompose: bool = False) -> Any:
        frame = getattr(self.app, "frame", None)  # type: ignore[attr-defined]
        if (not isinstance(frame, Frame) or not frame.is_open or layout or recompose or not repaint
                or not self._is_mounted):  # type: ignore[attr-defined]
            return super().refresh(*regions, repaint=repaint, layout=layout,  # type: ignore[misc]
                                   recompose=recompose)
        # Widget.refresh's repaint, without the Prompt that would wake this widget's message loop.
        widget: Any = self
        widget._layout_cache.clear()
        widget._set_dirty(*regions)
        widget.clear_cached_dimensions()
        widget._rich_style_cache.clear()
        frame.add(widget)
        return self
