"""What attach says of the job shapes it misread on an H200: a job still building its data, a loop that
augments its batches on the CPU while the GPU idles, and a model of many tiny layers. Each is a py-spy
window recorded from a real CPU process (fixtures/pyspy_phases), judged with NVML's answers about the GPU
(faked: the hardware boundary) where the case needs a GPU."""

from __future__ import annotations

from dataclasses import replace

from pyspy_phases_support import nvml_readings, phase_lines, phase_window
from xfertop.analysis.sampled_verdict import gpu_busy_share, judge_stacks, sampled_verdict
from xfertop.analysis.stack_classify import ClassShares, LoopHost, RankStacks, summarise_window
from xfertop.analysis.verdict import Verdict
from xfertop.model.gpu import GpuState
from xfertop.model.stacks import AttachTarget, Frame, StacksState, StackWindow, ThreadStack, WindowPlacement


def judged(
    name: str, readings: list[GpuState] | None = None, uses_cuda: bool | None = None
) -> tuple[RankStacks, Verdict]:
    """The recorded window ``name`` judged as attach judges it, with the GPU readings taken during it."""
    readings = readings or []
    started_at = readings[0].timestamp - 1.0 if readings else 0.0
    window = phase_window(name, started_at=started_at, uses_cuda=uses_cuda)
    state = StacksState(
        timestamp=started_at + 3.0, targets=(AttachTarget(pid=window.root_pid),), windows=(window,)
    )
    (rank,), verdict = judge_stacks(state, lambda pid: phase_lines(name), readings)
    return rank, verdict


def pid_of(name: str) -> int:
    return phase_window(name).root_pid


def test_a_job_still_building_its_data_is_not_in_the_training_loop_yet() -> None:
    # H200: attached 4-8 s after launch, while the job built its tensors, attach read "compute-bound:
    # compute is 99%". No DataLoader, model or optimizer call in the window: no verdict, and where it is.
    rank, verdict = judged("setup", nvml_readings(pid_of("setup"), 0))
    assert not rank.loop_seen and rank.shares.share("compute") == 0.0, rank.shares.counts
    assert verdict.kind == "warming-up" and verdict.rule == "not-in-loop-yet", verdict.headline
    assert verdict.headline.startswith(
        "not in the training loop yet: the main thread is building data in make_dataset (train_phases.py:31)"
    ), verdict.headline
    assert "no DataLoader, model or optimizer call seen" in verdict.headline


def test_the_window_in_which_start_up_ends_is_not_read_as_compute() -> None:
    # The same job's start-up ending inside the window (its data, then Adam's constructor importing
    # torch._dynamo, then 10% of training steps): before, "compute-bound: compute is 97%".
    rank, verdict = judged("setup_end")
    assert rank.loop_seen
    assert verdict.kind == "warming-up" and verdict.rule == "not-in-loop", verdict.headline
    assert "the main thread is mostly importing modules in main (train_phases.py:59)" in verdict.headline
    assert rank.shares.share("compute") < 0.15, rank.shares.counts


_SETUP_THEN_LOOP = {
    10: "def main():",
    11: "    x_all = torch.randn(65536, 256)",
    12: "    x_all = (x_all - x_all.mean(0)) / x_all.std(0)",
    13: "    for step in range(steps):",
    14: "        loss = model(x_all[step % 64]).pow(2).mean()",
    15: "        loss.backward()",
}


def test_tensor_maths_above_the_loop_statement_is_start_up_not_compute() -> None:
    # The loop has started (model calls seen), but most samples still normalise the data set on the line
    # above the loop statement, in the loop's own function: not the step's compute.
    def at(line: int, *inner: Frame) -> tuple[Frame, ...]:
        return (*inner, Frame("main", "/job/train.py", line), Frame("<module>", "/job/train.py", 30))

    forward = Frame(
        "Module._call_impl", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", 1789
    )
    stacks = (
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=70, frames=at(12)),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=25, frames=at(14, forward)),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=5, frames=at(14)),
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks)
    rank = summarise_window(window, lambda f, n: _SETUP_THEN_LOOP.get(n, "") if f == "/job/train.py" else "")
    assert rank.shares.counts["other"] == 70 and rank.shares.counts["compute"] == 30
    assert rank.loop_tensor.share == 0.05 and rank.loop_tensor.top_lines == (("train.py:14", 0.05),)
    assert rank.outside_at is not None and str(rank.outside_at) == "in main (train.py:12)"
    verdict = sampled_verdict([(None, rank)])
    assert verdict.kind == "warming-up" and verdict.rule == "not-in-loop", verdict.headline


def test_cpu_augmentation_in_the_loop_on_an_idle_gpu_is_loop_bound() -> None:
    # H200: the loop's own tensor maths on CPU tensors, 87% of each step, the GPU 1% busy per NVML, read
    # "healthy: data 3%, copy 5%, compute 84%". The window: the same loop recorded on a CPU.
    rank, verdict = judged("augment", nvml_readings(pid_of("augment"), 1))
    assert rank.gpu_busy_share == 0.01
    assert rank.loop_tensor.share > 0.6 and rank.loop_tensor.top_lines[0][0] == "train_phases.py:68"
    assert verdict.kind == "loop-bound" and verdict.rule == "loop-bound", verdict.headline
    assert verdict.severity == "critical"
    assert verdict.headline.startswith("loop-bound: the loop's own code holds the main thread 73% of samples")
    assert "while the GPU is busy 1%" in verdict.headline
    advice = verdict.advice[0]
    assert "train_phases.py:68 45%" in advice and "the loop at train_phases.py:62" in advice, advice
    assert (
        "into the Dataset" in advice
        and "DataLoader workers" in advice
        and "onto the GPU after the copy" in advice
    )
    assert verdict.evidence["gpu_busy_share"] == 0.01
    # On a CPU-only job the loop's work holds more of the cores than the model: loop-bound, as `xfertop
    # run` reads it (scenario r's CPU truth: loop 74%, model 23%); it read compute-bound 92% before.
    _, on_cpu = judged("augment")
    assert on_cpu.kind == "loop-bound", on_cpu.headline
    assert on_cpu.headline.startswith(
        "loop-bound: the loop's own code holds the main thread 73% of samples and the model step 18%"
    ), on_cpu.headline
    assert "into the Dataset" in on_cpu.advice[0] and "onto the GPU" not in on_cpu.advice[0]


def test_a_short_window_that_caught_the_loader_once_still_sees_the_augmenting_loop() -> None:
    # A 1 s window of the same job on a loaded 2-core box caught the DataLoader in 2 of ~45 samples and
    # read "not in the training loop yet: building data": the loop's machinery alone fell under 5%. The
    # recorded window with its loader and model samples cut to one: the loop's body still shows it runs.
    readings = nvml_readings(pid_of("augment"), 1)
    window = phase_window("augment", started_at=readings[0].timestamp - 1.0)
    lines = phase_lines("augment")
    augmenting = {66, 67, 68}  # the augmentation's lines in the loop's body
    kept, loader_kept = [], False
    for stack in window.stacks:
        own = next((f.line for f in stack.frames if f.filename.endswith("train_phases.py")), None)
        if any("torch/utils/data/" in f.filename for f in stack.frames):
            if not loader_kept:
                kept.append(replace(stack, count=1))
                loader_kept = True
        elif own in augmenting:
            kept.append(stack)
    thin = replace(window, stacks=tuple(kept))
    state = StacksState(timestamp=0.0, targets=(AttachTarget(pid=thin.root_pid),), windows=(thin,))
    (rank,), verdict = judge_stacks(state, lambda pid: lines, readings)
    assert rank.shares.counts["data_wait"] + rank.shares.counts["main_loading"] == 1, rank.shares.counts
    assert rank.loop_seen
    assert verdict.kind == "loop-bound", verdict.headline


def test_a_gpu_job_whose_busy_share_is_unknown_says_so_instead_of_guessing() -> None:
    # A CUDA process (it maps /dev/nvidiactl) that NVML does not list alone on a GPU: a container's pid
    # namespace, a shared GPU. Its compute may be the host's: the headline says the GPU was not measured.
    _, verdict = judged("augment", uses_cuda=True)
    assert verdict.kind == "compute-bound", verdict.headline
    assert verdict.headline.startswith("compute-bound: compute (GPU busy not measured) is 90% of samples")
    assert any(
        a.startswith(
            "72% of samples are tensor maths on the training loop's own lines (train_phases.py:68 45%"
        )
        for a in verdict.advice
    ), verdict.advice


def test_many_tiny_layers_on_an_idle_gpu_are_launch_bound() -> None:
    # H200: 120 tiny layers, batch 32, loss.item() every step, the GPU 15% busy per NVML (8% by the
    # profiler), read "compute-bound 97%": the host was dispatching the model, not the GPU computing.
    rank, verdict = judged("launch", nvml_readings(pid_of("launch"), 15))
    assert rank.dispatch_share > 0.9, rank.to_dict()
    assert verdict.kind == "launch-bound" and verdict.rule == "launch-bound", verdict.headline
    assert verdict.headline.startswith(
        "launch-bound: the GPU is busy only 15%; the host spends 97% of samples dispatching the model's many "
        "small kernels"
    ), verdict.headline
    advice = " ".join(verdict.advice)
    for remedy in (
        "larger batch",
        "fused ops",
        'mode="reduce-overhead"',
        "CUDA graphs",
        "foreach=True",
        "fused=True",
    ):
        assert remedy in advice, (remedy, advice)


def test_the_same_window_on_a_busy_gpu_stays_compute_bound_and_says_how_busy() -> None:
    _, verdict = judged("launch", nvml_readings(pid_of("launch"), 95))
    assert verdict.kind == "compute-bound" and verdict.rule == "compute-bound", verdict.headline
    assert verdict.headline.startswith("compute-bound: compute is 97% of samples; the GPU is busy 95%")


def test_compute_on_an_idle_gpu_that_is_neither_loop_nor_dispatch_is_not_compute_bound() -> None:
    # Compute by tensor maths in a function the loop finder does not know (its loop elsewhere), with the
    # GPU 20% busy: the host holds the GPU back; "a GPU busy share under 50% vetoes compute-bound".
    rank = RankStacks(
        pid=1,
        shares=ClassShares(counts={"compute": 95, "data_wait": 5}),
        placement=WindowPlacement((), (), uses_cuda=True),
        gpu_busy_share=0.2,
    )
    verdict = sampled_verdict([(None, rank)])
    assert verdict.kind == "host-bound" and verdict.rule == "host-bound", verdict.headline
    assert verdict.headline.startswith("host-bound: the GPU is busy only 20% while the main thread computes")


def test_the_gpu_busy_share_is_the_processs_own_only_when_it_is_the_gpus_only_user() -> None:
    readings = nvml_readings(4242, 30, count=2)
    window = StackWindow(
        root_pid=4242, started_at=readings[0].timestamp - 1, duration_s=2, rate_hz=50, stacks=()
    )
    assert gpu_busy_share(4242, window, readings) == 0.3
    shared = nvml_readings(4242, 30, others=(4343,))
    assert gpu_busy_share(4242, window, shared) is None, "another process's kernels count in NVML's share"
    assert gpu_busy_share(5151, window, readings) is None, "not on this GPU (no CUDA context yet)"
    later = StackWindow(
        root_pid=4242, started_at=readings[-1].timestamp + 5, duration_s=2, rate_hz=50, stacks=()
    )
    assert gpu_busy_share(4242, later, readings) is None, "readings before the window do not describe it"


def test_a_gpu_the_host_holds_back_below_run_s_bar_reads_launch_bound_as_run_reads_it() -> None:
    """H200 (docs/measurements/h100-2026-12-05-s32, j83: a tiny MLP, clip_grad_norm_, AdamW): `xfertop run`
    read launch-bound with the GPU 48-55% busy; attached with it 55% busy, the dispatch rule waited for
    busy under 50% and 16% of samples on the .to() line made it "copy-bound". Run's bar, 70%, for both."""
    rank = RankStacks(
        pid=1,
        shares=ClassShares(counts={"compute": 76, "copy": 16, "data_wait": 8}),
        placement=WindowPlacement((), (), uses_cuda=True),
        dispatch_share=0.7,
        gpu_busy_share=0.55,
    )
    verdict = sampled_verdict([(None, rank)])
    assert verdict.kind == "launch-bound", verdict.headline
    assert sampled_verdict([(None, replace(rank, gpu_busy_share=0.75))]).kind != "launch-bound"


def test_a_launch_bound_loops_item_does_not_make_it_sync_bound() -> None:
    # The H200 job called loss.item() every step: on a GPU busy 15% that wait is short beside the
    # dispatch, and the verdict names the dispatch.
    rank = RankStacks(
        pid=1,
        shares=ClassShares(counts={"compute": 80, "gpu_sync": 15, "data_wait": 5}),
        placement=WindowPlacement((), (), uses_cuda=True),
        dispatch_share=0.8,
        gpu_busy_share=0.15,
    )
    assert sampled_verdict([(None, rank)]).kind == "launch-bound"
    # Half busy, the GPU idles while the host waits on it and then launches again: the sync holds it back.
    assert sampled_verdict([(None, replace(rank, gpu_busy_share=0.55))]).kind == "sync-bound"
    # 90% busy, the host waits for the GPU's own work, which nothing holds back: compute, as the step clock
    # and the synchronised truth count it.
    verdict = sampled_verdict([(None, replace(rank, gpu_busy_share=0.9))])
    assert verdict.kind == "compute-bound", verdict.headline
    assert "the GPU is busy 90%, the host waiting for it in .item()-like calls in 15% of samples" in (
        verdict.headline
    )


_BUILDING = {
    20: "def make_images(count):",
    21: "    for i in range(count):",
    22: "        img = (torch.rand(3, 96, 96) * 255).byte()",
    23: "        blobs.append(zlib.compress(img.numpy().tobytes()))",
}


def test_start_up_that_turns_its_tensors_into_bytes_is_not_sync_bound() -> None:
    # A scenario job compressing its images at start-up read "sync-bound: 19%": .numpy() reads as a sync
    # (on a GPU it would wait for one). Outside a training loop's body it shows no loop running.
    def at(line: int) -> tuple[Frame, ...]:
        return (Frame("make_images", "/job/train.py", line), Frame("main", "/job/train.py", 40))

    stacks = (
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=60, frames=at(22)),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=40, frames=at(23)),
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks)
    rank = summarise_window(window, lambda f, n: _BUILDING.get(n, "") if f == "/job/train.py" else "")
    verdict = sampled_verdict([(None, rank)])
    assert verdict.kind == "warming-up" and verdict.rule == "not-in-loop-yet", verdict.headline
    assert "building data in make_images (train.py:22), 100% of samples" in verdict.headline


_WAITING = {
    40: "def train(model, loader, opt):",
    41: "    for x, y in loader:",
    42: "        loss = F.cross_entropy(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))",
    43: "        opt.zero_grad(set_to_none=True)",
    44: "        loss.backward()",
    45: "        opt.step()",
    46: "        losses.append(loss.item())",
}


def test_a_loop_waiting_for_a_busy_gpu_is_training_though_no_loader_or_model_call_was_caught() -> None:
    # A few large kernels: the host launches a step in a blink and waits in loss.item() for the rest, so a
    # window can catch no DataLoader, model or optimizer call (CI caught a 2 s window of the CPU stand-in
    # so: "not in the training loop yet: the main thread is waiting for the GPU in main"). The wait is on a
    # line of a loop's body and the GPU is busy: that is the loop, and the GPU is what it waits for.
    def at(line: int) -> tuple[Frame, ...]:
        return (Frame("train", "/job/train.py", line), Frame("main", "/job/train.py", 70))

    stacks = (
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=97, frames=at(46)),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=3, frames=at(42)),
    )
    window = StackWindow(
        root_pid=10,
        started_at=0,
        duration_s=2,
        rate_hz=50,
        stacks=stacks,
        placement=WindowPlacement((), (), uses_cuda=True),
    )

    def lines(filename: str, line: int) -> str:
        return _WAITING.get(line, "") if filename == "/job/train.py" else ""

    busy = summarise_window(window, lines, gpu_busy_share=0.98)
    verdict = sampled_verdict([(None, busy)])
    assert busy.loop_seen and verdict.kind == "compute-bound", verdict.headline
    assert "the host waiting for it in .item()-like calls in 97% of samples" in verdict.headline
    # On an idle GPU, or one NVML does not report, a sync waits for little: start-up's .numpy() in a loop
    # that builds data reads the same (test above), so only a loader or model call shows the loop.
    for busy_share in (0.05, None):
        rank = summarise_window(window, lines, gpu_busy_share=busy_share)
        verdict = sampled_verdict([(None, rank)])
        assert verdict.rule == "not-in-loop-yet", (busy_share, verdict.headline)


def test_the_loops_own_python_on_an_idle_gpu_is_loop_bound_and_named_host_bound_without_nvml() -> None:
    # Per-step bookkeeping in Python (the corpus's loop_logging.py: 74% of samples). With NVML's 5% the
    # GPU is known to wait for it; without, the verdict stays "host-bound (likely)", as before.
    python = LoopHost(
        share=0.74, loop_line="train.py:61", top_lines=(("train.py:70", 0.5), ("train.py:72", 0.2))
    )
    rank = RankStacks(
        pid=1,
        shares=ClassShares(counts={"other": 74, "compute": 21, "data_wait": 5}),
        placement=WindowPlacement((), (), uses_cuda=True),
        loop_host=python,
        dispatch_share=0.2,
        gpu_busy_share=0.05,
    )
    verdict = sampled_verdict([(None, rank)])
    assert verdict.kind == "loop-bound" and verdict.rule == "loop-bound", verdict.headline
    assert "holds the main thread 74% of samples while the GPU is busy 5%" in verdict.headline
    assert verdict.advice[0].startswith(
        "Most of it on train.py:70 50%, train.py:72 20%: move per-step bookkeeping"
    )
    unmeasured = sampled_verdict([(None, replace(rank, gpu_busy_share=None))])
    assert unmeasured.kind == "host-bound" and unmeasured.headline.startswith("host-bound (likely)")


def test_the_loops_own_line_on_a_busy_gpu_is_not_what_holds_it() -> None:
    # Scenario k attached on an H100 (session 41): 58% of samples on `float(correct)` after each
    # validation pass, a sync py-spy shows as the loop's own line, with NVML's GPU busy 99%. The loop's
    # code idled the GPU for at most 1% of the time (NVML over the same window): compute-bound. Where
    # NVML saw the GPU idle 40% of the time, it can still be what holds the GPU back.
    python = LoopHost(share=0.59, loop_line="train_val.py:51", top_lines=(("train_val.py:64", 0.58),))
    rank = RankStacks(
        pid=1,
        shares=ClassShares(counts={"other": 59, "compute": 25, "data_wait": 14, "copy": 2}),
        placement=WindowPlacement((), (), uses_cuda=True),
        loop_host=python,
        dispatch_share=0.2,
        gpu_busy_share=0.99,
    )
    busy = sampled_verdict([(None, rank)])
    assert busy.kind == "compute-bound", busy.headline
    assert "the GPU is busy 99%" in busy.headline and "hidden by queued GPU work" in busy.headline
    idle = sampled_verdict([(None, replace(rank, gpu_busy_share=0.6))])
    assert idle.kind == "host-bound" and idle.headline.startswith("host-bound (likely)"), idle.headline
    # Bounded at 38% by NVML's 62%, the loop's 45% of samples still outweighs a 40% wait: the bound says
    # whether the loop can hold the GPU back, not which of the two holds it more.
    waits = replace(
        rank,
        shares=ClassShares(counts={"other": 45, "data_wait": 40, "compute": 15}),
        loop_host=replace(python, share=0.45),
        gpu_busy_share=0.62,
    )
    assert sampled_verdict([(None, waits)]).kind == "host-bound"


_TORCH = "/venv/lib/python3.11/site-packages/torch/"
#: A compiled model called from the loop (train.py:14), as py-spy read a real torch.compile job on a CPU:
#: its first call traces the model (dynamo) before anything runs.
_COMPILED_CALL = (
    Frame("Module._call_impl", _TORCH + "nn/modules/module.py", 1789),
    Frame("Module._wrapped_call_impl", _TORCH + "nn/modules/module.py", 1778),
    Frame("OptimizedModule.__call__", _TORCH + "_dynamo/eval_frame.py", 511),
    Frame("main", "/job/train.py", 14),
    Frame("<module>", "/job/train.py", 30),
)
_TRACING = (
    Frame("InstructionTranslatorBase.step", _TORCH + "_dynamo/symbolic_convert.py", 1603),
    Frame("InstructionTranslatorBase.run", _TORCH + "_dynamo/symbolic_convert.py", 1950),
    Frame("trace_frame", _TORCH + "_dynamo/convert_frame.py", 954),
    Frame("compile_frame", _TORCH + "_dynamo/convert_frame.py", 1584),
    Frame("_compile", _TORCH + "_dynamo/convert_frame.py", 2102),
    Frame("ConvertFrame.__call__", _TORCH + "_dynamo/convert_frame.py", 2319),
    Frame("_TorchDynamoContext.__call__.<locals>.compile_wrapper", _TORCH + "_dynamo/eval_frame.py", 1166),
)
_NEXT = (
    Frame("_BaseDataLoaderIter.__next__", _TORCH + "utils/data/dataloader.py", 733),
    Frame("main", "/job/train.py", 12),
    Frame("<module>", "/job/train.py", 30),
)


def _compiled_loop_verdict(
    busy_percent: float, model_frames: tuple[Frame, ...]
) -> tuple[RankStacks, Verdict]:
    """90 samples in the compiled model's call, 10 waiting for the next batch, the GPU ``busy_percent``."""
    readings = nvml_readings(4242, busy_percent)
    stacks = (
        ThreadStack(pid=4242, tid=4242, thread_name="MainThread", count=90, frames=model_frames),
        ThreadStack(pid=4242, tid=4242, thread_name="MainThread", count=10, frames=_NEXT),
    )
    window = StackWindow(
        root_pid=4242,
        started_at=readings[0].timestamp - 1.0,
        duration_s=2,
        rate_hz=50,
        stacks=stacks,
        placement=WindowPlacement((), (), uses_cuda=True),
    )
    state = StacksState(
        timestamp=window.started_at + 3.0, targets=(AttachTarget(pid=4242),), windows=(window,)
    )
    (rank,), verdict = judge_stacks(state, lambda pid: None, readings)
    return rank, verdict


def test_a_model_being_compiled_is_not_launch_bound() -> None:
    # H200, scenario n2 (torch.compile): attached during its first steps, attach read "launch-bound: the
    # GPU is busy only 16%; the host spends 96% of samples dispatching the model's many small kernels";
    # the host was compiling the model under its module call, and the steps after it were compute-bound.
    rank, verdict = _compiled_loop_verdict(16, (*_TRACING, *_COMPILED_CALL))
    assert verdict.kind == "warming-up" and verdict.rule == "compiling", verdict.headline
    assert rank.to_dict()["compiling_share"] == 0.9
    assert verdict.headline.startswith("compiling: torch.compile holds the main thread 90% of samples")
    assert "TORCH_LOGS=recompiles" in verdict.advice[0]


def test_the_compiled_model_running_is_judged_as_any_model() -> None:
    # Once compiled its calls run the generated code: no compile frame, compute-bound on a busy GPU.
    generated = Frame("call", "/tmp/torchinductor_root/ab/cabc123.py", 210)
    rank, verdict = _compiled_loop_verdict(95, (generated, *_COMPILED_CALL))
    assert verdict.kind == "compute-bound", verdict.headline
    assert rank.to_dict()["compiling_share"] == 0.0


_LOADER_FILE = _TORCH + "utils/data/dataloader.py"


def _in_train(line: int, *inner: Frame) -> tuple[Frame, ...]:
    """A stack in /job/train.py's loop function ``train`` at ``line``, ``inner`` frames below it."""
    return (*inner, Frame("train", "/job/train.py", line), Frame("<module>", "/job/train.py", 40))


def _main_thread(count: int, frames: tuple[Frame, ...]) -> ThreadStack:
    return ThreadStack(pid=10, tid=10, thread_name="MainThread", count=count, frames=frames)


_TOKENISING_LOOP = {
    20: "    for images, captions in loader:",
    21: "        tokens = tokenize(captions)",
    22: "        loss = model(images, tokens).mean()",
    23: "        loss.backward()",
    24: "        optimizer.step()",
    25: "        history.append(loss.item())",
}


def _tokenising_window(python_line: int, loader: bool = True) -> tuple[RankStacks, Verdict]:
    """A CPU job's window: the loop's own Python (a tokenizer written in Python) on ``python_line``, 40%
    of samples; the model's forward, backward and optimizer 45%; the DataLoader 15% (without ``loader``:
    a generator of the job's own, which the window may not catch either)."""
    batch = Frame("_MultiProcessingDataLoaderIter._next_data", _LOADER_FILE, 1)
    stacks = (
        _main_thread(15, _in_train(20, batch if loader else Frame("batches", "/job/train.py", 12))),
        _main_thread(40, _in_train(python_line, Frame("tokenize", "/job/train.py", 8))),
        _main_thread(25, _in_train(22, Frame("Module._call_impl", _TORCH + "nn/modules/module.py", 1789))),
        _main_thread(12, _in_train(23, Frame("backward", _TORCH + "_tensor.py", 625))),
        _main_thread(8, _in_train(24, Frame("SGD.step", _TORCH + "optim/sgd.py", 120))),
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=2, rate_hz=50, stacks=stacks)
    rank = summarise_window(window, lambda f, n: _TOKENISING_LOOP.get(n, "") if f == "/job/train.py" else "")
    return rank, sampled_verdict([(None, rank)])


def test_the_loops_own_python_before_the_model_is_named_as_run_names_it() -> None:
    # A CPU job that tokenised its captions in Python in the loop, before the model (the work `xfertop
    # run` books as the loop's own before the model, and advises moving into the Dataset): attach read
    # "per-step bookkeeping (metrics, confusion counts, logging) ... do it every N steps".
    rank, verdict = _tokenising_window(21)
    assert rank.loop_host.top_lines[0][0] == "train.py:21" and rank.loop_host_before_model, rank
    assert verdict.kind == "loop-bound", verdict.headline
    assert verdict.headline.startswith("loop-bound: the loop's own code before the model holds"), (
        verdict.headline
    )
    advice = " ".join(verdict.advice)
    assert "the loop's own Python before the model" in advice and "__getitem__" in advice, advice
    assert "bookkeeping" not in advice, advice
    # The same Python after the optimizer step is bookkeeping, as before.
    rank, verdict = _tokenising_window(25)
    assert not rank.loop_host_before_model and verdict.kind == "loop-bound", verdict.headline
    assert "before the model" not in verdict.headline
    assert "per-step work of the loop's own" in " ".join(verdict.advice), verdict.advice


def test_a_loop_without_a_dataloader_is_not_told_to_move_its_work_into_one() -> None:
    # Session 48's trial: an RL loop stepping its environment between the policy's actions read "move it
    # into the Dataset's __getitem__ ... so the DataLoader workers run it": it has neither.
    rank, verdict = _tokenising_window(21, loader=False)
    assert not rank.loader_seen and rank.loop_host_before_model, rank
    assert verdict.kind == "loop-bound", verdict.headline
    advice = " ".join(verdict.advice)
    assert "no DataLoader appears in the samples" in advice and "vectorised" in advice, advice
    assert "__getitem__" not in advice and "the DataLoader workers run it" not in advice, advice
    assert _tokenising_window(21)[0].loader_seen
    # Its Python after the model's call (an environment stepped between the policy's actions) may be its
    # data too.
    rank, verdict = _tokenising_window(25, loader=False)
    assert not rank.loop_host_before_model and verdict.kind == "loop-bound", verdict.headline
    advice = " ".join(verdict.advice)
    assert "per-step work of the loop's own" in advice and "an environment or a simulator" in advice, advice
    _, with_loader = _tokenising_window(25)
    assert "No DataLoader" not in " ".join(with_loader.advice)


_VALIDATING_INLINE = {
    20: "    for x, y in train_loader:",
    21: "        loss = loss_fn(model(x), y)",
    22: "        loss.backward()",
    23: "        optimizer.step()",
    24: "        if step % 40 == 0:",
    25: "            correct = sum(int((model(a).argmax(1) == b).sum()) for a, b in val_loader)",
}


def test_a_validation_pass_written_on_one_line_is_not_a_new_iterator_every_step() -> None:
    # A CPU job validating every 40 steps with `sum(... for a, b in val_loader)` on one line of its loop
    # (the validation loader's workers not persistent): that line starts the loader's iterator and asks
    # for its batches, as `next(iter(loader))` would, and attach advised "The loop calls iter(loader)
    # every step ... Make the iterator once, outside the loop". It is a pass over another loader.
    def in_pass(*inner: Frame) -> tuple[Frame, ...]:
        return _in_train(25, *inner, Frame("<genexpr>", "/job/train.py", 25))

    stacks = (
        _main_thread(5, _in_train(20, Frame("_MultiProcessingDataLoaderIter._next_data", _LOADER_FILE, 1))),
        _main_thread(60, _in_train(21, Frame("Module._call_impl", _TORCH + "nn/modules/module.py", 1789))),
        _main_thread(10, _in_train(22, Frame("backward", _TORCH + "_tensor.py", 625))),
        _main_thread(5, _in_train(23, Frame("SGD.step", _TORCH + "optim/sgd.py", 120))),
        _main_thread(4, in_pass(Frame("_MultiProcessingDataLoaderIter.__init__", _LOADER_FILE, 1))),
        _main_thread(8, in_pass(Frame("_MultiProcessingDataLoaderIter._next_data", _LOADER_FILE, 1))),
        _main_thread(8, in_pass(Frame("Module._call_impl", _TORCH + "nn/modules/module.py", 1789))),
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=2, rate_hz=50, stacks=stacks)
    rank = summarise_window(
        window, lambda f, n: _VALIDATING_INLINE.get(n, "") if f == "/job/train.py" else ""
    )
    assert rank.loop_validation.top_lines and rank.loop_validation.top_lines[0][0] == "train.py:25", rank
    assert rank.new_iterator_line is None
    verdict = sampled_verdict([(None, rank)])
    assert "Make the iterator once" not in " ".join(verdict.advice), verdict.advice
