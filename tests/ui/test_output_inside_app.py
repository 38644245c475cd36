"""Printing, flushing, a library warning and a log record inside the running viewer, on the UI thread and
on a worker thread: the app keeps running and nothing raises.

While an app runs, Textual captures stdout and stderr and calls ``App._flush(stderr=...)`` on each of
their flushes: an app method of that name without the argument made every ``print(..., flush=True)``,
``sys.stderr.flush()`` and logging handler raise TypeError."""

from __future__ import annotations

import logging
import sys
import warnings

from xfertop.sources.bundle import Sources
from xfertop.ui.app import XfertopApp


class RecordingHandler(logging.StreamHandler):
    """Logs to sys.stderr as it is when built (Textual's capture, inside the app), and keeps the errors
    that logging would print and swallow (a flush that raised)."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[BaseException | None] = []

    def handleError(self, record: logging.LogRecord) -> None:
        self.errors.append(sys.exc_info()[1])


def say_everything(where: str) -> None:
    """What code running inside the viewer may do with the standard streams."""
    print(f"printed on the {where}", flush=True)
    print(f"printed to stderr on the {where}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        logging.captureWarnings(True)  # as many programs do: warnings become log records on stderr
        try:
            warnings.warn(f"a library warning on the {where}", UserWarning, stacklevel=1)
        finally:
            logging.captureWarnings(False)
    logging.getLogger("xfertop.tests").warning("a log record on the %s", where)


async def test_printing_flushing_warnings_and_logging_inside_the_viewer_raise_nothing() -> None:
    app = XfertopApp(Sources(), start_sources=False)
    root = logging.getLogger()
    async with app.run_test() as pilot:
        handler = RecordingHandler()
        root.addHandler(handler)
        try:
            raised: list[BaseException] = []

            def on_ui_thread() -> None:
                try:
                    say_everything("UI thread")
                except Exception as exc:  # the test reports whatever it was
                    raised.append(exc)

            app.call_later(on_ui_thread)
            await pilot.pause()
            assert raised == []
            worker = app.run_worker(lambda: say_everything("worker thread"), thread=True, exit_on_error=False)
            await worker.wait()  # raises WorkerFailed if the worker raised
            await pilot.pause()
            assert handler.errors == [], f"logging swallowed: {handler.errors}"
            assert app.is_running and app.return_code is None
        finally:
            root.removeHandler(handler)
            handler.close()
