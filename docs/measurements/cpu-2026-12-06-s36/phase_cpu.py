import os, sys, time, glob
sys.path.insert(0, "/work/main/benchmarks")
from pty_run import PtyProcess
def main_ns(pid):
    return int(open(f"/proc/{pid}/task/{pid}/schedstat").read().split()[0])
def cpu_ns(pid):
    total = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try: total += int(open(f).read().split()[0])
        except OSError: pass
    return total
cols, rows = map(int, sys.argv[1].split("x")); windows = [tuple(map(float, w.split("-"))) for w in sys.argv[2].split(",")]
t = PtyProcess([sys.executable, "-m", "xfertop", *sys.argv[3:]], columns=cols, rows=rows, env=dict(os.environ))
start = time.monotonic()
for a, b in windows:
    t.read_for(max(0, start + a - time.monotonic()))
    c0, m0, w0 = cpu_ns(t.pid), main_ns(t.pid), time.monotonic()
    t.read_for(max(0, start + b - time.monotonic()))
    c1, m1, w1 = cpu_ns(t.pid), main_ns(t.pid), time.monotonic()
    print(f"{a:.0f}-{b:.0f}s: {100 * (c1 - c0) / 1e9 / (w1 - w0):.2f}% of a core, main thread {(m1 - m0) / 1e6 / (w1 - w0):.2f} ms/s", flush=True)
t.send(b"q"); t.wait(10); t.close()
