"""(k) A training loader and a validation loader in one loop: every 25 training steps the model is
evaluated on 8 batches of a held-out set (torch.no_grad(), model.eval()), then training resumes. Both
loaders keep up (train: 2 persistent workers; validation: an in-memory tensor set on the main process),
so the job is compute-bound throughout; the validation passes are the job's own work (the truth books
each pass as the loop's work after the training step it follows).

    python benchmarks/scenarios/train_val.py [--seconds 20] [--truth]
"""

from __future__ import annotations

import torch
from _common import Clock, parse_args, pick_device, seed_everything, train_step
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

VAL_EVERY, VAL_BATCHES = 25, 8


def main() -> None:
    args = parse_args("Training and validation loaders in one loop.")
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("k", args, device)
    gpu = device.type == "cuda"
    features, width, batch = (1024, 8192, 512) if gpu else (256, 1536, 256)
    g = torch.Generator().manual_seed(0)
    train = TensorDataset(
        torch.randn(32768, features, generator=g), torch.randint(0, 10, (32768,), generator=g)
    )
    val = TensorDataset(
        torch.randn(VAL_BATCHES * batch, features, generator=g),
        torch.randint(0, 10, (VAL_BATCHES * batch,), generator=g),
    )
    train_loader = DataLoader(
        train,
        batch_size=batch,
        shuffle=True,
        num_workers=2,
        pin_memory=gpu,
        persistent_workers=True,
        drop_last=True,
    )
    val_loader = DataLoader(val, batch_size=batch, num_workers=0, pin_memory=gpu)
    model = nn.Sequential(
        nn.Linear(features, width), nn.GELU(), nn.Linear(width, width), nn.GELU(), nn.Linear(width, 10)
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    val_accuracy = 0.0
    while not clock.done:
        for x, y in clock.timed(train_loader):
            x, loss = train_step(clock, model, optimizer, x, y, device)
            stop = clock.step_done(len(x), loss.detach() if clock.train_steps == 0 else None)
            if clock.train_steps % VAL_EVERY == 0:
                # The pass is part of the training step it follows, the loop's own work after the model
                # (xfertop's step model: its batches are no steps of their own, docs/verdicts.md).
                with clock.phase("loop_post"):
                    model.eval()
                    correct = torch.zeros((), device=device)
                    with torch.no_grad():
                        for vx, vy in val_loader:
                            vx, vy = vx.to(device, non_blocking=True), vy.to(device, non_blocking=True)
                            correct += (model(vx).argmax(1) == vy).sum()
                    val_accuracy = float(correct) / len(val)  # one sync per validation pass
                    model.train()
            if stop:
                break
    clock.finish(extra={"val_accuracy": round(val_accuracy, 3)})


if __name__ == "__main__":
    main()
