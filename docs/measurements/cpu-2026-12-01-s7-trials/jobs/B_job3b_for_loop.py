"""Job 3b (same as job 3, written as `for x, y in loader`): in-memory data (DataLoader fine), MLP classifier; every step builds a per-sample list of
dicts of metrics and appends json.dumps(...) of it to a log file (heavy host-side Python)."""
import argparse, time, json, os, tempfile
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser(); p.add_argument("--truth", action="store_true"); p.add_argument("--seconds", type=float, default=15)
p.add_argument("--log-reps", type=int, default=6)
args = p.parse_args()

torch.manual_seed(0)
N, F, C, B = 8192, 256, 100, 128
X = torch.randn(N, F); Y = torch.randint(0, C, (N,))
loader = DataLoader(TensorDataset(X, Y), batch_size=B, shuffle=True, num_workers=0)
model = nn.Sequential(nn.Linear(F, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, C))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
dev = torch.device("cpu")
logf = open(os.path.join(tempfile.gettempdir(), f"job3_metrics_{os.getpid()}.jsonl"), "w")
T = {"data": 0.0, "copy": 0.0, "compute": 0.0}; t0 = None
pc = time.perf_counter
step = 0; start = pc(); first_loss = None; done = False
while not done:
    a = pc()
    for x, y in loader:
        if step == 5 and t0 is None: t0 = a
        b = pc()
        x, y = x.to(dev), y.to(dev)
        c = pc()
        out = model(x)
        per_sample = nn.functional.cross_entropy(out, y, reduction="none")
        loss = per_sample.mean()
        opt.zero_grad(); loss.backward(); opt.step()
        d = pc()
        # per-sample metrics, as a list of dicts, dumped to the log every step
        probs = out.detach().softmax(1)
        top5p, top5i = probs.topk(5, dim=1)
        records = []
        ls, tp, ti, yy = per_sample.detach().tolist(), top5p.tolist(), top5i.tolist(), y.tolist()
        for r in range(args.log_reps):
            for k in range(len(yy)):
                records.append({"step": step, "sample": k, "rep": r, "target": yy[k], "loss": round(ls[k], 5),
                                "top5": [{"cls": ci, "p": round(pp, 5)} for ci, pp in zip(ti[k], tp[k])],
                                "correct": ti[k][0] == yy[k], "rank": ti[k].index(yy[k]) if yy[k] in ti[k] else None})
        logf.write(json.dumps({"step": step, "loss": loss.item(), "samples": records}) + "\n")
        if t0 is not None:
            T["data"] += b - a; T["copy"] += c - b; T["compute"] += d - c
        if first_loss is None: first_loss = loss.item()
        step += 1
        if pc() - start > args.seconds:
            done = True; break
        a = pc()
end = pc()
logf.close(); os.unlink(logf.name)
if args.truth:
    w = end - t0
    sh = {k: round(v / w, 4) for k, v in T.items()}; sh["other"] = round(1 - sum(sh.values()), 4)
    print("truth", json.dumps({"job": "job3b", "steps": step, "ms_per_step": round(1000 * w / (step - 5), 2), "shares": sh}))
print(f"result job=job3b first_loss={first_loss:.3f} steps={step} samples_per_s={step*B/(end-start):.1f}")
