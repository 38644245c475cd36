"""Job F: Dataset whose __getitem__ parses a synthetic text record in pure Python,
num_workers=2, persistent_workers=False, many short epochs (workers restart each epoch)."""
import sys, time, random
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader

TRUTH = '--truth' in sys.argv
pc = time.perf_counter
PH = ('wait', 'loop_pre', 'copy', 'model', 'sync', 'loop_post')
acc = dict.fromkeys(PH, 0.0)

class Records(Dataset):
    def __init__(self, n):
        rnd = random.Random(6)
        self.rows = [",".join(f"{rnd.random():.6f}" for _ in range(48)) for _ in range(n)]
    def __len__(self): return len(self.rows)
    def __getitem__(self, i):
        vals = [float(v) for v in self.rows[i].split(",")]
        # per-sample feature engineering in pure Python
        feats = []
        for a in range(48):
            s = 0.0
            for b in range(0, 48, 3):
                s += vals[a] * vals[b] - vals[(a + b) % 48]
            feats.append(s)
        return torch.tensor(feats), int(vals[0] > 0.5)

def main():
    torch.manual_seed(0)
    ds = Records(16 * 12)  # 12 batches per epoch
    loader = DataLoader(ds, batch_size=16, shuffle=True, num_workers=2, persistent_workers=False)
    model = nn.Sequential(nn.Linear(48, 256), nn.ReLU(), nn.Linear(256, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01); lossf = nn.CrossEntropyLoss()
    i = 0
    for epoch in range(100):
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
                tb = t1
            i += 1
        l = loss.item()
        if epoch % 10 == 0:
            print(f"epoch {epoch} loss {l:.4f}", flush=True)
    print(f"finished {i} steps")
    if TRUTH:
        tot = sum(acc.values())
        print("TRUTH jf_restart " + " ".join(f"{k}={100*acc[k]/tot:.1f}%" for k in PH) + f" in_step_s={tot:.2f}")
    sys.exit(0)

if __name__ == '__main__':
    main()
