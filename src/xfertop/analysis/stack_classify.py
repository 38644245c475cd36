"""Classify py-spy samples of a training process: where does the main thread spend its time?

Pure: stack windows in, shares out. Frames are matched by (filename suffix, bare function name), since
py-spy prints code names, not import paths. A plain ``.to()`` / ``.cuda()`` / ``.item()`` runs in C and
has no Python frame of its own, so the innermost frame's source line is read through ``line_text``,
a lookup the caller supplies (the sources layer reads the target's files; tests pass a dict). The same
line places tensor maths written directly in the training loop (``loss = model(x).pow(2).mean()``:
``pow`` and ``mean`` have no Python frame either) as compute.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from xfertop.model.stacks import Frame, StackWindow, ThreadStack

SampleClass = Literal["data_wait", "main_loading", "copy", "gpu_sync", "compute", "other"]
SAMPLE_CLASSES: tuple[SampleClass, ...] = (
    "data_wait",
    "main_loading",
    "copy",
    "gpu_sync",
    "compute",
    "other",
)
CLASS_LABELS: dict[SampleClass, str] = {
    "data_wait": "waiting for data",
    "main_loading": "loading in the main process",
    "copy": "copying to the device",
    "gpu_sync": "waiting for the GPU (sync)",
    "compute": "compute (forward/backward/optimizer)",
    "other": "other",
}

#: (filename as py-spy printed it, line number) -> that line's source text, "" when unknown.
LineText = Callable[[str, int], str]
#: (filename suffix, bare function names); "*" matches any function, "" any file.
_Rule = tuple[str, frozenset[str]]


def _rule(suffix: str, *names: str) -> _Rule:
    return suffix, frozenset(names)


# Frames of "get the next batch".
_NEXT_BATCH = (
    _rule("torch/utils/data/dataloader.py", "__next__", "_next_data", "_get_data", "_try_get_data"),
    _rule("lightning/pytorch/loops/fetchers.py", "__next__", "fetching_function", "_fetch_next_batch"),
    _rule("pytorch_lightning/loops/fetchers.py", "__next__", "fetching_function", "_fetch_next_batch"),
    _rule("accelerate/data_loader.py", "__iter__"),
)
#: Inside "next batch": the main process produces the batch itself (num_workers=0, pinning, unpickling).
_LOADING = (
    _rule("torch/utils/data/_utils/fetch.py", "fetch"),
    _rule("torch/utils/data/_utils/collate.py", "*"),
    _rule("torch/utils/data/_utils/pin_memory.py", "pin_memory"),
    _rule(
        "torch/multiprocessing/reductions.py",
        "rebuild_storage_fd",
        "rebuild_storage_filename",
        "rebuild_tensor",
        "rebuild_cuda_tensor",
        "rebuild_nested_tensor",
        "rebuild_storage_empty",
    ),
    _rule("", "__getitem__", "__getitems__"),
)
_COPY = (
    _rule("accelerate/utils/operations.py", "send_to_device"),
    _rule("lightning/fabric/utilities/apply_func.py", "move_data_to_device"),
    _rule("lightning_fabric/utilities/apply_func.py", "move_data_to_device"),
    _rule("transformers/trainer.py", "_prepare_input", "_prepare_inputs"),
)
_SYNC = (
    _rule("torch/cuda/__init__.py", "synchronize"),
    _rule("torch/cuda/streams.py", "synchronize"),
    _rule("torch/accelerator/__init__.py", "synchronize"),
)
_COMPUTE = (
    _rule("torch/_tensor.py", "backward"),
    _rule("torch/autograd/__init__.py", "backward", "grad"),
    _rule("torch/autograd/graph.py", "_engine_run_backward"),
    _rule("torch/optim/", "*"),
    _rule("torch/nn/modules/module.py", "_call_impl", "_wrapped_call_impl"),
    _rule("torch/nn/modules/", "forward"),
)
# Only the DataLoader calls these: loading even when --nonblocking cut the stack above them.
_LOADING_ALONE = (
    _rule("torch/utils/data/_utils/fetch.py", "fetch"),
    _rule("torch/utils/data/_utils/collate.py", "*"),
)
# A C call on the innermost Python line: .item()/.cpu()/.tolist()/.numpy() wait for the GPU (as does
# torch.cuda.synchronize(), also recognised by its own frame); .to()/.cuda()/.copy_() copy.
_SYNC_LINE = re.compile(r"\.(item|cpu|tolist|numpy)\(|\.synchronize\(")
_COPY_LINE = re.compile(r"\.(to|cuda|copy_)\(")
# Tensor maths written directly on the innermost line (a loop body, not a module's forward): a call
# ``torch.NAME(``, a matrix product ``x @ y``, or a common tensor method (not ``.sort``/``.add``, which
# lists and sets have too). Checked last, only for stacks no frame rule placed: the thread is inside
# the C op that line calls.
_TENSOR_METHODS = (
    "pow",
    "sqrt",
    "rsqrt",
    "exp",
    "log",
    "abs",
    "neg",
    "mean",
    "sum",
    "prod",
    "std",
    "var",
    "norm",
    "max",
    "min",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "topk",
    "cumsum",
    "softmax",
    "log_softmax",
    "relu",
    "sigmoid",
    "tanh",
    "clamp",
    "clamp_",
    "mul",
    "mul_",
    "add_",
    "sub",
    "sub_",
    "div",
    "div_",
    "addmm",
    "matmul",
    "mm",
    "bmm",
    "einsum",
    "masked_fill",
    "masked_fill_",
    "gather",
    "scatter",
    "scatter_add",
    "index_select",
    "where",
    "lerp_",
    "addcmul_",
    "addcdiv_",
)
_TENSOR_LINE = re.compile(
    r"\btorch\.[A-Za-z_][\w.]*\(|[\w)\]]\s*@\s*[\w(]|\.(?:" + "|".join(_TENSOR_METHODS) + r")\("
)


def _matches(frame: Frame, rules: Iterable[_Rule]) -> bool:
    filename = frame.filename.replace("\\", "/")
    function = frame.function
    for suffix, names in rules:
        in_file = filename.endswith(suffix) or (suffix.endswith("/") and suffix in filename)
        if (not suffix or in_file) and ("*" in names or function in names):
            return True
    return False


def classify_stack(frames: tuple[Frame, ...], line_text: LineText | None = None) -> SampleClass:
    """One main-thread stack (innermost first) -> its class."""
    for index, frame in enumerate(frames):
        if _matches(frame, _NEXT_BATCH):
            inner = frames[:index]
            if any(_matches(f, _COPY) for f in inner):
                return "copy"
            return "main_loading" if any(_matches(f, _LOADING) for f in inner) else "data_wait"
    source = _code(line_text(frames[0].filename, frames[0].line)) if frames and line_text else ""
    if _SYNC_LINE.search(source):
        return "gpu_sync"
    if _COPY_LINE.search(source):
        return "copy"
    for frame in frames:
        if _matches(frame, _LOADING_ALONE):
            return "main_loading"
        if _matches(frame, _SYNC):
            return "gpu_sync"
        if _matches(frame, _COPY):
            return "copy"
        if _matches(frame, _COMPUTE):
            return "compute"
    return "compute" if _TENSOR_LINE.search(source) else "other"


def _code(source: str) -> str:
    """The line without a trailing comment (a ``#`` outside quotes), so ``# .item() later`` is not a call."""
    quote = ""
    for index, char in enumerate(source):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#":
            return source[:index]
    return source


@dataclass(frozen=True)
class ClassShares:
    """Samples of the main thread per class over one window."""

    counts: dict[SampleClass, int]

    @property
    def total_samples(self) -> int:
        return sum(self.counts.values())

    def share(self, cls: SampleClass) -> float:
        total = self.total_samples
        return self.counts.get(cls, 0) / total if total else 0.0

    @property
    def input_share(self) -> float:
        """Waiting for or producing the next batch: what an input-bound verdict is about."""
        return self.share("data_wait") + self.share("main_loading")

    def to_dict(self) -> dict[str, float | int]:
        shares: dict[str, float | int] = {f"{cls}_share": round(self.share(cls), 4) for cls in SAMPLE_CLASSES}
        shares["samples"] = self.total_samples
        return shares


def class_shares(stacks: Iterable[ThreadStack], line_text: LineText | None = None) -> ClassShares:
    counts: dict[SampleClass, int] = dict.fromkeys(SAMPLE_CLASSES, 0)
    for stack in stacks:
        counts[classify_stack(stack.frames, line_text)] += stack.count
    return ClassShares(counts=counts)


@dataclass(frozen=True)
class WorkerLoad:
    """A DataLoader worker process: the share of its samples spent producing batches."""

    pid: int
    busy_share: float
    samples: int


@dataclass(frozen=True)
class RankStacks:
    """What one window says about one rank: main-thread shares, workers, and the pin-memory thread."""

    pid: int
    shares: ClassShares
    workers: tuple[WorkerLoad, ...] = ()
    #: Share of the pin thread's samples spent pinning; None when the job has no pin thread.
    pin_busy_share: float | None = None
    error: str | None = None

    @property
    def workers_busy(self) -> int:
        """Workers busy more than half of the window."""
        return sum(1 for worker in self.workers if worker.busy_share > 0.5)

    def to_dict(self) -> dict[str, object]:
        return {
            "pid": self.pid,
            **self.shares.to_dict(),
            "workers": [
                {"pid": w.pid, "busy_share": round(w.busy_share, 4), "samples": w.samples}
                for w in self.workers
            ],
            "workers_busy": self.workers_busy,
            "pin_busy_share": None if self.pin_busy_share is None else round(self.pin_busy_share, 4),
            "error": self.error,
        }


_WORKER_LOOP = (
    _rule(
        "torch/utils/data/_utils/worker.py",
        "_worker_loop",
        "_base_worker_loop",
        "_process_worker_loop",
        "_thread_worker_loop",
    ),
)
_WORKER_IDLE = (_rule("multiprocessing/queues.py", "get"), _rule("queue.py", "get"))
_PIN_LOOP = (_rule("torch/utils/data/_utils/pin_memory.py", "_pin_memory_loop"),)
_PINNING = (_rule("torch/utils/data/_utils/pin_memory.py", "pin_memory"),)
PIN_THREAD_NAME = "pt_data_pin"


def _worker_busy(frames: tuple[Frame, ...]) -> bool | None:
    """True producing a batch, False waiting for an index, None when not inside the worker loop."""
    for index, frame in enumerate(frames):
        if _matches(frame, _WORKER_LOOP):
            return not any(_matches(f, _WORKER_IDLE) for f in frames[:index])
    return None


def worker_loads(stacks: Iterable[ThreadStack], root_pid: int) -> tuple[WorkerLoad, ...]:
    busy: dict[int, int] = {}
    seen: dict[int, int] = {}
    for stack in stacks:
        if stack.pid == root_pid or not stack.is_main_thread:
            continue
        state = _worker_busy(stack.frames)
        if state is None:
            continue
        seen[stack.pid] = seen.get(stack.pid, 0) + stack.count
        busy[stack.pid] = busy.get(stack.pid, 0) + (stack.count if state else 0)
    return tuple(
        WorkerLoad(pid=pid, busy_share=busy[pid] / seen[pid], samples=seen[pid]) for pid in sorted(seen)
    )


def _is_pin_thread(stack: ThreadStack) -> bool:
    return stack.thread_name == PIN_THREAD_NAME or any(_matches(f, _PIN_LOOP) for f in stack.frames)


def pin_busy_share(stacks: Iterable[ThreadStack], root_pid: int) -> float | None:
    pinning = total = 0
    for stack in stacks:
        if stack.pid == root_pid and _is_pin_thread(stack):
            total += stack.count
            pinning += stack.count if any(_matches(f, _PINNING) for f in stack.frames) else 0
    return pinning / total if total else None


def summarise_window(window: StackWindow, line_text: LineText | None = None) -> RankStacks:
    """The main thread's class shares, the workers' load and the pin thread's load in one window."""
    if window.error:
        return RankStacks(pid=window.root_pid, shares=ClassShares(counts={}), error=window.error)
    main = [s for s in window.stacks if s.pid == window.root_pid and s.is_main_thread]
    return RankStacks(
        pid=window.root_pid,
        shares=class_shares(main, line_text),
        workers=worker_loads(window.stacks, window.root_pid),
        pin_busy_share=pin_busy_share(window.stacks, window.root_pid),
    )
