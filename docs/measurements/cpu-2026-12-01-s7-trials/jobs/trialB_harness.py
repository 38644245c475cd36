"""Run a job in one mode and record: truth | plain | run | attach.  python harness.py JOB MODE [poll_s]"""
import json, os, subprocess, sys, tempfile, time
job, mode = sys.argv[1], sys.argv[2]
poll = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
PY = "/work/main/.venv/bin/python"
name = os.path.splitext(os.path.basename(job))[0]
raw = f"/tmp/trialB/raw/{name}_{mode}"
os.makedirs(raw, exist_ok=True)
env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
xdir = tempfile.mkdtemp(prefix="xft_"); env["XFERTOP_DIR"] = xdir
def brief(v):
    return {"kind": v.get("kind"), "severity": v.get("severity"), "headline": v.get("headline"), "advice": v.get("advice")}
if mode == "plainpoll":
    proc = subprocess.Popen([PY, job], env=env, stdout=subprocess.PIPE, text=True)
    while proc.poll() is None:
        t1 = time.time(); subprocess.run([PY, "-m", "xfertop", "--once", "--json"], env=env, capture_output=True); time.sleep(max(0, poll - (time.time() - t1)))
    out = proc.stdout.read(); open(f"{raw}/stdout.txt", "w").write(out)
    print("rc", proc.returncode); print(out.splitlines()[-1]); sys.exit()
if mode in ("truth", "plain"):
    cmd = [PY, job] + (["--truth"] if mode == "truth" else [])
    t = time.time(); r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    open(f"{raw}/stdout.txt", "w").write(r.stdout); open(f"{raw}/stderr.txt", "w").write(r.stderr)
    print("rc", r.returncode, "wall", round(time.time() - t, 1))
    print("\n".join(l for l in r.stdout.splitlines() if l.startswith(("truth", "result"))))
    sys.exit()
if mode == "run":
    proc = subprocess.Popen([PY, "-m", "xfertop", "run", "--", PY, job], env=env, stdout=open(f"{raw}/stdout.txt", "w"), stderr=open(f"{raw}/stderr.txt", "w"))
    target = None
else:
    proc = subprocess.Popen([PY, job], env=env, stdout=open(f"{raw}/stdout.txt", "w"), stderr=open(f"{raw}/stderr.txt", "w"))
    time.sleep(3.0)
n = 0; t_start = time.time(); last = None
while proc.poll() is None:
    t = time.time()
    if mode == "run":
        r = subprocess.run([PY, "-m", "xfertop", "--once", "--json"], env=env, capture_output=True, text=True)
    else:
        r = subprocess.run([PY, "-m", "xfertop", "attach", str(proc.pid), "--once", "--json", "--seconds", "2"], env=env, capture_output=True, text=True)
    n += 1
    fn = f"{raw}/poll{n:03d}.json"
    open(fn, "w").write(r.stdout if r.stdout else "")
    if r.stderr.strip(): open(fn + ".err", "w").write(r.stderr)
    try:
        d = json.loads(r.stdout)
    except Exception:
        print(f"[{t - t_start:5.1f}] poll {n} rc={r.returncode} no json: {r.stderr.strip()[:200]}"); continue
    if mode == "run":
        for item in d["jobs"]["items"]:
            v = item.get("verdict") or {}; ev = v.get("evidence") or {}
            w = (item["ranks"][0].get("window") or {}) if item["ranks"] else {}
            steps = [s["step"] for s in item["ranks"][0].get("recent_steps", [])] if item["ranks"] else []
            line = (f"[{t - t_start:5.1f}] {v.get('kind')} | {v.get('headline')} | data={ev.get('data_wait_share')} "
                    f"comp={ev.get('compute_share')} steps={ev.get('first_step')}-{ev.get('last_step')} frozen={item.get('verdict_frozen')}")
            print(line)
            adv = tuple(v.get("advice") or [])
            if adv != last:
                for a in adv: print("      advice:", a)
                last = adv
    else:
        v = d.get("verdict") or d
        keys = {k: d.get(k) for k in d if k not in ("verdict",)}
        print(f"[{t - t_start:5.1f}] rc={r.returncode} kind={v.get('kind') if isinstance(v, dict) else v} | {v.get('headline') if isinstance(v, dict) else ''}")
        adv = tuple(v.get("advice") or []) if isinstance(v, dict) else ()
        if adv != last:
            for a in adv: print("      advice:", a)
            last = adv
    dt = time.time() - t
    if dt < poll: time.sleep(poll - dt)
print("rc", proc.wait())
print(open(f"{raw}/stdout.txt").read().splitlines()[-1])
err = open(f"{raw}/stderr.txt").read()
print("---- stderr (filtered) ----")
print("\n".join(l for l in err.splitlines() if "numpy" not in l.lower() and "_conversion_method_template" not in l))
