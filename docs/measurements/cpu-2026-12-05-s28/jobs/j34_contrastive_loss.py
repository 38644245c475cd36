"""A small encoder and a large contrastive loss computed outside any module (a 1024x1024 similarity
matrix, logsumexp), 2 workers feeding from memory: the model's step is the cost."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
ds = TensorDataset(torch.randn(16384, 128))
loader = DataLoader(ds, batch_size=1024, shuffle=True, num_workers=2, persistent_workers=True, drop_last=True)
enc = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128))
opt = torch.optim.Adam(enc.parameters(), lr=1e-3)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for (x,) in loader:
        truth.mark("wait")
        a = torch.nn.functional.normalize(enc(x + 0.1 * torch.randn_like(x)), dim=1)
        b = torch.nn.functional.normalize(enc(x + 0.1 * torch.randn_like(x)), dim=1)
        logits = a @ b.T / 0.1
        for _ in range(3):
            logits = logits - logits.logsumexp(1, keepdim=True)
        loss = -logits.diagonal().mean() + (a @ a.T).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
