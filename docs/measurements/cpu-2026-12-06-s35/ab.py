import subprocess, sys, statistics, os
trees = sys.argv[1:] or ["/tmp/base", "/work/main"]
res = {t: [] for t in trees}; direct = []
for r in range(int(os.environ.get("ROUNDS", "6"))):
    direct.append(float(subprocess.run([sys.executable, "/tmp/pa/layer.py", "asis", "10000", "meta"], capture_output=True, text=True).stdout.strip().splitlines()[-1]))
    for t in (trees if r % 2 == 0 else trees[::-1]):
        env = dict(os.environ, PYTHONPATH=t + "/src")
        out = subprocess.run([sys.executable, "-m", "xfertop.cli.run", "--", sys.executable, "/tmp/pa/layer.py", "asis", "10000", "meta"], capture_output=True, text=True, env=env).stdout
        res[t].append(float(out.strip().splitlines()[-1]))
d = statistics.median(direct)
for t in trees:
    print(t, "added us/step median %.2f" % ((statistics.median(res[t]) - d) / 1000), [round((x - y) / 1000, 1) for x, y in zip(res[t], direct)])
