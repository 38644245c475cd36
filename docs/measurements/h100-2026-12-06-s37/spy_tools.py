"""Where nvitop's and xfertop's CPU goes at 1 Hz: each run in a 160x48 pty beside the CUDA demo job, its
stacks recorded by py-spy (raw collapsed format, every thread, idle left out) for SECONDS.

    python spy_tools.py OUT_DIR [SECONDS]
"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../../benchmarks"))
from pty_run import PtyProcess

out = sys.argv[1]
seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
os.makedirs(out, exist_ok=True)
load = subprocess.Popen(
    [sys.executable, "-m", "xfertop.launch.demo_job", "--phase-seconds", "600", "--device", "cuda"],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
time.sleep(5)
tools = {"nvitop": [shutil.which("nvitop") or "nvitop", "--interval", "1"],
         "xfertop": [sys.executable, "-m", "xfertop", "--interval", "1"]}
for name, argv in tools.items():
    tui = PtyProcess(argv, columns=160, rows=48)
    tui.read_for(4)
    spy = subprocess.Popen(["py-spy", "record", "--pid", str(tui.pid), "--duration", str(seconds), "--rate", "250",
                            "--format", "raw", "--threads", "-o", f"{out}/{name}.txt"],
                           stdout=subprocess.DEVNULL, stderr=open(f"{out}/{name}.err", "w"))
    tui.read_for(seconds + 3)
    spy.wait(30)
    tui.send(b"q")
    tui.wait(10)
    tui.close()
    print(name, "py-spy rc", spy.returncode, flush=True)
load.terminate()
load.wait(10)
