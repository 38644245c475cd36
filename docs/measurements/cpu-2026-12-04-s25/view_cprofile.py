"""The live view's main thread under cProfile: xfertop at 1 Hz in a 160x48 pty for SECONDS, the
recorded-H200 fake NVML (benchmarks/tui_cpu_fake_gpu.py's launcher) and the CPU demo job as load; `q`
quits it and the profile is printed by cumulative time. cProfile inflates Python-heavy code: read the
call counts and the split between Textual's compositor and our repaint, not the absolute times.

    python docs/measurements/cpu-2026-12-04-s25/view_cprofile.py 60
"""

import io
import os
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "benchmarks"))
import tui_cpu_fake_gpu  # noqa: E402
from pty_run import PtyProcess  # noqa: E402

out = Path(tempfile.mkdtemp(prefix="xfertop-cprofile-")) / "view.prof"
launcher = tui_cpu_fake_gpu.LAUNCHER.replace(
    "sys.exit(main(sys.argv[1:]))",
    "import cProfile\nprofile = cProfile.Profile()\nprofile.enable()\ntry:\n    code = main(sys.argv[1:])\n"
    f"finally:\n    profile.disable()\n    profile.dump_stats({str(out)!r})\nsys.exit(code)",
)
env = {
    **os.environ,
    "XFERTOP_FAKE_TESTS_DIR": str(REPO / "tests"),
    "PYTHONPATH": str(REPO / "src"),
    "XFERTOP_DIR": str(out.parent / "rings"),
}
load = subprocess.Popen(
    [sys.executable, "-m", "xfertop.launch.demo_job", "--phase-seconds", "600"],
    env=env,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
env["XFERTOP_FAKE_GPU_PIDS"] = str(load.pid)
view = PtyProcess([sys.executable, "-c", launcher, "--interval", "1"], columns=160, rows=48, env=env)
try:
    view.read_for(float(sys.argv[1]))
    view.send(b"q")
    view.read_for(3)
finally:
    load.kill()
text = io.StringIO()
pstats.Stats(str(out), stream=text).sort_stats("cumulative").print_stats(60)
print(text.getvalue())
