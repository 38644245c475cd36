"""The live viewer: build the real sources, hand them to the TUI, and tear everything down on exit."""

from __future__ import annotations

import os
import sys

from xfertop import startup_trace
from xfertop.sources import bundle
from xfertop.sources.bundle import Sources
from xfertop.sources.jobs.prometheus_jobs import check_url

# The UI modules (Textual) are imported only when a TUI is really started: `--once` and `--help` stay fast.

MIN_INTERVAL_S = 0.1
MAX_INTERVAL_S = 3600.0  # longer (inf) overflows the samplers' Event.wait and kills their threads


class ViewerError(Exception):
    """An expected failure, already worded for the person at the terminal."""


def check_interval(interval_s: float) -> float:
    if not interval_s >= MIN_INTERVAL_S:
        raise ViewerError(f"--interval must be at least {MIN_INTERVAL_S} s (got {interval_s})")
    if interval_s > MAX_INTERVAL_S:
        raise ViewerError(f"--interval must be at most {MAX_INTERVAL_S:.0f} s (got {interval_s})")
    return interval_s


def build_sources(
    interval_s: float, ring_dir: str | None = None, pcie: str = "auto", prometheus_url: str | None = None
) -> Sources:
    """The viewer's sources (xfertop.sources.bundle), ``prometheus_url`` checked first (a ViewerError)."""
    url = prometheus_jobs_url(prometheus_url) if prometheus_url is not None else None
    return bundle.build_sources(interval_s, ring_dir=ring_dir, pcie=pcie, prometheus_url=url)


def prometheus_jobs_url(url: str) -> str:
    """``url`` checked as Prometheus's base URL; a ViewerError (one line) otherwise."""
    try:
        return check_url(url)
    except ValueError as exc:
        raise ViewerError(str(exc)) from None


def is_terminal(stream) -> bool:
    """``stream`` is a terminal; False for a closed one (`<&-` makes sys.stdin None)."""
    try:
        return stream is not None and os.isatty(stream.fileno())
    except (OSError, ValueError):
        return False


def require_terminal() -> None:
    if not (is_terminal(sys.stdin) and is_terminal(sys.stdout)):
        raise ViewerError("the live view needs a terminal; for scripts use `xfertop --once --json`")


def run_tui(sources, interval_s: float, no_jobs_text: str | None = None, note=None) -> int:
    """Run the TUI until the user quits or the terminal goes away; the sources are stopped either way."""
    from xfertop.ui.app import XfertopApp

    startup_trace.mark("viewer: xfertop.ui.app imported (Textual)")
    app = XfertopApp(sources, interval_s=interval_s, no_jobs_text=no_jobs_text, note=note)
    startup_trace.mark("viewer: app built, app.run()")
    try:
        app.run()
    finally:
        sources.stop()
    return app.return_code or 0
