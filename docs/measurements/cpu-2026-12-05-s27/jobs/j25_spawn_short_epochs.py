"""Workers started with the "spawn" method (the default on macOS and Windows, often forced for CUDA
safety), not persistent, over short epochs of 20 batches: each epoch pays the workers' interpreter start."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
if __name__ == "__main__":
    ds = TensorDataset(torch.randn(20 * 64, 128), torch.randint(0, 10, (20 * 64,)))
    loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, multiprocessing_context="spawn")
    model = torch.nn.Sequential(torch.nn.Linear(128, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    truth = Truth(warm=0); deadline = time.time() + float(sys.argv[1])
    while time.time() < deadline:
        truth.t = time.perf_counter()
        for x, y in loader:
            truth.mark("wait")
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            truth.mark("model"); truth.next_step()
    truth.report()
