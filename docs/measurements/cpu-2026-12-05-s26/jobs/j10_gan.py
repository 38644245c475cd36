"""A small GAN: per batch a discriminator step and a generator step (two optimizers), 2 workers, compute-heavy."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
real = TensorDataset(torch.randn(8192, 256))
loader = DataLoader(real, batch_size=128, shuffle=True, num_workers=2, persistent_workers=True)
G = torch.nn.Sequential(torch.nn.Linear(64, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256))
D = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.LeakyReLU(0.2), torch.nn.Linear(1024, 1))
og, od = torch.optim.Adam(G.parameters(), 2e-4), torch.optim.Adam(D.parameters(), 2e-4)
bce = torch.nn.functional.binary_cross_entropy_with_logits
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for (x,) in loader:
        truth.mark("wait")
        z = torch.randn(x.shape[0], 64)
        fake = G(z)
        ld = bce(D(x), torch.ones(x.shape[0], 1)) + bce(D(fake.detach()), torch.zeros(x.shape[0], 1))
        od.zero_grad(); ld.backward(); od.step()
        lg = bce(D(fake), torch.ones(x.shape[0], 1))
        og.zero_grad(); lg.backward(); og.step()
        truth.mark("model")
        truth.next_step()
        if time.time() > deadline: break
truth.report()
