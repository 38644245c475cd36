"""Job 1: a text classifier. Map-style dataset of raw strings, tokenised in Python (split + vocab lookup),
a hand-written collate_fn that pads to the batch's longest sequence, num_workers=1, embedding (mean-pooled) + MLP."""
import argparse
import random
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from truthclock import Truth, timed  # noqa: E402

WORDS = [f"w{i}" for i in range(5000)]


class Reviews(Dataset):
    def __init__(self, n):
        rng = random.Random(0)
        self.texts = []
        self.labels = []
        for _ in range(n):
            length = rng.randint(60, 600)
            self.texts.append(" ".join(rng.choice(WORDS) for _ in range(length)).upper() + " .")
            self.labels.append(rng.randrange(2))
        self.vocab = {"<pad>": 0, "<unk>": 1}
        for w in WORDS:
            self.vocab[w] = len(self.vocab)

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, i):
        text = self.texts[i].lower()
        tokens = [t.strip(".,!?") for t in text.split()]
        ids = [self.vocab.get(t, 1) for t in tokens if t]
        return ids, self.labels[i]


def pad_collate(batch):
    # pads to the longest sequence, one Python element at a time (slow, as many people write it)
    longest = max(len(ids) for ids, _ in batch)
    rows, masks = [], []
    for ids, _ in batch:
        row, mask = [], []
        for j in range(longest):
            if j < len(ids):
                row.append(ids[j])
                mask.append(1.0)
            else:
                row.append(0)
                mask.append(0.0)
        rows.append(row)
        masks.append(mask)
    lengths = torch.tensor([len(ids) for ids, _ in batch])
    return torch.tensor(rows, dtype=torch.long), torch.tensor(masks), lengths, torch.tensor([y for _, y in batch])


class Classifier(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.emb = nn.Embedding(vocab, 128, padding_idx=0)
        self.mlp = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 2))

    def forward(self, x, mask, lengths):
        pooled = (self.emb(x) * mask.unsqueeze(2)).sum(1) / lengths.unsqueeze(1)
        return self.mlp(pooled)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--truth", action="store_true")
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--workers", type=int, default=1)
    args = p.parse_args()
    torch.manual_seed(0)
    ds = Reviews(6000)
    loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=args.workers, collate_fn=pad_collate)
    model = Classifier(len(ds.vocab))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    truth = Truth(args.truth)
    device = torch.device("cpu")
    t_end = None
    steps = samples = 0
    loss_v = None
    start = time.perf_counter()
    while t_end is None or time.perf_counter() < t_end:
        it = iter(loader)
        while True:
            truth.step_start()
            t = time.perf_counter()
            try:
                x, mask, lengths, y = next(it)
            except StopIteration:
                truth.add("data", time.perf_counter() - t)
                break
            truth.add("data", time.perf_counter() - t)
            with timed(truth, "copy"):
                x, mask, y = x.to(device), mask.to(device), y.to(device)
            with timed(truth, "compute"):
                loss = nn.functional.cross_entropy(model(x, mask, lengths), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            steps += 1
            samples += len(y)
            if steps == 1:
                t_end = time.perf_counter() + args.seconds
            if steps % 20 == 0:
                loss_v = loss.item()
            if time.perf_counter() >= t_end:
                break
    truth.report(job="text")
    print(f"result job=text steps={steps} samples_per_s={samples / (time.perf_counter() - start):.1f} loss={loss_v:.3f}")


if __name__ == "__main__":
    main()
