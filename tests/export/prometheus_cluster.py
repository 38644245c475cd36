"""A real Prometheus server and real `xfertop export` processes standing for the nodes of a cluster.

Prometheus is Debian's binary (`apt-get install prometheus`), started here with a temporary config,
its TSDB in a temporary directory and a 1 s scrape interval; targets come from a file_sd file, so a
test adds exporters as they start. Nothing waits a fixed time: every wait polls for its condition.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from ring_test_tools import child_env, wait_until

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "deploy" / "prometheus" / "rules.yml"
PROMETHEUS = shutil.which("prometheus")
XFERTOP = [sys.executable, "-c", "import sys; from xfertop.cli import main; sys.exit(main())"]

#: A training step: __getitem__ sleeps WAIT_S (batch_size 1, no workers: all of it is data wait), then
#: the step "computes" COMPUTE_S (a small matmul, then a sleep for the rest).
TRAIN = """
import sys, time
import torch
from torch.utils.data import DataLoader, Dataset

WAIT_S, COMPUTE_S = float(sys.argv[1]), float(sys.argv[2])

class Slow(Dataset):
    def __len__(self):
        return 10**9

    def __getitem__(self, index):
        time.sleep(WAIT_S)
        return torch.ones(8)

weights = torch.ones(8, 8)
for batch in DataLoader(Slow(), batch_size=1):
    started = time.perf_counter()
    (batch @ weights).sum()
    time.sleep(max(0.0, COMPUTE_S - (time.perf_counter() - started)))
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrometheusServer:
    def __init__(self, workdir: Path) -> None:
        assert PROMETHEUS is not None
        self.targets_file = workdir / "targets.json"
        self._targets: dict[str, str] = {}
        self._write_targets()
        config = workdir / "prometheus.yml"
        config.write_text(
            textwrap.dedent(f"""
            global:
              scrape_interval: 1s
              scrape_timeout: 900ms
              evaluation_interval: 1s
            rule_files: ["{RULES}"]
            scrape_configs:
              - job_name: xfertop
                file_sd_configs:
                  - files: ["{self.targets_file}"]
                    refresh_interval: 1s
        """)
        )
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (workdir / "prometheus.log").open("w")
        self.process = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        wait_until(self._ready, 30.0, "Prometheus to be ready", every_s=0.1)

    def _ready(self) -> bool:
        assert self.process.poll() is None, Path(self.log.name).read_text()
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as response:
                return response.status == 200
        except OSError:
            return False

    def _write_targets(self) -> None:
        groups = [{"targets": [address], "labels": {"node": name}} for name, address in self._targets.items()]
        temporary = self.targets_file.with_suffix(".tmp")
        temporary.write_text(json.dumps(groups))
        os.replace(temporary, self.targets_file)

    def add_target(self, name: str, address: str) -> None:
        self._targets[name] = address
        self._write_targets()

    def api(self, path: str, **params: str) -> Any:
        url = f"{self.url}/api/v1/{path}?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=5) as response:
            document = json.loads(response.read())
        assert document["status"] == "success", document
        return document["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        return self.api("query", query=promql)["result"]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


class ExporterProcess:
    """`xfertop export` in a child process over ``ring_dir``; its stderr lines are collected."""

    def __init__(self, ring_dir: Path, host_label: str, port: int, state_file: Path, *extra: str) -> None:
        self.ring_dir, self.host_label, self.port, self.state_file = ring_dir, host_label, port, state_file
        self.process = subprocess.Popen(
            [
                *XFERTOP,
                "export",
                "--listen",
                f"127.0.0.1:{port}",
                "--host-label",
                host_label,
                "--state-file",
                str(state_file),
                "--ended-grace",
                "600",
                *extra,
            ],
            env=child_env(ring_dir),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.wait_for_line("serving http://", 30.0)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line)

    def wait_for_line(self, text: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {text!r} from the exporter: {self.stderr}") from None
            self.stderr.append(line)
            if text in line:
                return line

    def metrics(self, accept: str = "text/plain") -> str:
        request = urllib.request.Request(f"http://{self.address}/metrics", headers={"Accept": accept})
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.read().decode()

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def start_training(
    tmp_path: Path, ring_dir: Path, wait_s: float, compute_s: float, **env: str
) -> subprocess.Popen[str]:
    """The training script under `xfertop run`, writing its ring into ``ring_dir``."""
    script = tmp_path / "train.py"
    if not script.exists():
        script.write_text(TRAIN)
    ring_dir.mkdir(mode=0o700, exist_ok=True)
    return subprocess.Popen(
        [*XFERTOP, "run", "--", sys.executable, str(script), str(wait_s), str(compute_s)],
        env=child_env(ring_dir, **env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def stop_process(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
