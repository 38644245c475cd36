"""`xfertop probe -- python train.py ARGS`: start the job instrumented (as `xfertop run` does), let the
reporter's probe (reporter/_probe.py) measure the same number of steps as it is, with its input free and
with its copies free too, then stop it (SIGINT from inside, so the script's handlers run; SIGTERM from here
after GRACE_S) and say what each would buy. docs/probe.md.

Exit codes: 0 the probe measured every phase; 3 the job ended before that (or never iterated a
DataLoader under xfertop); 2 usage; 126/127 the command cannot run.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from types import FrameType
from typing import Any

from xfertop import wire
from xfertop.launch.exit_record import new_launch_token
from xfertop.launch.keep import keep_json, kept_name
from xfertop.launch.run import (
    EXIT_NOT_EXECUTABLE,
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    TERMINAL_SIGNALS,
    _die_with_the_launcher,
    _signal_child,
    _terminal_delivers_it,
    child_environment,
    not_executable,
    signals_to_forward,
)
from xfertop.launch.summary_report import ended_how
from xfertop.reporter._probe import ENV, PHASES
from xfertop.sources.jobs.probe_shelf import PROBE_DIR_NAME
from xfertop.sources.jobs.source import job_name

EXIT_NOT_PROBED = 3
#: Interrupted by the user (Ctrl-C, a kill) before the probe was through: as a shell reports SIGINT.
EXIT_INTERRUPTED = 130
#: How long the job has to end after the probe's own SIGINT before SIGTERM.
GRACE_S = 10.0
POLL_S = 0.2
SCHEMA = "xfertop.probe/1"
#: Probes are kept in ``<ring directory>/probes/`` (PROBE_DIR_NAME), the newest KEEP_PROBES of them.
KEEP_PROBES = 20
_LABELS = {
    "as_is": "as is",
    "input_free": "input free",
    "pinned": "pinned copies",
    "copy_free": "copies free too",
}
#: Each phase's name in the report's keys (``<key>_step_s``, ``<key>_spread``).
_KEYS = {"as_is": "baseline", "input_free": "input_free", "pinned": "pinned", "copy_free": "copy_free"}


def phase_figures(
    durations_ns: list[int], phase_ns: int | None, phase_steps: int | None = None
) -> dict[str, float] | None:
    """A phase's step (s): the wall time of its ended blocks, between the synchronisations at their
    ends, over the ``phase_steps`` steps they hold (the median step where no block of it has ended); the
    median step; and the spread (half the steps' interquartile range over their median)."""
    if len(durations_ns) < 2:
        return None
    ordered = sorted(durations_ns)
    quartiles = statistics.quantiles(ordered, n=4)
    median = statistics.median(ordered)
    steps = phase_steps or len(durations_ns)
    step = phase_ns / steps if phase_ns else median
    return {
        "step_s": step / 1e9,
        "median_step_s": median / 1e9,
        "spread": (quartiles[2] - quartiles[0]) / 2 / median if median else 0.0,
    }


def rank_report(result: dict[str, Any]) -> dict[str, Any]:
    """One rank's figures, JSON-ready: each phase's step and spread, and the speed-ups."""
    walls, counted = result.get("phase_ns") or {}, result.get("phase_steps") or {}
    figures = {
        phase: phase_figures(result["durations_ns"].get(phase, []), walls.get(phase), counted.get(phase))
        for phase in PHASES
    }
    base = figures["as_is"]
    report: dict[str, Any] = {
        "pid": result["pid"],
        "rank": result.get("rank"),
        "complete": bool(result.get("complete")),
        "reached": result.get("reached"),
        "steps_per_phase": result["steps"],
        "seconds_per_phase": result.get("seconds") or None,
        "warmup_steps": result["warmup"],
        "copies_made_resident": result.get("resident_copies", 0),
        "tensors_pinned": result.get("pinned_tensors", 0),
        "tensors_already_pinned": result.get("already_pinned_tensors", 0),
    }
    for phase, key in _KEYS.items():
        found = figures[phase]
        report[f"{key}_step_s"] = found["step_s"] if found else None
        report[f"{key}_spread"] = found["spread"] if found else None
        report[f"{key}_median_step_s"] = found["median_step_s"] if found else None
        report[f"{key}_steps"] = len(result["durations_ns"].get(phase, []))
        if phase != "as_is":
            report[f"speedup_{key}"] = (
                base["step_s"] / found["step_s"] if base and found and found["step_s"] else None
            )
    samples = result.get("samples_per_batch") or 0
    report["baseline_samples_per_s"] = samples / base["step_s"] if base and samples else None
    return report


def _phase_length(report: dict[str, Any]) -> str:
    seconds = report.get("seconds_per_phase")
    return f"{seconds:g} s" if seconds else f"{report['steps_per_phase']} steps"


def render_text(job: str, reports: list[dict[str, Any]], ended: str) -> str:
    lines = []
    for report in reports:
        who = f"rank {report['rank']}" if report["rank"] is not None else f"pid {report['pid']}"
        lines.append(
            f"xfertop probe: {job} ({who}): {len(PHASES)} phases of {_phase_length(report)} each, after "
            f"{report['warmup_steps']} steps of warm-up"
        )
        base = report["baseline_step_s"]
        for phase, key in _KEYS.items():
            step = report[f"{key}_step_s"]
            if step is None:
                lines.append(f"  {_LABELS[phase] + ':':17}not reached")
                continue
            text = (
                f"  {_LABELS[phase] + ':':17}{step * 1000:8.1f} ms a step (+-{report[f'{key}_spread']:.0%})"
            )
            if phase == "as_is" and report["baseline_samples_per_s"]:
                text += f", {report['baseline_samples_per_s']:.1f} samples/s"
            elif phase != "as_is" and base:
                text += f": {base / step:.2f}x"
            if not report.get("seconds_per_phase") and report[f"{key}_steps"] < report["steps_per_phase"]:
                text += f" (cut short: {report[f'{key}_steps']} of {report['steps_per_phase']} steps)"
            lines.append(text)
        if report["pinned_step_s"] is not None and not report["tensors_pinned"]:
            already = report["tensors_already_pinned"]
            why = "were already pinned" if already else "could not be pinned (no GPU)"
            lines.append(f"  (the replayed batches {why}: pinned copies is input free again)")
        if report["copies_made_resident"] == 0 and report["copy_free_step_s"] is not None:
            lines.append("  (no copy of a replayed batch was seen: copies free is input free again)")
    if any(report["input_free_step_s"] is not None for report in reports):
        lines.append("  between its two 'as is' blocks the job trained on repeated batches:")
        lines.append("  a probe is a diagnosis run, not a production run")
        lines.append("  (the script's own saving may still have run)")
    lines.append(f"  the job: {ended}")
    return "\n".join(lines) + "\n"


def _results(result_dir: str) -> list[dict[str, Any]]:
    found = []
    for path in sorted(glob.glob(os.path.join(result_dir, "probe-*.json"))):
        with contextlib.suppress(OSError, ValueError), open(path, encoding="utf-8") as handle:
            found.append(json.load(handle))
    return [result for result in found if result.get("calls")]


def _wait(child: subprocess.Popen[bytes], result_dir: str, keep_going: bool, grace_s: float) -> int:
    """The job's status; SIGTERM once every probing rank is through and the job outlives ``grace_s``."""
    done_since: float | None = None
    while True:
        with contextlib.suppress(subprocess.TimeoutExpired):
            return child.wait(timeout=POLL_S)
        if keep_going or done_since == -1.0:
            continue
        results = _results(result_dir)
        if done_since is None and results and all(result.get("complete") for result in results):
            done_since = time.monotonic()
        if done_since is not None and done_since >= 0 and time.monotonic() - done_since > grace_s:
            _signal_child(child, signal.SIGTERM)
            done_since = -1.0


def run_probe(
    command: list[str],
    steps: int,
    warmup: int,
    keep_going: bool = False,
    as_json: bool = False,
    grace_s: float = GRACE_S,
    seconds: float = 0.0,
) -> int:
    """``seconds``: each phase lasts that long (at least 5 steps) instead of ``steps`` steps; 0: steps."""
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("xfertop probe: no command given: `xfertop probe -- python train.py ARGS`", file=sys.stderr)
        return EXIT_USAGE
    if steps < 5 or warmup < 0 or not grace_s > 0 or seconds < 0:
        print(
            "xfertop probe: --steps must be at least 5, --warmup at least 0, --grace more than 0 and "
            "--seconds more than 0",
            file=sys.stderr,
        )
        return EXIT_USAGE
    result_dir = tempfile.mkdtemp(prefix="xfertop-probe-")
    env = child_environment(os.environ, copy_timing=True, launch_token=new_launch_token())
    env[ENV] = json.dumps(
        {
            "result_dir": result_dir,
            "steps": steps,
            "seconds": seconds,
            "warmup": warmup,
            "keep_going": keep_going,
        }
    )
    started: list[subprocess.Popen[bytes]] = []
    interrupted: list[int] = []  # signals the user sent (Ctrl-C, kill): the probe did not stop the job

    def forward(signum: int, _frame: FrameType | None) -> None:
        interrupted.append(signum)
        if signum in TERMINAL_SIGNALS and _terminal_delivers_it():
            return
        if started:
            _signal_child(started[0], signum)

    previous = {sig: signal.signal(sig, forward) for sig in signals_to_forward()}
    try:
        try:
            started.append(
                subprocess.Popen(command, env=env, close_fds=False, preexec_fn=_die_with_the_launcher())
            )
        except FileNotFoundError:
            print(f"xfertop probe: {command[0]}: command not found", file=sys.stderr)
            return EXIT_NOT_FOUND
        except PermissionError:
            print(f"xfertop probe: {command[0]}: {not_executable(command[0])}", file=sys.stderr)
            return EXIT_NOT_EXECUTABLE
        status = _wait(started[0], result_dir, keep_going, grace_s)
        return _report(command, result_dir, status, as_json, bool(interrupted), keep_going)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        shutil.rmtree(result_dir, ignore_errors=True)


#: Why a rank of the job has no figures: its probe starts at its first watched next() on the main thread.
NOT_PROBED_WHY = "it iterated no DataLoader on its main thread under xfertop before the job ended"


def ranks_not_probed(results: list[dict[str, Any]]) -> list[str]:
    """The ranks of a DDP job (WORLD_SIZE as its ranks saw it) that wrote no probe result."""
    sizes = {int(size) for result in results if str(size := result.get("world_size") or "").isdigit()}
    probed = {str(result.get("rank")) for result in results}
    return [str(rank) for rank in range(max(sizes, default=0)) if str(rank) not in probed]


def _report(
    command: list[str], result_dir: str, status: int, as_json: bool, interrupted: bool, keep_going: bool
) -> int:
    job = job_name(tuple(command))
    results = _results(result_dir)
    reports = [rank_report(result) for result in results]
    complete = bool(reports) and all(report["complete"] for report in reports)
    stopped_by = "user" if interrupted else "probe" if complete and not keep_going else None
    # The probe's own SIGINT (or SIGTERM after --grace) is no crash of the job: say who stopped it.
    ended = ended_how(status)
    how = {"user": f"interrupted ({ended})", "probe": f"stopped by the probe ({ended})"}.get(
        stopped_by or "", ended
    )
    missing = ranks_not_probed(results)
    document = {
        "schema": SCHEMA,
        "job": job,
        "argv": command,
        "finished_unix_s": time.time(),
        "job_ended": ended,
        "stopped_by": stopped_by,
        "returncode": status,
        "complete": complete,
        "ranks": reports,
        "ranks_not_probed": [{"rank": rank, "why": NOT_PROBED_WHY} for rank in missing],
    }
    # Kept for the live view's job detail (the last probe of a script), as `xfertop run` keeps summaries.
    name = kept_name(time.time(), job)
    kept = keep_json(document, wire.ring_dir_path(), PROBE_DIR_NAME, name, KEEP_PROBES) if reports else None
    if reports and not kept:
        print(f"xfertop probe: could not keep the report under {wire.ring_dir_path()}", file=sys.stderr)
    if as_json:  # one line, the last of stdout: after whatever the job itself printed there
        print(json.dumps(document), flush=True)
    elif reports:
        sys.stdout.write(render_text(job, reports, how))
        for rank in missing:
            print(f"  rank {rank}: not probed ({NOT_PROBED_WHY})", flush=True)
        if kept:
            print(f"  JSON: {kept}", flush=True)
    if not reports:
        print(
            f"xfertop probe: {job} {how} before any DataLoader was iterated under xfertop: nothing to probe",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED if interrupted else EXIT_NOT_PROBED
    calls = max(result["calls"] for result in results)
    if not complete and interrupted:
        print(
            f"xfertop probe: {job} {how} after {calls} steps, before the probe was through",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    if not complete:
        first = results[0]
        needed = (
            f"before its phases of {first['seconds']:g} s were through (it reached {first['reached']})"
            if first.get("seconds")
            else f"before the probe's {first['warmup'] + len(PHASES) * first['steps']}"
        )
        print(
            f"xfertop probe: {job} {ended} after {calls} steps, {needed}: "
            f"probe with fewer {'--seconds' if first.get('seconds') else '--steps'} or a lower --warmup",
            file=sys.stderr,
        )
        return EXIT_NOT_PROBED
    return 0
