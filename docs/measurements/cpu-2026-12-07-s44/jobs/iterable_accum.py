# Novel job: an IterableDataset streaming JPEG records with 2 workers (each decodes + random crop/flip
# with PIL), gradient accumulation over 4 micro-batches, per-step metrics via .tolist() and a Python
# running histogram (loop after the step), and an lr scheduler. Truth by perf_counter.
import io, time, sys, json, random
import torch, torch.nn as nn
from PIL import Image
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

def blob(seed):
    img = Image.new("RGB", (160, 160), (seed % 255, 40, (seed * 3) % 255))
    b = io.BytesIO(); img.save(b, format="JPEG"); return b.getvalue()
BLOBS = [blob(i) for i in range(32)]

class Stream(IterableDataset):
    def __iter__(self):
        info = get_worker_info(); rng = random.Random(info.id if info else 0)
        while True:
            img = Image.open(io.BytesIO(BLOBS[rng.randrange(32)])).convert("RGB")
            x0, y0 = rng.randrange(32), rng.randrange(32)
            img = img.crop((x0, y0, x0 + 128, y0 + 128)).resize((96, 96))
            if rng.random() < 0.5: img = img.transpose(Image.FLIP_LEFT_RIGHT)
            t = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).view(96, 96, 3).permute(2, 0, 1)
            yield t.float() / 255, rng.randrange(10)

model = nn.Sequential(nn.Conv2d(3, 8, 5, stride=2), nn.ReLU(), nn.Conv2d(8, 16, 3, stride=2), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, 10))
opt = torch.optim.AdamW(model.parameters(), 1e-3)
sched = torch.optim.lr_scheduler.StepLR(opt, 100)
loader = DataLoader(Stream(), batch_size=16, num_workers=2)
truth = {"wait": 0.0, "model": 0.0, "metrics": 0.0}
hist = {}
end = time.monotonic() + float(sys.argv[1]); t0 = time.perf_counter(); n = 0
for i, (x, y) in enumerate(loader):
    t1 = time.perf_counter(); truth["wait"] += t1 - t0
    logits = model(x)
    loss = nn.functional.cross_entropy(logits, y) / 4
    loss.backward()
    if i % 4 == 3:
        opt.step(); opt.zero_grad(); sched.step()
    t2 = time.perf_counter(); truth["model"] += t2 - t1
    for _ in range(30):
        for v in logits.detach().flatten().tolist():
            k = round(v, 2); hist[k] = hist.get(k, 0) + 1
    t0 = time.perf_counter(); truth["metrics"] += t0 - t2
    n += 1
    if time.monotonic() > end: break
tot = sum(truth.values())
print("TRUTH", json.dumps({k: round(v / tot, 3) for k, v in truth.items()}), "steps", n)
