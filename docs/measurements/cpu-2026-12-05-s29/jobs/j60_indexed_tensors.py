"""No DataLoader: the whole dataset is one tensor in memory, batches are slices of a permutation (the
fast-path many papers use: `X[perm[i:i + B]]`), plus a random crop done on the batch before the model."""
import time, torch, sys
from common import Truth
X = torch.randn(50_000, 3, 36, 36); Y = torch.randint(0, 10, (50_000,))
model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
                            torch.nn.Flatten(), torch.nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); B = 256
truth.t = time.perf_counter()
while time.time() < deadline:
    perm = torch.randperm(len(X))
    for i in range(0, len(X), B):
        idx = perm[i:i + B]
        x, y = X[idx], Y[idx]
        dx, dy = torch.randint(0, 5, (2,)).tolist()
        x = x[:, :, dy:dy + 32, dx:dx + 32]
        truth.mark("loop_pre")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
