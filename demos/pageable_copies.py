"""Large batches copied from pageable memory with non_blocking=True: silently synchronous copies.

On a GPU the viewer flags `pageable_non_blocking` and shows the copy's host time; on CPU there is no
host-to-device copy, so the flags stay off (the script still runs).

    python demos/pageable_copies.py --steps 500 --features 65536
"""

from __future__ import annotations

import torch
from demo_common import model_for, parse_args, pick_device, report, train_step
from torch.utils.data import DataLoader, TensorDataset

import xfertop


def main() -> None:
    args = parse_args("Copies from pageable memory that non_blocking=True cannot overlap.", load_ms=0.0)
    device = pick_device(args.device)
    inputs = torch.rand(args.steps * args.batch_size, args.features)
    labels = torch.randint(0, 10, (len(inputs),))
    loader = DataLoader(TensorDataset(inputs, labels), batch_size=args.batch_size, pin_memory=False)
    model, optimizer = model_for(args.features, device)
    for batch_inputs, batch_labels in xfertop.watch(loader):
        # non_blocking=True from pageable memory: the call returns only when the copy is done.
        moved = xfertop.to_device((batch_inputs, batch_labels), device, non_blocking=True)
        train_step(model, optimizer, *moved)
    report("pageable_copies")


if __name__ == "__main__":
    main()
