"""Command-line options shared by `xfertop bench/check` and the child `python -m xfertop.bench`."""

from __future__ import annotations

import argparse

from xfertop.analysis.acceptance import Thresholds
from xfertop.bench.sizes import parse_size


def add_run_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpu", type=int, default=0, metavar="INDEX", help="GPU to benchmark (default 0)")
    parser.add_argument(
        "--samples",
        type=int,
        default=None,
        help="timed samples per figure (>= 3; default 5, "
        "check 3); a warm-up sample runs first and is reported apart",
    )
    parser.add_argument(
        "--size", type=parse_size, default=None, help="size of the single-size cases (default 256MiB)"
    )
    parser.add_argument(
        "--sizes",
        type=lambda s: tuple(parse_size(x) for x in s.split(",")),
        default=None,
        help="sweep sizes, comma separated (default 64KiB..1GiB by x4)",
    )
    parser.add_argument(
        "--backend",
        choices=("cuda", "cpu"),
        default="cuda",
        help="cpu: host memcpy through the same protocol, for tests without a GPU",
    )
    group = parser.add_argument_group("acceptance thresholds")
    defaults = Thresholds()
    group.add_argument(
        "--pass-ratio",
        type=float,
        default=defaults.pass_ratio,
        help="pinned copies pass at >= this share of the link's theoretical rate (0.82)",
    )
    group.add_argument(
        "--warn-ratio",
        type=float,
        default=defaults.warn_ratio,
        help="... warn from this share, fail below (0.75)",
    )
    group.add_argument(
        "--min-judged-size",
        type=parse_size,
        default=defaults.min_judged_bytes,
        help="only copies at least this large are judged (64MiB)",
    )
    group.add_argument(
        "--max-replays",
        type=int,
        default=defaults.max_replay_delta,
        help="PCIe replays allowed during the run (80)",
    )
    group.add_argument(
        "--max-correctable",
        type=int,
        default=defaults.max_correctable_delta,
        help="PCIe correctable errors allowed during the run (0)",
    )
    group.add_argument(
        "--expect-gen",
        type=int,
        default=0,
        help="expected PCIe generation (default: the max the GPU and slot report)",
    )
    group.add_argument(
        "--expect-width", type=int, default=0, help="expected PCIe width (default: reported max)"
    )


def thresholds_from(args: argparse.Namespace) -> Thresholds:
    return Thresholds(
        pass_ratio=args.pass_ratio,
        warn_ratio=args.warn_ratio,
        min_judged_bytes=args.min_judged_size,
        max_replay_delta=args.max_replays,
        max_correctable_delta=args.max_correctable,
        expect_gen=args.expect_gen,
        expect_width=args.expect_width,
    )


def child_argv(args: argparse.Namespace, *, check: bool, cases: list[str]) -> list[str]:
    """The same options, spelled for the child process."""
    argv = ["--check"] if check else []
    argv += ["--backend", args.backend, "--gpu", str(args.gpu)]
    if args.samples is not None:
        argv += ["--samples", str(args.samples)]
    if args.size is not None:
        argv += ["--size", str(args.size)]
    if args.sizes is not None:
        argv += ["--sizes", ",".join(str(s) for s in args.sizes)]
    argv += [
        "--pass-ratio",
        str(args.pass_ratio),
        "--warn-ratio",
        str(args.warn_ratio),
        "--min-judged-size",
        str(args.min_judged_size),
        "--max-replays",
        str(args.max_replays),
        "--max-correctable",
        str(args.max_correctable),
        "--expect-gen",
        str(args.expect_gen),
        "--expect-width",
        str(args.expect_width),
    ]
    return argv + list(cases)
