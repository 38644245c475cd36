"""reporter_overhead.py's DataLoader child with `xfertop run`'s hooks installed one at a time, in-process.

    python hooks_one_at_a_time.py STEPS DEVICE VARIANT    # VARIANT: direct, or dl[+marks0|+marks1][+ckpt]

dl: the DataLoader's watch (autopatch.patch_dataloader); marks0/marks1: install_step_marks without/with
copy timing (the step parts: model, backward, syncs); ckpt: torch.save watched. Prints the fastest of five
passes' ns a step. Session 40 ran each variant and `python -m xfertop.cli.run --no-summary -- python
hooks_one_at_a_time.py 10000 meta direct` four times in turn, each on one core (taskset -c 1).
"""
import json, os, sys, time
variant = sys.argv[3]
import torch
if variant != "direct":
    from xfertop.launch import autopatch
    from xfertop.reporter._step_parts import install_step_marks
    if "dl" in variant:
        autopatch.patch_dataloader(torch)
    if "marks0" in variant:
        install_step_marks(torch, False)
    if "marks1" in variant:
        install_step_marks(torch, True)
    if "ckpt" in variant:
        autopatch.watch_checkpoints(torch)
from torch.utils.data import DataLoader, TensorDataset
steps, device = int(sys.argv[1]), torch.device(sys.argv[2])
loader = DataLoader(TensorDataset(torch.ones(steps * 8, 64)), batch_size=8)
passes = []
for _ in range(5):
    began = time.perf_counter_ns()
    for (batch,) in loader:
        moved = batch.to(device, non_blocking=True)
        moved.add_(1.0)
    passes.append((time.perf_counter_ns() - began) / steps)
print(json.dumps({"ns_per_step": min(passes)}))
