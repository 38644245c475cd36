"""Median per row of reporter_overhead.json over rounds, per tree; ratio new/base."""
import json, statistics, sys, pathlib
out = pathlib.Path(sys.argv[1])
rows = {}
for tree in ("wt-rep-base", "wt-rep"):
    for f in sorted(out.glob(f"{tree}-[0-9]*/reporter_overhead.json")):
        d = json.loads(f.read_text())
        sections = {"in_process_cpu": d["in_process_cpu"], "fake_cuda/sampling": d["fake_cuda_model"]["sampling"],
                    "fake_cuda/every_step": d["fake_cuda_model"]["every_step"], "xfertop_run": d["xfertop_run"]}
        for sec, vals in sections.items():
            for name, v in vals.items():
                if isinstance(v, dict) and "added_ns_per_step" in v and name != "direct":
                    rows.setdefault((sec, name), {}).setdefault(tree, []).append(v["added_ns_per_step"] / 1000)
print(f"{'row':58} {'before':>8} {'after':>8} {'ratio':>6}   (us/step added; median of n rounds)")
for (sec, name), t in rows.items():
    b, a = statistics.median(t["wt-rep-base"]), statistics.median(t.get("wt-rep", [float('nan')]))
    print(f"{sec + ' ' + name:58} {b:8.2f} {a:8.2f} {a / b:6.2f}   n={len(t['wt-rep-base'])},{len(t.get('wt-rep', []))}  "
          f"base {['%.2f' % x for x in t['wt-rep-base']]} new {['%.2f' % x for x in t.get('wt-rep', [])]}")
