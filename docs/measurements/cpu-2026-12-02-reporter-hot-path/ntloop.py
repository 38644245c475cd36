"""Torch-free step loops against the StepClock (for instruction counts): mode cpu|fake, variant watch|step|todev."""
import sys, os, tempfile, itertools
os.environ.setdefault("XFERTOP_DIR", tempfile.mkdtemp(prefix="xf-nt-"))
sys.path.insert(0, "/work/wt-rep/tests")
from types import SimpleNamespace
import xfertop, xfertop.reporter
mode, variant, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
batch = SimpleNamespace(shape=(8, 64), is_cuda=False)
if mode == "fake":
    from fakes.fake_cuda import FakeCuda
    from xfertop.reporter._gpu_sampling import GpuSampling
    from xfertop.reporter._gpu_timer import GpuTimer
    clock = xfertop.reporter._get_clock()
    clock.gap.timer = GpuTimer(FakeCuda(), 0)
    clock.gap.sampling = GpuSampling(enabled=False); clock.gap.sampling.every = 5
def run(n):
    if variant == "plain":
        for b in itertools.repeat(batch, n): pass
    elif variant == "watch":
        for b in xfertop.watch(itertools.repeat(batch, n)): pass
    elif variant == "step":
        for b in itertools.repeat(batch, n):
            with xfertop.step(): pass
    elif variant == "mark":
        for b in xfertop.watch(itertools.repeat(batch, n)): xfertop.mark_copied()
run(200)
run(steps)
