"""How many samples of a 2 s attach window show a CPU job's loop running (its DataLoader's or its model's
calls), on tests/fixtures/pyspy/train_cpu.py's native_sync job: the evidence behind c4f8ad0's CI flake.

    python docs/measurements/cpu-2026-12-03-s18/loop_samples.py WINDOWS [--fresh]

One job sampled WINDOWS times back to back, or (--fresh) a new job for every window, as
tests/sources/test_stack_sampler.py does. Prints, per window, the verdict, the main thread's samples and
how many of them are in the loop's machinery; then the mean and the windows with none.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
from pyspy_support import training_job
from xfertop.analysis import stack_classify as sc
from xfertop.analysis.sampled_verdict import judge_stacks
from xfertop.sources.stacks.source import StackSampler
from xfertop.sources.stacks.source_lines import line_reader


def one_window(sampler: StackSampler) -> tuple[str, int, int]:
    state = sampler.sample_once()
    (_, verdict) = judge_stacks(state, line_reader)
    window = state.windows[0]
    main = [t for t in window.stacks if t.pid == window.root_pid and t.is_main_thread and t.frames]
    machinery = sum(
        t.count for t in main if sc._loop_frame(t.frames) or sc._caller_of(t.frames, sc._computes)
    )
    return verdict.kind, sum(t.count for t in main), machinery


def main() -> int:
    windows, fresh = int(sys.argv[1]), "--fresh" in sys.argv
    seen: list[int] = []
    if fresh:
        for _ in range(windows):
            with training_job("native_sync") as job:
                kind, total, machinery = one_window(StackSampler(job.pid, window_s=2, with_ranks=False))
            print(kind, total, machinery, flush=True)
            seen.append(machinery)
    else:
        with training_job("native_sync") as job:
            sampler = StackSampler(job.pid, window_s=2, with_ranks=False)
            for _ in range(windows):
                kind, total, machinery = one_window(sampler)
                print(kind, total, machinery, flush=True)
                seen.append(machinery)
    print(
        f"machinery samples a window: mean {statistics.mean(seen):.1f}, min {min(seen)}, "
        f"windows with none {sum(1 for m in seen if m == 0)} of {len(seen)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
