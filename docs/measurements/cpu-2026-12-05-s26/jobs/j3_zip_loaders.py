"""Two loaders zipped (images + captions); the caption loader tokenises in Python, num_workers=0."""
import time, torch, sys, random
from torch.utils.data import Dataset, DataLoader
from common import Truth
class Images(Dataset):
    def __len__(self): return 4096
    def __getitem__(self, i): return torch.randn(3, 32, 32)
class Captions(Dataset):
    def __init__(self):
        random.seed(0); self.words = ["w%d" % i for i in range(5000)]
        self.caps = [" ".join(random.choice(self.words) for _ in range(400)) for _ in range(512)]
        self.vocab = {w: i for i, w in enumerate(self.words)}
    def __len__(self): return 4096
    def __getitem__(self, i):
        toks = [self.vocab[w] for w in self.caps[i % 512].split()]
        toks = sorted(toks)[:64]
        return torch.tensor(toks)
imgs = DataLoader(Images(), batch_size=32, num_workers=2)
caps = DataLoader(Captions(), batch_size=32, num_workers=0)
enc = torch.nn.Sequential(torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(), torch.nn.Linear(1024, 128))
emb = torch.nn.EmbeddingBag(5000, 128)
opt = torch.optim.Adam(list(enc.parameters()) + list(emb.parameters()))
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, t in zip(imgs, caps):
        truth.mark("wait")
        a, b = enc(x), emb(t)
        loss = -(torch.nn.functional.normalize(a) * torch.nn.functional.normalize(b)).sum(1).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        truth.next_step()
        if time.time() > deadline: break
truth.report()
