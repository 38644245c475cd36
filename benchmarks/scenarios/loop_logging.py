"""(s) Loop work after the step: after ``optimizer.step()`` the loop logs a metrics record every step, in
Python: the loss (one ``loss.item()``), the learning rate, running per-class label counts and
frequencies, and a running mean and standard deviation of every input feature (Welford, per sample),
computed on the CPU-side batch the DataLoader handed over (no device sync), written as one JSON line to a
metrics file. The model is small, so the bookkeeping is most of each step: on a GPU the device idles
while the host logs, on a CPU the logging is most of the step too. The one sync (``loss.item()``) is
short, the model being small: the loop's own Python after the step dominates. The fix is to log every N
steps, or to keep the running sums as tensors.

On a GPU: 1024 features, an MLP of width 256, batch 32. On a CPU: 1024 features, width 64, batch 32. Both:
1000 classes, a JSON line of ~4,000 numbers a step.

    python benchmarks/scenarios/loop_logging.py [--seconds 20] [--truth]
"""

from __future__ import annotations

import json
import os
import tempfile
import time

import torch
from _common import Clock, parse_args, pick_device, seed_everything
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

CLASSES = 1000


def main() -> None:
    args = parse_args("Per-step metrics and JSON logging in Python after the optimizer step.")
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("s", args, device)
    gpu = device.type == "cuda"
    features, width, batch = (1024, 256, 32) if gpu else (1024, 64, 32)
    g = torch.Generator().manual_seed(0)
    x_all = torch.randn(16384, features, generator=g)
    y_all = torch.randint(0, CLASSES, (16384,), generator=g)
    loader = DataLoader(
        TensorDataset(x_all, y_all),
        batch_size=batch,
        shuffle=True,
        num_workers=0,  # the data set is an in-memory tensor
        pin_memory=gpu,
        drop_last=True,
    )
    model = nn.Sequential(nn.Linear(features, width), nn.ReLU(), nn.Linear(width, CLASSES)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    class_counts = [0] * CLASSES
    feature_mean = [0.0] * features  # running mean and sum of squared deviations (Welford), per feature
    feature_m2 = [0.0] * features
    seen = 0
    started = time.time()
    with tempfile.TemporaryDirectory() as logdir:
        log = open(os.path.join(logdir, "metrics.jsonl"), "w")  # noqa: SIM115 (closed below)
        step = 0
        while not clock.done:
            for x_cpu, y_cpu in clock.timed(loader):
                with clock.phase("copy"):
                    x, y = x_cpu.to(device, non_blocking=True), y_cpu.to(device, non_blocking=True)
                with clock.phase("compute"):
                    loss = F.cross_entropy(model(x), y)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                with clock.phase("sync"):
                    loss_value = loss.item()
                with clock.phase("loop_post"):
                    # This step's metrics, from the batch as the loader gave it (on the CPU: no sync).
                    for label, row in zip(y_cpu.tolist(), x_cpu.tolist(), strict=True):
                        class_counts[label] += 1
                        seen += 1
                        for i, value in enumerate(row):
                            delta = value - feature_mean[i]
                            feature_mean[i] += delta / seen
                            feature_m2[i] += delta * (value - feature_mean[i])
                    record = {
                        "step": step,
                        "time": round(time.time() - started, 3),
                        "loss": loss_value,
                        "lr": optimizer.param_groups[0]["lr"],
                        "samples": seen,
                        "class_counts": {str(c): n for c, n in enumerate(class_counts)},
                        "class_freq": {str(c): n / seen for c, n in enumerate(class_counts)},
                        "feature_mean": feature_mean,
                        "feature_std": [(m2 / max(1, seen - 1)) ** 0.5 for m2 in feature_m2],
                    }
                    log.write(json.dumps(record) + "\n")
                    log.flush()
                    step += 1
                if clock.step_done(len(x), loss.detach() if clock.train_steps == 0 else None):
                    break
        log.close()
    clock.finish()


if __name__ == "__main__":
    main()
