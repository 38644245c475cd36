"""`xfertop record FILE`: headless; the snapshots the live view renders, written to FILE every --interval
seconds as gzip-compressed JSON lines (export/recording.py, docs/recording.md), until Ctrl-C, SIGTERM or
--duration. Bounded: FILE rotates at --max-bytes, and --keep older files are kept."""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

from xfertop.cli.viewer import ViewerError, check_interval

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)i?[bB]?\s*$")
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
MIN_MAX_BYTES = 64 * 1024
#: The first frame waits this long at most for the sources' first snapshots.
FIRST_SAMPLE_WAIT_S = 3.0


def byte_size(text: str) -> int:
    """``"32M"``, ``"512k"``, ``"1G"``, ``"100000"`` as bytes (powers of 1024)."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (for example 32M, 512k, 1G)")
    size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if size < MIN_MAX_BYTES:
        raise argparse.ArgumentTypeError(f"{text!r} is too small: at least {MIN_MAX_BYTES // 1024}k")
    return size


def register(subparsers: Any) -> None:
    from xfertop.export.recording import DEFAULT_KEEP, DEFAULT_MAX_BYTES
    from xfertop.sources.gpu.source import PCIE_CHOICES

    parser = subparsers.add_parser(
        "record",
        help="record what the live view shows to a file, headless (see `xfertop replay`)",
        description="Write the snapshots the live view renders (GPUs, host, jobs with every step, topology) "
        "to FILE as gzip-compressed JSON lines, until Ctrl-C or --duration. FILE rotates at "
        "--max-bytes to FILE.1, FILE.2 ...; each file replays on its own.",
    )
    parser.add_argument("file", metavar="FILE", help="where to write, e.g. run.xfertop.jsonl.gz")
    parser.add_argument(
        "--interval", type=float, default=1.0, metavar="SECONDS", help="seconds between frames (default 1.0)"
    )
    parser.add_argument(
        "--max-bytes",
        type=byte_size,
        default=DEFAULT_MAX_BYTES,
        metavar="SIZE",
        help=f"rotate FILE once it is this large, compressed (default {DEFAULT_MAX_BYTES // 1024**2}M)",
    )
    parser.add_argument(
        "--keep",
        type=int,
        default=DEFAULT_KEEP,
        metavar="N",
        help=f"older files kept when rotating: FILE.1 .. FILE.N (default {DEFAULT_KEEP})",
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop after this long (default: until Ctrl-C or SIGTERM)",
    )
    parser.add_argument("--pcie", choices=PCIE_CHOICES, default="auto", help="as for the live view")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    interval_s = check_interval(args.interval)
    if args.keep < 0:
        raise ViewerError(f"--keep must be 0 or more (got {args.keep})")
    if args.duration is not None and not args.duration > 0:
        raise ViewerError(f"--duration must be more than 0 seconds (got {args.duration})")
    from xfertop.cli.viewer import build_sources
    from xfertop.export.recording import RecordingWriter

    try:
        writer = RecordingWriter(args.file, interval_s, max_bytes=args.max_bytes, keep=args.keep)
    except OSError as exc:
        raise ViewerError(f"cannot write {args.file}: {exc.strerror or exc}") from None
    sources = build_sources(interval_s, pcie=args.pcie)
    stop = threading.Event()

    def stop_recording(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    stop_signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, stop_recording) for sig in stop_signals}
    rotation = f"rotating at {args.max_bytes / 1024**2:g} MiB, keeping {args.keep} older"
    print(
        f"xfertop record: writing {args.file} every {interval_s:g} s ({rotation}); Ctrl-C stops", flush=True
    )
    try:
        sources.start()
        sources.start_topology()
        _record(sources, writer, interval_s, args.duration, stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sources.stop()
        writer.close()
    print(
        f"xfertop record: {writer.frames_written} frames written to {args.file}"
        + (f" ({writer.files_rotated} rotations)" if writer.files_rotated else ""),
        flush=True,
    )
    return 0


def _record(
    sources: Any, writer: Any, interval_s: float, duration_s: float | None, stop: threading.Event
) -> None:
    from xfertop.export.recording import Snapshot
    from xfertop.sources.base import FailureNews

    news = FailureNews(sources.all(), "frames keep its last good sample until it works")
    started = time.monotonic()
    sources.wait_for_first_samples(FIRST_SAMPLE_WAIT_S)
    next_frame = time.monotonic()
    while not stop.is_set():
        gpu, host, jobs, topology = sources.latest()
        writer.write(Snapshot(time=time.time(), gpu=gpu, host=host, jobs=jobs, topology=topology))
        for line in news.news():
            print(f"xfertop record: {line}", file=sys.stderr, flush=True)
        if duration_s is not None and time.monotonic() - started >= duration_s:
            return
        next_frame += interval_s
        stop.wait(max(0.0, next_frame - time.monotonic()))
