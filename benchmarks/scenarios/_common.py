"""What the scenario scripts share: arguments, the device, and the ``--truth`` clock.

Plain PyTorch and the standard library only: nothing here knows about xfertop.

Every script trains for about ``--seconds`` seconds counted from the end of its first step (so a slow
start, e.g. torch.compile, does not eat the run), then prints one line:

- plain:    ``result scenario=<id> device=<cpu|cuda> first_loss=<x> steps=<N> samples_per_s=<r>``
- --truth:  ``{"truth": {"data_share": ..., "copy_share": ..., "compute_share": ...,
              "sync_or_host_share": ...}, "steps": N, "samples_per_s": ..., ...}``

With ``--truth`` the loop is the same, but each phase ends with a device synchronisation
(``torch.cuda.synchronize()`` on a GPU) and is timed on the host clock:

- data:    time blocked in ``next(loader)`` (``clock.timed(loader)``; with no DataLoader, the script's
           own batch-making code in ``clock.phase("data")``);
- copy:    the host-to-device copy (``clock.phase("copy")``);
- compute: forward, backward and optimizer step (``clock.phase("compute")``);
- sync_or_host: everything else in the loop's wall time (``.item()``, printing, metrics on the host,
           epoch bookkeeping).

Shares are fractions of the loop's wall time from the start of step ``WARMUP_STEPS`` (the same warm-up
xfertop skips) to the end. Because every phase is synchronised, a GPU truth is the cost of each phase
run alone: work that a real (unsynchronised) run overlaps, such as a DataLoader wait hidden behind
queued kernels, is counted in full. On a CPU nothing is asynchronous and the two agree.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import torch

T = TypeVar("T")

#: Steps before this index are not counted in the truth (xfertop's WARMUP_STEPS is the same, 5).
WARMUP_STEPS = 5
_NULL = contextlib.nullcontext()


def parse_args(
    description: str,
    extra: Callable[[argparse.ArgumentParser], None] | None = None,
    default_seconds: float = 20.0,
) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--seconds",
        type=float,
        default=default_seconds,
        help=f"train about this long after the first step (default {default_seconds:g})",
    )
    parser.add_argument(
        "--truth",
        action="store_true",
        help="synchronise after each phase, time data/copy/compute/other, print JSON",
    )
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto (default: cuda if available)")
    if extra is not None:
        extra(parser)
    return parser.parse_args()


def pick_device(requested: str = "auto") -> torch.device:
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)


def seed_everything(seed: int = 0) -> None:
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


class _Phase:
    __slots__ = ("clock", "name", "started")

    def __init__(self, clock: Clock, name: str) -> None:
        self.clock = clock
        self.name = name
        self.started = 0.0

    def __enter__(self) -> _Phase:
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.clock.synchronize()
        self.clock.add(self.name, time.perf_counter() - self.started)


class Clock:
    """The scenario's stopwatch. In plain mode every method is (nearly) free and changes nothing."""

    def __init__(self, scenario: str, args: argparse.Namespace, device: torch.device) -> None:
        self.scenario = scenario
        self.truth = bool(args.truth)
        self.seconds = float(args.seconds)
        self.device = device
        self._cuda = device.type == "cuda"
        self._phases = {name: _Phase(self, name) for name in ("data", "copy", "compute")}
        self.totals = {"data": 0.0, "copy": 0.0, "compute": 0.0}
        #: Step boundaries passed (every next() that returned a batch, on any loader).
        self.boundaries = 0
        self._t0: float | None = None  # start of step WARMUP_STEPS: the truth's window
        self._first_done: float | None = None  # end of the first training step
        self.samples = 0  # samples after the first training step
        self.train_steps = 0
        self._deadline: float | None = None
        self.first_loss: float | None = None

    # -- the loop's side ---------------------------------------------------------------------------
    def timed(self, loader: Iterable[T]) -> Iterable[T]:
        """``for batch in clock.timed(loader)``: the loader itself unless --truth."""
        if not self.truth:
            return loader
        return self._timed(loader)

    def _timed(self, loader: Iterable[T]) -> Iterator[T]:
        self.boundary()
        started = time.perf_counter()
        iterator = iter(loader)
        while True:
            try:
                batch = next(iterator)
            except StopIteration:
                self.add("data", time.perf_counter() - started)
                return
            self.add("data", time.perf_counter() - started)
            self.boundaries += 1
            yield batch
            self.boundary()
            started = time.perf_counter()

    def boundary(self) -> None:
        """A step starts here (called by timed(); loops without a DataLoader call it themselves)."""
        if self.truth and self._t0 is None and self.boundaries >= WARMUP_STEPS:
            self._t0 = time.perf_counter()

    def manual_step(self) -> None:
        """For loops without a DataLoader: one step boundary."""
        if self.truth:
            self.boundary()
            self.boundaries += 1

    def phase(self, name: str) -> contextlib.AbstractContextManager[Any]:
        return self._phases[name] if self.truth else _NULL

    def synchronize(self) -> None:
        if self._cuda:
            torch.cuda.synchronize(self.device)

    def add(self, name: str, seconds: float) -> None:
        if self._t0 is not None:
            self.totals[name] += seconds

    def step_done(self, samples: int, loss: torch.Tensor | float | None = None) -> bool:
        """Call at the end of each training step; True when the run should stop."""
        now = time.perf_counter()
        self.train_steps += 1
        if self._first_done is None:
            self._first_done = now
            self._deadline = now + self.seconds
            if loss is not None:
                self.first_loss = float(loss)  # one sync, in the first step only
            return False
        self.samples += samples
        return now >= (self._deadline or now)

    @property
    def done(self) -> bool:
        return self._deadline is not None and time.perf_counter() >= self._deadline

    # -- the end -------------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        end = time.perf_counter()
        elapsed = end - (self._first_done or end)
        out: dict[str, Any] = {
            "scenario": self.scenario,
            "device": self.device.type,
            "steps": self.train_steps,
            "samples_per_s": round(self.samples / elapsed, 2) if elapsed > 0 else 0.0,
        }
        if self.truth:
            wall = end - self._t0 if self._t0 is not None else 0.0
            shares = {f"{k}_share": (v / wall if wall > 0 else 0.0) for k, v in self.totals.items()}
            shares["sync_or_host_share"] = max(0.0, 1.0 - sum(shares.values()))
            out["truth"] = {k: round(v, 4) for k, v in shares.items()}
            out["truth_wall_s"] = round(wall, 3)
            out["truth_steps"] = max(0, self.boundaries - WARMUP_STEPS)
            counted = max(1, self.boundaries - WARMUP_STEPS)
            out["ms_per_boundary"] = {k: round(1000 * v / counted, 3) for k, v in self.totals.items()}
        return out

    def finish(
        self, extra: dict[str, Any] | None = None, emit: bool = True, tags: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """Print the result line (or the truth JSON). ``tags`` are fixed words for the result line (e.g.
        which image pipeline ran); ``extra`` goes into the JSON only."""
        out = self.summary()
        if tags:
            out["tags"] = dict(tags)
        if extra:
            out.update(extra)
        if emit:
            emit_summary(out, self.truth, self.first_loss)
        return out


def train_step(
    clock: Clock, model: Any, optimizer: Any, x: Any, y: Any, device: torch.device
) -> tuple[Any, Any]:
    """One supervised step of a classifier, phase by phase as the truth times it: copy the batch to the
    device, then forward, cross-entropy, backward and the optimizer. Returns the batch on the device and
    the loss."""
    with clock.phase("copy"):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    with clock.phase("compute"):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return x, loss


def emit_summary(out: dict[str, Any], truth: bool, first_loss: float | None) -> None:
    if truth:
        print(json.dumps(out, sort_keys=True), flush=True)
        return
    loss = "na" if first_loss is None else f"{first_loss:.3f}"
    tags = "".join(f" {key}={value}" for key, value in sorted(out.get("tags", {}).items()))
    print(
        f"result scenario={out['scenario']} device={out['device']}{tags} first_loss={loss} "
        f"steps={out['steps']} samples_per_s={out['samples_per_s']}",
        flush=True,
    )


def skip(reason: str) -> None:
    """Lightning / transformers absent: say so and exit 0."""
    print(f"skipped: {reason}", flush=True)
    raise SystemExit(0)


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
