"""Six plain training jobs for the GPU clock's trial, written as users write them (no xfertop code).

    python gpu_jobs.py JOB [--seconds S] [--truth]

JOB: aug (CPU augmentation in the loop), launch (120 tiny layers, loss.item() each step, no DataLoader),
compute (a wide MLP, pinned workers), pageable (100 MB pageable batches, non_blocking), starved (a slow
__getitem__, num_workers=0), sync (loss.item() + host metrics on logits.cpu() every step).
--truth: the same loop with torch.cuda.synchronize() after every phase, each phase timed on the host:
prints {"truth": {wait, loop_pre, copy, model, sync, loop_post}} as shares of the loop's wall from step 5.
Without it: prints "result job=... steps=N samples_per_s=R".
"""

import argparse
import json
import time

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset


class Slow(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        time.sleep(0.0004)
        return torch.randn(256), i % 10


def main():
    p = argparse.ArgumentParser()
    p.add_argument("job")
    p.add_argument("--seconds", type=float, default=12)
    p.add_argument("--truth", action="store_true")
    a = p.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    parts = dict.fromkeys(("wait", "loop_pre", "copy", "model", "sync", "loop_post"), 0.0)
    mark = [time.perf_counter()]

    def phase(name):
        if a.truth:
            torch.cuda.synchronize()
            now = time.perf_counter()
            if steps >= 5:
                parts[name] += now - mark[0]
            mark[0] = now

    job = a.job
    if job == "launch":
        layers = []
        for _ in range(120):
            layers += [nn.Linear(64, 64), nn.ReLU()]
        model = nn.Sequential(*layers).to(dev)
        xs, ys = torch.randn(4096, 64, device=dev), torch.randint(0, 64, (4096,), device=dev)
        loader = None
    elif job == "compute":
        model = nn.Sequential(nn.Linear(1024, 8192), nn.GELU(), nn.Linear(8192, 8192), nn.GELU(), nn.Linear(8192, 10)).to(dev)
        data = TensorDataset(torch.randn(8192, 1024), torch.randint(0, 10, (8192,)))
        loader = DataLoader(data, batch_size=512, shuffle=True, num_workers=4, pin_memory=True, persistent_workers=True, drop_last=True)
    elif job == "pageable":
        model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 224 * 224, 64), nn.ReLU(), nn.Linear(64, 10)).to(dev)
        batches = [(torch.randn(128, 3, 224, 224), torch.randint(0, 10, (128,))) for _ in range(8)]
        loader = batches
    elif job == "starved":
        model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10)).to(dev)
        loader = DataLoader(Slow(), batch_size=64, num_workers=0)
    elif job == "aug":
        model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(8), nn.Flatten(), nn.Linear(32 * 64, 10)).to(dev)
        data = TensorDataset(torch.randint(0, 255, (2048, 3, 96, 96), dtype=torch.uint8), torch.randint(0, 10, (2048,)))
        loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=2, persistent_workers=True, drop_last=True)
    elif job == "sync":
        model = nn.Sequential(nn.Linear(512, 4096), nn.GELU(), nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 100)).to(dev)
        data = TensorDataset(torch.randn(16384, 512), torch.randint(0, 100, (16384,)))
        loader = DataLoader(data, batch_size=256, shuffle=True, num_workers=2, pin_memory=True, persistent_workers=True, drop_last=True)
    else:
        raise SystemExit(f"unknown job {job}")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    steps, samples, t_first = 0, 0, None
    confusion = [0] * 100
    while True:
        it = iter(loader) if loader is not None else iter(range(1 << 30))
        mark[0] = time.perf_counter()
        for batch in it:
            phase("wait")
            if job == "launch":
                i = (steps * 32) % 4000
                x, y = xs[i : i + 32], ys[i : i + 32]
            else:
                x, y = batch
                if job == "aug":
                    x = x.float() / 255
                    x = (x - 0.5) / 0.25
                    x = torch.flip(x, dims=[3]) if steps % 2 else x
                    x = F.interpolate(x, size=(128, 128), mode="bilinear")
                    x = F.interpolate(x, size=(96, 96), mode="bilinear")
                    x = x + 0.05 * torch.randn_like(x)
                    phase("loop_pre")
                x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
                phase("copy")
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            phase("model")
            if job in ("launch", "sync"):
                value = loss.item()
                if job == "sync":
                    value += sum(loss.detach().cpu().tolist() for _ in range(1))
                phase("sync")
                if job == "sync":
                    for k in range(30000):
                        confusion[k % 100] += 1
                    phase("loop_post")
            steps += 1
            samples += len(y)
            if t_first is None:
                t_first = time.perf_counter()
            if time.perf_counter() - t_first > a.seconds:
                break
        else:
            continue
        break
    torch.cuda.synchronize()
    wall = time.perf_counter() - t_first
    if a.truth:
        total = sum(parts.values())
        print(json.dumps({"truth": {k: round(v / total, 4) for k, v in parts.items()}, "steps": steps}))
    else:
        print(f"result job={job} steps={steps} samples_per_s={samples / wall:.1f}")


if __name__ == "__main__":
    main()
