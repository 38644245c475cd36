"""`xfertop export [--listen HOST:PORT]`: serve this node's GPUs, host and training ranks to Prometheus.

Headless and long-running: the viewer's sources, no TUI. Metrics, labels and reset semantics are in
docs/exporter.md. Exit codes: 0 stopped by SIGTERM or Ctrl-C, 2 cannot start (one line on stderr).
"""

from __future__ import annotations

import argparse
import math
import signal
import socket
import sys
from typing import Any

from xfertop.export.prometheus_exporter import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    Exporter,
    ExporterError,
    default_state_path,
    is_loopback,
    parse_listen,
)

EXIT_OK, EXIT_CANNOT_START = 0, 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export",
        help="serve this node's GPUs and training ranks as Prometheus metrics (headless)",
        description="Serve Prometheus/OpenMetrics text on http://HOST:PORT/metrics: per-GPU utilisation, "
        "memory and PCIe bytes, per-rank step-time counters and verdicts, host CPU and memory. "
        "One exporter per node; docs/exporter.md lists every metric.",
    )
    parser.add_argument(
        "--listen",
        default=f"{DEFAULT_HOST}:{DEFAULT_PORT}",
        metavar="HOST:PORT",
        help=f"address to serve on (default {DEFAULT_HOST}:{DEFAULT_PORT}, this machine "
        "only; 0.0.0.0:PORT opens it to the network, with a warning; port 0: any free)",
    )
    parser.add_argument(
        "--host-label",
        default=None,
        metavar="NAME",
        help="value of the host label on every series (default: this machine's hostname)",
    )
    parser.add_argument(
        "--state-file",
        default=None,
        metavar="PATH",
        help="where counters are kept across restarts (default $XDG_STATE_HOME/xfertop/exporter-PORT.json)",
    )
    parser.add_argument(
        "--no-state",
        action="store_true",
        help="keep no state file: counters start again from the rings at each start",
    )
    parser.add_argument(
        "--ended-grace",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="how long a finished rank's series stay after it ended (default 120)",
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=argparse.SUPPRESS,
        metavar="SECONDS",
        help="how often the GPUs and the host are sampled (default 1.0)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _serve(args)
    except ExporterError as exc:
        print(f"xfertop export: {exc}", file=sys.stderr)
        return EXIT_CANNOT_START


def _serve(args: argparse.Namespace) -> int:
    from xfertop.cli.viewer import ViewerError, build_sources, check_interval

    host, port = parse_listen(args.listen)
    if not (math.isfinite(args.ended_grace) and args.ended_grace >= 0):
        raise ExporterError(f"--ended-grace must be a number of seconds, 0 or more (got {args.ended_grace})")
    try:
        interval_s = check_interval(getattr(args, "interval", 1.0))
    except ViewerError as exc:
        raise ExporterError(str(exc)) from None
    state_path = None if args.no_state else (args.state_file or default_state_path(port))
    sources = build_sources(interval_s, pcie=getattr(args, "pcie", "auto"))
    exporter = Exporter(
        sources.gpu,
        sources.host,
        sources.jobs,
        host_label=args.host_label or socket.gethostname(),
        state_path=state_path,
        ended_grace_s=args.ended_grace,
    )
    exporter.start_sources()
    try:
        bound_host, bound_port = exporter.listen(host, port)
    except ExporterError:
        exporter.stop()
        raise
    for problem in exporter.problems:
        print(f"xfertop export: {problem}", file=sys.stderr)
    if not is_loopback(host):
        print(
            f"xfertop export: warning: listening on {host}:{bound_port}, open to the network: anyone who "
            "can reach it reads job names, pids and GPU figures (there is no authentication)",
            file=sys.stderr,
        )
    signal.signal(signal.SIGTERM, lambda _signum, _frame: exporter.request_stop())
    print(
        f"xfertop export: serving http://{_url_host(bound_host)}:{bound_port}/metrics",
        file=sys.stderr,
        flush=True,
    )
    try:
        while not exporter.wait(1.0):
            for news in exporter.source_news():
                print(f"xfertop export: {news}", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        exporter.stop()
    return EXIT_OK


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
