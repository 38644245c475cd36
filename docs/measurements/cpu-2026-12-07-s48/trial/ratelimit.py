"""Fine-tuning a small conv net on a shared box with a politeness rate limiter: after each optimizer
step the loop appends the step's stats to a log file (flush + fsync) and a token-bucket limiter sleeps
to keep to <= 8 steps/s. Exits 3 at the end (the 'early stopping not reached' code of the team's scheduler)."""
import argparse, os, sys, tempfile, time
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from truth import Truth

p = argparse.ArgumentParser(); p.add_argument("--truth", action="store_true"); p.add_argument("--steps", type=int, default=220)
p.add_argument("--rate", type=float, default=8.0)
args = p.parse_args()
torch.manual_seed(0)


class RateLimiter:
    def __init__(self, rate):
        self.period, self.next = 1.0 / rate, time.monotonic()

    def wait(self):
        self.next += self.period
        d = self.next - time.monotonic()
        if d > 0:
            time.sleep(d)
        else:
            self.next = time.monotonic()


X = torch.randn(8192, 3, 32, 32); Y = torch.randint(0, 10, (8192,))
loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True, drop_last=True)
model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(64 * 8 * 8, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.AdamW(model.parameters(), 1e-3)
lossf = nn.CrossEntropyLoss()
logf = open(os.path.join(tempfile.gettempdir(), f"ratelimit_{os.getpid()}.log"), "w")
lim = RateLimiter(args.rate)
T = Truth(enabled=args.truth)
step = 0
while step < args.steps:
    T.begin()
    for x, y in loader:
        T.mark("wait")
        out = model(x); loss = lossf(out, y)
        opt.zero_grad(); loss.backward(); opt.step()
        T.mark("model")
        l = loss.item()
        T.mark("sync")
        logf.write(f"{step}\t{l:.5f}\t{time.time():.3f}\n"); logf.flush(); os.fsync(logf.fileno())
        if step % 40 == 0:
            print(f"step {step} loss {l:.4f}", flush=True)
        lim.wait()
        T.mark("post")
        T.end_step()
        step += 1
        if step >= args.steps:
            break
        T.begin()
print(f"done: {step} steps, final loss {l:.4f}; early stopping not reached -> exit 3")
T.report(windows=1)
logf.close(); os.unlink(logf.name)
sys.exit(3)
