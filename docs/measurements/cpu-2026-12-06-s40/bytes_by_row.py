"""Where the live view's terminal output goes: bytes a second per screen row, in steady state.

    python bytes_by_row.py WARMUP SECONDS [--real] [--cuda]

The view (160x48, 1 Hz) runs in a pty beside the demo job: the fake NVML from the recorded H200 unless
--real, the job on the CPU unless --cuda. After WARMUP s the output is kept for SECONDS and split at
Textual's cursor moves (CSI row;col H): each piece is booked to the row it was written on.
"""
import collections, os, re, subprocess, sys, tempfile
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
sys.path.insert(0, REPO + "/benchmarks")
from pty_run import PtyProcess
from tui_cpu_fake_gpu import LAUNCHER

warm, secs = float(sys.argv[1]), float(sys.argv[2])
real, cuda = "--real" in sys.argv, "--cuda" in sys.argv
env = dict(os.environ, XFERTOP_FAKE_TESTS_DIR=REPO + "/tests", XFERTOP_DIR=tempfile.mkdtemp(prefix="xfertop-bytes-"))
job = subprocess.Popen([sys.executable, "-m", "xfertop.launch.demo_job", "--phase-seconds", "900",
                        *(["--device", "cuda"] if cuda else [])],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
env["XFERTOP_FAKE_GPU_PIDS"] = str(job.pid)
launch = ["-m", "xfertop"] if real else ["-c", LAUNCHER]
t = PtyProcess([sys.executable, *launch, "--interval", "1"], columns=160, rows=48, env=env)
try:
    t.read_for(warm)
    start = len(t.output)
    t.read_for(secs)
    data = bytes(t.output[start:])
    t.send(b"q")
    t.wait(10)
finally:
    t.close()
    job.kill()
rows, last = collections.Counter(), {}
row = None
for piece in re.split(rb"(\x1b\[\d+;\d+H)", data):
    moved = re.fullmatch(rb"\x1b\[(\d+);(\d+)H", piece)
    if moved:
        row = int(moved.group(1))
    else:
        text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", piece).decode(errors="replace").strip()
        if text:
            last[row] = text
    rows[row] += len(piece)
escapes = data.count(b"\x1b[")
print(f"{len(data)} bytes in {secs:g} s: {len(data) / secs:.0f} B/s, {escapes / secs:.0f} escape sequences/s")
for r in sorted(rows, key=lambda r: (r is None, r or 0)):
    print(f"row {r}: {rows[r] / secs:6.0f} B/s  last written: {last.get(r, '')[:70]!r}")
