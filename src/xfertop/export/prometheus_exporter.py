"""`xfertop export`: the node's sources, their counters and an HTTP server for Prometheus's scrapes.

The sources run on their own threads as in the viewer; their listeners feed ``TotalsState`` (every step
record and GPU snapshot counted once, whenever scrapes come); prometheus_client's server answers each
scrape with ``XfertopCollector``'s families. The totals are saved to a state file after each scrape and
at exit, so a restarted exporter continues its counters (docs/exporter.md: reset semantics).
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import threading
import time
from typing import Any, TypeVar

from prometheus_client import start_http_server
from prometheus_client.registry import CollectorRegistry

from xfertop.export.prometheus_collector import XfertopCollector
from xfertop.export.prometheus_totals import TotalsState, write_atomically
from xfertop.model.gpu import GpuState
from xfertop.model.host import HostState
from xfertop.model.jobs import JobsState
from xfertop.sources.base import FailureNews, PollingSource

T = TypeVar("T")

DEFAULT_HOST = "127.0.0.1"
#: xfertop's port (what node_exporter's 9100 is to it); `--listen` picks another.
DEFAULT_PORT = 9477


class ExporterError(Exception):
    """An expected failure, worded for the person at the terminal."""


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPV6]:PORT`` or ``:PORT`` (all addresses) -> (host, port)."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ExporterError(f"--listen wants HOST:PORT, e.g. 127.0.0.1:{DEFAULT_PORT} (got {text!r})")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "0.0.0.0", int(port_text)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_state_path(port: int) -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "xfertop", f"exporter-{port}.json")


def fresh(source: PollingSource[T] | None) -> T | None:
    """The source's latest snapshot, None while its samples fail (PollingSource.failing)."""
    if source is None or source.failing:
        return None
    return source.latest()


class Exporter:
    """One node's exporter. Sources may be None (then that part of the node is not exported)."""

    def __init__(
        self,
        gpu: PollingSource[GpuState] | None,
        host: PollingSource[HostState] | None,
        jobs: PollingSource[JobsState] | None,
        host_label: str,
        state_path: str | None = None,
        ended_grace_s: float = 120.0,
    ) -> None:
        self.sources = [source for source in (gpu, host, jobs) if source is not None]
        self.totals = TotalsState(ended_grace_s=ended_grace_s)
        self.state_path = state_path
        self._save_lock = threading.Lock()
        self.problems: list[str] = []
        self._news = FailureNews(self.sources, "its series are withheld until it works")
        if state_path is not None:
            self._load_state(state_path)
        if jobs is not None:
            jobs.subscribe(self.totals.on_jobs)
        if gpu is not None:
            gpu.subscribe(self.totals.on_gpu)

        def latest() -> tuple[GpuState | None, HostState | None, JobsState | None]:
            # A source whose samples fail has only a stale snapshot: its series are withheld (Prometheus
            # then marks them stale) rather than served frozen; xfertop_source_failing says why.
            return fresh(gpu), fresh(host), fresh(jobs)

        def failing() -> dict[str, bool]:
            return {source.name: source.failing for source in self.sources}

        self.collector = XfertopCollector(latest, self.totals, host_label, failing)
        # Saved after every scrape: what Prometheus has seen is never more than the file holds.
        self.collector.after_collect = self.save
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)
        self._server: Any = None
        self._stopped = threading.Event()

    def _load_state(self, path: str) -> None:
        try:
            with open(path) as handle:
                text = handle.read()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ExporterError(f"cannot read the state file {path}: {exc.strerror or exc}") from None
        try:
            self.totals.load_json(text)
        except ValueError as exc:
            # Counters then start again (a reset Prometheus handles); the file is rewritten at the next save.
            self.problems.append(f"state file {path} ignored: {exc}")

    def listen(self, host: str, port: int) -> tuple[str, int]:
        """Start answering scrapes on (host, port); returns the address really bound (port 0: a free one)."""
        try:
            self._server, _thread = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            where = f"{host}:{port}"
            if exc.errno == errno.EADDRINUSE:
                raise ExporterError(
                    f"{where} is already in use (another exporter?): pick another port "
                    f"with --listen HOST:PORT"
                ) from None
            raise ExporterError(
                f"cannot listen on {where}: {getattr(exc, 'strerror', None) or exc}"
            ) from None
        bound = self._server.server_address
        return str(bound[0]), int(bound[1])

    def start_sources(self, first_sample_timeout_s: float = 5.0) -> None:
        """Start sampling and wait (a bounded time) for each source's first snapshot, so the first scrape
        already has every rank: a scrape without them would mark their series stale."""
        for source in self.sources:
            source.start()
        deadline = time.monotonic() + first_sample_timeout_s
        for source in self.sources:
            source.wait_for_sample(max(0.0, deadline - time.monotonic()))

    def source_news(self) -> list[str]:
        """One line per source whose samples started failing, or work again, since the last call: what
        `xfertop export` tells its log (the gauge ``xfertop_source_failing`` tells Prometheus)."""
        return self._news.news()

    def wait(self, timeout_s: float | None = None) -> bool:
        return self._stopped.wait(timeout_s)

    def request_stop(self) -> None:
        self._stopped.set()

    def stop(self) -> None:
        """Stop serving and sampling, then save the totals one last time: only if it served them. One
        that could not bind its port never published them, and its state file (the default is named by
        the port) may be the running exporter's."""
        served = self._server is not None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for source in self.sources:
            source.stop()
        if served:
            self.save()

    def save(self) -> None:
        """Write the totals to the state file (if any); a failure is kept in ``problems``, once."""
        if self.state_path is None:
            return
        with self._save_lock:
            try:
                os.makedirs(os.path.dirname(os.path.abspath(self.state_path)), mode=0o700, exist_ok=True)
                write_atomically(self.state_path, self.totals.to_json())
            except OSError as exc:
                problem = f"cannot write the state file {self.state_path}: {exc.strerror or exc}"
                with contextlib.suppress(ValueError):
                    self.problems.remove(problem)
                self.problems.append(problem)
