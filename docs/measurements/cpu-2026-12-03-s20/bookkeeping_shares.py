import json
import subprocess
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3] / "tests"))
from pyspy_support import training_job

n = int(sys.argv[1])
extra = sys.argv[2:]
for _ in range(n):
    with training_job("bookkeeping", *extra) as job:
        out = subprocess.run(
            [sys.executable, "-m", "xfertop", "attach", str(job.pid), "--once", "--json", "--seconds", "2"],
            capture_output=True,
            text=True,
        ).stdout
    r = json.loads(out)
    (k,) = r["ranks"]
    sh = {
        key: k.get(key)
        for key in (
            "loop_host_share",
            "loop_tensor_share",
            "dispatch_share",
            "data_wait_share",
            "main_loading_share",
            "samples",
        )
    }
    print(
        r["verdict"]["kind"],
        sh,
        [x for x in k if x.endswith("_share") and k[x] and k[x] > 0.05 and x not in sh],
        flush=True,
    )
