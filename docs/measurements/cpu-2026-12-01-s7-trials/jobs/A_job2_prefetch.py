"""Job 2: a user's own background-thread prefetcher around a DataLoader (num_workers=0).
The dataset parses CSV text rows in Python (no sleeps). The loop is `batch = prefetcher.next()`."""
import argparse
import queue
import random
import sys
import threading
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from truthclock import Truth, timed  # noqa: E402

FEATURES = 512


class CsvRows(Dataset):
    def __init__(self, n):
        rng = random.Random(0)
        self.rows = [",".join(f"{rng.gauss(0, 1):.5f}" for _ in range(FEATURES)) + f",{rng.randrange(10)}"
                     for _ in range(n)]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        vals = [float(v) for v in self.rows[i].split(",")]
        x, y = vals[:-1], int(vals[-1])
        mean = sum(x) / len(x)
        var = sum((v - mean) ** 2 for v in x) / len(x)
        std = var ** 0.5 + 1e-6
        x = [(v - mean) / std for v in x]
        return torch.tensor(x), y


class Prefetcher:
    """Loads the next batches in a background thread so the GPU never waits (or so the blog post said)."""

    def __init__(self, loader, maxsize=2):
        self.loader = loader
        self.q = queue.Queue(maxsize=maxsize)
        self.done = object()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._work, daemon=True)
        self.thread.start()

    def _work(self):
        for batch in self.loader:
            if self.stop.is_set():
                return
            self.q.put(batch)
        self.q.put(self.done)

    def close(self):
        self.stop.set()
        while self.thread.is_alive():
            try:
                self.q.get(timeout=0.1)
            except queue.Empty:
                pass
        self.thread.join()

    def next(self):
        batch = self.q.get()
        if batch is self.done:
            return None
        return batch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--truth", action="store_true")
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--width", type=int, default=1024, help="MLP width: larger = more compute per step")
    p.add_argument("--workers", type=int, default=0)
    args = p.parse_args()
    torch.manual_seed(0)
    ds = CsvRows(3000)
    loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=args.workers)
    w = args.width
    model = nn.Sequential(nn.Linear(FEATURES, w), nn.ReLU(), nn.Linear(w, w), nn.ReLU(), nn.Linear(w, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    truth = Truth(args.truth)
    device = torch.device("cpu")
    steps = samples = 0
    t_end = None
    start = time.perf_counter()
    epoch = 0
    while t_end is None or time.perf_counter() < t_end:
        prefetcher = Prefetcher(loader)
        while True:
            truth.step_start()
            t = time.perf_counter()
            batch = prefetcher.next()
            truth.add("data", time.perf_counter() - t)
            if batch is None:
                break
            x, y = batch
            with timed(truth, "copy"):
                x, y = x.to(device), y.to(device)
            with timed(truth, "compute"):
                loss = nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            steps += 1
            samples += len(y)
            if steps == 1:
                t_end = time.perf_counter() + args.seconds
            if time.perf_counter() >= t_end:
                break
        prefetcher.close()
        epoch += 1
    truth.report(job="prefetch", width=w)
    print(f"result job=prefetch steps={steps} samples_per_s={samples / (time.perf_counter() - start):.1f} loss={loss.item():.3f}")


if __name__ == "__main__":
    main()
