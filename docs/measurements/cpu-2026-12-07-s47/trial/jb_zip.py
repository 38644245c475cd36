"""Job B: zip() of two DataLoaders: images (2 workers) and captions (num_workers=0,
slow pure-Python tokenizer in the captions Dataset)."""
import sys, time, random
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader

TRUTH = '--truth' in sys.argv
pc = time.perf_counter
PH = ('wait', 'loop_pre', 'copy', 'model', 'sync', 'loop_post')
acc = dict.fromkeys(PH, 0.0)
PER = []
WORDS = [f"w{k}" for k in range(500)]

class Images(Dataset):
    def __init__(self, n):
        self.x = torch.randn(n // 32, 32, 3, 16, 16, generator=torch.Generator().manual_seed(2))
    def __len__(self): return self.x.shape[0]
    def __getitem__(self, i): return self.x[i], torch.arange(32) % 5

class Captions(Dataset):
    def __init__(self, n):
        rnd = random.Random(3)
        self.txt = [" ".join(rnd.choice(WORDS) for _ in range(24)) for _ in range(n)]
        self.vocab = {w: k + 1 for k, w in enumerate(WORDS)}
    def __len__(self): return len(self.txt)
    def __getitem__(self, i):
        # slow "BPE-like" tokenizer in pure Python
        ids = []
        for w in self.txt[i].split():
            for a in range(len(w)):
                for b in range(a + 1, len(w) + 1):
                    _ = w[a:b] in self.vocab
            ids.append(self.vocab[w])
        for _ in range(40):
            ids = [(t * 31 + 7) % 501 for t in ids]
        return torch.tensor(ids[:24])

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten())
        self.emb = nn.EmbeddingBag(502, 64)
        self.head = nn.Linear(16 * 16 + 64, 5)
    def forward(self, img, cap):
        return self.head(torch.cat([self.conv(img), self.emb(cap)], 1))

def main():
    torch.manual_seed(0)
    n = 32 * 900
    img_loader = DataLoader(Images(n), batch_size=None, num_workers=2)
    cap_loader = DataLoader(Captions(n), batch_size=32, num_workers=0)
    model = Net(); opt = torch.optim.Adam(model.parameters(), 1e-3); lossf = nn.CrossEntropyLoss()
    i = 0; tot_loss = 0.0
    tb = pc() if TRUTH else 0.0
    for (img, y), cap in zip(img_loader, cap_loader):
        if TRUTH:
            t0 = pc(); rec = i >= 5
            if rec: acc['wait'] += t0 - tb
        img = img.to('cpu'); cap = cap.to('cpu'); y = y.to('cpu')
        if TRUTH:
            t1 = pc()
            if rec: acc['copy'] += t1 - t0
        loss = lossf(model(img, cap), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if TRUTH:
            t2 = pc()
            if rec: acc['model'] += t2 - t1
        tot_loss += loss.item()
        if TRUTH:
            t3 = pc()
            if rec: acc['sync'] += t3 - t2
        if i % 100 == 0:
            print(f"step {i} mean loss {tot_loss / (i + 1):.4f}", flush=True)
        if TRUTH:
            t4 = pc()
            if rec: acc['loop_post'] += t4 - t3
            PER.append((i, t0 - tb, 0.0, t1 - t0, t2 - t1, t3 - t2, t4 - t3))  # per-step truth
            tb = t4
        i += 1
    print(f"finished {i} steps")
    if TRUTH:
        tot = sum(acc.values())
        print("TRUTH jb_zip " + " ".join(f"{k}={100*acc[k]/tot:.1f}%" for k in PH) + f" in_step_s={tot:.2f}")
        import json, os
        if os.environ.get('TRUTH_STEPS'):
            json.dump(PER, open(os.environ['TRUTH_STEPS'], 'w'))
    sys.exit(0)

if __name__ == '__main__':
    main()
