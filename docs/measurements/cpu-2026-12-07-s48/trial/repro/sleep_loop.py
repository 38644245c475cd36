# minimal: a DataLoader loop whose main thread sleeps 50 ms after each optimizer step (~50% of the step)
import time, torch
m = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 512))
opt = torch.optim.SGD(m.parameters(), 0.01)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(25600, 512)), batch_size=128)
t0 = time.time()
for i, (x,) in enumerate(loader):
    m(x).pow(2).mean().backward(); opt.step(); opt.zero_grad()
    time.sleep(0.05)
print("done", i + 1, "steps in", round(time.time() - t0, 1), "s")
