"""`xfertop replay FILE`: the live view over a recording made by `xfertop record` (space pauses, arrows
step, page up/down seek a minute, home/end jump to the first/last frame)."""

from __future__ import annotations

import argparse
from typing import Any

from xfertop.cli.viewer import ViewerError, check_interval, require_terminal


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="the live view over a recording made by `xfertop record`",
        description="Show a recording in the live view: space plays or pauses, left/right step one frame, "
        "page up/down seek a minute, home/end go to the first/last frame.",
    )
    parser.add_argument("file", metavar="FILE", help="a recording (FILE, or a rotated FILE.1 ...)")
    parser.add_argument("--speed", type=float, default=1.0, help="play this many times as fast (default 1)")
    parser.add_argument("--paused", action="store_true", help="start paused on the first frame")
    parser.add_argument(
        "--partial",
        action="store_true",
        help="replay the frames of a recording whose recorder was stopped before it closed "
        "the file (kill -9, a full disk)",
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="refresh period of the view (default 1.0)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from xfertop.export.recording import RecordingError, read_recording
    from xfertop.export.replay_player import ReplayPlayer

    interval_s = check_interval(args.interval)
    if not args.speed > 0:
        raise ViewerError(f"--speed must be more than 0 (got {args.speed})")
    try:
        recording = read_recording(args.file, partial=args.partial)
    except RecordingError as exc:
        raise ViewerError(str(exc)) from None
    require_terminal()
    player = ReplayPlayer(recording.frames)
    player.speed = args.speed
    if args.paused:
        player.toggle_pause()
    from xfertop.ui.replay_controls import ReplayApp

    app = ReplayApp(player, interval_s=interval_s)
    try:
        app.run()
    finally:
        app.sources.stop()
    return app.return_code or 0
