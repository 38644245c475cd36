"""Side check for job D: the same model step in fp32 vs under bf16 autocast on this CPU."""
import time, torch, torch.nn as nn
torch.manual_seed(0)
enc = nn.Sequential(nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 64))
dec = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 256))
model = nn.Sequential(enc, dec); opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(64, 256)
for mode in ('bf16', 'fp32', 'bf16', 'fp32'):
    t = time.perf_counter()
    for _ in range(60):
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=(mode == 'bf16')):
            loss = nn.functional.mse_loss(model(x).float(), x)
        opt.zero_grad(); loss.backward(); opt.step()
    print(mode, f"{(time.perf_counter() - t) / 60 * 1000:.2f} ms/step")
