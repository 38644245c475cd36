"""The CPU an exporter costs: `xfertop export` beside nvitop's exporter, in one run on one machine.

Each exporter runs alone in turn (sampling its GPUs every second, its default), is scraped every 15 s
and then every 1 s for ``--seconds`` (60 by default) by a scraper in this process, and its process CPU
time (user + system, its children included) over that window is read from /proc through psutil. A CPU
training job under `xfertop run` runs throughout, so xfertop has a rank to export (`--no-job`: none).
nvitop-exporter is skipped, with the reason, where it is not installed or finds no GPU.

    python benchmarks/exporter_cpu.py [--seconds 60] [--json results.json]

Prints one line per exporter and scrape interval, then xfertop's CPU as a ratio of nvitop's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.request
from pathlib import Path

import psutil

SRC = str(Path(__file__).resolve().parents[1] / "src")
XFERTOP = [sys.executable, "-c", "import sys; from xfertop.cli import main; sys.exit(main())"]
TRAIN = """
import time
import torch
from torch.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self):
        return 10**9

    def __getitem__(self, index):
        time.sleep(0.01)
        return torch.ones(8)

for batch in DataLoader(Slow(), batch_size=2):
    time.sleep(0.02)
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def get(url: str, timeout_s: float = 10.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return response.read()


def cpu_seconds(process: psutil.Process) -> float:
    total = 0.0
    for member in [process, *process.children(recursive=True)]:
        try:
            times = member.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def exporter_commands(port: int) -> dict[str, list[str] | str]:
    """Each exporter's command line, or why it cannot run here."""
    commands: dict[str, list[str] | str] = {
        "xfertop": [*XFERTOP, "--interval", "1", "export", "--listen", f"127.0.0.1:{port}", "--no-state"],
    }
    if importlib.util.find_spec("nvitop_exporter") is None:
        commands["nvitop"] = "nvitop-exporter is not installed (pip install nvitop-exporter)"
    else:
        commands["nvitop"] = [
            sys.executable,
            "-m",
            "nvitop_exporter",
            "--bind-address",
            "127.0.0.1",
            "--port",
            str(port),
            "--interval",
            "1",
        ]
    return commands


def measure(
    name: str, command: list[str], port: int, scrape_s: float, window_s: float, env: dict[str, str]
) -> dict:
    """Start the exporter, wait for its first answer, then scrape every ``scrape_s`` for ``window_s``."""
    log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed in the finally below
    child = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        deadline = time.monotonic() + 60
        while True:
            if child.poll() is not None:
                log.seek(0)
                return {"exporter": name, "scrape_s": scrape_s, "skipped": _reason(log.read())}
            try:
                first = get(url)
                break
            except OSError:
                if time.monotonic() > deadline:
                    return {"exporter": name, "scrape_s": scrape_s, "skipped": "no answer within 60 s"}
                time.sleep(0.2)
        process = psutil.Process(child.pid)
        stop = threading.Event()
        scrapes = [0]
        sizes = [len(first)]

        def scrape() -> None:
            while not stop.wait(scrape_s):
                sizes.append(len(get(url)))
                scrapes[0] += 1

        started_cpu, started = cpu_seconds(process), time.monotonic()
        scraper = threading.Thread(target=scrape, daemon=True)
        scraper.start()
        time.sleep(window_s)  # the measuring window itself
        used_cpu, elapsed = cpu_seconds(process) - started_cpu, time.monotonic() - started
        stop.set()
        scraper.join(scrape_s + 10)
        return {
            "exporter": name,
            "scrape_s": scrape_s,
            "window_s": round(elapsed, 2),
            "cpu_s": round(used_cpu, 3),
            "cpu_percent_of_one_core": round(100 * used_cpu / elapsed, 3),
            "scrapes": scrapes[0],
            "exposition_bytes": max(sizes),
        }
    finally:
        child.terminate()
        try:
            child.wait(15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        log.close()


def _reason(output: str) -> str:
    """One line of why an exporter exited: its first error line, else its last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "ERROR" in line or "error" in line]
    return (errors or lines or ["exited at once, saying nothing"])[0 if errors else -1][:200]


def start_job(ring_dir: str, env: dict[str, str]) -> subprocess.Popen:
    script = os.path.join(ring_dir, "..", "train.py")
    Path(script).write_text(textwrap.dedent(TRAIN))
    return subprocess.Popen(
        [*XFERTOP, "run", "--", sys.executable, script],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measuring window per run (default 60)")
    parser.add_argument(
        "--scrape",
        type=float,
        nargs="+",
        default=[15.0, 1.0],
        metavar="S",
        help="scrape intervals to measure (default 15 1)",
    )
    parser.add_argument("--no-job", action="store_true", help="run no training job meanwhile")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="xfertop-exporter-cpu-")
    ring_dir = os.path.join(workdir, "rings")
    os.mkdir(ring_dir, 0o700)
    env = {
        **os.environ,
        "XFERTOP_DIR": ring_dir,
        "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    job = None if args.no_job else start_job(ring_dir, env)
    results = []
    try:
        for scrape_s in args.scrape:
            for name, command in exporter_commands(port := free_port()).items():
                if isinstance(command, str):
                    result = {"exporter": name, "scrape_s": scrape_s, "skipped": command}
                else:
                    result = measure(name, command, port, scrape_s, args.seconds, env)
                results.append(result)
                print(_line(result), flush=True)
    finally:
        if job is not None:
            job.terminate()
            job.wait(15)
    for scrape_s in args.scrape:
        pair = {r["exporter"]: r for r in results if r["scrape_s"] == scrape_s and "cpu_s" in r}
        if "xfertop" in pair and "nvitop" in pair and pair["nvitop"]["cpu_s"] > 0:
            ratio = pair["xfertop"]["cpu_s"] / pair["nvitop"]["cpu_s"]
            print(f"scrape every {scrape_s:g} s: xfertop uses {ratio:.2f}x the CPU of nvitop-exporter")
    print(f"machine: {os.cpu_count()} CPUs, {sys.platform}, Python {sys.version.split()[0]}")
    if args.json:
        Path(args.json).write_text(json.dumps({"seconds": args.seconds, "results": results}, indent=2))
    return 0


def _line(result: dict) -> str:
    head = f"{result['exporter']:8s} scrape every {result['scrape_s']:>4g} s: "
    if "skipped" in result:
        return head + f"skipped ({result['skipped']})"
    return head + (
        f"{result['cpu_s']:.3f} CPU s in {result['window_s']:.0f} s = "
        f"{result['cpu_percent_of_one_core']:.2f}% of a core, {result['scrapes']} scrapes, "
        f"{result['exposition_bytes']} bytes"
    )


if __name__ == "__main__":
    sys.exit(main())
