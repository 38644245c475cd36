"""Print, for out/JOB: truth, run summary, live (--once --json, the live job's item) and attach verdicts."""
import json, re, sys, os
J = sys.argv[1]; O = f"out/{J}"
meta = open(f"{O}/meta.txt").read()
m = re.search(r"attach pid=(\d+)", meta); cp = int(m.group(1)) if m else None
print("==", J); print(meta.strip())
print("-- truth:", *[l.strip() for l in open(f"{O}/truth.stderr") if l.startswith("TRUTH")], sep="\n   ")
print("-- run summary:"); print("".join(l for l in open(f"{O}/run.stderr") if not ("NumPy" in l or "_conversion_method" in l)).rstrip())
d = json.load(open(f"{O}/once.json"))
print("-- once items:")
for it in d["jobs"]["items"]:
    pids = [r["pid"] for r in it["ranks"]]
    v = it.get("verdict") or {}
    ev = v.get("evidence") or {}
    mark = "LIVE-JOB" if cp in pids else "other"
    parts = " ".join(f"{k}={100*ev[k]:.1f}" for k in ("host_wait_share","host_loop_pre_share","host_copy_share","host_model_share","host_sync_share","host_loop_post_share") if ev.get(k) is not None)
    print(f"   [{mark}] pids={pids} live={it.get('live')} status={[r['status'] for r in it['ranks']]} kind={v.get('kind')} steps={ev.get('steps')}")
    if mark == "LIVE-JOB":
        print("     headline:", v.get("headline")); print("     parts:", parts)
        for a in v.get("advice", []): print("     advice:", a)
        r = it["ranks"][0]; print("     busy_thread:", r.get("busy_thread"), r.get("busy_thread_share"), "loader_off_thread:", r.get("loader_off_thread"))
a = json.load(open(f"{O}/attach.json"))
v = a["verdict"]; ev = v["evidence"]
print("-- attach:", v["kind"], "|", v["headline"])
print("   shares:", {k: ev[k] for k in ("data_wait_share","main_loading_share","copy_share","gpu_sync_share","compute_share","other_share","loop_host_share","queue_wait_share","samples") if k in ev})
for x in v.get("advice", []): print("   advice:", x)
