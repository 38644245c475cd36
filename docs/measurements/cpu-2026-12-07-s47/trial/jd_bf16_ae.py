"""Job D: denoising autoencoder under torch.autocast('cpu', dtype=torch.bfloat16),
compute-heavy, in-memory TensorDataset, num_workers=0."""
import sys, time
import torch, torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader

TRUTH = '--truth' in sys.argv
pc = time.perf_counter
PH = ('wait', 'loop_pre', 'copy', 'model', 'sync', 'loop_post')
acc = dict.fromkeys(PH, 0.0)

def main():
    torch.manual_seed(0)
    data = torch.randn(64 * 600, 256)
    loader = DataLoader(TensorDataset(data), batch_size=64, shuffle=True, num_workers=0)
    enc = nn.Sequential(nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 64))
    dec = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 256))
    model = nn.Sequential(enc, dec)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    i = 0
    for epoch in range(1):
        tb = pc() if TRUTH else 0.0
        for (x,) in loader:
            if TRUTH:
                t0 = pc(); rec = i >= 5
                if rec: acc['wait'] += t0 - tb
            x = x.to('cpu')
            if TRUTH:
                t1 = pc()
                if rec: acc['copy'] += t1 - t0
            noisy = x + 0.1 * torch.randn_like(x)
            if TRUTH:
                t2 = pc()
                if rec: acc['loop_pre'] += t2 - t1
                t1 = t2
            with torch.autocast('cpu', dtype=torch.bfloat16):
                rec_x = model(noisy)
                loss = nn.functional.mse_loss(rec_x.float(), x)
            opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
            if TRUTH:
                t2 = pc()
                if rec: acc['model'] += t2 - t1
            if i % 20 == 0:
                l = loss.item()
                if TRUTH:
                    t3 = pc()
                    if rec: acc['sync'] += t3 - t2
                    t2 = t3
                print(f"epoch {epoch} step {i} mse {l:.5f}", flush=True)
            if TRUTH:
                t4 = pc()
                if rec: acc['loop_post'] += t4 - t2
                tb = t4
            i += 1
    print(f"finished {i} steps")
    if TRUTH:
        tot = sum(acc.values())
        print("TRUTH jd_bf16_ae " + " ".join(f"{k}={100*acc[k]/tot:.1f}%" for k in PH) + f" in_step_s={tot:.2f}")
    sys.exit(0)

if __name__ == '__main__':
    main()
