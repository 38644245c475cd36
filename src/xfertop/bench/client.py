"""Spawns the bench child and yields its messages; used by the CLI and the TUI alike.

The viewer never imports torch or touches CUDA: everything GPU happens in the child, and a crash
there ends in a `Failure` message here, never in the caller.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from xfertop.bench.protocol import Failure, Message, ProtocolError, RunDone, decode

EXIT_COULD_NOT_RUN = 2


@dataclass(frozen=True)
class Outcome:
    """How a run ended: the final message (RunDone or Failure) and the exit code to pass on."""

    final: RunDone | Failure
    exit_code: int


class BenchClient:
    """One run of `python -m xfertop.bench ARGS`. Iterate `messages()` once; `cancel()` from any thread."""

    def __init__(self, child_args: list[str], python: str = sys.executable) -> None:
        self.argv = [python, "-m", "xfertop.bench", *child_args]
        self._proc: subprocess.Popen[str] | None = None
        self._stderr_tail: deque[str] = deque(maxlen=20)
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self.outcome: Outcome | None = None

    def _start(self) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        assert proc.stderr is not None
        self._drainer = threading.Thread(
            target=self._drain, args=(proc.stderr,), daemon=True, name="bench-stderr"
        )
        self._drainer.start()
        return proc

    def _drain(self, stream: IO[str]) -> None:
        for line in stream:
            self._stderr_tail.append(line.rstrip())

    def messages(self) -> Iterator[Message]:
        """Every message of the run; the last is always a RunDone or a Failure."""
        with self._lock:
            if self._cancelled.is_set():
                self.outcome = Outcome(Failure("cancelled", EXIT_COULD_NOT_RUN), EXIT_COULD_NOT_RUN)
                yield self.outcome.final
                return
            self._proc = self._start()
        assert self._proc.stdout is not None
        final: RunDone | Failure | None = None
        final_from_child = False
        for line in self._proc.stdout:
            if not line.strip():
                continue
            try:
                message = decode(line)
            except ProtocolError as exc:
                self.cancel()
                final = Failure(f"the benchmark process spoke garbage: {exc}", EXIT_COULD_NOT_RUN)
                break
            yield message
            if isinstance(message, (RunDone, Failure)):
                final, final_from_child = message, True
        returncode = self._proc.wait()
        self._drainer.join(timeout=5)
        if final is None and self._cancelled.is_set():
            final = Failure("cancelled", EXIT_COULD_NOT_RUN)
        elif final is None:
            last = next((s for s in reversed(self._stderr_tail) if s.strip()), "no output")
            final = Failure(
                f"the benchmark process ended without a result (exit {returncode}): {last}",
                EXIT_COULD_NOT_RUN,
            )
        self.outcome = Outcome(final, final.run.exit_code if isinstance(final, RunDone) else final.exit_code)
        if not final_from_child:
            yield final

    def run_to_end(self) -> Outcome:
        for _ in self.messages():
            pass
        assert self.outcome is not None
        return self.outcome

    def cancel(self) -> None:
        """Stop the child (SIGTERM, SIGKILL after 5 s); messages() then ends with Failure('cancelled')."""
        with self._lock:
            self._cancelled.set()
            proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


def bench_client(
    *, check: bool, cases: list[str] | None = None, backend: str = "cuda", extra_args: list[str] | None = None
) -> BenchClient:
    """A client for `xfertop check` (check=True) or `xfertop bench CASES`."""
    args = (["--check"] if check else []) + ["--backend", backend] + (extra_args or []) + list(cases or [])
    return BenchClient(args)
