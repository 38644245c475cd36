"""Run one job: truth, under `xfertop run` with --once polls, plain with attach polls. Raw JSON saved."""
import json
import os
import subprocess
import sys
import tempfile
import time

PY = "/work/main/.venv/bin/python"
HERE = "/tmp/trialA"
KEYS = ("data_wait_share", "copy_share", "compute_share", "steps", "dataloader_workers", "source",
        "main_loading_share", "sync_share", "other_share", "waiting_share", "early", "worker_start_wait_share",
        "data_wait_p50_ms", "data_wait_p95_ms", "wall_p50_ms", "wall_p95_ms", "samples_per_s", "hidden_wait")


def env(extra=None):
    e = dict(os.environ)
    e["OMP_NUM_THREADS"] = "1"
    e["PYTHONPATH"] = "/work/main/src"
    e.update(extra or {})
    return e


def brief(v):
    ev = v.get("evidence") or {}
    return {"kind": v.get("kind"), "severity": v.get("severity"), "headline": v.get("headline"),
            "advice": v.get("advice"), "ev": {k: ev[k] for k in KEYS if k in ev}}


def run_mode(job, args, name):
    d = tempfile.mkdtemp(prefix="xft-")
    e = env({"XFERTOP_DIR": d})
    out = open(f"{HERE}/raw/{name}_run.stdout", "w")
    err = open(f"{HERE}/raw/{name}_run.stderr", "w")
    t0 = time.monotonic()
    p = subprocess.Popen([PY, "-m", "xfertop", "run", "--", PY, job, *args], env=e, stdout=out, stderr=err, cwd=HERE)
    polls = []
    while p.poll() is None:
        r = subprocess.run([PY, "-m", "xfertop", "--once", "--json"], env=e, capture_output=True, text=True, timeout=60)
        t = round(time.monotonic() - t0, 1)
        if r.returncode != 0:
            polls.append({"t": t, "error": r.stderr[-300:]})
        else:
            snap = json.loads(r.stdout)
            items = snap["jobs"]["items"]
            if items:
                j = items[0]
                rk = j["ranks"][0] if j.get("ranks") else {}
                polls.append({"t": t, "jobs": len(items), "live": j.get("live"), "frozen": j.get("verdict_frozen"),
                              "rank_status": rk.get("status"), "verdict": brief(j.get("verdict") or {}),
                              "rank_window": rk.get("window")})
            else:
                polls.append({"t": t, "jobs": 0})
        time.sleep(max(0.0, 1.0 - (time.monotonic() - t0 - t)))
    out.close(); err.close()
    res = {"rc": p.returncode, "polls": polls, "dir": d}
    json.dump(res, open(f"{HERE}/raw/{name}_run.json", "w"), indent=1)
    return res


def attach_mode(job, args, name):
    out = open(f"{HERE}/raw/{name}_plain.stdout", "w")
    err = open(f"{HERE}/raw/{name}_plain.stderr", "w")
    t0 = time.monotonic()
    p = subprocess.Popen([PY, job, *args], env=env(), stdout=out, stderr=err, cwd=HERE)
    polls = []
    time.sleep(2.5)
    while p.poll() is None:
        r = subprocess.run([PY, "-m", "xfertop", "attach", str(p.pid), "--once", "--json", "--seconds", "2"],
                           env=env(), capture_output=True, text=True, timeout=60)
        t = round(time.monotonic() - t0, 1)
        if r.returncode != 0:
            polls.append({"t": t, "rc": r.returncode, "error": r.stderr[-400:]})
            continue
        rep = json.loads(r.stdout)
        polls.append({"t": t, "verdict": brief(rep.get("verdict") or {}), "raw": rep})
    out.close(); err.close()
    res = {"rc": p.returncode, "polls": polls}
    json.dump(res, open(f"{HERE}/raw/{name}_attach.json", "w"), indent=1)
    return res


def truth_mode(job, args, name):
    r = subprocess.run([PY, job, *args, "--truth"], env=env(), capture_output=True, text=True, cwd=HERE)
    open(f"{HERE}/raw/{name}_truth.stdout", "w").write(r.stdout)
    line = [l for l in r.stdout.splitlines() if l.startswith("TRUTH ")]
    return json.loads(line[-1][6:]) if line else {"error": r.stderr[-500:]}


def main():
    name, job, *args = sys.argv[1:]
    modes = os.environ.get("MODES", "truth,run,attach").split(",")
    os.makedirs(f"{HERE}/raw", exist_ok=True)
    if "truth" in modes:
        t = truth_mode(job, args, name)
        json.dump(t, open(f"{HERE}/raw/{name}_truth.json", "w"))
        print("TRUTH", json.dumps(t))
    if "run" in modes:
        r = run_mode(job, args, name)
        print("RUN rc", r["rc"])
        for q in r["polls"]:
            v = q.get("verdict") or {}
            print(" ", q["t"], v.get("kind"), "|", v.get("headline"), "|", json.dumps(v.get("ev")))
        last = [q for q in r["polls"] if q.get("verdict")]
        if last:
            print("  last advice:", json.dumps(last[-1]["verdict"]["advice"], indent=1))
        print(open(f"{HERE}/raw/{name}_run.stderr").read()[-2500:])
        print(open(f"{HERE}/raw/{name}_run.stdout").read()[-300:])
    if "attach" in modes:
        a = attach_mode(job, args, name)
        print("ATTACH rc", a["rc"])
        for q in a["polls"]:
            v = q.get("verdict") or {}
            print(" ", q["t"], v.get("kind"), "|", v.get("headline"), "|", json.dumps(v.get("ev")), q.get("error", ""))
            print("    advice:", json.dumps(v.get("advice")))
        print(open(f"{HERE}/raw/{name}_plain.stdout").read()[-300:])


main()
