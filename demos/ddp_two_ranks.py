"""Two DDP ranks, each watched: the viewer groups them into one job by TORCHELASTIC_RUN_ID.

    torchrun --nproc_per_node 2 demos/ddp_two_ranks.py             # gloo on CPU unless there are 2 GPUs
    torchrun --nproc_per_node 2 demos/ddp_two_ranks.py --steps 2000

Rank 1 loads its samples twice as slowly, so it is the straggler the viewer should point at.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from demo_common import SlowSamples, model_for, parse_args, report, train_step
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler

import xfertop


def main() -> None:
    args = parse_args("Two ranks of one DDP job, one of them slower to load.", steps=40)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    local_world_size = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    # One GPU per rank, or none: with fewer GPUs than ranks the demo runs on CPU with gloo.
    use_cuda = args.device != "cpu" and torch.cuda.device_count() >= local_world_size
    if use_cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if use_cuda else "gloo")
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    load_ms = args.load_ms * (2 if dist.get_rank() == 1 else 1)
    dataset = SlowSamples(args.steps * args.batch_size * dist.get_world_size(), args.features, load_ms)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=DistributedSampler(dataset))
    model, optimizer = model_for(args.features, device)
    ddp_model = DistributedDataParallel(model, device_ids=[local_rank] if use_cuda else None)
    for inputs, labels in xfertop.watch(loader):
        inputs, labels = xfertop.to_device((inputs, labels), device, non_blocking=True)
        train_step(ddp_model, optimizer, inputs, labels)
    dist.destroy_process_group()
    report(f"ddp_two_ranks rank {local_rank}")


if __name__ == "__main__":
    main()
