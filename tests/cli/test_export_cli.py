"""`xfertop export` and `--prometheus` at the command line: one-line errors, the warning for an open
address, a clean stop on SIGTERM that leaves the state file."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from pathlib import Path

from export.prometheus_cluster import XFERTOP, ExporterProcess, free_port
from ring_test_tools import child_env


def _xfertop(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*XFERTOP, *args], env=child_env(tmp_path / "rings"), capture_output=True, text=True, timeout=60
    )


def _one_line_error(done: subprocess.CompletedProcess[str], starts: str) -> str:
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(starts), done.stderr
    return lines[0]


def test_a_listen_address_that_is_not_host_port_is_one_line(tmp_path: Path) -> None:
    line = _one_line_error(
        _xfertop(tmp_path, "export", "--listen", "localhost", "--no-state"),
        "xfertop export: --listen wants HOST:PORT",
    )
    assert "127.0.0.1:9477" in line


def test_a_busy_port_is_one_line_and_leaves_the_state_file_alone(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    state.write_text("the running exporter's")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        line = _one_line_error(
            _xfertop(tmp_path, "export", "--listen", f"127.0.0.1:{port}", "--state-file", str(state)),
            "xfertop export: ",
        )
    assert "already in use" in line
    assert state.read_text() == "the running exporter's"


def test_an_unknown_host_is_one_line(tmp_path: Path) -> None:
    _one_line_error(
        _xfertop(tmp_path, "export", "--listen", "no-such-host.invalid:9477", "--no-state"),
        "xfertop export: cannot listen on no-such-host.invalid:9477",
    )


def test_an_open_address_warns_and_sigterm_stops_cleanly_saving_the_state(tmp_path: Path) -> None:
    state = tmp_path / "state" / "exporter.json"
    exporter = ExporterProcess(tmp_path / "rings", "node-x", 0, state, "--listen", "0.0.0.0:0")
    assert any("warning: listening on 0.0.0.0" in line for line in exporter.stderr), exporter.stderr
    assert exporter.stop() == 0
    assert json.loads(state.read_text())["version"] == 1


def test_prometheus_wants_an_http_url(tmp_path: Path) -> None:
    _one_line_error(
        _xfertop(tmp_path, "--once", "--json", "--prometheus", "localhost:9090"),
        "xfertop: --prometheus wants Prometheus's base URL",
    )


def test_once_json_says_when_prometheus_cannot_be_reached(tmp_path: Path) -> None:
    done = _xfertop(tmp_path, "--once", "--json", "--prometheus", f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 0, done.stderr
    jobs = json.loads(done.stdout)["jobs"]
    assert jobs["items"] == []
    assert jobs["error"].startswith("cannot reach Prometheus at http://127.0.0.1:")


def test_sigterm_before_any_scrape_still_exits_zero(tmp_path: Path) -> None:
    exporter = ExporterProcess(tmp_path / "rings", "node-y", free_port(), tmp_path / "s.json")
    exporter.process.send_signal(signal.SIGTERM)
    assert exporter.process.wait(15) == 0
