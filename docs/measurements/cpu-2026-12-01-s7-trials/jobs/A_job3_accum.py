"""Job 3: gradient accumulation (optimizer.step every 4 micro-batches) on a compute-heavy MLP, in-memory
data through 2 workers, and a checkpoint (model + optimizer, torch.save) every 50 micro-batches."""
import argparse
import os
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from truthclock import Truth, timed  # noqa: E402

ACCUM = 4
CKPT_EVERY = 50
CKPT = "/tmp/trialA/ckpt/job3.pt"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--truth", action="store_true")
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--ckpt-every", type=int, default=CKPT_EVERY)
    args = p.parse_args()
    torch.manual_seed(0)
    os.makedirs(os.path.dirname(CKPT), exist_ok=True)
    x = torch.randn(16384, 1024)
    y = torch.randint(0, 10, (16384,))
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, num_workers=2, drop_last=True)
    model = nn.Sequential(nn.Linear(1024, 2048), nn.GELU(), nn.Linear(2048, 2048), nn.GELU(), nn.Linear(2048, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    truth = Truth(args.truth)
    device = torch.device("cpu")
    steps = samples = 0
    t_end = None
    start = time.perf_counter()
    ckpt_s = []
    opt.zero_grad()
    while t_end is None or time.perf_counter() < t_end:
        it = iter(loader)
        while True:
            truth.step_start()
            t = time.perf_counter()
            try:
                xb, yb = next(it)
            except StopIteration:
                truth.add("data", time.perf_counter() - t)
                break
            truth.add("data", time.perf_counter() - t)
            with timed(truth, "copy"):
                xb, yb = xb.to(device), yb.to(device)
            with timed(truth, "compute"):
                loss = nn.functional.cross_entropy(model(xb), yb) / ACCUM
                loss.backward()
                if (steps + 1) % ACCUM == 0:
                    opt.step()
                    opt.zero_grad()
            steps += 1
            samples += len(yb)
            if steps % args.ckpt_every == 0:  # "other" in the truth
                c = time.perf_counter()
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": steps}, CKPT)
                ckpt_s.append(time.perf_counter() - c)
            if steps == 1:
                t_end = time.perf_counter() + args.seconds
            if time.perf_counter() >= t_end:
                break
    size = os.path.getsize(CKPT) / 2**20
    truth.report(job="accum", ckpt_mb=round(size, 1), ckpt_ms=[round(1000 * s) for s in ckpt_s])
    print(f"result job=accum steps={steps} samples_per_s={samples / (time.perf_counter() - start):.1f} "
          f"loss={loss.item() * ACCUM:.3f} checkpoints={len(ckpt_s)} ckpt_mb={size:.0f}")


if __name__ == "__main__":
    main()
