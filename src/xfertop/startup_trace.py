"""Opt-in startup trace: where the time to the first frame goes (standard library only, any layer).

``XFERTOP_TRACE_STARTUP=/tmp/xfertop-startup.txt`` appends one line per phase to that file
(``XFERTOP_TRACE_STARTUP=1``: to stderr, which only makes sense with ``--once`` or output redirected, as
the TUI owns the terminal). Each line: milliseconds since the process started (from /proc, 10 ms
resolution at the origin, exact between lines), the thread, and the phase. Off (the default) a mark
costs one dictionary lookup. Only the first ``mark_once`` of a name is written, so per-sample code can
mark "first GPU sample" without flooding the file.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

_SETTING = os.environ.get("XFERTOP_TRACE_STARTUP", "")
ENABLED = _SETTING not in ("", "0")
_lock = threading.Lock()
_seen: set[str] = set()
_out: TextIO | None = None


def _process_age_s() -> float:
    """Seconds since this process started, from /proc (0.0 where /proc cannot tell)."""
    try:
        with open("/proc/self/stat") as stat_file, open("/proc/uptime") as uptime_file:
            start_ticks = int(stat_file.read().rpartition(")")[2].split()[19])
            uptime_s = float(uptime_file.read().split()[0])
        return uptime_s - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


#: perf_counter() at the moment the process started (estimated once, at import).
_ORIGIN = time.perf_counter() - (_process_age_s() if ENABLED else 0.0)


def _stream() -> TextIO:
    global _out
    if _out is None:
        try:
            _out = sys.stderr if _SETTING == "1" else open(_SETTING, "a", buffering=1)  # noqa: SIM115
        except OSError as exc:
            _out = sys.stderr
            _out.write(
                f"# xfertop: cannot write the startup trace to {_SETTING} ({exc.strerror}); "
                "tracing to stderr\n"
            )
        _out.write(f"# xfertop startup trace, pid {os.getpid()}, argv {sys.argv}\n")
    return _out


def mark(phase: str) -> None:
    """Write ``phase`` with the time since the process started (when the trace is on)."""
    if not ENABLED:
        return
    elapsed_ms = 1000 * (time.perf_counter() - _ORIGIN)
    with _lock:
        _stream().write(f"{elapsed_ms:9.1f} ms  [{threading.current_thread().name}]  {phase}\n")


def mark_once(phase: str) -> None:
    """``mark`` the first time only (for code that runs every sample)."""
    if not ENABLED or phase in _seen:
        return
    with _lock:
        if phase in _seen:
            return
        _seen.add(phase)
    mark(phase)
