"""Are xfertop's verdicts right? Run the scenario corpus (benchmarks/scenarios/) and score them.

    python benchmarks/score_scenarios.py [--only a,b,o] [--modes run,watch] [--seconds 12] [--json OUT]

For each scenario (see benchmarks/scenarios/README.md):

1. ``--truth``: the same loop, synchronised after every phase and timed, gives the measured truth. When
   the kind the documented rules give to those shares is not one the scenario expects on this device,
   the scenario is reported as "expectation wrong on this machine" and xfertop is not scored on it.
2. plain: ``python SCRIPT`` (the reference exit code, result line and samples/s).
3. each mode, with a private ring directory (``XFERTOP_DIR``) per run:
   - ``run``:   ``python -m xfertop run -- python SCRIPT`` (as a user types it: copies are timed by default
     since 9a1b8f0)
   - ``runct``: ``python -m xfertop run --copy-timing -- python SCRIPT``
   - ``run-nocopy``: ``python -m xfertop run --no-copy-timing -- python SCRIPT`` (the default before 9a1b8f0)
   - ``watch``: ``python SCRIPT`` with every DataLoader iteration going through ``xfertop.watch(loader)``,
     injected without editing the script: a ``sitecustomize.py`` in a temporary directory put first on
     ``PYTHONPATH`` replaces ``DataLoader.__iter__`` with ``iter(xfertop.watch(<the loader, iterated by the
     original __iter__>))`` (child processes, such as torchrun's ranks, inherit it; see _WATCH_SITE).
   - ``attach``: ``python SCRIPT`` sampled by ``python -m xfertop attach PID --once --json --seconds 2``
     (py-spy) back to back; PID is the script, or rank 0 for DDP jobs.
   While the job runs, xfertop is polled about every ``--poll`` seconds and each verdict (kind, headline,
   advice) is kept with its time: by default (``--poller stream``) one benchmarks/snapshot_stream.py
   process prints the live view's snapshot every ``--poll`` seconds, so the job shares its machine with
   what a user's live view costs; ``--poller once`` runs ``python -m xfertop --once --json`` each time (a
   new interpreter every poll: on the H200 that load made scenario r's ``next()`` ~50x slower). Attach
   mode polls the attach command.

Scored per scenario and mode: the verdict (majority kind of the last 5 polls that saw the job) against
the expected kinds; for a job with a long set-up (``Scenario.setup_line``), every poll answered before
its set-up line must read warming-up ("not in a training loop"), never a bottleneck; required advice
present and forbidden advice absent (in most of those last polls); the six host-clock parts of the
verdicts' evidence (``host_<part>_share``: wait, loop_pre, copy, model, sync, loop_post; the mean of those
polls, or `xfertop run`'s end-of-run ``host_shares``) next to the truth's ``parts``, and ``p_err``, the
largest gap between them in points;
seconds from the job's first step (its ring file appearing, or step 0's start time) to the first right
verdict; exit code and result line (step counts and rates masked) equal to the plain run's; samples/s
relative to the plain run. The plain run is polled the same way (an empty ring directory), so the
polling's own CPU cost falls on both sides of that ratio.

Prints a table and, with ``--json OUT``, writes every poll and score. Works on a CPU-only machine and on
a GPU machine; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCENARIO_DIR = ROOT / "benchmarks" / "scenarios"
SNAPSHOT_STREAM = ROOT / "benchmarks" / "snapshot_stream.py"
POLLERS = ("stream", "once")
if str(SCENARIO_DIR) not in sys.path:
    sys.path.insert(0, str(SCENARIO_DIR))

from expectations import (  # noqa: E402
    PARTS,
    SCENARIOS,
    SETUP_KINDS,
    Expect,
    Scenario,
    advice_findings,
    truth_kind,
    truth_parts,
)

MODES = ("run", "runct", "run-nocopy", "watch", "attach")
#: The verdict's evidence keys of the host clock's six parts (issue 20), by part.
HOST_PART_KEYS = {part: f"host_{part}_share" for part in PARTS}
FINAL_POLLS = 5
#: Extra wall time a job may take beyond --seconds (imports, compile, torchrun rendezvous) before it is
#: killed.
STARTUP_ALLOWANCE_S = 150
_MASKED = re.compile(r"\b(steps|samples_per_s)=\S+")

#: The watch mode's injection: a sitecustomize put first on PYTHONPATH (the job's file is not touched).
_WATCH_SITE = '''\
"""Written by benchmarks/score_scenarios.py (watch mode): every DataLoader iteration goes through
xfertop.watch(loader), as if the script said `for batch in xfertop.watch(loader)`."""
import os
import sys


def _scenario_watch_install():
    import torch.utils.data as data

    import xfertop

    original = data.DataLoader.__iter__
    if getattr(original, "_scenario_watch", False):
        return

    class Unwatched:
        """The loader as xfertop.watch sees it: iterated by the original DataLoader.__iter__."""

        def __init__(self, loader):
            self._loader = loader

        def __iter__(self):
            return original(self._loader)

        def __len__(self):
            return len(self._loader)

        def __getattr__(self, name):
            if name == "_loader":
                raise AttributeError(name)
            return getattr(self._loader, name)

    def __iter__(self):
        return iter(xfertop.watch(Unwatched(self)))

    __iter__._scenario_watch = True
    data.DataLoader.__iter__ = __iter__


if os.environ.get("SCENARIO_WATCH") == "1":
    try:
        _scenario_watch_install()
    except Exception as exc:  # the job must run anyway
        sys.stderr.write(f"scenario watch wrapper: {exc}\\n")
'''


# -- running one job ------------------------------------------------------------------------------------
@dataclass
class Poll:
    t: float  # seconds since the job was launched, when the answer was in
    kind: str | None  # None: the job was not seen
    severity: str | None = None
    headline: str = ""
    advice: list[str] = field(default_factory=list)
    jobs: int = 0
    ranks: int = 0
    steps: int = 0
    clock: str | None = None
    shares: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    #: NVML utilisation of each GPU in the snapshot (percent), what the sync-bound rule reads.
    gpu_util: list[float | None] = field(default_factory=list)
    #: Some rank of the job stepped moments ago. A poll of a job that stopped stepping (tearing down
    #: after its loop) is not scored: the live view keeps the verdict of the last stepping window there
    #: (analysis.job_analysis), which a one-shot `--once` cannot know.
    stepping: bool = True
    #: The verdict's six host-clock parts (evidence host_<part>_share), where it carries them.
    parts: dict[str, float] | None = None
    #: The name of the rule that gave the verdict (its top-level ``rule``), where it says.
    rule: str | None = None


@dataclass
class JobRun:
    mode: str
    command: list[str]
    exit_code: int | None
    wall_s: float
    result_line: str
    skipped: str
    truth: dict[str, Any] | None
    polls: list[Poll]
    first_step_s: float | None  # since launch
    stdout_tail: str
    stderr_tail: str
    timed_out: bool = False
    #: `xfertop run`'s end-of-run summary (the JSON it keeps in <XFERTOP_DIR>/summaries/), run modes only.
    summary: dict[str, Any] | None = None
    #: Seconds from launch to the job's set-up line (Scenario.setup_line), where it has one and printed it.
    setup_end_s: float | None = None


def _python() -> str:
    return sys.executable


def _env_base(omp_threads: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if omp_threads:
        env["OMP_NUM_THREADS"] = omp_threads
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _with_xfertop_path(env: dict[str, str], first: str | None = None) -> dict[str, str]:
    """PYTHONPATH that finds this checkout's xfertop (installed or not)."""
    parts = [p for p in (first, str(ROOT / "src"), env.get("PYTHONPATH")) if p]
    out = dict(env)
    out["PYTHONPATH"] = os.pathsep.join(parts)
    return out


def _tail(path: Path, chars: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def _last_line(text: str, prefix: str) -> str:
    for line in reversed(text.splitlines()):
        if line.startswith(prefix):
            return line.strip()
    return ""


def _job_of(snapshot: dict[str, Any]) -> tuple[dict[str, Any] | None, int]:
    items = (snapshot.get("jobs") or {}).get("items") or []
    if not items:
        return None, 0
    best = max(
        items,
        key=lambda j: (
            len(j.get("ranks") or []),
            sum(r.get("steps_recorded") or 0 for r in j.get("ranks") or []),
        ),
    )
    return best, len(items)


def _stepping(rank: dict[str, Any]) -> bool:
    """As xfertop.analysis.evidence.stepping_now: live, last step no older than 3 typical steps (1.5 s)."""
    window = rank.get("window") or {}
    typical_s = ((window.get("wall") or {}).get("p50_ms") or 0.0) / 1000
    return rank.get("status") == "live" and (rank.get("heartbeat_age_s") or 0.0) <= max(1.5, 3 * typical_s)


def host_parts(evidence: dict[str, Any] | None) -> dict[str, float] | None:
    """The six host-clock parts of a verdict's evidence (or of a summary's ``host_shares``), or None
    where any is missing."""
    if not evidence:
        return None
    if all(part in evidence for part in PARTS):  # host_shares: keyed by part
        values = {part: evidence[part] for part in PARTS}
    else:
        values = {part: evidence.get(key) for part, key in HOST_PART_KEYS.items()}
    if any(not isinstance(v, (int, float)) for v in values.values()):
        return None
    return {part: float(v) for part, v in values.items()}


def _poll_from_verdict(t: float, verdict: dict[str, Any], jobs: int, ranks: int, steps: int) -> Poll:
    evidence = verdict.get("evidence") or {}
    shares = {
        k: evidence.get(k)
        for k in (
            "data_wait_share",
            "copy_share",
            "compute_share",
            "gpu_idle_share",
            "gpu_busy_share",
            "dataloader_workers",
            "steps",
            "source",
            "main_loading_share",
            "sync_share",
            "other_share",
            "copies_measured",
            "gpu_rx_bytes_per_s",
            "rx_link_share",
            "early",
            "worker_start_wait_share",
        )
        if k in evidence
    }
    return Poll(
        t=t,
        kind=verdict.get("kind"),
        severity=verdict.get("severity"),
        headline=verdict.get("headline", ""),
        advice=list(verdict.get("advice") or []),
        jobs=jobs,
        ranks=ranks,
        steps=steps,
        clock=evidence.get("clock"),
        shares=shares,
        parts=host_parts(evidence),
        rule=verdict.get("rule"),
    )


class Poller(threading.Thread):
    """Polls xfertop while the job runs: ``stream`` (one snapshot_stream.py process, a poll per snapshot
    it prints), ``once`` (``--once --json`` each time) on the ring directory, or ``attach``."""

    def __init__(
        self,
        kind: str,
        env: dict[str, str],
        launched: float,
        interval: float,
        proc: subprocess.Popen[bytes],
        ring_dir: Path,
        ddp: bool,
    ) -> None:
        super().__init__(daemon=True)
        if kind not in (*POLLERS, "attach"):
            raise ValueError(f"unknown poller {kind!r}")
        self.kind, self.env, self.launched, self.interval = kind, env, launched, interval
        self.proc, self.ring_dir, self.ddp = proc, ring_dir, ddp
        self.polls: list[Poll] = []
        self.first_step_mono_ns: int | None = None
        self.stop_event = threading.Event()

    def run(self) -> None:
        if self.kind == "stream":
            self._stream()
            return
        while not self.stop_event.is_set() and self.proc.poll() is None:
            started = time.monotonic()
            try:
                self.polls.append(self._attach() if self.kind == "attach" else self._once())
            except Exception as exc:  # a poll that failed is a poll without a verdict
                self.polls.append(Poll(t=time.monotonic() - self.launched, kind=None, error=repr(exc)))
            left = self.interval - (time.monotonic() - started)
            if left > 0:
                self.stop_event.wait(left)

    def _stream(self) -> None:
        """One snapshot_stream.py for the whole job; each line it prints is a poll."""
        command = [_python(), str(SNAPSHOT_STREAM), "--interval", f"{self.interval:g}"]
        # stderr to a file, not a pipe: a chatty stderr never blocks the stream.
        with tempfile.TemporaryFile() as errors:
            stream = subprocess.Popen(
                command, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors
            )
            assert stream.stdout is not None
            try:
                self._read_stream(stream.stdout.fileno())
            finally:
                stream.terminate()
                try:
                    stream.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    stream.kill()
                    stream.wait()
                stream.stdout.close()
            if stream.returncode not in (0, -signal.SIGTERM) and not self.stop_event.is_set():
                errors.seek(0)  # it ended before the job: say why in one poll
                error = errors.read().decode(errors="replace")[-300:]
                self.polls.append(Poll(t=time.monotonic() - self.launched, kind=None, error=error))

    def _read_stream(self, fd: int) -> None:
        pending = b""
        while not self.stop_event.is_set() and self.proc.poll() is None:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:  # the stream ended
                return
            *lines, pending = (pending + chunk).split(b"\n")
            for line in filter(None, (raw.strip() for raw in lines)):
                t = time.monotonic() - self.launched
                try:
                    self.polls.append(self._from_snapshot(t, json.loads(line)))
                except (ValueError, TypeError) as exc:
                    self.polls.append(Poll(t=t, kind=None, error=repr(exc)))

    def _once(self) -> Poll:
        out = subprocess.run(
            [_python(), "-m", "xfertop", "--once", "--json"], env=self.env, capture_output=True, timeout=60
        )
        t = time.monotonic() - self.launched
        if out.returncode != 0:
            return Poll(t=t, kind=None, error=out.stderr.decode(errors="replace")[-300:])
        return self._from_snapshot(t, json.loads(out.stdout))

    def _from_snapshot(self, t: float, snapshot: dict[str, Any]) -> Poll:
        """A poll from one snapshot document (schema xfertop.snapshot/1)."""
        job, jobs = _job_of(snapshot)
        if job is None:
            return Poll(t=t, kind=None, error=(snapshot.get("jobs") or {}).get("error") or "")
        ranks = job.get("ranks") or []
        for rank in ranks:
            for step in rank.get("recent_steps") or []:
                if step.get("step") == 0 and step.get("start_monotonic_ns"):
                    ns = int(step["start_monotonic_ns"])
                    if self.first_step_mono_ns is None or ns < self.first_step_mono_ns:
                        self.first_step_mono_ns = ns
        steps = max((r.get("steps_recorded") or 0 for r in ranks), default=0)
        poll = _poll_from_verdict(t, job.get("verdict") or {}, jobs, len(ranks), steps)
        poll.stepping = any(_stepping(rank) for rank in ranks)
        poll.gpu_util = [g.get("util_gpu_percent") for g in snapshot.get("gpus") or []]
        return poll

    def _attach(self) -> Poll:
        pid = _attach_target(self.proc.pid, self.ddp)
        if pid is None:
            time.sleep(0.5)
            return Poll(t=time.monotonic() - self.launched, kind=None, error="no rank process yet")
        out = subprocess.run(
            [_python(), "-m", "xfertop", "attach", str(pid), "--once", "--json", "--seconds", "2"],
            env=self.env,
            capture_output=True,
            timeout=60,
        )
        t = time.monotonic() - self.launched
        if out.returncode != 0:
            return Poll(t=t, kind=None, error=out.stderr.decode(errors="replace")[-300:])
        report = json.loads(out.stdout)
        return _poll_from_verdict(t, report.get("verdict") or {}, 1, len(report.get("ranks") or []), 0)


def mark_attach_stepping(polls: list[Poll], loop_end_s: float | None) -> None:
    """Which attach windows were of the job's loop, decided without the verdict under test where it can
    be: a window that ended after the job printed its result line (its loop was over: teardown) is not
    scored, nor are the windows before the first one with a verdict (imports, model build, the first
    batches). A window in the middle of the loop that reads "not in a training loop" is scored, and wrong.
    At --seconds 6 and 2 s windows, 2-3 of a job's windows are of its loop; its end would otherwise fill
    the last five."""
    started = False
    for poll in polls:
        started = started or (poll.kind is not None and poll.kind != "warming-up")
        poll.stepping = started and (loop_end_s is None or poll.t <= loop_end_s)


class ResultWatch(threading.Thread):
    """When did the job print its result line (its loop is over; what follows is teardown)? Or, with
    ``prefix``, another line of its stdout (e.g. the end of its set-up)."""

    def __init__(self, stdout_path: Path, proc: subprocess.Popen[bytes], prefix: str = "result ") -> None:
        super().__init__(daemon=True)
        self.stdout_path, self.proc = stdout_path, proc
        self.prefix = prefix.encode()
        self.seen_mono: float | None = None

    def run(self) -> None:
        while self.seen_mono is None:
            running = self.proc.poll() is None
            with contextlib.suppress(OSError):
                text = self.stdout_path.read_bytes()
                if text.startswith(self.prefix) or b"\n" + self.prefix in text:
                    self.seen_mono = time.monotonic()
                    return
            if not running:
                return
            time.sleep(0.05)


def _children(pid: int) -> list[int]:
    found = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return found


def _environ_rank(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    for entry in raw.split(b"\0"):
        if entry.startswith(b"RANK="):
            return entry[5:].decode()
    return None


def _attach_target(pid: int, ddp: bool) -> int | None:
    """The script itself, or for a DDP job the descendant whose environment says RANK=0."""
    if not ddp:
        return pid
    queue = collections.deque([pid])
    while queue:
        current = queue.popleft()
        if _environ_rank(current) == "0":
            return current
        queue.extend(_children(current))
    return None


class RingWatch(threading.Thread):
    """When did the first ring file appear (the reporter creates it at the job's first step boundary)?"""

    def __init__(self, ring_dir: Path, proc: subprocess.Popen[bytes]) -> None:
        super().__init__(daemon=True)
        self.ring_dir, self.proc = ring_dir, proc
        self.seen_mono: float | None = None

    def run(self) -> None:
        while self.seen_mono is None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                if any(name.endswith(".ring") for name in os.listdir(self.ring_dir)):
                    self.seen_mono = time.monotonic()
                    return
            time.sleep(0.05)


def run_job(
    scenario: Scenario,
    mode: str,
    seconds: float,
    *,
    poll_interval: float = 1.0,
    omp_threads: str | None = None,
    log_dir: Path | None = None,
    python: str | None = None,
    extra_args: tuple[str, ...] = (),
    env_extra: dict[str, str] | None = None,
    poll: bool = True,
    poller_kind: str = "stream",
) -> JobRun:
    """Run one scenario in one mode ("truth", "plain", "run", "runct", "watch", "attach") and poll it.
    ``extra_args`` go to the script (e.g. ``("--device", "cpu")``); ``env_extra`` to every process of the
    run, the pollers included (e.g. CUDA_VISIBLE_DEVICES); ``poll=False`` leaves the job alone (no
    polls: the run modes still leave their end-of-run summary; give the truth and
    the run it is compared with the same); ``poller_kind``: "stream" or "once" (the module docstring),
    for every mode but attach."""
    py = python or _python()
    script = str(SCENARIO_DIR / scenario.script)
    job_cmd = [py, script, *scenario.args, *extra_args, "--seconds", f"{seconds:g}"]
    work = Path(tempfile.mkdtemp(prefix=f"scenario-{scenario.id}-{mode}-"))
    ring_dir = work / "rings"
    ring_dir.mkdir(mode=0o700)
    env = _env_base(omp_threads)
    env.update(env_extra or {})
    env["XFERTOP_DIR"] = str(ring_dir)
    poll_env = _with_xfertop_path(env)
    if mode == "truth":
        command, job_env = [*job_cmd, "--truth"], env
    elif mode in ("plain", "attach"):
        command, job_env = job_cmd, env
    elif mode in ("run", "runct", "run-nocopy"):
        copy_timing = {"run": [], "runct": ["--copy-timing"], "run-nocopy": ["--no-copy-timing"]}[mode]
        command = [py, "-m", "xfertop", "run", *copy_timing, "--", *job_cmd]
        job_env = poll_env
    elif mode == "watch":
        site = work / "watch_site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(_WATCH_SITE)
        command, job_env = job_cmd, _with_xfertop_path(env, first=str(site))
        job_env["SCENARIO_WATCH"] = "1"
    else:
        raise ValueError(f"unknown mode {mode!r}")
    out_path, err_path = work / "stdout.txt", work / "stderr.txt"
    launched = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            command,
            env=job_env,
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=str(ROOT),
        )
    poller = None
    ring_watch = RingWatch(ring_dir, proc)
    ring_watch.start()
    result_watch = ResultWatch(out_path, proc)
    result_watch.start()
    setup_watch = None
    if scenario.setup_line:
        setup_watch = ResultWatch(out_path, proc, prefix=scenario.setup_line)
        setup_watch.start()
    # The truth is polled too, its polls unused: every run then shares its machine with the same poll
    # load. A job whose CPU work is parallel over every core slows when anything else runs (scenario r
    # on the H200: its unpolled truth ran 2.8-2.9x the samples/s of its polled plain run).
    if poll:
        poller = Poller(
            "attach" if mode == "attach" else poller_kind,
            poll_env,
            launched,
            poll_interval,
            proc,
            ring_dir,
            scenario.ddp,
        )
        poller.start()
    timed_out = False
    try:
        proc.wait(timeout=seconds + STARTUP_ALLOWANCE_S)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    wall = time.monotonic() - launched
    if poller is not None:
        poller.stop_event.set()
        poller.join(timeout=90)
    ring_watch.join(timeout=1)
    result_watch.join(timeout=1)
    setup_end = None
    if setup_watch is not None:
        setup_watch.join(timeout=1)
        setup_end = None if setup_watch.seen_mono is None else setup_watch.seen_mono - launched
    if poller is not None and mode == "attach":
        loop_end = None if result_watch.seen_mono is None else result_watch.seen_mono - launched
        mark_attach_stepping(poller.polls, loop_end)
    stdout = out_path.read_text(errors="replace")
    truth = None
    if "--truth" in command:  # the truth mode, or a run mode given --truth (on a CPU: one run, two clocks)
        with contextlib.suppress(ValueError):
            line = _last_line(stdout, "{")
            truth = json.loads(line) if line else None
    first_step = None
    candidates = []
    if ring_watch.seen_mono is not None:
        candidates.append(ring_watch.seen_mono - launched)
    if poller is not None and poller.first_step_mono_ns is not None:
        candidates.append(poller.first_step_mono_ns / 1e9 - launched)
    if candidates:
        first_step = max(0.0, min(candidates))
    run = JobRun(
        mode=mode,
        command=command,
        exit_code=proc.returncode,
        wall_s=round(wall, 2),
        result_line=_last_line(stdout, "result "),
        skipped=_last_line(stdout, "skipped:"),
        truth=truth,
        polls=poller.polls if poller else [],
        first_step_s=first_step,
        stdout_tail=stdout[-1500:],
        stderr_tail=_tail(err_path),
        timed_out=timed_out,
        summary=_run_summary(ring_dir) if mode in ("run", "runct", "run-nocopy") else None,
        setup_end_s=setup_end,
    )
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        for name in ("stdout.txt", "stderr.txt"):
            with contextlib.suppress(OSError):
                shutil.copy(work / name, log_dir / f"{scenario.id}-{mode}-{name}")
        if any(ring_dir.glob("*.ring")):  # the rings and any summary: every step, to read the verdict again
            with contextlib.suppress(OSError):
                shutil.copytree(ring_dir, log_dir / f"{scenario.id}-{mode}-rings")
    shutil.rmtree(work, ignore_errors=True)
    return run


def _run_summary(ring_dir: Path) -> dict[str, Any] | None:
    """The end-of-run summary `xfertop run` kept beside its rings (<XFERTOP_DIR>/summaries/*.json; the run
    has a ring directory of its own, so the newest file is its summary), or None."""
    with contextlib.suppress(OSError, ValueError):
        files = sorted((ring_dir / "summaries").glob("*.json"), key=lambda path: path.stat().st_mtime)
        if files:
            return json.loads(files[-1].read_text())
    return None


# -- scoring ----------------------------------------------------------------------------------------------
def masked(result_line: str) -> str:
    return _MASKED.sub(lambda m: f"{m.group(1)}=*", result_line)


def samples_per_s(result_line: str) -> float | None:
    match = re.search(r"samples_per_s=([0-9.]+)", result_line)
    return float(match.group(1)) if match else None


def score_mode(run: JobRun, plain: JobRun | None, expect: Expect) -> dict[str, Any]:
    seen = [p for p in run.polls if p.kind is not None]
    final = [p for p in seen if p.stepping][-FINAL_POLLS:] or seen[-FINAL_POLLS:]
    counts = collections.Counter(p.kind for p in final)
    majority = None
    if counts:
        top = max(counts.values())
        majority = next(p.kind for p in reversed(final) if counts[p.kind] == top)
    right = majority in expect.kinds
    findings = [advice_findings(p.advice, expect) for p in final]
    need = len(final) // 2 + 1 if final else 1
    missing = sorted({m for f, _ in findings for m in f if sum(m in g for g, _ in findings) >= need})
    present = sorted({x for _, f in findings for x in f if sum(x in g for _, g in findings) >= need})
    first_step = run.first_step_s
    setup = setup_findings(run)
    with_parts = [p.parts for p in final if p.parts]
    parts = (
        {part: round(sum(ps[part] for ps in with_parts) / len(with_parts), 4) for part in PARTS}
        if with_parts
        else None
    )
    summary = run.summary or {}
    last_kind = (summary.get("last_verdict") or {}).get("kind")
    first_right = next((p.t for p in seen if p.kind in expect.kinds), None)
    first_verdict = next((p.t for p in seen if p.kind != "warming-up"), None)
    last = final[-1] if final else None
    base_rate = samples_per_s(plain.result_line) if plain else None
    rate = samples_per_s(run.result_line)
    return {
        "mode": run.mode,
        "verdict": majority,
        "final_kinds": [p.kind for p in final],
        "verdict_right": bool(right),
        "required_missing": missing,
        "forbidden_present": present,
        "advice_ok": bool(final) and not missing and not present,
        "right": bool(right)
        and bool(final)
        and not missing
        and not present
        and setup.get("right") is not False,
        # Before the loop (Scenario.setup_line): polls answered before the set-up line, their kinds.
        "setup": setup,
        # The six host parts (mean of the scored polls' evidence) and the rule of the last verdict.
        "host_parts": parts,
        "rules": [p.rule for p in final],
        # `xfertop run`'s own end-of-run summary: the whole run's host shares and its last verdict.
        "summary_host_shares": summary.get("host_shares"),
        "summary_last_kind": last_kind,
        "polls": len(run.polls),
        "polls_with_job": len(seen),
        "jobs_seen_max": max((p.jobs for p in seen), default=0),
        "ranks_max": max((p.ranks for p in seen), default=0),
        "first_step_s": None if first_step is None else round(first_step, 2),
        "t_first_right_s": (
            None
            if first_right is None
            else round(first_right - (first_step if first_step is not None else 0.0), 2)
        ),
        "t_first_right_from_launch_s": None if first_right is None else round(first_right, 2),
        "t_first_verdict_from_launch_s": None if first_verdict is None else round(first_verdict, 2),
        "exit_code": run.exit_code,
        "exit_match": plain is not None and run.exit_code == plain.exit_code,
        "result_line": run.result_line,
        "result_match": plain is not None
        and bool(run.result_line)
        and masked(run.result_line) == masked(plain.result_line),
        "samples_per_s": rate,
        "samples_rel": round(rate / base_rate, 3) if rate and base_rate else None,
        "last_headline": last.headline if last else "",
        "last_advice": last.advice if last else [],
        "last_shares": last.shares if last else {},
        "gpu_util_final": [p.gpu_util for p in final],
        # Every scored poll's headline and advice, so a run can be read (or scored again) afterwards.
        "final_polls": [
            {"t": round(p.t, 1), "headline": p.headline, "advice": p.advice, "rule": p.rule, "parts": p.parts}
            for p in final
        ],
        "timed_out": run.timed_out,
        "timeline": [
            [round(p.t, 1), p.kind, p.shares.get("gpu_busy_share"), p.shares.get("gpu_rx_bytes_per_s")]
            for p in run.polls
        ],
        "errors": sorted({p.error for p in run.polls if p.error})[:3],
    }


def setup_findings(run: JobRun) -> dict[str, Any]:
    """For a job with a set-up line: the polls answered before it (every window of them in the set-up)
    and their kinds; ``right`` is False when one of them named a bottleneck (any kind but SETUP_KINDS),
    None when no poll before it saw the job (nothing to judge), True otherwise."""
    if run.setup_end_s is None:
        return {}
    before = [p for p in run.polls if p.t <= run.setup_end_s and p.kind is not None]
    kinds = [p.kind for p in before]
    return {
        "end_s": round(run.setup_end_s, 2),
        "polls": len(before),
        "kinds": kinds,
        "right": (all(kind in SETUP_KINDS for kind in kinds) if kinds else None),
        "headlines": sorted({p.headline for p in before})[:3],
    }


def parts_error(parts: dict[str, float] | None, truth: dict[str, Any]) -> float | None:
    """The largest gap, in points, between xfertop's six host parts and the truth's."""
    if not parts:
        return None
    reference = truth_parts(truth)
    return round(max(abs(parts[part] - reference[part]) for part in PARTS) * 100, 1)


def _share_error(shares: dict[str, Any], truth: dict[str, Any]) -> float | None:
    """xfertop's input share (GPU idle gap on the GPU clock, else the CPU data wait) minus the truth's
    data share, in points of the step: how far the verdict's main number is from the measured one."""
    if shares.get("source") == "sampled":  # attach: waiting for plus producing the next batch
        if shares.get("data_wait_share") is None:
            return None
        measured = shares["data_wait_share"] + (shares.get("main_loading_share") or 0.0)
    else:
        measured = shares.get("gpu_idle_share")
        if measured is None:
            measured = shares.get("data_wait_share")
    if measured is None:
        return None
    return round(100 * (measured - truth["data_share"]), 1)


def device_kind(python: str | None = None) -> tuple[str, int]:
    """("cuda", GPU count) or ("cpu", 0), as the jobs' interpreter sees it."""
    code = "import torch; print(torch.cuda.is_available(), torch.cuda.device_count())"
    out = subprocess.run([python or _python(), "-c", code], capture_output=True, text=True, timeout=120)
    words = (out.stdout.strip().splitlines() or [""])[-1].split()
    if len(words) == 2 and words[0] == "True":
        return "cuda", int(words[1])
    return "cpu", 0


def score_scenario(
    scenario: Scenario,
    modes: list[str],
    seconds: float,
    device: str,
    *,
    poll_interval: float = 1.0,
    omp_threads: str | None = None,
    log_dir: Path | None = None,
    python: str | None = None,
    progress: Any = None,
    env_extra: dict[str, str] | None = None,
    poller: str = "stream",
) -> dict[str, Any]:
    def say(text: str) -> None:
        if progress:
            progress(text)

    expect = scenario.expect(device)
    entry: dict[str, Any] = {
        "id": scenario.id,
        "script": scenario.script,
        "args": list(scenario.args),
        "what": scenario.what,
        "device": device,
        "modes": {},
    }
    if expect is None:
        entry["status"] = f"n/a on {device}: {scenario.na.get(device, 'no expectation')}"
        return entry
    entry["expect"] = {
        "kinds": list(expect.kinds),
        "required": [r if isinstance(r, str) else list(r) for r in expect.required],
        "forbidden": list(expect.forbidden),
    }
    kw = {
        "poll_interval": poll_interval,
        "omp_threads": omp_threads,
        "log_dir": log_dir,
        "python": python,
        "env_extra": env_extra,
        "poller_kind": poller,
    }
    if env_extra:
        entry["env"] = dict(env_extra)
    say(f"{scenario.id}: plain")
    plain = run_job(scenario, "plain", seconds, **kw)
    entry["plain"] = {
        "exit_code": plain.exit_code,
        "result_line": plain.result_line,
        "wall_s": plain.wall_s,
        "jobs_seen": max((p.jobs for p in plain.polls), default=0),
        "stderr_tail": plain.stderr_tail[-600:] if plain.exit_code else "",
    }
    if plain.skipped:
        entry["status"] = plain.skipped
        return entry
    say(f"{scenario.id}: truth")
    truth_run = run_job(scenario, "truth", seconds, **kw)
    truth = truth_run.truth
    entry["truth"] = truth
    if truth is None or "truth" not in truth:
        entry["status"] = f"truth run failed (exit {truth_run.exit_code}): {truth_run.stderr_tail[-300:]}"
        return entry
    entry["truth_kind"] = truth_kind(truth, device, expect)
    scored = entry["truth_kind"] in expect.kinds
    entry["status"] = (
        "scored"
        if scored
        else (
            f"expectation wrong on this machine: the truth reads {entry['truth_kind']}, "
            f"expected {'/'.join(expect.kinds)}"
        )
    )
    for mode in modes:
        say(f"{scenario.id}: {mode}")
        run = run_job(scenario, mode, seconds, **kw)
        result = score_mode(run, plain, expect)
        na = scenario.modes_na.get(mode)
        result["scored"] = scored and na is None
        if na is not None:
            result["status"] = f"n/a: {na}"
        reference = truth["truth"]
        if result["verdict"] == "straggler" and truth.get("ranks"):  # its evidence is the straggler's
            reference = max((r["truth"] for r in truth["ranks"]), key=lambda t: t["data_share"])
        result["data_share_error"] = _share_error(result.get("last_shares") or {}, reference)
        result["parts_error"] = parts_error(result.get("host_parts"), reference)
        result["summary_parts_error"] = parts_error(host_parts(result.get("summary_host_shares")), reference)
        if not result["scored"]:
            result["right"] = None
        entry["modes"][mode] = result
    # attach has no ring, so no first step of its own: borrow the earliest one the other modes saw (the
    # same script, started the same way) and say so.
    known = [r["first_step_s"] for r in entry["modes"].values() if r["first_step_s"] is not None]
    for result in entry["modes"].values():
        result["first_step_estimated"] = False
        if result["first_step_s"] is None and known and result["t_first_right_from_launch_s"] is not None:
            result["first_step_estimated"] = True
            result["t_first_right_s"] = round(result["t_first_right_from_launch_s"] - min(known), 2)
    return entry


# -- output ------------------------------------------------------------------------------------------------
def parts_text(parts: dict[str, float] | None) -> str:
    """Six parts in percent, in step order: wait/loop_pre/copy/model/sync/loop_post."""
    if not parts:
        return "-"
    return "/".join(f"{parts[part] * 100:.0f}" for part in PARTS)


def _truth_text(entry: dict[str, Any]) -> str:
    truth = (entry.get("truth") or {}).get("truth")
    if not truth:
        return "-"
    return f"{entry.get('truth_kind')} {parts_text(truth_parts(truth))}"


def _said_parts(result: dict[str, Any]) -> str:
    """xfertop's six parts: the scored polls' mean, else (run modes) the end-of-run summary's, marked."""
    if result.get("host_parts"):
        return parts_text(result["host_parts"])
    summary = host_parts(result.get("summary_host_shares"))
    return f"{parts_text(summary)} (sum)" if summary else "-"


def table(entries: list[dict[str, Any]]) -> str:
    header = [
        "id",
        "mode",
        "truth: kind, % wait/pre/copy/model/sync/post",
        "expected",
        "xfertop said (last 5)",
        "xfertop % wait/pre/copy/model/sync/post",
        "p_err",
        "right",
        "advice",
        "d_err",
        "t_right",
        "exit/res",
        "rate",
    ]
    rows = [header]
    notes = []
    for e in entries:
        expected = "/".join((e.get("expect") or {}).get("kinds", [])) or "-"
        if not e.get("modes"):
            rows.append([e["id"], "-", _truth_text(e), expected, "-", "-", "", "-", "", "", "", "", ""])
            notes.append(f"{e['id']}: {e.get('status', '')}")
            continue
        if e.get("status") != "scored":
            notes.append(f"{e['id']}: {e.get('status', '')}")
        for mode, r in e["modes"].items():
            if r.get("status"):
                notes.append(f"{e['id']} {mode}: {r['status']}")
            if r["verdict"]:
                n = sum(k == r["verdict"] for k in r["final_kinds"])
                said = f"{r['verdict']} {n}/{len(r['final_kinds'])}"
            else:
                said = "no verdict (job not seen)" if not r["polls_with_job"] else "no verdict"
            setup_wrong = (r.get("setup") or {}).get("right") is False
            right = ("yes" if r["verdict_right"] and not setup_wrong else "NO") if r["scored"] else "unscored"
            advice_bits = []
            if r["required_missing"]:
                advice_bits.append("missing " + "; ".join(r["required_missing"]))
            if r["forbidden_present"]:
                advice_bits.append("says " + "; ".join(r["forbidden_present"]))
            setup = r.get("setup") or {}
            if setup.get("right") is False:
                advice_bits.append("before the loop said " + "/".join(sorted(set(setup["kinds"]))))
            elif setup.get("right"):
                advice_bits.append(f"set-up {len(setup['kinds'])}/{len(setup['kinds'])} not in loop")
            advice = ", ".join(advice_bits) if advice_bits else ("ok" if r["polls_with_job"] else "-")
            t_right = "-" if r["t_first_right_s"] is None else f"{r['t_first_right_s']:.1f}s"
            if r.get("first_step_estimated"):
                t_right += "~"
            match = f"{r['exit_code']}/{'=' if r['result_match'] else '!='}"
            rate = "-" if r["samples_rel"] is None else f"{r['samples_rel']:.2f}"
            err = "-" if r.get("data_share_error") is None else f"{r['data_share_error']:+.0f}"
            p_err = r.get("parts_error")
            if p_err is None:
                p_err = r.get("summary_parts_error")
            p_err_text = "-" if p_err is None else f"{p_err:.0f}"
            rows.append(
                [
                    e["id"],
                    mode,
                    _truth_text(e),
                    expected,
                    said,
                    _said_parts(r),
                    p_err_text,
                    right,
                    advice,
                    err,
                    t_right,
                    match,
                    rate,
                ]
            )
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(header))]
    widths[8] = min(widths[8], 60)
    lines = []
    for n, row in enumerate(rows):
        cells = [str(c)[: widths[i]].ljust(widths[i]) for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join([*lines, "", *notes])


def summary_counts(entries: list[dict[str, Any]]) -> dict[str, Any]:
    per_mode: dict[str, dict[str, int]] = {}
    for e in entries:
        for mode, r in e.get("modes", {}).items():
            if not r.get("scored"):
                continue
            c = per_mode.setdefault(mode, {"scored": 0, "verdict_right": 0, "fully_right": 0})
            c["scored"] += 1
            c["verdict_right"] += int(r["verdict_right"])
            c["fully_right"] += int(r["right"])
    return per_mode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated scenario ids (default: all)")
    parser.add_argument("--modes", default="run,watch", help=f"comma-separated, of {','.join(MODES)}")
    parser.add_argument("--seconds", type=float, default=12.0, help="each job's --seconds (default 12)")
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between xfertop polls (default 1)")
    parser.add_argument(
        "--poller",
        choices=POLLERS,
        default="stream",
        help="stream (default): one process prints the live view's snapshots, as light as a user's view; "
        "once: a new `xfertop --once --json` each poll (the load of sessions before the fifteenth)",
    )
    parser.add_argument("--json", dest="json_out", default=None, help="write the full results here")
    parser.add_argument(
        "--logs", default=None, help="keep every job's stdout/stderr and its rings in this directory"
    )
    parser.add_argument(
        "--omp-threads",
        default="auto",
        help="OMP_NUM_THREADS for every job (same in all modes): auto = 1 on a machine "
        "with at most 2 cores, else leave unset; 'none' to leave unset",
    )
    parser.add_argument("--python", default=None, help="interpreter for the jobs (default: this one)")
    parser.add_argument(
        "--parallel",
        type=int,
        default=1,
        help="scenarios at once (default 1). With several GPUs each scenario gets GPUs of "
        "its own (CUDA_VISIBLE_DEVICES; 2 for the DDP job) and every scenario may run "
        "in parallel; with one GPU only host-bound ones (expectations.Scenario."
        "host_bound) share it, the others run alone afterwards. On a small CPU "
        "machine any parallelism distorts every truth",
    )
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown modes {unknown}; choose from {MODES}")
    ids = [i for i in args.only.split(",") if i] or list(SCENARIOS)
    missing = [i for i in ids if i not in SCENARIOS]
    if missing:
        parser.error(f"unknown scenarios {missing}; known: {','.join(SCENARIOS)}")
    omp = args.omp_threads
    if omp == "auto":
        omp = "1" if (os.cpu_count() or 1) <= 2 else None
    elif omp == "none":
        omp = None
    device, gpu_count = device_kind(args.python)
    started = time.time()
    print(
        f"device={device} modes={','.join(modes)} seconds={args.seconds:g} "
        f"OMP_NUM_THREADS={omp or 'unset'} parallel={args.parallel} poller={args.poller}",
        flush=True,
    )
    by_id: dict[str, dict[str, Any]] = {}
    lock = threading.Lock()

    def document() -> dict[str, Any]:
        done = [by_id[sid] for sid in ids if sid in by_id]
        return {
            "schema": "xfertop.scenario-scores/1",
            "device": device,
            "modes": modes,
            "seconds": args.seconds,
            "omp_num_threads": omp,
            "python": args.python or sys.executable,
            "host_cpus": os.cpu_count(),
            "gpus": gpu_count,
            "parallel": args.parallel,
            "poller": args.poller,
            "command": sys.argv,
            "started_unix": started,
            "wall_s": round(time.time() - started, 1),
            "complete": len(done) == len(ids),
            "summary": summary_counts(done),
            "scenarios": done,
        }

    def save() -> None:
        if args.json_out:
            Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json_out).write_text(json.dumps(document(), indent=1, default=str))

    use_pool = device == "cuda" and gpu_count >= 2 and args.parallel > 1
    gpu_pool = list(range(gpu_count)) if use_pool else []
    pool_lock = threading.Condition()

    def take_gpus(sid: str) -> list[int]:
        if not use_pool:
            return []
        want = 2 if SCENARIOS[sid].ddp and gpu_count >= 2 else 1
        with pool_lock:
            while len(gpu_pool) < want:
                pool_lock.wait()
            return [gpu_pool.pop(0) for _ in range(want)]

    def give_gpus(ids_: list[int]) -> None:
        with pool_lock:
            gpu_pool.extend(ids_)
            pool_lock.notify_all()

    def one(sid: str) -> dict[str, Any]:
        gpus = take_gpus(sid)
        env_extra = {"CUDA_VISIBLE_DEVICES": ",".join(map(str, gpus))} if gpus else None
        try:
            entry = score_scenario(
                SCENARIOS[sid],
                modes,
                args.seconds,
                device,
                poll_interval=args.poll,
                omp_threads=omp,
                log_dir=Path(args.logs) if args.logs else None,
                python=args.python,
                env_extra=env_extra,
                poller=args.poller,
                progress=lambda text: print(
                    f"  [{time.time() - started:6.0f}s] {text}"
                    + (f" (GPU {','.join(map(str, gpus))})" if gpus else ""),
                    file=sys.stderr,
                    flush=True,
                ),
            )
        finally:
            if gpus:
                give_gpus(gpus)
        if entry.get("status") != "scored":
            print(f"  {sid}: {entry.get('status')}", file=sys.stderr, flush=True)
        with lock:  # a run cut short still leaves every finished scenario in --json
            by_id[sid] = entry
            save()
        print(table([entry]).split("\n\n")[0].split("\n", 2)[-1], file=sys.stderr, flush=True)
        return entry

    if use_pool:  # one GPU (or two) per scenario: all of them may run at once
        shared = list(ids)
    else:
        shared = [sid for sid in ids if args.parallel > 1 and SCENARIOS[sid].host_bound]
    if shared:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=args.parallel) as pool:
            list(pool.map(one, shared))
    for sid in ids:
        if sid not in by_id:
            one(sid)
    entries = [by_id[sid] for sid in ids]
    print(table(entries))
    counts = summary_counts(entries)
    for mode, c in counts.items():
        print(
            f"{mode}: verdict right {c['verdict_right']}/{c['scored']}, verdict and advice right "
            f"{c['fully_right']}/{c['scored']}"
        )
    print(f"total wall time {time.time() - started:.0f} s")
    save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
