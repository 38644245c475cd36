"""A GAN's loop: per batch a discriminator step and a generator step (two optimizers, two backward
passes), 2 workers feed real samples from memory."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
loader = DataLoader(TensorDataset(torch.randn(16384, 128)), batch_size=128, shuffle=True, num_workers=2,
                    persistent_workers=True)
G = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(), torch.nn.Linear(512, 128))
D = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.LeakyReLU(0.2), torch.nn.Linear(512, 1))
opt_g = torch.optim.Adam(G.parameters(), 2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), 2e-4, betas=(0.5, 0.999))
bce = torch.nn.BCEWithLogitsLoss()
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for (real,) in loader:
        truth.mark("wait")
        z = torch.randn(real.shape[0], 64)
        fake = G(z)
        d_loss = bce(D(real), torch.ones(len(real), 1)) + bce(D(fake.detach()), torch.zeros(len(real), 1))
        opt_d.zero_grad(); d_loss.backward(); opt_d.step()
        g_loss = bce(D(fake), torch.ones(len(real), 1))
        opt_g.zero_grad(); g_loss.backward(); opt_g.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
