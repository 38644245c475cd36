import os, subprocess, sys, time, threading
tree, job = sys.argv[1], sys.argv[2:]
env = dict(os.environ, PYTHONPATH=f"{tree}/src:/work/main/docs/measurements/cpu-2026-12-05-s31/jobs", XFERTOP_DIR="/tmp/lcpu")
p = subprocess.Popen([sys.executable, "-m", "xfertop", "run", "--", *job], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
best = [0.0]
def watch():
    tick = os.sysconf("SC_CLK_TCK")
    while p.poll() is None:
        try:
            f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
            best[0] = (int(f[11]) + int(f[12])) / tick
        except OSError: pass
        time.sleep(0.05)
t = threading.Thread(target=watch); t.start()
err = p.communicate()[1]; t.join()
line = next((l for l in err.splitlines() if "exited" in l), "")
print(f"{tree}: launcher CPU {best[0]:.2f} s | {line[:110]}")
