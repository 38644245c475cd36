"""reporter_overhead.py's DataLoader child with `xfertop run`'s hooks put on one at a time.

    python hooks_one_at_a_time.py STEPS DEVICE VARIANT    # VARIANT: direct, or dl[+marks0|+marks1][+ckpt]
    python hooks_one_at_a_time.py STEPS DEVICE seq        # direct, + dl, + marks1, in one process

dl: the DataLoader's watch (autopatch.patch_dataloader); marks0/marks1: install_step_marks without/with
copy timing (the step parts: model, backward, syncs); ckpt: torch.save watched. A variant installs its
hooks before the loop and prints the fastest of five passes' ns a step; `seq` times the loop, installs dl,
times it, installs marks1, times it, in one process. Session 40 ran each variant and `python -m
xfertop.cli.run --no-summary -- python hooks_one_at_a_time.py 10000 meta direct` four times in turn, each on
one core (taskset -c 1), and `taskset -c 1 python hooks_one_at_a_time.py 10000 meta seq` with each tree's
src on PYTHONPATH.
"""
import json, sys, time
import torch
from torch.utils.data import DataLoader, TensorDataset
from xfertop.launch import autopatch
from xfertop.reporter._step_parts import install_step_marks

steps, device, variant = int(sys.argv[1]), torch.device(sys.argv[2]), sys.argv[3]
loader = DataLoader(TensorDataset(torch.ones(steps * 8, 64)), batch_size=8)


def fastest():
    passes = []
    for _ in range(5):
        began = time.perf_counter_ns()
        for (batch,) in loader:
            moved = batch.to(device, non_blocking=True)
            moved.add_(1.0)
        passes.append((time.perf_counter_ns() - began) / steps)
    return min(passes)


def install(parts):
    if "dl" in parts:
        autopatch.patch_dataloader(torch)
    if "marks0" in parts:
        install_step_marks(torch, False)
    if "marks1" in parts:
        install_step_marks(torch, True)
    if "ckpt" in parts:
        autopatch.watch_checkpoints(torch)


if variant == "seq":
    direct = fastest()
    install("dl")
    watched = fastest()
    install("marks1")
    hooked = fastest()
    print(f"direct {direct:.0f} dl {watched:.0f} (+{(watched - direct) / 1000:.1f}) "
          f"dl+marks1 {hooked:.0f} (+{(hooked - direct) / 1000:.1f})")
else:
    install("" if variant == "direct" else variant)
    print(json.dumps({"ns_per_step": fastest()}))
