"""This session's three scorer files as one markdown table: python3 table.py > table.md"""

import json
from pathlib import Path

here = Path(__file__).parent
rows: dict[str, dict] = {}
for call in ("call1", "call2", "call3"):
    for s in json.loads((here / call / "score.json").read_text())["scenarios"]:
        row = rows.setdefault(s["id"], {"calls": [], "modes": {}})
        row["calls"].append(call)
        if s.get("truth"):
            t = s["truth"]["truth"]
            row["truth"] = f"{s.get('truth_kind')} " + "/".join(
                str(round(100 * t["parts"].get(k, 0)))
                for k in ("wait", "loop_pre", "copy", "model", "sync", "loop_post")
            ) if isinstance(t, dict) and "parts" in t else s.get("truth_kind")
        row["modes"].update(s.get("modes", {}))
print("| id | calls | truth | run | watch | attach | samples/s of plain run/watch/attach | run's parts vs truth (max points) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for sid, row in rows.items():
    cells = []
    for mode in ("run", "watch", "attach"):
        m = row["modes"].get(mode)
        if not m:
            cells.append("-")
        elif not m.get("scored"):
            cells.append(f"unscored ({m.get('verdict')})")
        else:
            cells.append(("right: " if m.get("right") else "WRONG: ") + str(m.get("verdict")))
    rates = " / ".join(
        "-" if not row["modes"].get(k) or row["modes"][k].get("samples_rel") is None
        else f"{row['modes'][k]['samples_rel']:.2f}" for k in ("run", "watch", "attach")
    )
    parts = row["modes"].get("run", {}).get("parts_error")
    print(f"| {sid} | {','.join(row['calls'])} | {row.get('truth', '-')} | {' | '.join(cells)} | {rates} | {'-' if parts is None else parts} |")
