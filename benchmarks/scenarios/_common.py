"""What the scenario scripts share: arguments, the device, and the ``--truth`` clock.

Plain PyTorch and the standard library only: nothing here knows about xfertop.

Every script trains for about ``--seconds`` seconds counted from the end of its first step (so a slow
start, e.g. torch.compile, does not eat the run), then prints one line:

- plain:    ``result scenario=<id> device=<cpu|cuda> first_loss=<x> steps=<N> samples_per_s=<r>``
- --truth:  ``{"truth": {"data_share": ..., "copy_share": ..., "compute_share": ...,
              "sync_or_host_share": ..., "parts": {"wait": ..., "loop_pre": ..., "copy": ...,
              "model": ..., "sync": ..., "loop_post": ...}}, "steps": N, "samples_per_s": ..., ...}``

With ``--truth`` the loop is the same, but each phase ends with a device synchronisation
(``torch.cuda.synchronize()`` on a GPU) and is timed on the host clock. The phases are those of xfertop's
host clock (docs/reporter.md, DESIGN "The step clock"):

- data (``wait``):   time blocked in ``next(loader)`` (``clock.timed(loader)``; a framework's own
                     loader, timed by its callbacks, ``clock.add("data", ...)``);
- ``loop_pre``:      the loop's own work between the batch's arrival and the first copy or forward
                     (decoding, augmenting on the CPU in the loop body; with no DataLoader, slicing the
                     batch out of memory), ``clock.phase("loop_pre")``;
- copy:              the host-to-device copy (``clock.phase("copy")``);
- compute (``model``): forward, backward and optimizer step (``clock.phase("compute")``);
- ``sync``:          host time blocked in ``.item()``, ``.cpu()``, ``.tolist()``, ``synchronize()``
                     (``clock.phase("sync")``);
- ``loop_post``:     the loop's own work after the step (metrics, logging, checkpoints),
                     ``clock.phase("loop_post")``, and any time in no phase.

``parts`` holds the six as fractions of the loop's wall time, adding to 1. The older keys stay for the
scorer's first rules: ``data_share`` (= wait), ``copy_share``, ``compute_share`` (= model) and
``sync_or_host_share`` (everything else: loop_pre + sync + loop_post).

Shares are fractions of the loop's wall time from the start of step ``WARMUP_STEPS`` (the same warm-up
xfertop skips) to the end. Because every phase is synchronised, a GPU truth is the cost of each phase
run alone: work that a real (unsynchronised) run overlaps, such as a DataLoader wait hidden behind
queued kernels, is counted in full, and a sync right after a synchronised model phase finds nothing left
to wait for (its share is the copy of the value alone). On a CPU nothing is asynchronous and the two
agree. ``model_dispatch_share`` (GPU only) is the host's share of the model phase spent before its closing
synchronisation, i.e. issuing the kernels: near 1 when the GPU keeps pace with the launches.
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
#: The timed phases, in the order a step runs them ("compute" is the model: forward, backward, optimizer).
PHASES = ("data", "loop_pre", "copy", "compute", "sync", "loop_post")
#: The truth's ``parts``, named as xfertop's host clock names them, from the phases above.
PART_OF_PHASE = {
    "data": "wait",
    "loop_pre": "loop_pre",
    "copy": "copy",
    "compute": "model",
    "sync": "sync",
    "loop_post": "loop_post",
}
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
        "--min-steps",
        type=int,
        default=0,
        help="and at least this many training steps: a slow or loaded machine trains longer instead of "
        "ending before a monitor could judge it (default 0)",
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
        if self.name == "compute" and self.clock._cuda:
            # The host's time issuing the model's kernels, before the GPU is waited for.
            self.clock.add("model_dispatch", time.perf_counter() - self.started)
        self.clock.synchronize()
        self.clock.add(self.name, time.perf_counter() - self.started)


class Clock:
    """The scenario's stopwatch. In plain mode every method is (nearly) free and changes nothing."""

    def __init__(self, scenario: str, args: argparse.Namespace, device: torch.device) -> None:
        self.scenario = scenario
        self.truth = bool(args.truth)
        self.seconds = float(args.seconds)
        self.min_steps = int(args.min_steps)
        self.device = device
        self._cuda = device.type == "cuda"
        self._phases = {name: _Phase(self, name) for name in PHASES}
        self._phases["model"] = self._phases["compute"]
        self.totals = dict.fromkeys(PHASES, 0.0)
        self._dispatch_s = 0.0  # host time in the model phase before its synchronisation (GPU only)
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
        """``with clock.phase("copy"):`` times the block (synchronised at its end) under --truth. Names:
        data, loop_pre, copy, compute (or model), sync, loop_post."""
        if not self.truth:
            return _NULL
        return self._phases[name]

    def synchronize(self) -> None:
        if self._cuda:
            torch.cuda.synchronize(self.device)

    def add(self, name: str, seconds: float) -> None:
        if self._t0 is None:
            return
        if name == "model_dispatch":
            self._dispatch_s += seconds
        else:
            self.totals["compute" if name == "model" else name] += seconds

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
        return self.done

    @property
    def done(self) -> bool:
        """Past the deadline (``--seconds`` after the first step) and past ``--min-steps``."""
        if self._deadline is None or self.train_steps < self.min_steps:
            return False
        return time.perf_counter() >= self._deadline

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
            out["truth"] = truth_shares(self.totals, wall)
            if self._cuda:
                model = self.totals["compute"]
                dispatch = round(self._dispatch_s / model, 4) if model > 0 else None
                out["truth"]["model_dispatch_share"] = dispatch
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


def truth_shares(totals: dict[str, float], wall: float) -> dict[str, Any]:
    """The truth from the phases' seconds over the loop's wall: the first four keys as before, and
    ``parts`` (the six of xfertop's host clock, adding to 1: time in no phase is loop_post)."""

    def share(seconds: float) -> float:
        return seconds / wall if wall > 0 else 0.0

    old = {f"{k}_share": share(totals.get(k, 0.0)) for k in ("data", "copy", "compute")}
    old["sync_or_host_share"] = max(0.0, 1.0 - sum(old.values()))
    out: dict[str, Any] = {k: round(v, 4) for k, v in old.items()}
    parts = {PART_OF_PHASE[k]: round(share(totals.get(k, 0.0)), 4) for k in PHASES if k != "loop_post"}
    named = sum(parts.values())
    # Rounded so that the six add to 1 exactly (up to float): loop_post takes what the others leave.
    parts["loop_post"] = round(max(0.0, 1.0 - named), 4) if wall > 0 else 0.0
    out["parts"] = {PART_OF_PHASE[k]: parts[PART_OF_PHASE[k]] for k in PHASES}
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
