"""Where does the main thread spend its time? Checked on py-spy windows of real CPU training jobs
(fixtures/pyspy, made by make_fixtures.py), one per bottleneck."""

from __future__ import annotations

from dataclasses import replace

from pyspy_support import fixture_lines, fixture_window
from xfertop.analysis.sampled_verdict import sampled_verdict
from xfertop.analysis.stack_classify import RankStacks, classify_stack, summarise_window
from xfertop.model.stacks import Frame, StackWindow, ThreadStack, WindowPlacement


def summary(name: str):
    return summarise_window(fixture_window(name), fixture_lines(name))


def test_num_workers_0_shows_loading_in_the_main_process() -> None:
    for name in ("starved_w0", "starved_w0_pin"):
        rank = summary(name)
        assert rank.shares.share("main_loading") > 0.8, name
        assert rank.workers == ()


def test_starved_workers_show_the_main_thread_waiting_and_every_worker_busy() -> None:
    for name in ("starved_w2", "starved_w2_pin"):
        rank = summary(name)
        assert rank.shares.input_share > 0.8, name
        assert rank.shares.share("data_wait") > 0.4, name
        assert len(rank.workers) == 2 and rank.workers_busy == 2, name
        assert all(worker.samples > 100 for worker in rank.workers)


def test_cpu_torch_starts_no_pin_memory_thread() -> None:
    # pin_memory=True without an accelerator pins nothing and starts no pt_data_pin thread.
    assert summary("starved_w2_pin").pin_busy_share is None


def test_a_wide_model_is_compute() -> None:
    assert summary("compute").shares.share("compute") > 0.9


def test_large_to_calls_are_copy_by_their_source_line() -> None:
    assert summary("copy").shares.share("copy") > 0.7
    without_lines = summarise_window(fixture_window("copy"))
    assert without_lines.shares.share("copy") < 0.1  # .to() has no Python frame of its own


def test_item_calls_are_gpu_sync_by_their_source_line() -> None:
    # On CPU .item() returns at once, so it is a small share here; on a GPU it waits for the kernels.
    rank = summary("sync")
    assert rank.shares.counts["gpu_sync"] > 0
    lines = fixture_lines("sync")
    at_item = [
        s
        for s in fixture_window("sync").stacks
        if s.is_main_thread and s.frames and "item()" in lines(s.frames[0].filename, s.frames[0].line)
    ]
    assert at_item
    assert {classify_stack(s.frames, lines) for s in at_item} == {"gpu_sync"}


def test_a_main_thread_held_in_c_on_a_sync_line_is_gpu_sync() -> None:
    # native_sync: the CPU stand-in for .item() blocked on the GPU (the H200 sync job): the main thread
    # sits in C for milliseconds on lines calling .item() / .cpu() / .tolist(), with the training
    # script's line as its innermost Python frame (recorded with --full-filenames, as xfertop does).
    rank = summary("native_sync")
    assert rank.shares.share("gpu_sync") > 0.4, rank.shares.counts
    lines = fixture_lines("native_sync")
    main = [s for s in fixture_window("native_sync").stacks if s.is_main_thread and s.frames]
    by_line: dict[str, set[str]] = {}
    for stack in main:
        text = lines(stack.frames[0].filename, stack.frames[0].line)
        by_line.setdefault(text, set()).add(classify_stack(stack.frames, lines))
    for text in (
        "_ = torch.mm(a, b).sum().item()",
        "_ = torch.mm(a, b).cpu()",
        "_ = torch.mm(a, b).sum(0).tolist()",
    ):
        assert by_line.get(text) == {"gpu_sync"}, (text, by_line)
    # Tensor maths written directly in the loop is compute, not "other".
    for text in ("torch.mm(a, b).pow(2).mean()", "_ = a @ b"):
        assert by_line.get(text) == {"compute"}, (text, by_line)
    assert rank.shares.share("other") < 0.1, rank.shares.counts
    # Every one of those samples rests on the line text: without the lookup they are "other".
    assert summarise_window(fixture_window("native_sync")).shares.share("gpu_sync") == 0


def test_the_loss_line_of_a_training_loop_is_compute() -> None:
    # sync fixture: samples inside .pow(2).mean() have the script's `loss = ...` line innermost.
    lines = fixture_lines("sync")
    at_loss = [
        s
        for s in fixture_window("sync").stacks
        if s.is_main_thread
        and s.frames
        and lines(s.frames[0].filename, s.frames[0].line) == "loss = model(batch).pow(2).mean()"
    ]
    assert at_loss
    assert {classify_stack(s.frames, lines) for s in at_loss} == {"compute"}


def in_loop(text: str) -> str:
    """The class of a sample whose innermost frame is the training script's line holding ``text``."""
    stack = (
        Frame(name="main", filename="/job/train.py", line=7),
        Frame(name="<module>", filename="/job/train.py", line=9),
    )
    return classify_stack(stack, lambda filename, line: text if line == 7 else "")


def test_sync_calls_on_the_innermost_line_are_gpu_sync() -> None:
    for text in (
        "_ = loss.item()",
        "total += loss.item()",
        'print(f"{loss.item():.3f}")',
        "x = out.cpu()",
        "preds = logits.argmax(-1).tolist()",
        "arr = t.numpy()",
        "arr = t.numpy(force=True)",
        "torch.cuda.synchronize()",
        "stream.synchronize()",
    ):
        assert in_loop(text) == "gpu_sync", text


def test_tensor_maths_on_the_innermost_line_is_compute() -> None:
    for text in (
        "loss = model(batch).pow(2).mean()",
        "torch.mm(a, b)",
        "c = a @ b",
        "x = torch.relu(h)",
        "acc = (pred == y).float().mean()",
        "p.data.add_(g, alpha=-lr)",
        "logits = logits - logits.logsumexp(1, keepdim=True)",
        "x = x.flip(-1).roll(4, dims=2).contiguous()",
    ):
        assert in_loop(text) == "compute", text


def test_other_lines_stay_other_and_comments_do_not_count() -> None:
    for text in (
        "",
        "for step, batch in enumerate(loader):",
        'logger.info("step %d", step)',
        "seen.add(i)",
        "items.sort()",
        "step += 1  # loss.item() would sync here",
        'print("#1")',
        # Python's and NumPy's own maths is the loop's Python, whatever the names of its functions.
        "s = [x, v, math.sin(t / 5), math.cos(t / 5)]",
        "noise = np.exp(random.gauss(0, 1))",
    ):
        assert in_loop(text) == "other", text
    # String literals are kept (an f-string may call .item()), only a trailing comment is dropped.
    assert in_loop('print(f"{loss.item():.3f}")  # log') == "gpu_sync"
    assert in_loop("batch = batch.to(device)  # not .item()") == "copy"


def frames(*spec: tuple[str, str]) -> tuple[Frame, ...]:
    """Innermost first, as py-spy reports them."""
    return tuple(Frame(name=name, filename=filename, line=1) for name, filename in spec)


def test_a_stack_cut_short_by_nonblocking_sampling_is_still_placed() -> None:
    assert classify_stack(frames(("default_collate", "torch/utils/data/_utils/collate.py"))) == "main_loading"
    assert classify_stack(frames(("ReLU.forward", "torch/nn/modules/activation.py"))) == "compute"


def test_a_copy_helper_inside_the_dataloader_is_copy_not_waiting() -> None:
    stack = frames(
        ("send_to_device", "accelerate/utils/operations.py"),
        ("DataLoaderShard.__iter__", "accelerate/data_loader.py"),
        ("main", "train.py"),
    )
    assert classify_stack(stack) == "copy"


def test_cuda_synchronize_is_gpu_sync() -> None:
    assert (
        classify_stack(
            frames(("synchronize", "/x/site-packages/torch/cuda/__init__.py"), ("main", "train.py"))
        )
        == "gpu_sync"
    )


def test_pin_thread_load_is_the_share_of_its_samples_spent_pinning() -> None:
    # CPU torch has no pin thread; these frames are torch's own _pin_memory_loop as a GPU run shows it.
    loop = ("_pin_memory_loop", "torch/utils/data/_utils/pin_memory.py")
    pinning = ThreadStack(
        pid=10,
        tid=11,
        thread_name="pt_data_pin",
        count=30,
        frames=frames(("pin_memory", "torch/utils/data/_utils/pin_memory.py"), ("do_one_step", "x"), loop),
    )
    waiting = ThreadStack(
        pid=10,
        tid=11,
        thread_name="pt_data_pin",
        count=10,
        frames=frames(("Condition.wait", "threading.py"), ("Queue.get", "queue.py"), loop),
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=40, stacks=(pinning, waiting))
    assert summarise_window(window).pin_busy_share == 0.75


def test_samples_without_a_frame_are_left_out_of_the_shares() -> None:
    waiting = ThreadStack(
        pid=10,
        tid=10,
        thread_name="MainThread",
        count=30,
        frames=frames(("_MultiProcessingDataLoaderIter._next_data", "torch/utils/data/dataloader.py")),
    )
    unread = ThreadStack(pid=10, tid=10, thread_name="MainThread", count=70, frames=())
    window = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=(waiting, unread))
    rank = summarise_window(window)
    assert rank.shares.input_share == 1.0 and rank.frameless_samples == 70


def test_starting_an_epochs_workers_is_waiting_for_data_and_counted_apart() -> None:
    starting = frames(
        ("Popen._launch", "multiprocessing/popen_fork.py"),
        ("BaseProcess.start", "multiprocessing/process.py"),
        ("_MultiProcessingDataLoaderIter.__init__", "torch/utils/data/dataloader.py"),
        ("DataLoader._get_iterator", "torch/utils/data/dataloader.py"),
        ("DataLoader.__iter__", "torch/utils/data/dataloader.py"),
        ("main", "train.py"),
    )
    assert classify_stack(starting) == "data_wait"
    start = ThreadStack(pid=10, tid=10, thread_name="MainThread", count=25, frames=starting)
    compute = ThreadStack(
        pid=10, tid=10, thread_name="MainThread", count=75, frames=frames(("backward", "torch/_tensor.py"))
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=(start, compute))
    assert summarise_window(window).worker_start_share == 0.25


_LOOP_SOURCE = {
    10: "def main():",
    11: "    for x, y in loader:",
    12: "        loss = model(x).pow(2).mean()",
    13: "        running += loss.item()",
    14: "        for row in logits.tolist():",
    15: "            top5 = sorted(range(100), key=row.__getitem__)[-5:]",
    16: "    save(model)",
}


def _loop_lines(filename: str, line: int) -> str:
    return _LOOP_SOURCE.get(line, "") if filename == "/job/train.py" else ""


def test_the_loops_own_python_work_is_found_by_the_for_statements_body() -> None:
    def at(line: int, *inner: tuple[str, str]) -> tuple[Frame, ...]:
        return (*frames(*inner), Frame("main", "/job/train.py", line), Frame("<module>", "/job/train.py", 20))

    # py-spy on 3.11 may give a body line (12) for the for's next() call: the for above it is found.
    waiting = at(12, ("_MultiProcessingDataLoaderIter.__next__", "torch/utils/data/dataloader.py"))
    bookkeeping = at(15)
    after_the_loop = at(16)
    stacks = (
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=20, frames=waiting),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=50, frames=bookkeeping),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=30, frames=after_the_loop),
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks)
    loop = summarise_window(window, _loop_lines).loop_host
    assert loop.share == 0.5 and loop.loop_line == "train.py:11"
    assert loop.top_lines == (("train.py:15", 0.5),)


_WHILE_SOURCE = {
    10: "def main():",
    11: "    it = iter(loader)",
    12: "    while True:",
    13: "        try:",
    14: "            x, y = next(it)",
    15: "        except StopIteration:",
    16: "            it = iter(loader)",
    17: "            continue",
    18: "        loss = model(x).pow(2).mean()",
    19: "        log.write(json.dumps([{'loss': float(v)} for v in per_sample]))",
    20: "    save(model)",
}


def test_a_while_loop_that_calls_next_itself_is_found_as_the_training_loop() -> None:
    def at(line: int, *inner: tuple[str, str]) -> tuple[Frame, ...]:
        return (*frames(*inner), Frame("main", "/job/train.py", line), Frame("<module>", "/job/train.py", 30))

    waiting = at(14, ("_MultiProcessingDataLoaderIter.__next__", "torch/utils/data/dataloader.py"))
    stacks = (
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=20, frames=waiting),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=45, frames=at(19)),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=35, frames=at(20)),
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks)
    loop = summarise_window(window, lambda f, n: _WHILE_SOURCE.get(n, "") if f == "/job/train.py" else "")
    assert loop.loop_host.loop_line == "train.py:12"
    assert loop.loop_host.share == 0.45 and loop.loop_host.top_lines == (("train.py:19", 0.45),)


def test_a_frameworks_loop_is_not_the_users_bookkeeping() -> None:
    lib = "/usr/lib/python3/site-packages/lightning/loop.py"
    waiting = (
        *frames(("_MultiProcessingDataLoaderIter.__next__", "torch/utils/data/dataloader.py")),
        Frame("advance", lib, 11),
    )
    hooks = (Frame("advance", lib, 15),)
    stacks = (
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=50, frames=waiting),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=50, frames=hooks),
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks)
    assert summarise_window(window, lambda f, n: _LOOP_SOURCE.get(n, "")).loop_host.share == 0.0


def test_a_loop_under_tqdm_is_found_and_a_checkpoint_in_its_body_is_counted_apart() -> None:
    tqdm_iter = Frame("tqdm.__iter__", "/venv/lib/python3.11/site-packages/tqdm/std.py", 1181)

    def at(line: int, *inner: Frame) -> tuple[Frame, ...]:
        return (*inner, Frame("main", "/job/train.py", line), Frame("<module>", "/job/train.py", 20))

    next_batch = frames(("_MultiProcessingDataLoaderIter.__next__", "torch/utils/data/dataloader.py"))
    waiting = at(11, *next_batch, tqdm_iter)
    # torch.save in the body (every N steps), through a .cpu() of the state: the loop's work, not a copy.
    saving = at(15, *frames(("Tensor.cpu", "torch/_tensor.py"), ("save", "torch/serialization.py")))
    saved_after_the_loop = at(16, *frames(("save", "torch/serialization.py")))
    stacks = (
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=30, frames=waiting),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=30, frames=at(15)),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=30, frames=saving),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=10, frames=saved_after_the_loop),
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks)
    rank = summarise_window(window, _loop_lines)
    assert rank.loop_host.loop_line == "train.py:11" and rank.loop_host.share == 0.3
    assert rank.loop_checkpoint.share == 0.3 and rank.loop_checkpoint.top_lines == (("train.py:15", 0.3),)
    assert rank.shares.share("copy") == 0.0 and rank.shares.share("other") == 0.7
    assert rank.outside_at is not None  # the save after the loop stays outside it
    assert rank.outside_at.doing == "saving a checkpoint" and rank.outside_at.share == 0.1


def test_a_loops_own_iterable_building_batches_is_the_loops_work_and_a_dataloader_there_is_data() -> None:
    # `for x in batches():` at line 11 (no DataLoader): the generator's Python and its torch.tensor()
    # line are the loop's work before the model, named by the generator's own lines, not compute or
    # "outside the loop"; the model's calls (line 12) find the loop.
    def at(line: int, *inner: Frame) -> tuple[Frame, ...]:
        return (*inner, Frame("main", "/job/train.py", line), Frame("<module>", "/job/train.py", 20))

    building = at(11, Frame("batches", "/job/data.py", 7))
    making_tensors = at(11, Frame("batches", "/job/data.py", 9))
    model = at(12, *frames(("Module._call_impl", "torch/nn/modules/module.py")))
    next_batch = frames(("_SingleProcessDataLoaderIter.__next__", "torch/utils/data/dataloader.py"))
    lines = {("/job/data.py", 9): "        yield torch.tensor(rows)"}

    def source(filename: str, line: int) -> str:
        return lines.get((filename, line)) or _loop_lines(filename, line)

    def window(*stacks: tuple[int, tuple[Frame, ...]]) -> StackWindow:
        threads = tuple(
            ThreadStack(pid=10, tid=10, thread_name="MainThread", count=count, frames=stack)
            for count, stack in stacks
        )
        return StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=threads)

    rank = summarise_window(window((50, building), (20, making_tensors), (30, model)), source)
    assert rank.loop_iterable.share == 0.7 and rank.loop_iterable.loop_line == "train.py:11"
    assert rank.loop_iterable.top_lines == (("data.py:7", 0.5), ("data.py:9", 0.2))
    assert rank.shares.share("compute") == 0.3 and rank.outside_at is None
    # The same statement reading a DataLoader: data, as before.
    rank = summarise_window(window((70, at(11, *next_batch)), (30, model)), source)
    assert rank.shares.share("data_wait") == 0.7 and rank.loop_iterable.share == 0.0


def test_a_loader_read_through_a_generator_of_the_jobs_own_leaves_the_loop_to_the_models_caller() -> None:
    # `for x, y in progress(loader):` at line 11 of main: py-spy shows the loader's stack up to the
    # generator's frame only (data.py:3), never main; the model's calls come from main's loop body. The
    # training loop is main's: the EMA's tensor maths after the model's lines (line 15, after the step
    # at 12-13) is the loop's own work after the model, not compute of the model.
    next_batch = frames(("_SingleProcessDataLoaderIter.__next__", "torch/utils/data/dataloader.py"))
    reading = (*next_batch, Frame("progress", "/job/data.py", 3))

    def at(line: int, *inner: Frame) -> tuple[Frame, ...]:
        return (*inner, Frame("main", "/job/train.py", line), Frame("<module>", "/job/train.py", 20))

    model = at(12, *frames(("Module._call_impl", "torch/nn/modules/module.py")))
    stepping = at(13, *frames(("Optimizer.step", "torch/optim/optimizer.py")))
    averaging = at(15)
    lines = {
        ("/job/data.py", 1): "def progress(batches):",
        ("/job/data.py", 2): "    for index, item in enumerate(batches):",
        ("/job/data.py", 3): "        yield item",
        ("/job/train.py", 15): "            ema.mul_(0.99).add_(weights, alpha=0.01)",
    }

    def source(filename: str, line: int) -> str:
        return lines.get((filename, line)) or _loop_lines(filename, line)

    counts = ((10, reading), (20, model), (10, stepping), (60, averaging))
    stacks = tuple(
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=count, frames=stack)
        for count, stack in counts
    )
    rank = summarise_window(
        StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks), source
    )
    assert rank.loop_tensor.loop_line == "train.py:11", rank.loop_tensor
    assert rank.loop_tensor.share == 0.6 and rank.loop_tensor_after_model
    assert rank.shares.share("data_wait") == 0.1


def test_a_model_called_after_the_optimizer_step_is_the_loops_work_after_the_step() -> None:
    # Session 47's trial: an MLP steps at lines 12-13, then evaluates its EMA copy on held-out data every 20
    # steps (line 16, half the samples). Attached on the CPU it read "healthy: model and loop 91%"; its
    # truth and `xfertop run` read loop-bound after the step (50.7% and 46%). The step ends at its last
    # backward or optimizer step, as the step clock's model end has it: the later forward is the loop's.
    module_call = frames(
        ("Linear.forward", "torch/nn/modules/linear.py"), ("Module._call_impl", "torch/nn/modules/module.py")
    )

    def at(line: int, *inner: Frame) -> tuple[Frame, ...]:
        return (*inner, Frame("main", "/job/train.py", line), Frame("<module>", "/job/train.py", 30))

    waiting = at(11, *frames(("_MultiProcessingDataLoaderIter.__next__", "torch/utils/data/dataloader.py")))
    forward = at(12, *module_call)
    backward = at(13, *frames(("_engine_run_backward", "torch/autograd/graph.py")))
    stepping = at(
        13, *frames(("Adam.step", "torch/optim/adam.py"), ("Optimizer.step", "torch/optim/optimizer.py"))
    )
    evaluating = at(16, *module_call)
    lines = {
        ("/job/train.py", 11): "    for x, y in loader:",
        ("/job/train.py", 12): "        loss = lossf(model(x), y)",
        ("/job/train.py", 13): "        opt.zero_grad(); loss.backward(); opt.step()",
        ("/job/train.py", 14): "        if i % 20 == 0:",
        ("/job/train.py", 15): "            with torch.no_grad():",
        ("/job/train.py", 16): "                val = lossf(ema(x_val), y_val)",
    }

    def source(filename: str, line: int) -> str:
        return lines.get((filename, line), "")

    def window(*counted: tuple[int, tuple[Frame, ...]]) -> StackWindow:
        stacks = tuple(
            ThreadStack(pid=10, tid=10, thread_name="MainThread", count=count, frames=stack)
            for count, stack in counted
        )
        placement = WindowPlacement((), (), uses_cuda=False)
        return StackWindow(
            root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks, placement=placement
        )

    rank = summarise_window(
        window((10, waiting), (10, forward), (15, backward), (15, stepping), (50, evaluating)), source
    )
    assert rank.loop_tensor.share == 0.5 and rank.loop_tensor_after_model, rank.loop_tensor
    assert rank.dispatch_share == 0.4  # the step's forward, backward and optimizer: not the evaluation
    verdict = sampled_verdict([(None, rank)])
    assert verdict.kind == "loop-bound" and "the model step 40%" in verdict.headline, verdict.headline
    assert "after the model's step (train.py:16" in verdict.advice[0], verdict.advice
    # Without an evaluation after it, the same step is the model's: compute-bound, as before.
    rank = summarise_window(window((4, waiting), (20, forward), (38, backward), (38, stepping)), source)
    assert rank.loop_tensor.share == 0.0
    assert sampled_verdict([(None, rank)]).kind == "compute-bound"


def test_a_progress_generator_around_a_dataloader_is_not_told_to_become_a_dataloader() -> None:
    # Session 47's trial: `for x, y in progress(loader):` whose generator recomputes statistics over the
    # loss history and prints a bar each batch (41% of the step, its truth). Attached, its lines read "The
    # loop's own iterable ... builds each batch in the main thread: make it a Dataset read through a
    # DataLoader with workers", of a generator that reads one with 2 workers.
    def at(line: int, *inner: Frame) -> tuple[Frame, ...]:
        return (*inner, Frame("main", "/job/train.py", line), Frame("<module>", "/job/train.py", 20))

    waiting = (
        *frames(("_MultiProcessingDataLoaderIter.__next__", "torch/utils/data/dataloader.py")),
        Frame("progress", "/job/data.py", 3),
    )
    counting = at(
        11, Frame("progress", "/job/data.py", 6), *frames(("median", "/usr/lib/python3.11/statistics.py"))
    )
    printing = at(11, Frame("progress", "/job/data.py", 7))
    model = at(12, *frames(("Module._call_impl", "torch/nn/modules/module.py")))
    stepping = at(13, *frames(("Optimizer.step", "torch/optim/optimizer.py")))
    lines = {
        ("/job/data.py", 3): "        item = next(batches)",
        ("/job/data.py", 6): "        med = statistics.median(history)",
        ("/job/data.py", 7): '        print(f"{n}/{total} loss={med:.4f}", flush=True)',
        ("/job/train.py", 11): "    for x, y in progress(loader):",
        ("/job/train.py", 12): "        loss = lossf(model(x), y)",
        ("/job/train.py", 13): "        loss.backward(); opt.step()",
    }

    def source(filename: str, line: int) -> str:
        return lines.get((filename, line), "")

    def summarised(*counted: tuple[int, tuple[Frame, ...]]) -> RankStacks:
        stacks = tuple(
            ThreadStack(pid=10, tid=10, thread_name="MainThread", count=count, frames=stack)
            for count, stack in counted
        )
        placement = WindowPlacement((), (), uses_cuda=False)
        window = StackWindow(
            root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks, placement=placement
        )
        return summarise_window(window, source)

    rank = summarised((20, waiting), (30, counting), (15, printing), (20, model), (15, stepping))
    assert rank.loop_iterable.share == 0.45 and rank.loop_iterable_wraps_loader, rank.loop_iterable
    verdict = sampled_verdict([(None, rank)])
    assert verdict.kind == "loop-bound" and "around the DataLoader" in verdict.headline, verdict.headline
    advice = " ".join(verdict.advice)
    assert "around its DataLoader" in advice and "read through a DataLoader" not in advice, advice
    # A generator that builds the batches itself (no loader below it) is still told to become one.
    rank = summarised((30, counting), (15, printing), (20, model), (15, stepping))
    assert not rank.loop_iterable_wraps_loader
    assert "read through a DataLoader with workers" in " ".join(sampled_verdict([(None, rank)]).advice)


def test_a_loop_waiting_in_a_queue_for_a_producers_batches_waits_for_data() -> None:
    # `x, y = queue.get()` at line 12 of main's loop (a producer process fills it; no DataLoader): the
    # loop waits for data. The same get() before the loop (line 10: a warm-up batch) stays outside it.
    queue_get = frames(("Queue.get", "/usr/lib/python3.11/multiprocessing/queues.py"))

    def at(line: int, *inner: Frame) -> tuple[Frame, ...]:
        return (*inner, Frame("main", "/job/train.py", line), Frame("<module>", "/job/train.py", 20))

    model = at(13, *frames(("Module._call_impl", "torch/nn/modules/module.py")))
    lines = {
        ("/job/train.py", 11): "    while True:",
        ("/job/train.py", 12): "        x, y = queue.get()",
        ("/job/train.py", 13): "        loss = model(x).pow(2).mean()",
    }

    def source(filename: str, line: int) -> str:
        return lines.get((filename, line), "")

    # A DataLoader with workers waits in its own data queue's get(): that is the loader's wait.
    loader_wait = at(
        12,
        *queue_get,
        *frames(("_MultiProcessingDataLoaderIter._try_get_data", "torch/utils/data/dataloader.py")),
    )
    counts = ((70, at(12, *queue_get)), (10, loader_wait), (10, model), (10, at(10, *queue_get)))
    stacks = tuple(
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=count, frames=stack)
        for count, stack in counts
    )
    rank = summarise_window(
        StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks), source
    )
    assert rank.shares.share("data_wait") == 0.8 and rank.queue_wait_share == 0.7
    assert rank.shares.share("other") == 0.1  # the get() before the loop
    verdict = sampled_verdict([(None, rank)])
    assert verdict.kind == "input-bound" and "get() for its batches in 70%" in verdict.headline, (
        verdict.headline
    )
    assert "num_workers" not in verdict.headline and verdict.advice[0].startswith("The producer"), verdict


def test_the_main_thread_running_a_dataset_is_told_apart_from_unpickling_a_workers_batch() -> None:
    next_batch = ("_MultiProcessingDataLoaderIter.__next__", "torch/utils/data/dataloader.py")
    fetching = frames(
        ("Slow.__getitem__", "/job/train.py"),
        ("_MapDatasetFetcher.fetch", "torch/utils/data/_utils/fetch.py"),
        ("_SingleProcessDataLoaderIter._next_data", "torch/utils/data/dataloader.py"),
        next_batch,
    )
    unpickling = frames(("rebuild_storage_fd", "torch/multiprocessing/reductions.py"), next_batch)
    computing = frames(("backward", "torch/_tensor.py"))
    stacks = (
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=40, frames=fetching),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=20, frames=unpickling),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=40, frames=computing),
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks)
    rank = summarise_window(window)
    assert rank.shares.share("main_loading") == 0.6
    assert rank.main_fetch_share == 0.4


def test_a_main_thread_waiting_on_the_jobs_own_prefetch_queue_waits_for_data() -> None:
    queue_wait = frames(
        ("Condition.wait", "/usr/lib/python3.11/threading.py"), ("Queue.get", "/usr/lib/python3.11/queue.py")
    )
    main_waiting = (*queue_wait, Frame("next", "/job/train.py", 20), Frame("main", "/job/train.py", 30))
    computing = frames(("backward", "torch/_tensor.py"))
    reader = frames(
        ("_SingleProcessDataLoaderIter.__next__", "torch/utils/data/dataloader.py"),
        ("Prefetcher._fill", "/job/train.py"),
    )
    stacks = [
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=40, frames=main_waiting),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=60, frames=computing),
    ]
    alone = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=tuple(stacks))
    assert summarise_window(alone).shares.share("data_wait") == 0.0, "no loader read elsewhere: a queue"
    stacks.append(ThreadStack(pid=10, tid=11, thread_name="Thread-1", count=100, frames=reader))
    prefetched = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=tuple(stacks))
    assert summarise_window(prefetched).shares.share("data_wait") == 0.4


def test_building_an_optimizer_or_a_module_is_start_up_not_a_step() -> None:
    # Adam's constructor imported torch._dynamo for seconds on a first run: "compute" by torch/optim/.
    importing = frames(
        ("_find_and_load", "<frozen importlib._bootstrap>"),
        ("Optimizer.__init__", "/venv/lib/python3.11/site-packages/torch/optim/optimizer.py"),
        ("Adam.__init__", "/venv/lib/python3.11/site-packages/torch/optim/adam.py"),
        ("main", "/job/train.py"),
    )
    assert classify_stack(importing) == "other"
    stepping = frames(
        ("Adam.step", "/venv/lib/python3.11/site-packages/torch/optim/adam.py"), ("main", "/job/train.py")
    )
    assert classify_stack(stepping) == "compute"


def test_a_start_up_window_says_which_function_of_the_job_holds_it_and_doing_what() -> None:
    loading = (
        Frame("_load", "/venv/lib/python3.11/site-packages/torch/serialization.py", 1900),
        Frame("load", "/venv/lib/python3.11/site-packages/torch/serialization.py", 1400),
        Frame("restore", "/job/train.py", 8),
        Frame("main", "/job/train.py", 30),
    )
    parsing = (
        Frame("parse_args", "/usr/lib/python3.11/argparse.py", 1800),
        Frame("main", "/job/train.py", 25),
    )
    stacks = (
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=80, frames=loading),
        ThreadStack(pid=10, tid=10, thread_name="MainThread", count=20, frames=parsing),
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks)
    rank = summarise_window(window, lambda filename, line: "")
    assert not rank.loop_seen
    assert rank.outside_at is not None and rank.outside_at.share == 0.8
    assert str(rank.outside_at) == "loading a checkpoint in restore (train.py:8)"


def test_a_starved_loop_on_a_thread_of_its_own_is_found_by_its_reads_alone() -> None:
    # A 2 s window of a starved loop may catch no model step: the thread reading the loader is the loop,
    # unless the main thread takes its batches from a prefetcher's queue (then it is the loop).
    joining = frames(("Thread.join", "/usr/lib/python3.11/threading.py"), ("<module>", "/job/train.py"))
    reading = frames(
        ("_MultiProcessingDataLoaderIter._next_data", "torch/utils/data/dataloader.py"),
        ("train", "/job/train.py"),
    )
    queue_wait = frames(("Queue.get", "/usr/lib/python3.11/queue.py"), ("main", "/job/train.py"))

    def window(main: tuple[Frame, ...]) -> StackWindow:
        stacks = (
            ThreadStack(pid=10, tid=10, thread_name="MainThread", count=100, frames=main),
            ThreadStack(pid=10, tid=11, thread_name="trainer", count=100, frames=reading),
        )
        return StackWindow(root_pid=10, started_at=0, duration_s=2, rate_hz=50, stacks=stacks)

    trained = summarise_window(window(joining))
    assert trained.loop_thread == "trainer" and trained.shares.share("data_wait") == 1.0
    prefetched = summarise_window(window(queue_wait))
    assert prefetched.loop_thread is None and prefetched.shares.share("data_wait") == 1.0


# Session 29's j49, a policy-gradient loop: each step simulates episodes in Python, builds the batch with
# torch.tensor() and steps a small policy; the zero_grad() at the body's top is the optimizer's.
_ROLLOUT_SOURCE = {
    10: "while time.time() < deadline:",
    11: "    opt.zero_grad()",
    12: "    S, A, R = rollouts(16)",
    13: "    states, actions, returns = torch.tensor(S), torch.tensor(A), torch.tensor(R)",
    14: "    logp = torch.log_softmax(policy(states), -1).gather(1, actions[:, None]).squeeze(1)",
    15: "    loss = -(logp * (returns - returns.mean())).mean()",
    16: "    loss.backward()",
    17: "    opt.step()",
}


def test_the_batch_built_before_the_models_call_is_the_loops_own_work_not_the_models() -> None:
    def at(line: int, *inner: tuple[str, str]) -> tuple[Frame, ...]:
        return (*frames(*inner), Frame("<module>", "/job/train.py", line))

    def stack(count: int, line: int, *inner: tuple[str, str]) -> ThreadStack:
        return ThreadStack(pid=10, tid=10, thread_name="MainThread", count=count, frames=at(line, *inner))

    optimizer = ("Adam.step", "torch/optim/adam.py")
    stacks = (
        stack(3, 11, ("Optimizer.zero_grad", "torch/optim/optimizer.py")),
        stack(40, 12, ("rollouts", "/job/train.py")),
        stack(20, 13),
        stack(8, 14, ("Module._call_impl", "torch/nn/modules/module.py")),
        stack(4, 15),
        stack(15, 16, ("backward", "torch/_tensor.py")),
        stack(9, 17, optimizer),
        # py-spy read the loop's frame still on the line before the batch's building, inside opt.step()
        stack(1, 12, optimizer),
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks)
    rank = summarise_window(window, lambda f, n: _ROLLOUT_SOURCE.get(n, "") if f == "/job/train.py" else "")
    # torch.tensor() of the episodes is the loop's tensor work before the model; the loss between the
    # policy's call and backward is the model step's (backward runs through it).
    assert rank.loop_tensor.top_lines == (("train.py:13", 0.2),), rank.loop_tensor
    assert rank.loop_tensor_after_model is False
    assert rank.loop_host.top_lines[0] == ("train.py:12", 0.4), rank.loop_host
    verdict = sampled_verdict([(None, rank)])
    assert verdict.kind == "loop-bound", verdict.headline


_PER_SAMPLE_SOURCE = {
    20: "for x, y in loader:",
    21: "    x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)",
    22: "    grads = per_sample(params, x, y)",
    23: "    norms = torch.sqrt(sum(g.flatten(1).pow(2).sum(1) for g in grads.values()))",
    24: "    params = {k: p - 0.05 * g for k, p in params.items()}",
}


def test_per_sample_gradients_through_torch_func_are_the_models_step() -> None:
    """docs/measurements/h100-2026-12-06-s36 (j90): per-sample gradients, vmap over torch.func.grad of a
    functional_call, a hand-written update. No backward() and no module call sits above vmap's own work,
    which read as the loop's; on the H100, its GPU 5% busy, attach said "input-bound: 19%" where `xfertop
    run` said launch-bound."""

    def stack(count: int, line: int, *inner: tuple[str, str]) -> ThreadStack:
        at = (*frames(*inner), Frame("<module>", "/job/train.py", line))
        return ThreadStack(pid=10, tid=10, thread_name="MainThread", count=count, frames=at)

    vmap = [("_flat_vmap", "torch/_functorch/vmap.py"), ("wrapped", "torch/_functorch/apis.py")]
    stacks = (
        stack(19, 20, ("__next__", "torch/utils/data/dataloader.py")),
        stack(3, 21),
        stack(24, 22, *vmap),  # vmap and grad's own Python: batching rules, pytrees, levels
        stack(16, 22, ("Module._call_impl", "torch/nn/modules/module.py"), *vmap),
        stack(
            14,
            22,
            ("grad", "torch/autograd/__init__.py"),
            ("grad_impl", "torch/_functorch/eager_transforms.py"),
            *vmap,
        ),
        stack(12, 23),
        stack(12, 24),
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks)
    rank = summarise_window(
        window, lambda f, n: _PER_SAMPLE_SOURCE.get(n, "") if f == "/job/train.py" else ""
    )
    assert rank.loop_seen
    assert rank.dispatch_share == 0.54, rank.to_dict()
    assert rank.loop_tensor.share + rank.loop_host.share == 0.24, (rank.loop_tensor, rank.loop_host)
    on_idle_gpu = replace(rank, gpu_busy_share=0.05, placement=WindowPlacement((), (), uses_cuda=True))
    verdict = sampled_verdict([(None, on_idle_gpu)])
    assert verdict.kind == "launch-bound", verdict.headline
    # Under run's 50% dispatch bar but ahead of the input and the loop's own work on a GPU that waits for
    # the host: still launch-bound, as `xfertop run` names the largest part.
    less = replace(on_idle_gpu, dispatch_share=0.35)
    assert sampled_verdict([(None, less)]).kind == "launch-bound"
    # Behind the loop's own work, or on a GPU busy 60% (not waiting for the host), it is not.
    assert sampled_verdict([(None, replace(less, dispatch_share=0.2))]).kind != "launch-bound"
    assert sampled_verdict([(None, replace(less, gpu_busy_share=0.6))]).kind != "launch-bound"


def test_a_step_py_spy_saw_on_the_emas_line_does_not_make_the_ema_the_models() -> None:
    # A real window of the EMA job on a loaded machine: the EMA's line (263) holds 34 samples of its
    # tensor maths and 2 of opt.step() that py-spy read with the loop's frame still there, 2 of the
    # window's 14 model samples. Before, those 2 made line 263 the model step's last line, so the EMA
    # was not "after the model" (CI failed on the attach test of that job once in a full run).
    rank = summary("ema_loaded")
    assert rank.loop_tensor_after_model is True, rank.loop_tensor
    assert rank.loop_tensor.top_lines[0][0] == "train_cpu.py:263", rank.loop_tensor
    verdict = sampled_verdict([(None, rank)])
    assert verdict.kind == "loop-bound", verdict.headline
    assert verdict.advice[0].startswith("Most of it is tensor maths on the loop's own lines after the model")


def test_a_scripts_module_level_is_described_by_what_its_busiest_line_does() -> None:
    """H100 (docs/measurements/h100-2026-12-05-s32): a script attached during its start-up read "the main
    thread is mostly importing modules at j75_amp_gradscaler.py:19 (module level)"; line 19 is the model's
    `.to(dev)`, CUDA's first call. The imports on lines 8-9 held more samples between them than that one
    line, and the description was the function's, not the line's."""
    importing = (Frame("_find_and_load", "<frozen importlib._bootstrap>", 1000),)
    cuda_init = (
        Frame("_lazy_init", "/venv/lib/python3.12/site-packages/torch/cuda/__init__.py", 372),
        Frame("_apply", "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", 900),
        Frame("to", "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", 1300),
    )
    stacks = (
        ThreadStack(10, 10, "MainThread", (*importing, Frame("<module>", "/job/train.py", 8)), 30),
        ThreadStack(10, 10, "MainThread", (*importing, Frame("<module>", "/job/train.py", 9)), 25),
        ThreadStack(10, 10, "MainThread", (*cuda_init, Frame("<module>", "/job/train.py", 19)), 40),
    )
    window = StackWindow(root_pid=10, started_at=0, duration_s=1, rate_hz=100, stacks=stacks)
    rank = summarise_window(window, lambda filename, line: "")
    assert str(rank.outside_at) == "initialising CUDA at train.py:19 (module level)", rank.outside_at
