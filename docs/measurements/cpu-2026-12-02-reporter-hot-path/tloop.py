"""torch loops for instruction counts: variant plain|run (copy timing + watch, the `xfertop run` hooks)|todev."""
import sys, os, tempfile, itertools
os.environ.setdefault("XFERTOP_DIR", tempfile.mkdtemp(prefix="xf-t-"))
variant, steps = sys.argv[1], int(sys.argv[2])
if variant == "run":
    import xfertop.launch.autopatch as ap
    ap.install(copy_timing=True)
import torch
import xfertop
from torch.utils.data import DataLoader, TensorDataset
meta = torch.device("meta")
batch = torch.ones(8, 64)
def loop(n):
    if variant == "plain":
        for (b,) in itertools.repeat([batch], n):
            b.to(meta, non_blocking=True)
    elif variant == "run":   # DataLoader.__iter__ is wrapped: use watch() on the repeat as the wrapper
        for (b,) in xfertop.watch(itertools.repeat([batch], n)):
            b.to(meta, non_blocking=True)
    elif variant == "watch":
        for (b,) in xfertop.watch(itertools.repeat([batch], n)):
            b.to(meta, non_blocking=True)
    elif variant == "todev":
        for (b,) in xfertop.watch(itertools.repeat([batch], n)):
            xfertop.to_device(b, meta, non_blocking=True)
loop(300)
loop(steps)
