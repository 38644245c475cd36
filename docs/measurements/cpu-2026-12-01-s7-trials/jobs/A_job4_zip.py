"""Job 4: two DataLoaders zipped (image-like tensors, fast, 2 workers; captions hashed into n-gram
features in Python, slow, num_workers=0) feeding a two-tower model. `for a, b in zip(loader_img, loader_txt)`."""
import argparse
import random
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from truthclock import Truth, timed  # noqa: E402

NGRAM_DIM = 1024
LETTERS = "abcdefghijklmnopqrstuvwxyz "


class Captions(Dataset):
    def __init__(self, n):
        rng = random.Random(1)
        self.caps = ["".join(rng.choice(LETTERS) for _ in range(rng.randint(150, 300))) for _ in range(n)]

    def __len__(self):
        return len(self.caps)

    def __getitem__(self, i):
        s = self.caps[i]
        feats = [0.0] * NGRAM_DIM
        for n in (2, 3, 4):
            for j in range(len(s) - n + 1):
                feats[hash(s[j:j + n]) % NGRAM_DIM] += 1.0
        total = sum(feats) or 1.0
        return torch.tensor([f / total for f in feats])


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.img = nn.Sequential(nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(),
                                 nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 256))
        self.txt = nn.Sequential(nn.Linear(NGRAM_DIM, 512), nn.ReLU(), nn.Linear(512, 256))

    def forward(self, im, tx):
        a = nn.functional.normalize(self.img(im), dim=1)
        b = nn.functional.normalize(self.txt(tx), dim=1)
        return a @ b.t() / 0.07


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--truth", action="store_true")
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--txt-workers", type=int, default=0)
    args = p.parse_args()
    torch.manual_seed(0)
    n = 4096
    images = torch.randn(n, 3, 32, 32)
    loader_img = DataLoader(TensorDataset(images), batch_size=32, shuffle=False, num_workers=2)
    loader_txt = DataLoader(Captions(n), batch_size=32, shuffle=False, num_workers=args.txt_workers)
    model = TwoTower()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    truth = Truth(args.truth)
    device = torch.device("cpu")
    steps = samples = 0
    t_end = None
    start = time.perf_counter()
    while t_end is None or time.perf_counter() < t_end:
        it = iter(zip(loader_img, loader_txt))
        while True:
            truth.step_start()
            t = time.perf_counter()
            try:
                (im,), tx = next(it)
            except StopIteration:
                truth.add("data", time.perf_counter() - t)
                break
            truth.add("data", time.perf_counter() - t)
            with timed(truth, "copy"):
                im, tx = im.to(device), tx.to(device)
            with timed(truth, "compute"):
                logits = model(im, tx)
                labels = torch.arange(len(im))
                loss = (nn.functional.cross_entropy(logits, labels) + nn.functional.cross_entropy(logits.t(), labels)) / 2
                opt.zero_grad()
                loss.backward()
                opt.step()
            steps += 1
            samples += len(im)
            if steps == 1:
                t_end = time.perf_counter() + args.seconds
            if time.perf_counter() >= t_end:
                break
    truth.report(job="zip")
    print(f"result job=zip steps={steps} samples_per_s={samples / (time.perf_counter() - start):.1f} loss={loss.item():.3f}")


if __name__ == "__main__":
    main()
