"""The starved loop, fixed: worker processes load ahead, batches arrive pinned, copies overlap.

python demos/fixed_pipeline.py
python demos/fixed_pipeline.py --steps 3000 --workers 8
"""

from __future__ import annotations

import sys

import torch
from demo_common import SlowSamples, model_for, parse_args, pick_device, report, train_step
from torch.utils.data import DataLoader

import xfertop


def main() -> None:
    workers = 2
    if "--workers" in sys.argv:
        at = sys.argv.index("--workers")
        workers = int(sys.argv[at + 1])
        del sys.argv[at : at + 2]
    args = parse_args("The same loop with its input pipeline fixed.")
    device = pick_device(args.device)
    dataset = SlowSamples(args.steps * args.batch_size, args.features, args.load_ms)
    loader = DataLoader(
        dataset,
        batch_size=args.batch_size,
        num_workers=workers,
        prefetch_factor=4,
        persistent_workers=True,
        pin_memory=device.type == "cuda",
    )
    model, optimizer = model_for(args.features, device)
    for inputs, labels in xfertop.watch(loader):
        inputs, labels = xfertop.to_device((inputs, labels), device, non_blocking=True)
        train_step(model, optimizer, inputs, labels)
    if device.type == "cuda":
        torch.cuda.synchronize()
    report("fixed_pipeline")


if __name__ == "__main__":
    main()
