"""Job E: MLP classifier, inline evaluation with torch.no_grad() on a held-out tensor
every 20 steps (early stopping bookkeeping), EMA of the weights after every step.
Ends with exit code 3 when early stopping fired (it does, deterministically)."""
import sys, time, copy
import torch, torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader

TRUTH = '--truth' in sys.argv
pc = time.perf_counter
PH = ('wait', 'loop_pre', 'copy', 'model', 'sync', 'loop_post')
acc = dict.fromkeys(PH, 0.0)

def make_model():
    layers = [nn.Linear(32, 128), nn.ReLU()]
    for _ in range(12):
        layers += [nn.Linear(128, 128), nn.LayerNorm(128), nn.ReLU()]
    layers += [nn.Linear(128, 4)]
    return nn.Sequential(*layers)

def main():
    g = torch.Generator().manual_seed(5)
    X = torch.randn(32 * 900, 32, generator=g); Y = (X[:, :2].sum(1) > 0).long() + 2 * (X[:, 2] > 0).long()
    Xv = torch.randn(30000, 32, generator=g); Yv = (Xv[:, :2].sum(1) > 0).long() + 2 * (Xv[:, 2] > 0).long()
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True, num_workers=2)
    model = make_model(); ema = copy.deepcopy(model)
    for p in ema.parameters(): p.requires_grad_(False)
    opt = torch.optim.Adam(model.parameters(), 1e-3); lossf = nn.CrossEntropyLoss()
    best, bad, patience, stopped = float('inf'), 0, 1000, False
    i = 0
    tb = pc() if TRUTH else 0.0
    for x, y in loader:
        if TRUTH:
            t0 = pc(); rec = i >= 5
            if rec: acc['wait'] += t0 - tb
        loss = lossf(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if TRUTH:
            t1 = pc()
            if rec: acc['model'] += t1 - t0
        # EMA of the weights, per parameter, every step
        with torch.no_grad():
            for pe, pm in zip(ema.parameters(), model.parameters()):
                pe.mul_(0.999).add_(pm.detach(), alpha=0.001)
        if TRUTH:
            t2 = pc()
            if rec: acc['loop_post'] += t2 - t1
        if i % 20 == 0:
            with torch.no_grad():
                vl = lossf(ema(Xv), Yv)
            if TRUTH:
                t3 = pc()
                if rec: acc['loop_post'] += t3 - t2
                t2 = t3
            v = vl.item()
            if TRUTH:
                t3 = pc()
                if rec: acc['sync'] += t3 - t2
                t2 = t3
            if v < best - 1e-4: best, bad = v, 0
            else: bad += 20
            if i % 200 == 0:
                print(f"step {i} val {v:.4f} best {best:.4f}", flush=True)
            if bad >= patience: stopped = True
        if TRUTH:
            t4 = pc()
            if rec: acc['loop_post'] += t4 - t2
            tb = t4
        i += 1
    print(f"finished {i} steps, best val {best:.4f}")
    if TRUTH:
        tot = sum(acc.values())
        print("TRUTH je_eval_ema " + " ".join(f"{k}={100*acc[k]/tot:.1f}%" for k in PH) + f" in_step_s={tot:.2f}")
    print("early stopping: no improvement" if not stopped else "early stopping fired")
    sys.exit(3)

if __name__ == '__main__':
    main()
