"""(h) A host-device sync every step: the loop accumulates ``loss.item()`` and computes top-5 accuracy
and a running confusion count on the host from ``logits.cpu()``, in Python, every step. On a GPU the
device then idles while the host does its bookkeeping (and cannot queue the next step ahead). Truth:
``.item()``/``.cpu()``/``.tolist()`` are the sync, the Python over the batch the loop's work after the step.

    python benchmarks/scenarios/sync_every_step.py [--seconds 20] [--truth]
"""

from __future__ import annotations

import torch
from _common import Clock, parse_args, pick_device, seed_everything
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

CLASSES = 100


def main() -> None:
    args = parse_args("A loop that syncs with the device every step (loss.item(), metrics on the host).")
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("h", args, device)
    gpu = device.type == "cuda"
    features, width, batch = (512, 4096, 256) if gpu else (256, 2048, 128)
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(
        torch.randn(16384, features, generator=g), torch.randint(0, CLASSES, (16384,), generator=g)
    )
    loader = DataLoader(
        data,
        batch_size=batch,
        shuffle=True,
        num_workers=2,
        pin_memory=gpu,
        persistent_workers=True,
        drop_last=True,
    )
    model = nn.Sequential(
        nn.Linear(features, width), nn.GELU(), nn.Linear(width, width), nn.GELU(), nn.Linear(width, CLASSES)
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    running_loss, seen, top5_hits = 0.0, 0, 0
    confusion = [[0] * CLASSES for _ in range(CLASSES)]
    while not clock.done:
        for x, y in clock.timed(loader):
            with clock.phase("copy"):
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with clock.phase("compute"):
                logits = model(x)
                loss = F.cross_entropy(logits, y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            # The bookkeeping every step: a sync, then Python over the batch.
            with clock.phase("sync"):
                running_loss += loss.item()
                scores = logits.detach().cpu().tolist()
                labels = y.cpu().tolist()
            with clock.phase("loop_post"):
                for row, label in zip(scores, labels, strict=True):
                    top5 = sorted(range(CLASSES), key=row.__getitem__)[-5:]
                    top5_hits += label in top5
                    confusion[label][top5[-1]] += 1
                seen += len(scores)
            if clock.step_done(len(x), loss.detach() if clock.train_steps == 0 else None):
                break
    clock.finish(extra={"top5": round(top5_hits / max(1, seen), 3)})


if __name__ == "__main__":
    main()
