"""HF-style dict batches moved with a dict comprehension of .to(device); a 2-layer Transformer encoder; 2 workers."""
import time, torch, sys
from torch.utils.data import Dataset, DataLoader
from common import Truth
class Tok(Dataset):
    def __len__(self): return 10000
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, 1000, (64,), generator=g)
        return {"input_ids": ids, "attention_mask": torch.ones(64, dtype=torch.long), "labels": ids.roll(1)}
loader = DataLoader(Tok(), batch_size=16, num_workers=2, shuffle=True)
emb = torch.nn.Embedding(1000, 128)
enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(128, 4, 256, batch_first=True), 2)
head = torch.nn.Linear(128, 1000)
params = [*emb.parameters(), *enc.parameters(), *head.parameters()]
opt = torch.optim.AdamW(params, lr=1e-4)
device = torch.device("cpu")
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for batch in loader:
        truth.mark("wait")
        batch = {k: v.to(device) for k, v in batch.items()}
        truth.mark("copy")
        h = enc(emb(batch["input_ids"]), src_key_padding_mask=batch["attention_mask"] == 0)
        loss = torch.nn.functional.cross_entropy(head(h).flatten(0, 1), batch["labels"].flatten())
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        truth.next_step()
        if time.time() > deadline: break
truth.report()
