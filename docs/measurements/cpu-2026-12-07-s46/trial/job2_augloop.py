"""Image classifier: per-batch augmentation done in the training loop body (per-sample Python loop of torch ops)."""
import argparse, time
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import TensorDataset, DataLoader

# ---------------- truth clock (only active with --truth) ----------------
class Truth:
    PH = ("wait", "loop_pre", "copy", "model", "sync", "loop_post", "between")
    def __init__(self, on, skip=5):
        self.on, self.skip = on, skip
        self.tot = dict.fromkeys(self.PH, 0.0); self.step = -1; self.cur = None; self.t = None
    def _close(self, now):
        if self.cur is not None and self.step >= self.skip:
            self.tot[self.cur] += now - self.t
    def to(self, ph):
        if not self.on: return
        now = time.perf_counter(); self._close(now); self.cur, self.t = ph, now
    def wrap(self, loader):
        if not self.on:
            yield from loader; return
        self.step += 1; self.to("wait")
        it = iter(loader); first = True
        while True:
            if not first:
                self.step += 1; self.to("wait")
            first = False
            try: b = next(it)
            except StopIteration:
                self.step -= 1  # the raising next() belongs to the last step (its wait)
                self.to("between"); self.step += 1; return
            self.to("loop_pre")
            yield b
    def report(self):
        if not self.on: return
        self.to(None)
        tot = sum(self.tot.values()); ins = tot - self.tot["between"]
        s = " ".join(f"{k}={100*v/tot:.1f}%" for k, v in self.tot.items())
        s2 = " ".join(f"{k}={100*v/ins:.1f}%" for k, v in self.tot.items() if k != "between")
        print(f"TRUTH steps>={self.skip}: wall={tot:.2f}s | of all: {s} | of in-step time: {s2}")
# -------------------------------------------------------------------------

p = argparse.ArgumentParser(); p.add_argument("--truth", action="store_true")
p.add_argument("--epochs", type=int, default=5); args = p.parse_args()
T = Truth(args.truth)
torch.manual_seed(0)

N = 6000
imgs = torch.randint(0, 256, (N, 3, 32, 32), dtype=torch.uint8)
labels = (imgs[:, 0, :16, :16].float().mean((1, 2)) > imgs[:, 2, 16:, 16:].float().mean((1, 2))).long()
loader = DataLoader(TensorDataset(imgs, labels), batch_size=64, shuffle=True, num_workers=0, drop_last=True)
MEAN = torch.tensor([0.49, 0.48, 0.45]).view(3, 1, 1); STD = torch.tensor([0.25, 0.24, 0.26]).view(3, 1, 1)
BLUR = torch.tensor([1., 2., 1.]).outer(torch.tensor([1., 2., 1.])); BLUR = (BLUR / BLUR.sum()).expand(3, 1, 3, 3).contiguous()

def augment(x):
    """x: uint8 B,3,32,32 -> float normalised, augmented per sample (the way many people write it)."""
    x = x.float() / 255.0
    out = []
    for img in x:
        img = F.pad(img, (4, 4, 4, 4), mode="reflect")
        i, j = torch.randint(0, 9, (2,)).tolist()
        img = img[:, i:i + 32, j:j + 32]
        if torch.rand(1).item() < 0.5: img = img.flip(-1)
        b = 1 + (torch.rand(1) - 0.5) * 0.4; c = 1 + (torch.rand(1) - 0.5) * 0.4
        m = img.mean(); img = ((img - m) * c + m) * b
        if torch.rand(1).item() < 0.3: img = F.conv2d(img.unsqueeze(0), BLUR, padding=1, groups=3)[0]
        ci, cj = torch.randint(0, 24, (2,)).tolist(); img = img.clone(); img[:, ci:ci + 8, cj:cj + 8] = 0
        img = img + 0.02 * torch.randn_like(img)
        out.append(((img.clamp(0, 1) - MEAN) / STD))
    return torch.stack(out)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1); self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.c3 = nn.Conv2d(32, 32, 3, padding=1); self.fc = nn.Linear(32 * 4 * 4, 2)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2); x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = F.max_pool2d(F.relu(self.c3(x)), 2); return self.fc(x.flatten(1))

device = torch.device("cpu")
model = Net().to(device); opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
t0 = time.time(); step = 0
for ep in range(args.epochs):
    model.train(); correct = 0; seen = 0
    for x, y in T.wrap(loader):
        x = augment(x)
        T.to("copy"); x = x.to(device, non_blocking=True); y = y.to(device, non_blocking=True)
        T.to("model")
        out = model(x); loss = F.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        T.to("loop_post")
        correct += (out.argmax(1) == y).sum(); seen += y.numel(); step += 1
        if step % 40 == 0:
            T.to("sync"); lv = loss.item(); T.to("loop_post")
            print(f"ep {ep} step {step} loss {lv:.4f}", flush=True)
    print(f"epoch {ep} train acc {correct.item() / seen:.4f}", flush=True)
print(f"done {step} steps in {time.time() - t0:.1f}s")
T.report()
