"""The benchmark screen: a progress bar per case, Escape cancels, then the results table and sweep chart.

Self-contained: the app pushes ``BenchScreen(client_factory, title=..., competing_job=...)`` on `b`
(benchmarks) or `a` (acceptance). The benchmark runs in a child process (see xfertop.bench.client);
a plain thread reads its messages and posts them here, and only this screen touches widgets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Footer, Label, ProgressBar, Sparkline, Static

from xfertop.bench.client import BenchClient, bench_client
from xfertop.bench.protocol import CaseDone, Failure, Hello, Progress, RunDone
from xfertop.bench.protocol import Message as BenchMessage
from xfertop.bench.report import HEADERS, case_rows, sweep_chart, sweep_series

ClientFactory = Callable[[], BenchClient]


class ConfirmCompete(ModalScreen[bool]):
    """Asks first when a training job uses the GPU: the benchmark would compete with it for PCIe."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "run anyway"),
        Binding("n,escape", "answer(False)", "cancel"),
    ]
    DEFAULT_CSS = """
    ConfirmCompete { align: center middle; }
    ConfirmCompete > Vertical {
        width: 70; height: auto; border: thick $warning; padding: 1 2; background: $panel;
    }
    ConfirmCompete Horizontal { height: auto; margin-top: 1; }
    """

    def __init__(self, competing_job: str) -> None:
        super().__init__()
        self.competing_job = competing_job

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(
                f"A training job is using this GPU ({self.competing_job}): the benchmark will compete "
                "with it for PCIe, slowing the job and skewing both figures. Run anyway?",
                id="question",
            )
            with Horizontal():
                yield Button("Run anyway (y)", id="yes", variant="warning")
                yield Button("Cancel (n)", id="no", variant="primary")

    def action_answer(self, run_anyway: bool) -> None:
        self.dismiss(run_anyway)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class BenchUpdate(Message):
    """One protocol message from the bench child, posted from the reader thread."""

    def __init__(self, message: BenchMessage) -> None:
        super().__init__()
        self.message = message


class BenchScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel_or_close", "cancel / close")]
    DEFAULT_CSS = """
    BenchScreen #bench-progress { height: auto; max-height: 14; }
    BenchScreen .case-row { height: 1; }
    BenchScreen .case-row Label { width: 16; }
    BenchScreen .case-row .case-text { width: 1fr; color: $text-muted; }
    BenchScreen #bench-results { height: 1fr; }
    BenchScreen #bench-sweep { height: 3; }
    BenchScreen #bench-chart, BenchScreen #bench-verdicts { height: auto; }
    """

    def __init__(
        self, client_factory: ClientFactory, *, title: str = "benchmarks", competing_job: str | None = None
    ) -> None:
        super().__init__()
        self.client_factory = client_factory
        self.bench_title = title
        self.competing_job = competing_job
        self.client: BenchClient | None = None
        self.running = False
        #: The final message once the run ended (RunDone or Failure).
        self.final: RunDone | Failure | None = None

    def compose(self) -> ComposeResult:
        yield Static(f"xfertop {self.bench_title}", id="bench-title")
        yield Static("", id="bench-status")
        yield VerticalScroll(id="bench-progress")
        yield DataTable(id="bench-results", zebra_stripes=True)
        yield Sparkline([], id="bench-sweep")
        yield Static("", id="bench-chart")
        yield Static("", id="bench-verdicts")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#bench-results", DataTable).add_columns(*HEADERS)
        if self.competing_job:
            self.app.push_screen(ConfirmCompete(self.competing_job), self._confirmed)
        else:
            self._start()

    def _confirmed(self, run_anyway: bool | None) -> None:
        if run_anyway:
            self._start()
        else:
            self.dismiss()

    def _status(self, text: str) -> None:
        self.query_one("#bench-status", Static).update(text)

    def _start(self) -> None:
        self.client = self.client_factory()
        self.running = True
        self._status("starting the benchmark process... (Escape cancels)")
        self.run_worker(self._pump, thread=True, exit_on_error=False, group="bench", name="bench-reader")

    def _pump(self) -> None:
        assert self.client is not None
        for message in self.client.messages():
            self.post_message(BenchUpdate(message))

    async def on_bench_update(self, update: BenchUpdate) -> None:
        message = update.message
        if isinstance(message, Hello):
            # Awaited: the next message (a fast case's progress, or its end) must find its bar mounted.
            await self._add_bars(message.cases)
            self._status(
                f"running {len(message.cases)} cases on the {message.backend} backend (Escape cancels)"
            )
        elif isinstance(message, Progress):
            self._bar(message.case, message.fraction, message.text)
        elif isinstance(message, CaseDone):
            self._case_done(message)
        elif isinstance(message, RunDone):
            self._run_done(message)
        elif isinstance(message, Failure):
            self.running, self.final = False, message
            self._status(f"could not run: {message.reason}  (Escape closes)")

    async def _add_bars(self, cases: tuple[str, ...]) -> None:
        rows = [
            Horizontal(
                Label(case),
                ProgressBar(total=1.0, show_eta=False, id=f"bar-{case}"),
                Label("", id=f"text-{case}", classes="case-text"),
                classes="case-row",
            )
            for case in cases
        ]
        await self.query_one("#bench-progress", VerticalScroll).mount_all(rows)

    def _bar(self, case: str, fraction: float, text: str) -> None:
        bars = self.query(f"#bar-{case}").results(ProgressBar)
        for bar in bars:
            bar.update(progress=fraction)
        for label in self.query(f"#text-{case}").results(Label):
            label.update(text)

    def _case_done(self, message: CaseDone) -> None:
        result = message.result
        self._bar(result.case, 1.0, result.skipped_reason or f"done in {result.wall_s:.1f} s")
        table = self.query_one("#bench-results", DataTable)
        table.add_row(f"[{result.case}] {result.title}", *[""] * (len(HEADERS) - 1))
        for cells in case_rows(result):
            table.add_row("  " + cells[0], *cells[1:])

    def _run_done(self, message: RunDone) -> None:
        run = message.run
        self.running, self.final = False, message
        self.query_one("#bench-sweep", Sparkline).data = [v for _s, v in sweep_series(run, "pinned", "h2d")]
        self.query_one("#bench-chart", Static).update(sweep_chart(run))
        self.query_one("#bench-verdicts", Static).update(
            "\n".join(
                f"{v.status.upper():4}  {v.check}: {v.message}" for v in run.verdicts if v.status != "skip"
            )
        )
        self._status(f"{run.overall.upper()} (exit {run.exit_code}) in {run.wall_s:.1f} s  (Escape closes)")

    def on_unmount(self) -> None:
        """Leaving the screen (or the app) never leaves a benchmark child running."""
        if self.running and self.client is not None:
            self.client.cancel()

    def action_cancel_or_close(self) -> None:
        if self.running and self.client is not None:
            self._status("cancelling...")
            self.run_worker(self.client.cancel, thread=True, exit_on_error=False, group="bench-cancel")
        else:
            self.dismiss()


def benchmarks_screen(competing_job: str | None = None, gpu_index: int = 0) -> BenchScreen:
    """What `b` pushes: every benchmark case on one GPU."""
    return BenchScreen(
        lambda: bench_client(check=False, extra_args=["--gpu", str(gpu_index)]),
        title="benchmarks",
        competing_job=competing_job,
    )


def acceptance_screen(competing_job: str | None = None, gpu_index: int = 0) -> BenchScreen:
    """What `a` pushes: the acceptance subset (`xfertop check`), judged."""
    return BenchScreen(
        lambda: bench_client(check=True, extra_args=["--gpu", str(gpu_index)]),
        title="acceptance check",
        competing_job=competing_job,
    )
