"""A loop starved by its DataLoader: samples load slowly on the main process (num_workers=0).

python demos/starved_loader.py              # a few seconds on CPU
python demos/starved_loader.py --steps 3000 # long enough to watch with `xfertop`
"""

from __future__ import annotations

from demo_common import SlowSamples, model_for, parse_args, pick_device, report, train_step
from torch.utils.data import DataLoader

import xfertop


def main() -> None:
    args = parse_args("A training loop that waits for its DataLoader most of the time.")
    device = pick_device(args.device)
    dataset = SlowSamples(args.steps * args.batch_size, args.features, args.load_ms)
    loader = DataLoader(dataset, batch_size=args.batch_size, num_workers=0)  # loading on the main process
    model, optimizer = model_for(args.features, device)
    for inputs, labels in xfertop.watch(loader):
        inputs, labels = xfertop.to_device((inputs, labels), device, non_blocking=True)
        train_step(model, optimizer, inputs, labels)
    report("starved_loader")


if __name__ == "__main__":
    main()
