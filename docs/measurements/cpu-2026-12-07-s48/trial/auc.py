"""Fraud classifier (MLP on tabular features). After every optimizer step the loop appends the batch's
scores and labels to a history and recomputes the running ROC-AUC over the whole history in pure
Python (sort + rank-sum), logging it: a per-step cost that grows with the run."""
import argparse, sys, time
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from truth import Truth

p = argparse.ArgumentParser(); p.add_argument("--truth", action="store_true"); p.add_argument("--steps", type=int, default=400)
args = p.parse_args()
torch.manual_seed(0)
N, F = 200_000, 64
X = torch.randn(N, F); w = torch.randn(F)
Y = ((X @ w + 0.5 * torch.randn(N)) > 1.5).float()
loader = DataLoader(TensorDataset(X, Y), batch_size=256, shuffle=True, drop_last=True)
model = nn.Sequential(nn.Linear(F, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
opt = torch.optim.Adam(model.parameters(), 1e-3)
lossf = nn.BCEWithLogitsLoss()


def roc_auc(scores, labels):
    order = sorted(range(len(scores)), key=scores.__getitem__)
    rank_sum, npos = 0.0, 0
    for r, i in enumerate(order, 1):
        if labels[i] > 0.5:
            rank_sum += r; npos += 1
    nneg = len(scores) - npos
    return (rank_sum - npos * (npos + 1) / 2) / max(npos * nneg, 1)


hist_s, hist_y = [], []
T = Truth(enabled=args.truth)
step = 0
T.begin()
for x, y in loader:
    T.mark("wait")
    out = model(x).squeeze(1); loss = lossf(out, y)
    opt.zero_grad(); loss.backward(); opt.step()
    T.mark("model")
    s, yy = out.detach().tolist(), y.tolist()
    T.mark("sync")
    hist_s.extend(s); hist_y.extend(yy)
    auc = roc_auc(hist_s, hist_y)
    if step % 50 == 0:
        print(f"step {step} loss {loss.item():.4f} running_auc {auc:.4f} (n={len(hist_s)})", flush=True)
    T.mark("post")
    T.end_step(); T.begin()
    step += 1
    if step >= args.steps:
        break
print(f"done: {step} steps, running AUC {auc:.4f}")
T.report(windows=3)
