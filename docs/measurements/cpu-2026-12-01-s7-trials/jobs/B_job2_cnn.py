"""Job 2: small CNN on 64x64 random images made in __getitem__ (cheap), num_workers=2 persistent,
pin_memory=False; logs loss.item() every step and computes accuracy on the host every step."""
import argparse, time, json
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser(); p.add_argument("--truth", action="store_true"); p.add_argument("--seconds", type=float, default=15)
args = p.parse_args()

class RandomImages(Dataset):
    def __len__(self): return 4096
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.rand(3, 64, 64, generator=g), i % 10

torch.manual_seed(0)
loader = DataLoader(RandomImages(), batch_size=16, shuffle=True, num_workers=2, persistent_workers=True, pin_memory=False)
model = nn.Sequential(
    nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
    nn.Flatten(), nn.Linear(128, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
dev = torch.device("cpu")
T = {"data": 0.0, "copy": 0.0, "compute": 0.0}; t0 = None
pc = time.perf_counter
step = 0; start = pc(); first_loss = None; done = False
while not done:
    it = iter(loader)
    while True:
        if step == 5 and t0 is None: t0 = pc()
        a = pc()
        try:
            x, y = next(it)
        except StopIteration:
            if t0 is not None: T["data"] += pc() - a
            break
        b = pc()
        x, y = x.to(dev), y.to(dev)
        c = pc()
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad(); loss.backward(); opt.step()
        d = pc()
        # host-side logging and accuracy, every step
        lv = loss.item()
        preds = out.detach().argmax(1).tolist(); targets = y.tolist()
        acc = sum(int(pp == tt) for pp, tt in zip(preds, targets)) / len(targets)
        print(f"step {step} loss {lv:.4f} acc {acc:.3f}", flush=True)
        if t0 is not None:
            T["data"] += b - a; T["copy"] += c - b; T["compute"] += d - c
        if first_loss is None: first_loss = lv
        step += 1
        if pc() - start > args.seconds:
            done = True; break
end = pc()
if args.truth:
    w = end - t0
    sh = {k: round(v / w, 4) for k, v in T.items()}; sh["other"] = round(1 - sum(sh.values()), 4)
    print("truth", json.dumps({"job": "job2", "steps": step, "ms_per_step": round(1000 * w / (step - 5), 2), "shares": sh}))
print(f"result job=job2 first_loss={first_loss:.3f} steps={step} samples_per_s={step*16/(end-start):.1f}")
