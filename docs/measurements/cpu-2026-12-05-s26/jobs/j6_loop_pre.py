"""Batches of uint8 images from a loader; in the loop: float, normalise, random crop and flip per sample in Python, then a tiny model."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
ds = TensorDataset(torch.randint(0, 255, (2048, 3, 64, 64), dtype=torch.uint8), torch.randint(0, 10, (2048,)))
loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=1, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 48 * 48, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
mean = torch.tensor([0.5, 0.5, 0.5]).view(3, 1, 1)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); g = torch.Generator().manual_seed(0)
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        x = x.float() / 255 - mean
        crops = []
        for img in x:
            i, j = torch.randint(0, 16, (2,), generator=g).tolist()
            c = img[:, i:i + 48, j:j + 48]
            if torch.rand(1, generator=g).item() < 0.5: c = c.flip(2)
            crops.append(c + 0.01 * torch.randn_like(c))
        x = torch.stack(crops)
        truth.mark("loop_pre")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        truth.next_step()
        if time.time() > deadline: break
truth.report()
