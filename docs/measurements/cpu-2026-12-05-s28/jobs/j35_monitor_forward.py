"""After each optimizer step the loop runs the model in eval mode on a fixed probe batch under no_grad
(monitoring), then back to train mode: two model calls a step, 2 workers feeding from memory."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
ds = TensorDataset(torch.randn(8192, 512), torch.randint(0, 10, (8192,)))
loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.Dropout(0.1), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
probe = torch.randn(2048, 512)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        model.eval()
        with torch.no_grad():
            drift = model(probe).softmax(1).max(1).values.mean()
        model.train()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
