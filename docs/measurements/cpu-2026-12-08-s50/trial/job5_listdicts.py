"""Sensor-sequence regression, no DataLoader: batches built in the loop from a list of dicts,
with per-sample random augmentation in pure Python (jitter, scaling, time masking)."""
import random, math, torch, torch.nn as nn
from truth import Truth, pc

rng = random.Random(0); torch.manual_seed(0)
T = 96
records = []
for i in range(4000):
    f = rng.uniform(0.5, 3.0); ph = rng.uniform(0, 6.28)
    records.append({"id": i, "signal": [math.sin(f * k / 10 + ph) for k in range(T)],
                    "meta": {"sensor": rng.choice("ABCD"), "gain": rng.uniform(0.9, 1.1)}, "target": f})

def augment(rec, r):
    g = rec["meta"]["gain"] * r.uniform(0.8, 1.2)
    sig = [g * v + r.gauss(0, 0.05) for v in rec["signal"]]
    m0 = r.randint(0, T - 10)
    for k in range(m0, m0 + r.randint(0, 10)): sig[k] = 0.0
    shift = r.randint(-4, 4); sig = sig[shift:] + sig[:shift]
    return sig

model = nn.Sequential(nn.Linear(T, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 1))
opt = torch.optim.Adam(model.parameters(), 1e-3); lossf = nn.MSELoss()
truth = Truth(); r = random.Random(1)
for step in range(1, 1201):
    t0 = pc(); t1 = t0                                    # no loader: nothing to wait for
    batch = r.sample(records, 128)
    x = torch.tensor([augment(rec, r) for rec in batch]); y = torch.tensor([[rec["target"]] for rec in batch])
    x, y = x.to("cpu"), y.to("cpu")
    t2 = pc()
    loss = lossf(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
    t3 = pc()
    if step % 200 == 0: print(f"step {step} loss {loss.item():.4f}")
    t4 = pc(); truth.add(t0, t1, t2, t3, t4)
truth.report()
