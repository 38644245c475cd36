"""(g, n) A compute-bound job: a Transformer encoder language model over token ids held in memory; the
DataLoader (2 workers, pinned on a GPU) keeps up easily. Variants (n): ``--bf16`` runs forward and
loss under bf16 autocast, ``--compile`` wraps the model in torch.compile (its first steps compile).

On a GPU: vocabulary 8192, d_model 1024, 8 layers, sequence 256, batch 32. On a CPU: vocabulary 2048,
d_model 128, 2 layers, sequence 32, batch 16.

    python benchmarks/scenarios/compute_bound.py [--bf16] [--compile] [--seconds 20] [--truth]
"""

from __future__ import annotations

import contextlib

import torch
from _common import Clock, parse_args, pick_device, seed_everything
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset


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
        p.add_argument("--bf16", action="store_true", help="bf16 autocast")
        p.add_argument("--compile", action="store_true", help="torch.compile the model")

    args = parse_args("A compute-bound Transformer LM.", extra)
    device = pick_device(args.device)
    seed_everything()
    scenario = "g" + ("-bf16" if args.bf16 else "") + ("-compile" if args.compile else "")
    clock = Clock(scenario, args, device)
    gpu = device.type == "cuda"
    vocab, d_model, layers, heads, seq, batch = (
        (8192, 1024, 8, 16, 256, 32) if gpu else (2048, 128, 2, 4, 32, 16)
    )
    tokens = torch.randint(0, vocab, (4096, seq + 1), generator=torch.Generator().manual_seed(0))
    loader = DataLoader(
        TensorDataset(tokens),
        batch_size=batch,
        shuffle=True,
        num_workers=2,
        pin_memory=gpu,
        persistent_workers=True,
        drop_last=True,
    )
    model: nn.Module = TinyLM(vocab, d_model, layers, heads, seq).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    if args.compile:
        model = torch.compile(model)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if args.bf16 else contextlib.nullcontext()
    while not clock.done:
        for (chunk,) in clock.timed(loader):
            with clock.phase("copy"):
                chunk = chunk.to(device, non_blocking=True)
            with clock.phase("compute"):
                with autocast:
                    logits = model(chunk[:, :-1])
                    loss = F.cross_entropy(logits.reshape(-1, vocab).float(), chunk[:, 1:].reshape(-1))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            if clock.step_done(len(chunk), loss.detach() if clock.train_steps == 0 else None):
                break
    clock.finish(tags={"bf16": str(args.bf16).lower(), "compile": str(args.compile).lower()})


if __name__ == "__main__":
    main()
