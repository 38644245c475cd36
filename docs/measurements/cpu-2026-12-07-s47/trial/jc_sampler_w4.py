"""Job C: a custom Sampler that does expensive Python per index (difficulty-
weighted curriculum sampling), DataLoader with 2 workers and a cheap dataset."""
import sys, time, random, math
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader, Sampler

TRUTH = '--truth' in sys.argv
pc = time.perf_counter
PH = ('wait', 'loop_pre', 'copy', 'model', 'sync', 'loop_post')
acc = dict.fromkeys(PH, 0.0)

class Table(Dataset):
    def __init__(self, n):
        self.x = torch.randn(n, 64, generator=torch.Generator().manual_seed(4))
        self.y = (self.x[:, 0] > 0).long()
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return self.x[i], self.y[i]

class CurriculumSampler(Sampler):
    """Per index: recompute a difficulty score from a per-sample history (pure Python)."""
    def __init__(self, n, num_samples, seed=0):
        self.n = n; self.num = num_samples; self.rnd = random.Random(seed)
        self.hist = [[self.rnd.random() for _ in range(8)] for _ in range(n)]
    def __len__(self): return self.num
    def __iter__(self):
        for _ in range(self.num):
            while True:
                j = self.rnd.randrange(self.n)
                h = self.hist[j]
                score = 0.0
                for k in range(300):
                    score += math.exp(-h[k % 8] * (k % 5)) / (1 + k)
                if self.rnd.random() < min(1.0, score / 3):
                    break
            h.append(h.pop(0))
            yield j

def main():
    torch.manual_seed(0)
    ds = Table(20000)
    loader = DataLoader(ds, batch_size=64, sampler=CurriculumSampler(len(ds), 64 * 1100), num_workers=4)
    model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9); lossf = nn.CrossEntropyLoss()
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
        if i % 100 == 0:
            l = loss.item()
            if TRUTH:
                t2 = pc()
                if rec: acc['sync'] += t2 - t1
                t1 = t2
            print(f"step {i} loss {l:.4f}", flush=True)
        if TRUTH:
            t3 = pc()
            if rec: acc['loop_post'] += t3 - t1
            tb = t3
        i += 1
    print(f"finished {i} steps")
    if TRUTH:
        tot = sum(acc.values())
        print("TRUTH jc_sampler " + " ".join(f"{k}={100*acc[k]/tot:.1f}%" for k in PH) + f" in_step_s={tot:.2f}")
    sys.exit(0)

if __name__ == '__main__':
    main()
