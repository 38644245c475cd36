"""`xfertop probe`, inside the job: after a warm-up, the same number of steps measured four ways, on the
unchanged script: as it is; with its input free (the loader's iterator replays batches it already
produced, held in memory, at once); with those batches in pinned memory (what pinning would buy, its own
cost paid once, off the step); and with its copies free too (a replayed batch's ``.to()``/``.cuda()``
returns the device copy made the first time). Then it writes what it measured and, unless asked to go on,
stops the job with SIGINT (the script's own handlers run).

A step is the time between two ``next()`` calls on a watched loader; a step's phase is the phase its
``next()`` began. A phase's figure is its wall time over its steps, with the device synchronised at
each end of each of its blocks, so that work queued on the GPU is paid in the phase that queued it. The
job trains on repeated batches between its two "as is" blocks: a diagnosis run.

Each phase runs in two blocks of half its steps, in mirrored order (as is, input free, pinned, copies
free, then copies free, pinned, input free, as is): a machine whose speed drifts while the probe runs
(another job starting, a CPU clocking down) slows every phase alike where the drift is steady, instead of
the phases measured last. Phases one after another read a compute-bound job "1.95x with input free" on a
shared CI box, its "as is" steps twice as long as the rest (docs/probe.md).
Standard library only (torch is reached through the tensors it is handed).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

ENV = "XFERTOP_PROBE"
PHASES = ("as_is", "input_free", "pinned", "copy_free")
#: How long after its last phase the probe stops the job (the job runs on, on its own batches, meanwhile).
STOP_DELAY_S = 0.05
#: Batches kept for the replay: the last ones of the "as is" phase.
REPLAY_BATCHES = 8
#: A phase timed by ``--seconds`` still has at least this many steps (a median and a spread).
MIN_PHASE_STEPS = 5
#: The order of the phases' blocks: every phase twice, mirrored, so that a steady drift cancels out.
BLOCKS = (*PHASES, *reversed(PHASES))


def _tensors(batch: Any, found: list[Any] | None = None, depth: int = 0) -> list[Any]:
    """The tensors of a batch (nested dicts, lists, tuples), in order (appended to ``found``)."""
    found = [] if found is None else found
    if depth > 8:
        return found
    if hasattr(batch, "is_cuda") and hasattr(batch, "to"):
        found.append(batch)
    elif isinstance(batch, dict):
        for value in batch.values():
            _tensors(value, found, depth + 1)
    elif isinstance(batch, (list, tuple)):
        for value in batch:
            _tensors(value, found, depth + 1)
    return found


class Probe:
    """``steps`` steps a phase, or, where ``seconds`` is set, each phase as long as that (and at least
    MIN_PHASE_STEPS steps)."""

    def __init__(
        self, result_path: str, steps: int, warmup: int, keep_going: bool, seconds: float = 0.0
    ) -> None:
        self.result_path = result_path
        self.steps = steps
        self.seconds = seconds
        self.warmup = warmup
        self.keep_going = keep_going
        #: The phase of the step under way: "warmup", one of PHASES, or None once every phase is through;
        #: and its block, an index into BLOCKS (-1 in warm-up).
        self._current: str | None = "warmup"
        self._block = -1
        self._calls = 0
        self._last_ns = 0
        self._durations: dict[str, list[int]] = {phase: [] for phase in PHASES}
        #: Each phase's wall time, its blocks' between device synchronisations at their ends (ns), the
        #: steps those blocks hold, and the start of the block under way (and its first step's index).
        self._phase_ns: dict[str, int] = {}
        self._phase_steps: dict[str, int] = {}
        self._phase_began = 0
        self._block_first = 0
        self._samples = 0
        #: The last batches of the "as is" phase, replayed after it.
        self._replay: deque[Any] = deque(maxlen=REPLAY_BATCHES)
        self._replay_ids: set[int] = set()
        #: Device copies of replayed tensors, by the host tensor's id (held alive by ``_replay``).
        self._resident: dict[int, Any] = {}
        #: Replayed host tensors moved to pinned memory for the "pinned" phase, and those already pinned;
        #: None until that phase begins (and where pinning is not possible: no accelerator).
        self._pinned: tuple[int, int] | None = None
        #: (tensor, its own memory, its pinned copy) for each replayed tensor pinned: the input-free
        #: blocks replay the batches as the loader made them, the pinned and copy-free ones pinned.
        self._swaps: list[tuple[Any, Any, Any]] = []
        self._written = False
        self._lock = threading.Lock()
        self._main = threading.main_thread().ident
        self._pid = os.getpid()  # a forked child (a DataLoader worker) inherits this object: not its own

    @property
    def copies_free(self) -> bool:
        return self._current == "copy_free"

    @property
    def replaying(self) -> bool:
        """The step under way trains on a replayed batch (the ring marks it: no verdict rests on it)."""
        return self._current in ("input_free", "pinned", "copy_free")

    def next_batch(self, iterator: Iterator[Any]) -> Any:
        """In place of ``next(iterator)`` of a watched loader (the main thread's; others pass through)."""
        if threading.get_ident() != self._main:
            return next(iterator)
        now = time.perf_counter_ns()
        if self._calls and self._current in self._durations:
            self._durations[self._current].append(now - self._last_ns)
        self._last_ns = now
        call = self._calls
        self._calls = call + 1
        block = self._next_block(call, now)
        if block != self._block:
            phase = BLOCKS[block] if 0 <= block < len(BLOCKS) else None
            self._boundary(self._current, phase)
            self._current, self._block = phase, block
        phase = self._current
        if phase is None:  # through: the job goes on with its own batches (--continue)
            self._finish()
            return next(iterator)
        if phase in ("input_free", "pinned", "copy_free") and self._replay:
            self._last_ns = time.perf_counter_ns()  # the replay (and pinning it) is no part of the step
            return self._replay[call % len(self._replay)]
        batch = next(iterator)
        if phase == "as_is":
            self._keep(batch)
        return batch

    def _next_block(self, call: int, now: int) -> int:
        """The block of the step that ``call`` (the number of this next() call) begins: -1 in warm-up,
        len(BLOCKS) once through. A phase's first block takes half its steps (rounded down), its second
        the rest; with ``seconds``, half the time each, and half MIN_PHASE_STEPS at least."""
        block = self._block
        if block < 0:
            return 0 if call >= self.warmup else -1
        if block >= len(BLOCKS):
            return block
        current = BLOCKS[block]
        done = len(self._durations[current]) - self._block_first
        second = block >= len(PHASES)
        if self.seconds:
            floor = MIN_PHASE_STEPS - MIN_PHASE_STEPS // 2 if second else MIN_PHASE_STEPS // 2
            over = done >= floor and now - self._phase_began >= self.seconds * 1e9 / 2
        else:
            over = done >= (self.steps - self.steps // 2 if second else self.steps // 2)
        return block + 1 if over else block

    def _boundary(self, ended: str | None, begins: str | None) -> None:
        """Between two phases: wait for the device's queued work, so that a phase's wall time is what
        its steps cost the GPU too (a job whose host runs ahead of the GPU would otherwise be timed by
        how fast it queues work, and the next phase would pay for the last one's queue)."""
        _synchronize()
        now = time.perf_counter_ns()
        if ended in PHASES:
            self._phase_ns[ended] = self._phase_ns.get(ended, 0) + now - self._phase_began
            steps = len(self._durations[ended]) - self._block_first
            self._phase_steps[ended] = self._phase_steps.get(ended, 0) + steps
        if ended == "as_is" and not self._replay_ids:  # the batches to replay are known (the first block's
            for batch in self._replay:  # last ones): their copies will be kept
                self._replay_ids.update(id(tensor) for tensor in _tensors(batch))
        if begins in ("pinned", "copy_free") and self._pinned is None and self._replay:
            self._pinned = self._pin_replay()
        if begins in ("input_free", "pinned", "copy_free"):
            for tensor, own, pinned in self._swaps:  # as the loader made them, or pinned
                tensor.data = own if begins == "input_free" else pinned
        if begins is not None:
            self._block_first = len(self._durations[begins]) if begins in PHASES else 0
        self._phase_began = time.perf_counter_ns()
        self._last_ns = self._phase_began

    def _keep(self, batch: Any) -> None:
        if self._replay_ids:  # the second "as is" block: the replay was chosen in the first
            return
        self._replay.append(batch)  # the oldest drops out: the phase's last REPLAY_BATCHES are replayed
        if not self._samples:
            tensors = _tensors(batch)
            shape = getattr(tensors[0], "shape", None) if tensors else None
            self._samples = int(shape[0]) if shape else 0

    def _pin_replay(self) -> tuple[int, int]:
        """Pinned copies of the replayed batches' host tensors, swapped in place (``.data``) for the pinned
        and copy-free blocks, so the script's own ``.to()`` calls copy from pinned memory; (moved, already
        pinned). A tensor keeps its identity, so its device copy made in the input-free phase still serves
        the copy-free phase."""
        moved = already = 0
        for batch in self._replay:
            for tensor in _tensors(batch):
                if tensor.is_cuda or getattr(tensor.device, "type", "cpu") != "cpu":
                    continue
                if tensor.is_pinned():
                    already += 1
                    continue
                try:
                    self._swaps.append((tensor, tensor.data, tensor.pin_memory()))
                except RuntimeError:  # no accelerator to pin for: the phase is input free again
                    return (moved, already)
                moved += 1
        return (moved, already)

    # -- copies (`xfertop run`'s Tensor.to wrapper asks) ------------------------------------------
    def resident(self, tensor: Any) -> Any:
        """The device copy of a replayed tensor while copies are free, else None."""
        if not self._resident or not self.copies_free:
            return None
        return self._resident.get(id(tensor))

    def moved(self, tensor: Any, copy: Any) -> None:
        """A replayed tensor was copied to a device: its copy is kept for the copy-free phase."""
        device = getattr(copy, "device", None)
        if id(tensor) in self._replay_ids and copy is not tensor and getattr(device, "type", "cpu") != "cpu":
            self._resident.setdefault(id(tensor), copy)

    # -- the result ---------------------------------------------------------------------------------
    def result(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "rank": os.environ.get("RANK"),
            "world_size": os.environ.get("WORLD_SIZE"),
            "warmup": self.warmup,
            "steps": self.steps,
            "seconds": self.seconds,
            "samples_per_batch": self._samples,
            "calls": self._calls,
            "complete": self._current is None,
            "reached": self._current or "done",
            "resident_copies": len(self._resident),
            "pinned_tensors": self._pinned[0] if self._pinned else 0,
            "already_pinned_tensors": self._pinned[1] if self._pinned else 0,
            "durations_ns": self._durations,
            "phase_ns": self._phase_ns,
            "phase_steps": self._phase_steps,
            "blocks": list(BLOCKS),
        }

    def write(self) -> None:
        with self._lock:
            document = json.dumps(self.result())
            temporary = f"{self.result_path}.{os.getpid()}.tmp"
            with open(temporary, "w", encoding="utf-8") as handle:
                handle.write(document)
            os.replace(temporary, self.result_path)

    def _finish(self) -> None:
        if self._written:
            return
        self._written = True
        with contextlib.suppress(OSError):
            self.write()
        if not self.keep_going:
            # As a Ctrl-C would: the script's own handlers run. A job that ignores SIGINT (its own choice,
            # or handed over ignored, as a background job of a script is) gets SIGTERM at once.
            ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            # From a thread, a moment later: the KeyboardInterrupt then rises where the loop is, in the
            # script's own code, as a Ctrl-C's would, not inside this call.
            stop = threading.Timer(
                STOP_DELAY_S, os.kill, (os.getpid(), signal.SIGTERM if ignored else signal.SIGINT)
            )
            stop.daemon = True
            stop.start()

    def at_exit(self) -> None:
        """A job that ends before the probe is through still says how far it came."""
        if not self._written and os.getpid() == self._pid:
            with contextlib.suppress(OSError):
                self.write()


def _synchronize() -> None:
    """Wait for the current CUDA device's queued work, where this process has started CUDA."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    with contextlib.suppress(Exception):  # no CUDA, or a CUDA error the job will meet on its own
        if cuda is not None and cuda.is_initialized():
            cuda.synchronize()


def from_environment() -> Probe | None:
    """The probe `xfertop probe` asked for (``XFERTOP_PROBE``: JSON), made by the first watched next() of a
    process (so only a process that iterates a loader has one)."""
    raw = os.environ.get(ENV)
    if not raw:
        return None
    try:
        config = json.loads(raw)
        path = f"{config['result_dir']}/probe-{os.getpid()}.json"
        probe = Probe(
            path,
            int(config["steps"]),
            int(config["warmup"]),
            bool(config.get("keep_going")),
            float(config.get("seconds") or 0.0),
        )
    except (ValueError, KeyError, TypeError):
        return None
    atexit.register(probe.at_exit)
    return probe
