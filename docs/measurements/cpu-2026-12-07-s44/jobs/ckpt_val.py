# Novel job: a conv net on CPU, a validation loader every 40 steps (non-persistent workers, 8 batches),
# a torch.save checkpoint every 60 steps, metrics list appended each step. Truth by perf_counter.
import io, time, sys, json, os, tempfile
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
train = TensorDataset(torch.randn(20000, 3, 32, 32), torch.randint(0, 10, (20000,)))
val = TensorDataset(torch.randn(512, 3, 32, 32), torch.randint(0, 10, (512,)))
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                      nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
opt = torch.optim.Adam(model.parameters())
tl = DataLoader(train, batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
vl = DataLoader(val, batch_size=64, num_workers=2)
truth = {"wait": 0.0, "model": 0.0, "val": 0.0, "ckpt": 0.0}
ck = os.path.join(tempfile.mkdtemp(), "m.pt")
end = time.monotonic() + float(sys.argv[1])
step = 0; t0 = time.perf_counter()
while time.monotonic() < end:
    for x, y in tl:
        t1 = time.perf_counter(); truth["wait"] += t1 - t0
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        t0 = time.perf_counter(); truth["model"] += t0 - t1
        step += 1
        if step % 40 == 0:
            with torch.no_grad():
                c = sum(int((model(a).argmax(1) == b).sum()) for a, b in vl)
            t1 = time.perf_counter(); truth["val"] += t1 - t0; t0 = t1
        if step % 60 == 0:
            torch.save({"m": model.state_dict(), "o": opt.state_dict()}, ck)
            t1 = time.perf_counter(); truth["ckpt"] += t1 - t0; t0 = t1
        if time.monotonic() > end: break
tot = sum(truth.values())
print("TRUTH", json.dumps({k: round(v / tot, 3) for k, v in truth.items()}), "steps", step)
