"""New-job trial: each job's truth (its own phase clock, synchronised), then under `xfertop run` (live polls +
summary) and attached, both without the truth's syncs (TRUTH_SYNC=0).

    python docs/measurements/cpu-2026-12-05-s31/trial.py j67_hf_eval.py j68_lightning_val.py   # SEC=14 default

A job is a file of jobs/ here, or another session's, named from here (``../cpu-2026-12-05-s26/jobs/j11_heavy_val.py``):
jobs/common.py here is the one every job imports.
"""
import json, os, re, subprocess, sys, time, tempfile
from pathlib import Path
J = Path(__file__).resolve().parent / "jobs"; SRC = J.parents[3] / "src"; SEC = float(os.environ.get("SEC", "14"))
env0 = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": f"{SRC}:{J}:" + os.environ.get("TRIAL_LIBS", "")}
XT = [sys.executable, "-m", "xfertop"]
def truth_of(text):
    m = re.search(r"^TRUTH (.*)$", text, re.M)
    return json.loads(m.group(1)) if m else None
def verdicts(doc):
    out = []
    for item in (doc.get("jobs") or {}).get("items", []):
        v = item.get("verdict") or {}
        ev = v.get("evidence") or {}
        parts = {k: ev.get(k) for k in ("wait_share", "loop_pre_share", "copy_share", "model_share", "sync_share", "loop_post_share") if k in ev}
        out.append((v.get("kind"), v.get("headline"), parts or {k: ev.get(k) for k in ev if k.endswith("share")}))
    return out
for name in sys.argv[1:]:
    job = str(J / name) if "/" not in name else str(J.parent / name)
    print(f"===== {Path(name).name}", flush=True)
    p = subprocess.run([sys.executable, job, str(SEC)], env=env0, capture_output=True, text=True)
    t = truth_of(p.stdout); print("truth:", t and t["parts"], "steps", t and t["steps"], "rc", p.returncode)
    d = tempfile.mkdtemp(); env = {**env0, "XFERTOP_DIR": d, "TRUTH_SYNC": "0"}
    proc = subprocess.Popen(XT + ["run", "--", sys.executable, job, str(SEC)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    start = time.time()
    for at in (SEC * 0.55, SEC * 0.8, SEC * 0.95):
        time.sleep(max(0, start + at - time.time()))
        o = subprocess.run(XT + ["--once", "--json"], env=env, capture_output=True, text=True)
        try: print(f"  live {at:4.1f}s:", verdicts(json.loads(o.stdout)))
        except Exception as e: print("  live err", e, o.stderr[-300:])
    out, err = proc.communicate()
    tr = truth_of(out)
    print("  run rc", proc.returncode, "run truth:", tr and tr["parts"], "steps", tr and tr["steps"])
    summ = err[err.find("xfertop"):] if "xfertop" in err else err[-1500:]
    print("  summary:", "\n    ".join(l for l in summ.splitlines()[:14]))
    # attach
    plain = subprocess.Popen([sys.executable, job, str(SEC)], env={**env0, "TRUTH_SYNC": "0"}, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(SEC * float(os.environ.get("ATTACH_AT", "0.45")))  # a share of SEC: later on a GPU (CUDA init)
    a = subprocess.run(XT + ["attach", str(plain.pid), "--once", "--json", "--seconds", "3"], env=env0, capture_output=True, text=True)
    try:
        doc = json.loads(a.stdout)
        v = doc.get("verdict") or doc
        print("  attach:", v.get("kind"), "|", v.get("headline"))
        ev = v.get("evidence") or {}
        keys = ("data_wait_share", "main_loading_share", "compute_share", "dispatch_share", "loop_host_share",
                "loop_tensor_share", "gpu_sync_share", "other_share", "gpu_busy_share")
        print("    attach shares:", {k.removesuffix("_share"): ev.get(k) for k in keys if k in ev})
    except Exception as e: print("  attach err", e, a.stdout[-300:], a.stderr[-300:])
    plain.communicate()
