"""(u) A long set-up before the first step, then compute-bound training: the job builds its data set in
Python first (a synthetic corpus of 320,000 documents generated, tokenised with a regex, a vocabulary
counted, every document encoded into one token stream: some 8-10 s on a 2-core VM), prints one line
saying so, and only then trains a Transformer language model on the stream, compute-bound (the sizes of
``compute_bound.py``). It is there for ``xfertop attach`` started early: every window taken before the
loop must read "not in a training loop (yet)" (kind warming-up), never a bottleneck; the loop afterwards
reads compute-bound as ``g`` does. The scorer knows where the set-up ended from the line
``data: ... built in ...`` (``expectations.Scenario.setup_line``).

On a GPU: vocabulary 8192, d_model 1024, 8 layers, sequence 256, batch 32. On a CPU: vocabulary 2048,
d_model 128, 2 layers, sequence 32, batch 16.

    python benchmarks/scenarios/slow_setup.py [--seconds 20] [--truth] [--documents 320000]
"""

from __future__ import annotations

import array
import collections
import itertools
import random
import re
import time

import torch
from _common import Clock, parse_args, pick_device, seed_everything
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

LETTERS = "abcdefghijklmnopqrstuvwxyz"
TOKEN = re.compile(r"[a-z]+|[^\sa-z]")


def build_corpus(documents: int, vocab_size: int) -> array.array:
    """Generate the documents, count a vocabulary, encode everything into one stream of token ids
    (0: end of document, 1: unknown). Plain Python, deterministic."""
    rng = random.Random(0)
    lexicon = ["".join(rng.choice(LETTERS) for _ in range(rng.randint(2, 9))) for _ in range(30000)]
    zipf = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(lexicon))))
    docs = []
    for _ in range(documents):
        words = rng.choices(lexicon, cum_weights=zipf, k=rng.randint(8, 40))
        docs.append(" ".join(words).capitalize() + rng.choice(".!?"))
    counts: collections.Counter[str] = collections.Counter()
    for doc in docs:
        counts.update(TOKEN.findall(doc.lower()))
    vocab = {word: i + 2 for i, (word, _) in enumerate(counts.most_common(vocab_size - 2))}
    stream = array.array("i")
    for doc in docs:
        stream.extend(vocab.get(word, 1) for word in TOKEN.findall(doc.lower()))
        stream.append(0)
    return stream


class TinyLM(nn.Module):
    def __init__(self, vocab: int, d_model: int, layers: int, heads: int, seq: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.zeros(1, seq, d_model))
        layer = nn.TransformerEncoderLayer(
            d_model, heads, 4 * d_model, dropout=0.1, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens) + self.pos[:, : tokens.shape[1]]
        return self.head(self.encoder(h, mask=self.mask, is_causal=True))


def main() -> None:
    def extra(p):  # type: ignore[no-untyped-def]
        p.add_argument("--documents", type=int, default=320000, help="documents to generate (default 320000)")

    args = parse_args("A job that builds its data in Python for ~10 s, then trains compute-bound.", extra)
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("u", args, device)
    gpu = device.type == "cuda"
    vocab, d_model, layers, heads, seq, batch = (
        (8192, 1024, 8, 16, 256, 32) if gpu else (2048, 128, 2, 4, 32, 16)
    )
    started = time.perf_counter()
    stream = build_corpus(args.documents, vocab)
    rows = min(4096, len(stream) // (seq + 1))
    tokens = torch.tensor(stream[: rows * (seq + 1)], dtype=torch.long).view(rows, seq + 1)
    print(
        f"data: {rows} sequences of {seq + 1} tokens from {args.documents} documents, vocabulary {vocab}, "
        f"built in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    loader = DataLoader(
        TensorDataset(tokens),
        batch_size=batch,
        shuffle=True,
        num_workers=2,
        pin_memory=gpu,
        persistent_workers=True,
        drop_last=True,
    )
    model = TinyLM(vocab, d_model, layers, heads, seq).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    while not clock.done:
        for (chunk,) in clock.timed(loader):
            with clock.phase("copy"):
                chunk = chunk.to(device, non_blocking=True)
            with clock.phase("compute"):
                logits = model(chunk[:, :-1])
                loss = F.cross_entropy(logits.reshape(-1, vocab), chunk[:, 1:].reshape(-1))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            if clock.step_done(len(chunk), loss.detach() if clock.train_steps == 0 else None):
                break
    clock.finish(tags={"documents": str(args.documents)})


if __name__ == "__main__":
    main()
