"""Rolling py-spy sampling of a job started without xfertop: back-to-back record windows per rank.

``StackSampler`` is a PollingSource: each ``sample()`` records one window (default 2 s at 50 Hz,
``--nonblocking``, idle threads included) of every rank at once and publishes a StacksState. The
classification of those samples lives in xfertop.analysis.stack_classify (pure).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

from xfertop.model.stacks import AttachTarget, StacksState, StackWindow
from xfertop.sources.base import PollingSource
from xfertop.sources.host.ptrace_access import attach_problem
from xfertop.sources.jobs.ddp_ranks import job_ranks
from xfertop.sources.stacks.pyspy_runner import (
    DEFAULT_RATE_HZ,
    DEFAULT_WINDOW_S,
    RecordWindow,
    dump,
    find_pyspy,
)
from xfertop.sources.stacks.window_placement import PlacementProbe

__all__ = ["StackSampler", "dump", "find_pyspy"]


class StackSampler(PollingSource[StacksState]):
    """Samples ``pid`` (and the other ranks of its DDP job, unless ``with_ranks`` is False)."""

    name = "stacks"

    def __init__(
        self,
        pid: int,
        rate_hz: int = DEFAULT_RATE_HZ,
        window_s: int = DEFAULT_WINDOW_S,
        with_ranks: bool = True,
        proc_root: Path = Path("/proc"),
        binary: str | None = None,
        nonblocking: bool = True,
    ) -> None:
        # Windows run back to back: the window itself is the pacing, so no wait between samples.
        super().__init__(interval_s=0.0)
        self.pid = pid
        self.rate_hz = rate_hz
        self.window_s = window_s
        self._proc_root = proc_root
        self._binary = binary
        self.nonblocking = nonblocking
        self.targets: tuple[AttachTarget, ...] = (
            job_ranks(pid, proc_root) if with_ranks else (AttachTarget(pid=pid, job_key=f"pid:{pid}"),)
        )
        self._running: list[RecordWindow] = []
        self._lock = threading.Lock()

    def problem(self) -> str | None:
        """Why attaching will fail (checked before any py-spy runs), or None. Includes a missing py-spy."""
        try:
            self._binary = self._binary or find_pyspy()
        except RuntimeError as exc:
            return str(exc)
        for target in self.targets:
            reason = attach_problem(target.pid, proc_root=self._proc_root)
            if reason is not None:
                return reason
        return None

    def sample(self) -> StacksState:
        windows = [
            RecordWindow(t.pid, self.rate_hz, self.window_s, self._binary, self.nonblocking)
            for t in self.targets
        ]
        with self._lock:
            if self._stop.is_set():
                return StacksState(
                    timestamp=time.time(), targets=self.targets, windows=(), error="sampling was stopped."
                )
            self._running = windows
        results: list[StackWindow | None] = [None] * len(windows)

        def record(index: int) -> None:
            # Where the rank's workers may run and how busy those cores were, over the same window.
            probe = PlacementProbe(windows[index].pid)
            probe.start()
            window = windows[index].run()
            if window.error is None:
                window = dataclasses.replace(window, placement=probe.finish())
            results[index] = window

        def record_or_fail(index: int) -> None:
            try:
                record(index)
            except Exception as exc:  # a window is never lost silently: it says why
                results[index] = StackWindow(
                    root_pid=windows[index].pid,
                    started_at=time.time(),
                    duration_s=0.0,
                    rate_hz=self.rate_hz,
                    stacks=(),
                    error=f"sampling pid {windows[index].pid} failed: {exc}",
                )

        threads = [
            threading.Thread(target=record_or_fail, args=(i,), name=f"xfertop-pyspy-{w.pid}", daemon=True)
            for i, w in enumerate(windows)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with self._lock:
            self._running = []
        done = tuple(w for w in results if w is not None)
        errors = [w.error for w in done if w.error]
        all_failed = bool(errors) and len(errors) == len(done)
        # A window that fails fails at once (process gone, permission): retry at the window's pace
        # instead of spawning py-spy in a tight loop.
        self._interval_s = float(self.window_s) if all_failed else 0.0
        return StacksState(
            timestamp=time.time(), targets=self.targets, windows=done, error=errors[0] if all_failed else None
        )

    def stop(self, timeout_s: float = 2.0) -> None:
        """Stop sampling now: running py-spy windows are cancelled, not waited out."""
        with self._lock:
            self._stop.set()
            for window in self._running:
                window.cancel()
        super().stop(timeout_s)
