"""Job A: DataLoader wrapped in a home-made tqdm-like progress generator that
prints a postfix (running stats over the loss history) every step."""
import sys, time, math, statistics
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader

TRUTH = '--truth' in sys.argv
pc = time.perf_counter
PH = ('wait', 'loop_pre', 'copy', 'model', 'sync', 'loop_post')
acc = dict.fromkeys(PH, 0.0)

class Feats(Dataset):
    def __init__(self, n):
        self.n = n
        self.x = torch.randn(n, 128, generator=torch.Generator().manual_seed(1))
    def __len__(self): return self.n // 32
    def __getitem__(self, i):  # pre-batched shards of 32
        return self.x[32 * i:32 * i + 32], torch.arange(32 * i, 32 * i + 32) % 10

GEN_WAIT = [0.0]
def progress(it, total, postfix):
    """yield items; on each resume, refresh the bar: stats over the whole history."""
    start = time.time(); hist = []
    src = iter(it); n = 0
    while True:
        t = pc() if TRUTH else 0.0
        try:
            item = next(src)
        except StopIteration:
            break
        if TRUTH: GEN_WAIT[0] = pc() - t
        yield item
        n += 1
        if 'loss' in postfix:
            hist.append(postfix['loss'])
        # "smoothing" like tqdm, but recomputed from scratch over the history (user code)
        med = statistics.median(hist) if hist else float('nan')
        sd = statistics.pstdev(hist) if len(hist) > 1 else 0.0
        ewm = 0.0
        for v in hist:
            ewm = 0.98 * ewm + 0.02 * v
        qs = statistics.quantiles(hist, n=20) if len(hist) > 2 else [0.0]
        q = sorted(hist)[int(0.9 * (len(hist) - 1))] if hist else float('nan')
        best = min(statistics.fmean(hist[j:j + 20]) for j in range(max(1, len(hist) - 19))) if hist else 0.0
        bar = '#' * int(30 * n / total) + '-' * (30 - int(30 * n / total))
        print(f"\r|{bar}| {n}/{total} loss={postfix.get('loss', 0):.4f} med={med:.4f} sd={sd:.4f} ewm={ewm:.4f} p90={q:.4f} q95={qs[-1]:.4f} best20={best:.4f}", flush=True)
    print(f"done in {time.time() - start:.1f}s")

def main():
    torch.manual_seed(0)
    ds = Feats(32 * 2000)
    loader = DataLoader(ds, batch_size=None, shuffle=False, num_workers=2)
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    lossf = nn.CrossEntropyLoss()
    postfix = {}
    i = 0
    tb = pc() if TRUTH else 0.0
    for x, y in progress(loader, len(loader), postfix):
        if TRUTH:
            t0 = pc(); rec = i >= 5
            if rec:
                acc['wait'] += GEN_WAIT[0]
                acc['loop_post'] += (t0 - tb) - GEN_WAIT[0]  # generator's own bar work
        x = x.to('cpu'); y = y.to('cpu')
        if TRUTH:
            t1 = pc()
            if rec: acc['copy'] += t1 - t0
        out = model(x); loss = lossf(out, y)
        opt.zero_grad(); loss.backward(); opt.step()
        if TRUTH:
            t2 = pc()
            if rec: acc['model'] += t2 - t1
        postfix['loss'] = loss.item()
        if TRUTH:
            t3 = pc()
            if rec: acc['sync'] += t3 - t2
            tb = t3
            if i % 250 == 249:  # windowed truth, stderr
                tot = sum(acc.values()); prev = getattr(main, 'prev', dict.fromkeys(PH, 0.0)); dt = tot - sum(prev.values())
                print(f"TRUTH-WINDOW steps {i-249}-{i} " + " ".join(f"{k}={100*(acc[k]-prev[k])/dt:.1f}%" for k in PH), file=sys.stderr)
                main.prev = dict(acc)
        i += 1
    if TRUTH:
        tot = sum(acc.values())
        print("TRUTH ja_progress " + " ".join(f"{k}={100*acc[k]/tot:.1f}%" for k in PH) + f" in_step_s={tot:.2f}")
    sys.exit(0)

if __name__ == '__main__':
    main()
