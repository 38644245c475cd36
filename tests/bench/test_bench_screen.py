"""The TUI screen, driven by the real child on the CPU backend: progress, results, cancel, the question."""

from __future__ import annotations

from textual.app import App
from textual.pilot import Pilot
from textual.widgets import DataTable, ProgressBar, Sparkline, Static

from xfertop.bench.client import BenchClient, bench_client
from xfertop.bench.protocol import Failure, RunDone
from xfertop.ui.bench_screen import BenchScreen, ConfirmCompete, acceptance_screen, benchmarks_screen


class Host(App[None]):
    def __init__(self, screen: BenchScreen) -> None:
        super().__init__()
        self.bench_screen = screen

    def on_mount(self) -> None:
        self.push_screen(self.bench_screen)


def _cpu(cases: list[str], extra: list[str] | None = None) -> BenchClient:
    return bench_client(
        check=False, cases=cases, backend="cpu", extra_args=["--samples", "3", *(extra or [])]
    )


async def _wait_for_run(app: Host, pilot: Pilot[None]) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_a_run_fills_bars_table_chart_and_verdicts() -> None:
    screen = BenchScreen(
        lambda: _cpu(["pinned_nb", "sweep"], ["--sizes", "64KiB,256KiB,1MiB"]), title="bench"
    )
    app = Host(screen)
    async with app.run_test(size=(140, 50)) as pilot:
        await _wait_for_run(app, pilot)
        assert isinstance(screen.final, RunDone)
        bars = list(screen.query(ProgressBar).results(ProgressBar))
        assert len(bars) == 2 and all(b.percentage == 1.0 for b in bars)
        table = screen.query_one("#bench-results", DataTable)
        assert table.row_count == 2 + 1 + 12
        assert len(screen.query_one("#bench-sweep", Sparkline).data or []) == 3
        assert "PASS" in str(screen.query_one("#bench-status", Static).render())
        assert "copied data" in str(screen.query_one("#bench-verdicts", Static).render())


async def test_escape_cancels_the_child_then_closes() -> None:
    screen = BenchScreen(lambda: _cpu(["sweep"], ["--samples", "100000"]))
    app = Host(screen)
    async with app.run_test() as pilot:
        for _ in range(200):
            if screen.query(ProgressBar):
                break
            await pilot.pause(0.05)
        await pilot.press("escape")
        await _wait_for_run(app, pilot)
        assert isinstance(screen.final, Failure) and screen.final.reason == "cancelled"
        assert "could not run: cancelled" in str(screen.query_one("#bench-status", Static).render())
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is not screen


async def test_a_busy_gpu_asks_first_and_no_means_nothing_runs() -> None:
    started = []
    screen = BenchScreen(lambda: started.append(1) or _cpu(["pinned_nb"]), competing_job="pid 4242 train.py")
    app = Host(screen)
    async with app.run_test() as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ConfirmCompete)
        assert "compete with it for PCIe" in str(app.screen.query_one("#question").render())
        await pilot.press("n")
        await pilot.pause()
        assert started == [] and app.screen is not screen


async def test_a_busy_gpu_runs_after_yes() -> None:
    screen = BenchScreen(lambda: _cpu(["pinned_nb"]), competing_job="pid 4242 train.py")
    app = Host(screen)
    async with app.run_test() as pilot:
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        await _wait_for_run(app, pilot)
        assert isinstance(screen.final, RunDone) and screen.final.run.exit_code == 0


def test_the_app_keys_get_ready_made_screens() -> None:
    screen = acceptance_screen(competing_job="pid 1 train.py", gpu_index=1)
    client = screen.client_factory()
    assert client.argv[-5:] == ["--check", "--backend", "cuda", "--gpu", "1"]
    assert screen.competing_job == "pid 1 train.py"
    assert "--check" not in benchmarks_screen().client_factory().argv


async def test_quitting_the_app_mid_run_stops_the_child() -> None:
    clients: list[BenchClient] = []

    def factory() -> BenchClient:
        clients.append(_cpu(["sweep"], ["--samples", "100000"]))
        return clients[-1]

    screen = BenchScreen(factory)
    app = Host(screen)
    async with app.run_test() as pilot:
        for _ in range(200):
            if screen.query(ProgressBar):
                break
            await pilot.pause(0.05)
        await app.action_quit()
    proc = clients[0]._proc
    assert proc is not None and proc.poll() is not None
