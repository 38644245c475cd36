"""Where the reporter's per-step cost goes, function by function: Python bytecodes executed a step.

The reporter is Python, and its cost a step follows the bytecodes it runs: on the CPU VM the added
instructions (reporter_instructions.py, callgrind) came to ~70-76 per added bytecode (`xfertop run`:
110.6k Ir for 1,460 bytecodes; `--no-copy-timing`: 46.9k for 669; session 22, 9584a90). Bytecodes are
counted exactly by ``sys.settrace`` with opcode events, in seconds and with no valgrind, so a change to the
hot path can be weighed before the slower instruction count or the GPU box confirms it.

It runs reporter_instructions.py's loop (scenario h's shape on the CPU) in this process, one mode per
process (the patches cannot be undone), and prints each function's bytecodes a step beyond ``plain``'s
(torch's own functions too: a hook puts nn.Module on its slow path), largest first, and the totals.

    python benchmarks/reporter_bytecodes.py [--modes nocopy,run,run+gpu] [--steps 200] [--top 40]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from reporter_instructions import JOB  # noqa: E402  (the one loop both benchmarks measure)

WARM_UP_STEPS = 300


def count(mode: str, steps: int) -> dict[str, float]:
    """Bytecodes a step, by ``file:function``, for ``mode`` (run in this process)."""
    loop = JOB.split("# -- the driver's protocol")[0]  # the set-up and the loop
    sys.argv = ["job", mode]
    namespace: dict[str, object] = {}
    exec(compile(loop, "job", "exec"), namespace)
    run = namespace["steps"]
    assert callable(run)
    run(WARM_UP_STEPS)
    if mode.endswith("+gpu"):
        use_fake_gpu = namespace["use_fake_gpu"]
        assert callable(use_fake_gpu)
        use_fake_gpu()
        run(WARM_UP_STEPS)
    counts: collections.Counter[str] = collections.Counter()

    def trace_calls(frame, event, arg):  # type: ignore[no-untyped-def]
        frame.f_trace_opcodes = True
        code = frame.f_code
        key = f"{code.co_filename}:{code.co_name}"

        def trace_opcodes(frame, event, arg):  # type: ignore[no-untyped-def]
            if event == "opcode":
                counts[key] += 1
            return trace_opcodes

        return trace_opcodes

    sys.settrace(trace_calls)
    try:
        run(steps)
    finally:
        sys.settrace(None)
    return {key: value / steps for key, value in counts.items()}


def _short(key: str) -> str:
    for marker in ("/site-packages/", "/src/"):
        if marker in key:
            return key.split(marker, 1)[1]
    return key


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="nocopy,run,run+gpu")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--child", help=argparse.SUPPRESS)  # one mode, counted in a fresh process
    args = parser.parse_args()
    if args.child:
        os.environ["XFERTOP_DIR"] = tempfile.mkdtemp(prefix="xfertop-bytecodes-")
        os.environ["XFERTOP_REPO"] = str(HERE.parent)
        print(json.dumps(count(args.child, args.steps)))
        return 0
    per_mode = {}
    for mode in ["plain", *args.modes.split(",")]:
        out = subprocess.run(
            [sys.executable, __file__, "--child", mode, "--steps", str(args.steps)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        per_mode[mode] = json.loads(out.strip().splitlines()[-1])
    plain = per_mode.pop("plain")
    print(f"plain: {sum(plain.values()):,.0f} bytecodes a step")
    for mode, counts in per_mode.items():
        added = {key: value - plain.get(key, 0.0) for key, value in counts.items()}
        ours = sum(value for key, value in added.items() if "xfertop" in key)
        print(f"\n{mode}: +{sum(added.values()):,.0f} bytecodes a step ({ours:,.0f} in xfertop's own code)")
        for key, value in sorted(added.items(), key=lambda item: -abs(item[1]))[: args.top]:
            if abs(value) >= 1:
                print(f"  {value:+8.1f}  {_short(key)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
