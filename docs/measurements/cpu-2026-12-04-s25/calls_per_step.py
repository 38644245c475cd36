"""Python calls a step that the reporter adds: reporter_instructions.py's loop (h's shape on the CPU), 300
steps to warm up, then ``sys.setprofile`` counts every Python call of 200 steps.

    python docs/measurements/cpu-2026-12-04-s25/calls_per_step.py plain
    python docs/measurements/cpu-2026-12-04-s25/calls_per_step.py run      # minus plain: the calls added
"""

import collections
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ["XFERTOP_DIR"] = tempfile.mkdtemp(prefix="xfertop-calls-")
os.environ["XFERTOP_REPO"] = str(REPO)
from reporter_instructions import JOB  # noqa: E402

STEPS = 200
mode = sys.argv[1]
sys.argv = ["job", mode]
namespace: dict = {}
exec(compile(JOB.split("# -- the driver's protocol")[0], "job", "exec"), namespace)
run = namespace["steps"]
run(300)
if mode.endswith("+gpu"):
    namespace["use_fake_gpu"]()
    run(300)
calls: collections.Counter = collections.Counter()


def count(frame, event, _arg):
    if event == "call":
        calls[f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}"] += 1


sys.setprofile(count)
run(STEPS)
sys.setprofile(None)
print(f"{mode}: {sum(calls.values()) / STEPS:.1f} Python calls a step")
for name, value in calls.most_common():
    print(f"{value / STEPS:7.2f} {name}")
