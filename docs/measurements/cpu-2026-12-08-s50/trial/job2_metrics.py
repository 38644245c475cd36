"""Tabular MLP classifier; after each optimizer.step() computes sklearn-style metrics in numpy
(top-k via argsort, confusion matrix, per-class one-vs-rest ROC AUC by ranking)."""
import numpy as np, torch, torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader
from truth import Truth, pc

torch.manual_seed(0)
C = 20
X = torch.randn(40000, 128); W = torch.randn(128, C); Y = (X @ W + 0.5 * torch.randn(40000, C)).argmax(1)
loader = DataLoader(TensorDataset(X, Y), batch_size=512, shuffle=True)
model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, C))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9); lossf = nn.CrossEntropyLoss()

def auc_ovr(scores, y):
    aucs = []
    for c in range(scores.shape[1]):
        pos = (y == c); npos = pos.sum(); nneg = len(y) - npos
        if npos == 0 or nneg == 0: continue
        order = np.argsort(scores[:, c], kind="mergesort")
        ranks = np.empty(len(y)); ranks[order] = np.arange(1, len(y) + 1)
        aucs.append((ranks[pos].sum() - npos * (npos + 1) / 2) / (npos * nneg))
    return float(np.mean(aucs))
def metrics(logits, y):
    p = np.exp(logits - logits.max(1, keepdims=True)); p /= p.sum(1, keepdims=True)
    top5 = np.argsort(-p, axis=1)[:, :5]
    cm = np.zeros((C, C), np.int64); np.add.at(cm, (y, top5[:, 0]), 1)
    f1 = []
    for c in range(C):
        tp = cm[c, c]; fp = cm[:, c].sum() - tp; fn = cm[c, :].sum() - tp
        f1.append(2 * tp / max(1, 2 * tp + fp + fn))
    # bootstrap CI of accuracy, as eval scripts often do
    correct = (top5[:, 0] == y).astype(np.float64)
    rs = np.random.default_rng(0)
    boots = [correct[rs.integers(0, len(y), len(y))].mean() for _ in range(200)]
    return dict(acc=correct.mean(), top5=(top5 == y[:, None]).any(1).mean(), f1=np.mean(f1),
                auc=auc_ovr(p, y), ci=np.percentile(boots, [2.5, 97.5]))

truth = Truth(); hist = []
for ep in range(14):
    t0 = pc(); it = iter(loader)
    while True:
        try: x, y = next(it)
        except StopIteration: break
        t1 = pc(); x, y = x.to("cpu"), y.to("cpu"); t2 = pc()
        out = model(x); loss = lossf(out, y); opt.zero_grad(); loss.backward(); opt.step()
        t3 = pc()
        hist.append(metrics(out.detach().numpy().astype(np.float64), y.numpy()))
        t4 = pc(); truth.add(t0, t1, t2, t3, t4); t0 = pc()
    m = hist[-1]
    print(f"epoch {ep} acc {m['acc']:.3f} top5 {m['top5']:.3f} f1 {m['f1']:.3f} auc {m['auc']:.3f}")
truth.report()
