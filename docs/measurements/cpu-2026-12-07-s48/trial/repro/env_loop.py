# minimal: no DataLoader; each step calls the model, then runs ~60 ms of pure Python (an env), then backward+step
import time, torch
m = torch.nn.Linear(64, 64); opt = torch.optim.SGD(m.parameters(), 0.01)
def env_python(n=200_000):
    s = 0.0
    for k in range(n):
        s += (k % 7) * 0.5
    return s
t = {"py": 0.0, "all": 0.0}
for i in range(150):
    a = time.perf_counter()
    out = m(torch.randn(32, 64))           # first model call of the step
    b = time.perf_counter(); env_python(); c = time.perf_counter()
    out.pow(2).mean().backward(); opt.step(); opt.zero_grad()
    t["py"] += c - b; t["all"] += time.perf_counter() - a
print(f"done; pure-Python share of the step: {100*t['py']/t['all']:.0f}%")
