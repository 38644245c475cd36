"""DCGAN-style GAN on synthetic 28x28 'digits': a D step and a G step (two optimizers) per batch."""
import argparse, sys, time
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from truth import Truth

p = argparse.ArgumentParser(); p.add_argument("--truth", action="store_true"); p.add_argument("--steps", type=int, default=180)
args = p.parse_args()
torch.manual_seed(0)
# synthetic "digits": blurred blobs
N = 12800
base = torch.rand(N, 1, 7, 7)
real = nn.functional.interpolate(base, size=28, mode="bilinear", align_corners=False) * 2 - 1
ds = TensorDataset(real)
loader = DataLoader(ds, batch_size=64, shuffle=True, drop_last=True)

Z = 64
G = nn.Sequential(nn.Linear(Z, 128 * 7 * 7), nn.ReLU(), nn.Unflatten(1, (128, 7, 7)),
                  nn.ConvTranspose2d(128, 64, 4, 2, 1), nn.BatchNorm2d(64), nn.ReLU(),
                  nn.ConvTranspose2d(64, 1, 4, 2, 1), nn.Tanh())
D = nn.Sequential(nn.Conv2d(1, 64, 4, 2, 1), nn.LeakyReLU(0.2),
                  nn.Conv2d(64, 128, 4, 2, 1), nn.BatchNorm2d(128), nn.LeakyReLU(0.2),
                  nn.Flatten(), nn.Linear(128 * 7 * 7, 1))
optG = torch.optim.Adam(G.parameters(), 2e-4, betas=(0.5, 0.999))
optD = torch.optim.Adam(D.parameters(), 2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
T = Truth(enabled=args.truth)
step = 0
t0 = time.time()
while step < args.steps:
    T.begin()
    for (x,) in loader:
        T.mark("wait")
        b = x.size(0)
        z = torch.randn(b, Z)
        ones, zeros = torch.ones(b, 1), torch.zeros(b, 1)
        T.mark("pre")
        # --- discriminator step
        optD.zero_grad(set_to_none=True)
        fake = G(z)
        lossD = bce(D(x), ones) + bce(D(fake.detach()), zeros)
        lossD.backward()
        optD.step()
        # --- generator step
        optG.zero_grad(set_to_none=True)
        lossG = bce(D(fake), ones)
        lossG.backward()
        optG.step()
        T.mark("model")
        if step % 50 == 0:
            lD, lG = lossD.item(), lossG.item()
            T.mark("sync")
            print(f"step {step} lossD {lD:.3f} lossG {lG:.3f}", flush=True)
        T.mark("post")
        T.end_step()
        step += 1
        if step >= args.steps:
            break
print(f"done: {step} GAN steps, final lossD {lossD.item():.3f} lossG {lossG.item():.3f}")
T.report(windows=3)
