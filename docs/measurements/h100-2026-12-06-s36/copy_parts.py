"""Copy timing's cost per `.to()`, part by part, in one process (session 36; session 37 added `bare` and
`attrs`).

Run's hooks are installed with copy timing; a DataLoader loop (8x64 pageable batches, one `.to(device)` and an
`add_` a step, as benchmarks/reporter_overhead.py's child) runs passes in turn with `Tensor.to` as:
  plain      torch's own (the step clock still runs: only copy timing's part is measured)
  timed      copy timing's wrapper, as `xfertop run` installs it
  no-book    the wrapper, with StepWork.tensor_moved a no-op (what booking the copy costs)
  no-start   the wrapper, with StepWork.starting a no-op (the first-work mark and GPU gap query)
  memo-off   the wrapper, the pinned memo forgotten before each step (what a miss costs: is_pinned())
  bare       the wrapper with both of them no-ops: its own frame and two clock reads
  attrs      the wrapper with tensor_moved only reading what it reads of the tensors (is_cpu twice,
             nbytes, data_ptr()): the tensors' attributes against the booking's own Python
Rounds interleave the modes; the figure is each mode's median added us/step over plain.

    python copy_parts.py [steps] [device] [rounds]
"""

import statistics
import sys
import time

from xfertop.launch import autopatch

autopatch.install(copy_timing=True)
import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from xfertop import reporter  # noqa: E402
from xfertop.reporter import _step_work  # noqa: E402

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
device = torch.device(sys.argv[2] if len(sys.argv) > 2 else "cuda")
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
timed_to = torch.Tensor.to
plain_to = timed_to.__wrapped__
loader = DataLoader(TensorDataset(torch.ones(steps * 8, 64)), batch_size=8)
if device.type == "cuda":
    torch.ones(1, device=device)
real_moved, real_starting = _step_work.StepWork.tensor_moved, _step_work.StepWork.starting


def attrs_only(self, source, moved, non_blocking, copy_cpu_ns) -> None:
    if moved.is_cpu or not source.is_cpu or not source.nbytes:
        return
    source.data_ptr()


def one_pass(mode: str) -> float:
    torch.Tensor.to = plain_to if mode == "plain" else timed_to
    _step_work.StepWork.tensor_moved = (
        (lambda *a: None) if mode in ("no-book", "bare") else attrs_only if mode == "attrs" else real_moved
    )
    _step_work.StepWork.starting = (lambda *a: None) if mode in ("no-start", "bare") else real_starting
    forget = mode == "memo-off"
    began = time.perf_counter_ns()
    for (batch,) in loader:
        if forget and reporter._clock is not None:
            reporter._clock.work._pinned_known.clear()
        moved = batch.to(device, non_blocking=True)
        moved.add_(1.0)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter_ns() - began) / steps / 1000


modes = ["plain", "timed", "no-book", "no-start", "memo-off", "bare", "attrs"]
one_pass("plain")  # warm-up: workers, CUDA context, first allocations
per = {mode: [] for mode in modes}
for _ in range(rounds):
    for mode in modes:
        per[mode].append(one_pass(mode))
torch.Tensor.to = timed_to
base = per["plain"]
print(f"device {device}, {steps} steps, {rounds} rounds; plain {statistics.median(base):.2f} us/step")
for mode in modes[1:]:
    added = [v - b for v, b in zip(per[mode], base, strict=True)]
    print(f"{mode:9} added {statistics.median(added):+6.2f} us/step  rounds {', '.join(f'{a:+.1f}' for a in added)}")
