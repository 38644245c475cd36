"""The end-of-run summary as data (JSON, schema ``xfertop.run-summary/1``) and as a few lines of text, and
where its JSON is kept: ``<ring directory>/summaries/`` (private like the rings; the newest
``KEEP_SUMMARIES`` are kept). See docs/summary.md."""

from __future__ import annotations

import os
import signal
from typing import Any

from xfertop import wire
from xfertop.analysis.advice import parts_pct
from xfertop.launch.keep import keep_json, kept_name
from xfertop.launch.summary import SCHEMA, STARTING, PhaseTotals, RunFollower
from xfertop.sources.jobs.source import job_name

KEEP_SUMMARIES = 50
SUMMARY_DIR_NAME = "summaries"


def ended_how(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited {returncode}"


def ring_dir_problem(ring_dir: str) -> str | None:
    """Why no process could write a ring in ``ring_dir`` (read-only, or too full for one), else None."""
    try:
        if not os.path.isdir(ring_dir):
            return None  # the reporter creates it; a failure to is its own line on the job's stderr
        if not os.access(ring_dir, os.W_OK | os.X_OK):
            return f"the ring directory {ring_dir} is not writable"
        free = os.statvfs(ring_dir)
        if free.f_bavail * free.f_frsize < wire.ring_bytes(wire.DEFAULT_CAPACITY):
            return f"the ring directory {ring_dir} is full"
    except OSError as exc:
        return f"the ring directory {ring_dir} cannot be read ({exc.strerror or exc})"
    return None


def build_summary(follower: RunFollower, command: list[str], returncode: int) -> dict[str, Any]:
    """Everything the summary says, JSON-ready."""
    whole = PhaseTotals()
    ranks: list[dict[str, Any]] = []
    samples_per_s = 0.0
    for known in follower.ranks.values():
        whole.merge(known.totals)
        # Over the steps and the time between the loader's iterations: what the job gets, not a step's pace.
        elapsed_ms = known.totals.wall_ms + known.totals.between_ms
        rank_rate = known.totals.samples / (elapsed_ms / 1000) if elapsed_ms > 0 else 0.0
        samples_per_s += rank_rate
        ranks.append(
            {
                "pid": known.rank.pid,
                "rank": known.rank.rank,
                "ring_path": known.rank.ring_path,
                "steps": known.totals.steps,
                "steps_lost": known.steps_lost,
                "samples_per_s": round(rank_rate, 2),
                "shares": known.totals.shares(),
                "ended": known.rank.end.describe() if known.rank.end is not None else None,
            }
        )
    return {
        "schema": SCHEMA,
        "job": follower.job_name or job_name(tuple(command)),
        "command": list(command),
        "ended": ended_how(returncode),
        "returncode": returncode,
        "started_unix_s": round(follower.started_unix_s, 3),
        "duration_s": round(follower.duration_s(), 3),
        "steps": max((known.totals.steps for known in follower.ranks.values()), default=0),
        "steps_lost": sum(known.steps_lost for known in follower.ranks.values()),
        "samples_per_s": round(samples_per_s, 2),
        # The mean step's wall time over every rank's counted steps (ms).
        "step_ms": round(whole.wall_ms / whole.steps, 3) if whole.steps else None,
        "shares": whole.shares() if whole.steps else None,
        # The host's step in six parts adding up to 1; None where the model's calls were not seen.
        "host_shares": whole.host_shares() if whole.steps and whole.shares()["partitioned"] else None,
        # The step clock timed a prefetch thread's next() calls: the shares are that thread's.
        "loader_off_thread": any(known.rank.loader_off_thread for known in follower.ranks.values()),
        "verdicts": [
            {"from_s": span.from_s, "to_s": span.to_s, "kind": span.kind, "headline": span.headline}
            for span in follower.spans
        ],
        "last_verdict": follower.last_verdict,
        "ranks": ranks,
        # No ring at all: maybe none could be written (the job itself ran unharmed).
        "ring_problem": None
        if follower.ranks
        else ring_dir_problem(follower.ring_dir or wire.ring_dir_path()),
    }


def _pct(share: float | None) -> str:
    return "n/a" if share is None else f"{share * 100:.0f}%"


def _host_text(shares: dict[str, Any]) -> str:
    """The host's parts of the steps, in whole percentages that add up to 100 (advice.parts_pct)."""
    host = shares["host"]
    if not shares["partitioned"]:
        parts = {
            "data wait": host["wait"],
            "copy": host["copy"],
            "sync": host["sync"],
            "the rest": host["model"] + host["loop_pre"] + host["loop_post"],
        }
        shown = parts_pct(parts)
        return ", ".join(f"{name} {shown[name]}" for name in parts) + " (model and loop not told apart)"
    parts = {
        "data wait": host["wait"],
        "loop before the model": host["loop_pre"],
        "copy": host["copy"],
        "model": host["model"],
        "sync": host["sync"],
        "loop after the step": host["loop_post"],
    }
    shown = parts_pct(parts)
    return ", ".join(f"{name} {shown[name]}" for name in parts)


_IDLE_WHILE = {
    "wait": "waiting for data",
    "loop_pre": "the loop before the model",
    "copy": "copies",
    "loop_post": "the loop after the step",
    "model": "dispatching the model",
}


def _idle_text(shares: dict[str, Any]) -> str:
    """The GPU's idle share, and what the host did meanwhile (the parts of 1% or more)."""
    parts = shares.get("gpu_idle_in") or {}
    named = [f"{_IDLE_WHILE[name]} {_pct(share)}" for name, share in parts.items() if share >= 0.01]
    return _pct(shares["gpu_idle"]) + (f", while the host was {', '.join(named)}" if named else "")


def _span_label(span: dict[str, Any]) -> str:
    """A span's kind, or "not measured" for the verdict that says so (kind warming-up, its own headline);
    the span before the first step says that no step ran yet."""
    if span["kind"] == STARTING:
        return "starting (no step yet)"
    return "not measured" if span["headline"].startswith("not measured") else str(span["kind"])


def _seconds(value_s: float) -> str:
    return f"{value_s:.0f} s" if value_s < 120 else f"{value_s / 60:.1f} min"


def render_text(summary: dict[str, Any], json_path: str | None) -> str:
    """The lines printed on stderr: a one-line note when the job never stepped, else a short report."""
    head = f"xfertop run: {summary['job']} {summary['ended']} after {_seconds(summary['duration_s'])}"
    if not summary["steps"]:
        if summary.get("ring_problem"):
            return f"{head}; no training step could be recorded: {summary['ring_problem']}.\n"
        return (
            f"{head}; no training step was seen (no DataLoader was iterated under xfertop), "
            "so there is nothing to summarise.\n"
        )
    ranks = len(summary["ranks"])
    rate = summary["samples_per_s"]
    # Samples are counted from the batches a DataLoader gives: a loop without one has steps, no samples.
    rate_text = f"{rate:.1f} samples/s" if rate > 0 else "samples/s not known (no DataLoader batch counted)"
    lines = [f"{head}: {summary['steps']} steps, {rate_text}" + (f" over {ranks} ranks" if ranks > 1 else "")]
    shares = summary["shares"]
    if summary.get("loader_off_thread"):
        lines.append(
            "  where the time went: not measured (the DataLoader is read on a background thread, so the step "
            "clock timed that thread's waits, not the training loop's); that thread waited for the "
            f"DataLoader {_pct(shares['data_wait'])} of its time"
        )
    else:
        between = shares.get("between_iterations") or 0.0
        steps_text = _host_text(shares)
        if between >= 0.01:
            steps_text = (
                f"between the loader's iterations {_pct(between)} (no step ran); in the steps: {steps_text}"
            )
        lines.append(f"  where the time went (host, whole run): {steps_text}")
        if shares["gpu_idle"] is not None:
            lines.append(f"  GPU idle (measured): {_idle_text(shares)}")
    if summary["steps_lost"]:
        lines.append(f"  ({summary['steps_lost']} steps were overwritten in the ring before they were read)")
    # A span under a second in whole seconds ("4-4 s": the first verdict noted just after the first step)
    # is left out of the line, the next span reading on from it; the JSON keeps every span.
    noted = summary["verdicts"]
    spans = [span for span in noted if f"{span['from_s']:.0f}" != f"{span['to_s']:.0f}"] or noted
    if spans:
        lines.append(
            "  verdicts: "
            + ", ".join(f"{span['from_s']:.0f}-{span['to_s']:.0f} s {_span_label(span)}" for span in spans)
        )
    last = summary["last_verdict"]
    if last:
        lines.append(f"  last verdict: {last['headline']}")
        lines.extend(f"  advice: {line}" for line in last["advice"])
    if json_path:
        lines.append(f"  JSON: {json_path}")
    return "\n".join(lines) + "\n"


def write_json(summary: dict[str, Any], ring_dir: str) -> str | None:
    """Keep the summary in ``<ring_dir>/summaries/`` (0700, file 0600); its path, or None if it cannot."""
    name = kept_name(summary["started_unix_s"], summary["job"])
    return keep_json(summary, ring_dir, SUMMARY_DIR_NAME, name, KEEP_SUMMARIES)
