"""The latest result per scenario and mode of this folder's three calls, as a Markdown table."""

import json

CALLS = [("call1", "c101958"), ("call2", "250f226"), ("call3", "250f226")]
ORDER = "a b c j l o o0 p d e h r i q f g s t u m k n1 n2".split()
PARTS = ("wait", "loop_pre", "copy", "model", "sync", "loop_post")

latest = {}
for call, tree in CALLS:
    for entry in json.load(open(f"{call}/score.json"))["scenarios"]:
        latest[entry["id"]] = (call, tree, entry)
print("| id | call (tree) | truth: kind, % wait/pre/copy/model/sync/post | run | watch | attach | rate run/watch/attach |")
print("| --- | --- | --- | --- | --- | --- | --- |")
totals = {mode: [0, 0] for mode in ("run", "watch", "attach")}
changed = 0
for sid in ORDER:
    if sid not in latest:
        print(f"| {sid} | not run | | | | | |")
        continue
    call, tree, entry = latest[sid]
    parts = entry["truth"]["truth"]["parts"]
    truth = "/".join(str(round(100 * parts[k])) for k in PARTS)
    cells, rates = [], []
    for mode in ("run", "watch", "attach"):
        result = entry["modes"].get(mode)
        if result is None:
            cells.append("-")
            rates.append("-")
            continue
        rates.append(str(result.get("samples_rel")))
        if not result.get("scored"):
            cells.append("n/a")
            continue
        totals[mode][1] += 1
        totals[mode][0] += bool(result["right"])
        cells.append(("right" if result["right"] else "**wrong**") + f": {result['verdict']}")
        if not (result.get("exit_match") and result.get("result_match")):
            changed += 1
    print(f"| {sid} | {call} ({tree}) | {entry['truth_kind']} {truth} | " + " | ".join(cells) + f" | {'/'.join(rates)} |")
print()
for mode, (right, scored) in totals.items():
    print(f"- {mode}: {right}/{scored} right ({100 * right / scored:.0f}%)")
print(f"- runs whose exit code or result line differed from the plain run: {changed}")
