# Novel job: JPEG bytes decoded by 2 workers; the loop then does per-sample Python
# "tokenisation" of captions (pure Python string work) before a small model; logs every 10 steps.
import io, time, random, sys, json
import torch, torch.nn as nn
from PIL import Image
from torch.utils.data import DataLoader, Dataset

random.seed(0)
def jpeg(seed):
    img = Image.new("RGB", (96, 96), (seed % 255, (seed * 7) % 255, 90))
    b = io.BytesIO(); img.save(b, format="JPEG", quality=90); return b.getvalue()
BLOBS = [jpeg(i) for i in range(64)]
WORDS = ["the", "cat", "sat", "on", "a", "mat", "under", "blue", "sky"] * 5

class Pics(Dataset):
    def __len__(self): return 4096
    def __getitem__(self, i):
        img = Image.open(io.BytesIO(BLOBS[i % 64])).convert("RGB").resize((64, 64))
        t = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).view(64, 64, 3).permute(2, 0, 1)
        return t, " ".join(random.sample(WORDS, 20))

def tokenize(caps):
    vocab = {}
    out = []
    for c in caps:
        ids = [vocab.setdefault(w, len(vocab)) for w in c.split()]
        for _ in range(40):  # a slow pure-Python tokenizer
            ids = [(x * 31 + 7) % 1000 for x in ids]
        out.append(ids[:16])
    return torch.tensor(out)

model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 64 * 64, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Pics(), batch_size=32, num_workers=2, persistent_workers=True)
truth = {"wait": 0.0, "loop": 0.0, "model": 0.0}
end = time.monotonic() + float(sys.argv[1]) if len(sys.argv) > 1 else time.monotonic() + 12
t0 = time.perf_counter()
step = 0
while time.monotonic() < end:
    for x, caps in loader:
        t1 = time.perf_counter(); truth["wait"] += t1 - t0
        toks = tokenize(caps)
        x = x.float() / 255
        t2 = time.perf_counter(); truth["loop"] += t2 - t1
        loss = model(x).logsumexp(1).mean() + toks.float().mean() * 0
        opt.zero_grad(); loss.backward(); opt.step()
        t0 = time.perf_counter(); truth["model"] += t0 - t2
        step += 1
        if time.monotonic() > end: break
tot = sum(truth.values())
print("TRUTH", json.dumps({k: round(v / tot, 3) for k, v in truth.items()}), "steps", step)
