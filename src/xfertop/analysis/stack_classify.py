"""Classify py-spy samples of a training process: where does the main thread spend its time?

Pure: stack windows in, shares out. Frames are matched by (filename suffix, bare function name), since
py-spy prints code names, not import paths. A plain ``.to()`` / ``.cuda()`` / ``.item()`` runs in C and
has no Python frame of its own, so the innermost frame's source line is read through ``line_text``,
a lookup the caller supplies (the sources layer reads the target's files; tests pass a dict). The same
line places tensor maths written directly in the training loop (``loss = model(x).pow(2).mean()``:
``pow`` and ``mean`` have no Python frame either) as compute; only there, though: before the loop runs
(start-up building data and weights) the same maths is outside the phases, and a window without the
loop's machinery (DataLoader, model, autograd, optimizer, syncs) says where the job is instead.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from xfertop.analysis.thresholds import GPU_BUSY_MIN_SHARE
from xfertop.model.stacks import Frame, StackWindow, ThreadStack, WindowPlacement

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

#: (filename as py-spy printed it, line number) -> that line's source text with its indentation, ""
#: when unknown.
LineText = Callable[[str, int], str]
#: (filename suffix, bare function names); "*" matches any function, "" any file.
_Rule = tuple[str, frozenset[str]]


def _rule(suffix: str, *names: str) -> _Rule:
    return suffix, frozenset(names)


#: iter(loader) and the end of an epoch's iterator: the DataLoader starting its workers (and pin
#: thread) or shutting them down. Waiting for data, as the truth counts it: an epoch start without
#: persistent_workers pays it every epoch.
_ITERATOR_START_STOP = (
    _rule(
        "torch/utils/data/dataloader.py",
        "__iter__",
        "_get_iterator",
        "__init__",
        "_shutdown_workers",
        "_reset",
    ),
)
# Frames of "get the next batch".
_NEXT_BATCH = (
    _rule("torch/utils/data/dataloader.py", "__next__", "_next_data", "_get_data", "_try_get_data"),
    *_ITERATOR_START_STOP,
    _rule("lightning/pytorch/loops/fetchers.py", "__next__", "fetching_function", "_fetch_next_batch"),
    _rule("pytorch_lightning/loops/fetchers.py", "__next__", "fetching_function", "_fetch_next_batch"),
    _rule("accelerate/data_loader.py", "__iter__"),
)
#: Inside "next batch": the main process draws the next batch's indices from the loader's sampler (a
#: DataLoader's workers never run it; a sampler written in Python runs in the loop's own thread).
_SAMPLING = (_rule("torch/utils/data/dataloader.py", "_next_index"),)
#: Inside "next batch": the main process produces the batch itself (num_workers=0, pinning, unpickling).
#: ... unpickling a worker's batch: each tensor is rebuilt from its own shared-memory handle (a file
#: descriptor passed over a socket, under the default sharing strategy).
_RECEIVING = (
    _rule(
        "torch/multiprocessing/reductions.py",
        "rebuild_storage_fd",
        "rebuild_storage_filename",
        "rebuild_tensor",
        "rebuild_cuda_tensor",
        "rebuild_nested_tensor",
        "rebuild_storage_empty",
    ),
)
_LOADING = (
    _rule("torch/utils/data/_utils/fetch.py", "fetch"),
    _rule("torch/utils/data/_utils/collate.py", "*"),
    _rule("torch/utils/data/_utils/pin_memory.py", "pin_memory"),
    *_RECEIVING,
    _rule("", "__getitem__", "__getitems__"),
)
#: Blocked taking an item from a queue: a training loop waiting on the job's own prefetch thread.
_QUEUE_GET = (
    _rule("/queue.py", "get"),
    _rule("multiprocessing/queues.py", "get"),
)
#: ... or for a future's result: batches fetched by a thread or process pool of the job's own.
_FUTURE_RESULT = (_rule("concurrent/futures/_base.py", "result", "as_completed", "wait"),)
_QUEUE_WAIT = _QUEUE_GET + _FUTURE_RESULT
#: Inside "next batch": the main process runs the Dataset itself (a loader with num_workers=0); not
#: unpickling a worker's batch or pinning it, which are the cost of having workers.
_FETCH_IN_MAIN = (
    _rule("torch/utils/data/_utils/fetch.py", "fetch"),
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
_CALL_IMPL = _rule("torch/nn/modules/module.py", "_call_impl", "_wrapped_call_impl")
_ANY_FORWARD = _rule("", "forward")
_COMPUTE = (
    _rule("torch/_tensor.py", "backward"),
    _rule("torch/autograd/__init__.py", "backward", "grad"),
    _rule("torch/autograd/graph.py", "_engine_run_backward"),
    _rule("torch/optim/", "*"),
    _CALL_IMPL,
    _rule("torch/nn/modules/", "forward"),
    # torch.func's transforms (vmap, grad, jacrev, functional_call): per-sample gradients and
    # meta-learning run the model and its gradients through them, no backward() or module call above.
    _rule("torch/_functorch/", "*"),
)
#: The model step as the host runs it: a module call (torch's own modules and any ``forward``, the job's
#: own nn.Module subclasses included), autograd's backward or grad, torch.func's transforms, the optimizer.
#: Tensor maths outside these frames is the loop's own (or start-up's) work, not the model's.
_DISPATCH = (*_COMPUTE, _ANY_FORWARD)
#: A call of the model itself (any module's, the job's own forward methods included).
_MODULE_CALL = (_CALL_IMPL, _ANY_FORWARD)
#: Building an optimizer or one of torch's modules is start-up, not a step (Adam's constructor imports
#: torch._dynamo for seconds on a first run).
_CONSTRUCTION = (_rule("torch/optim/", "__init__"), _rule("torch/nn/modules/", "__init__"))
#: An optimizer's step: its arithmetic over every parameter (a constructor is _CONSTRUCTION's).
_OPTIMIZER_STEP = (_rule("torch/optim/", "*"),)
#: Frames that only torch.compile's compilation runs: tracing a frame (dynamo), lowering the graph and
#: generating its code (inductor, AOT autograd's backward). A compiled model's calls once compiled pass
#: through none of them (torch/_dynamo/eval_frame.py and the generated code), so these are a first
#: step's compile or a recompile, not the model's dispatch.
_COMPILING = (
    _rule("torch/_dynamo/convert_frame.py", "*"),
    _rule("torch/_inductor/compile_fx.py", "*"),
    _rule("torch/_functorch/_aot_autograd/graph_compile.py", "*"),
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
    # ... and the rest of torch.Tensor's arithmetic a loss or an augmentation writes out (session 28's
    # j34: a contrastive loss's `logits - logits.logsumexp(1, keepdim=True)` read as the loop's Python).
    "logsumexp",
    "square",
    "exp_",
    "log_",
    "pow_",
    "sqrt_",
    "sigmoid_",
    "tanh_",
    "cos",
    "sin",
    "erf",
    "floor",
    "ceil",
    "sign",
    "reciprocal",
    "remainder",
    "maximum",
    "minimum",
    "cumprod",
    "argsort",
    "roll",
    "flip",
    "outer",
    "dot",
    "baddbmm",
    "addmv",
    "triu",
    "tril",
    "masked_select",
    "nonzero",
    "unique",
    "bincount",
    "normal_",
    "uniform_",
    "bernoulli_",
    "clone",
    "contiguous",
)
_TENSOR_LINE = re.compile(
    r"\btorch\.[A-Za-z_][\w.]*\(|[\w)\]]\s*@\s*[\w(]|\.(?:" + "|".join(_TENSOR_METHODS) + r")\("
)
#: Calls of Python's and NumPy's own maths (``math.sin(t)``, ``np.mean(x)``, ``random.random()``): the
#: loop's Python on the CPU whatever the job's device, never a tensor's method (session 29's j49 read an
#: environment simulated in Python as the model's compute).
_NOT_TENSOR_CALL = re.compile(r"(?<![\w.])(?:math|cmath|random|statistics|np|numpy)\.[\w.]*\(")


def _matches(frame: Frame, rules: Iterable[_Rule]) -> bool:
    filename = frame.filename.replace("\\", "/")
    function = frame.function
    for suffix, names in rules:
        in_file = filename.endswith(suffix) or (suffix.endswith("/") and suffix in filename)
        if (not suffix or in_file) and ("*" in names or function in names):
            return True
    return False


def _computes(frame: Frame) -> bool:
    """A frame of the model's forward, backward or optimizer step."""
    return _matches(frame, _COMPUTE) and not _matches(frame, _CONSTRUCTION)


def _dispatches(frame: Frame) -> bool:
    """A frame of the model step as the host runs it, the job's own forward methods included."""
    return _matches(frame, _DISPATCH) and not _matches(frame, _CONSTRUCTION)


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
        if _computes(frame):
            return "compute"
    return "compute" if _TENSOR_LINE.search(_NOT_TENSOR_CALL.sub("(", source)) else "other"


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


def class_shares(classified: Iterable[tuple[ThreadStack, SampleClass]]) -> ClassShares:
    """The samples per class of stacks already classified (classify_stack)."""
    counts: dict[SampleClass, int] = dict.fromkeys(SAMPLE_CLASSES, 0)
    for stack, cls in classified:
        counts[cls] += stack.count
    return ClassShares(counts=counts)


_LIBRARY_DIRS = ("/site-packages/", "/dist-packages/")
#: xfertop's own code inside a job: `xfertop run`'s hooks around next(), backward(), .to() and .item(),
#: and the ``xfertop.watch`` wrapper (_without_xfertop).
_XFERTOP_IN_JOB = re.compile(r"/xfertop/(reporter|launch)/|/xfertop/__init__\.py$")
#: Work in the loop body that is not per-step bookkeeping: checkpoints, counted apart (RankStacks.
#: loop_checkpoint) so that their remedy, not the bookkeeping's, is named.
_CHECKPOINTING = (
    _rule("torch/serialization.py", "*"),
    _rule("torch/distributed/checkpoint/", "*"),
    _rule("safetensors/", "*"),
)
#: A Trainer's validation pass inside its training run (Lightning's evaluation loop at
#: val_check_interval, the Hugging Face Trainer's evaluate() at eval_steps): the loop's own work after the
#: step, as `xfertop run` books a pass over another loader inside a step (RankStacks.loop_validation).
_VALIDATING = (
    _rule("lightning/pytorch/loops/evaluation_loop.py", "*"),
    _rule("pytorch_lightning/loops/evaluation_loop.py", "*"),
    _rule("pytorch_lightning/loops/dataloader/evaluation_loop.py", "*"),
    _rule("pytorch_lightning/loops/epoch/evaluation_epoch_loop.py", "*"),
    _rule("transformers/trainer.py", "evaluate", "_evaluate", "evaluation_loop", "prediction_loop"),
)
#: Frames only a training step runs: backward (or autograd.grad, as torch.func.grad and gradient
#: penalties call it), the optimizer (not its constructor).
_TRAINING = (
    _rule("torch/_tensor.py", "backward"),
    _rule("torch/autograd/__init__.py", "backward", "grad"),
    _rule("torch/autograd/graph.py", "_engine_run_backward"),
    _rule("torch/optim/", "*"),
)
#: The statement of a training loop: ``for batch in loader`` or a ``while`` loop that calls ``next(it)``
#: itself (restarting the iterator on StopIteration).
_LOOP_LINE = re.compile(r"\s*((async\s+)?for|while)\b")


@dataclass(frozen=True)
class LoopHost:
    """Main-thread samples in the body of the training loop that are none of data, copy, compute or
    sync: the loop's own Python work (metrics, logging, bookkeeping) while the GPU waits for it."""

    share: float
    #: The loop's ``for`` or ``while`` statement: "file.py:57".
    loop_line: str = ""
    #: The body's lines that held most of those samples, most first: ("file.py:61", share).
    top_lines: tuple[tuple[str, float], ...] = ()


def _short(filename: str) -> str:
    """The file's name without its folders: "train.py"."""
    return filename.replace("\\", "/").rsplit("/", 1)[-1]


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _is_library(frame: Frame) -> bool:
    filename = frame.filename.replace("\\", "/")
    return any(d in filename for d in _LIBRARY_DIRS)


def _caller_of(frames: tuple[Frame, ...], matches: Callable[[Frame], bool]) -> Frame | None:
    """The job's own frame that calls the outermost frame ``matches`` accepts, past library frames
    between them (``for batch in tqdm(loader)``: tqdm's ``__iter__`` calls the DataLoader)."""
    outermost = max((i for i, f in enumerate(frames) if matches(f)), default=None)
    if outermost is None:
        return None
    return next((f for f in frames[outermost + 1 :] if not _is_library(f)), None)


def _loop_frame(frames: tuple[Frame, ...]) -> Frame | None:
    """The caller of the outermost DataLoader frame: the user's ``for batch in loader`` line."""
    return _caller_of(frames, lambda frame: _matches(frame, _NEXT_BATCH))


def _data_loop_frame(frames: tuple[Frame, ...], model_fn: tuple[str, str] | None) -> Frame | None:
    """The training loop's frame in a stack that asks the DataLoader: the loader's caller, or, where the
    job reads the loader through a generator of its own (``for batch in cycle(loader)``, a progress or
    prefetch wrapper), the frame further out in the function that calls the model (``model_fn``)."""
    frame = _loop_frame(frames)
    if frame is None or model_fn is None or (frame.filename, frame.name) == model_fn:
        return frame
    outer = frames[frames.index(frame) + 1 :]
    return next((f for f in outer if (f.filename, f.name) == model_fn), frame)


def _loop_callers(
    stacks: Iterable[ThreadStack], find: Callable[[tuple[Frame, ...]], Frame | None]
) -> dict[tuple[str, str], dict[int, int]]:
    """(file, function) -> {line: samples} of the frames ``find`` picks."""
    callers: dict[tuple[str, str], dict[int, int]] = {}
    for stack in stacks:
        frame = find(stack.frames)
        if frame is not None and frame.line > 0:
            lines = callers.setdefault((frame.filename, frame.name), {})
            lines[frame.line] = lines.get(frame.line, 0) + stack.count
    return callers


#: How far above the line that called the DataLoader its loop statement is looked for.
_LOOP_SEARCH_LINES = 200


def _loop_statement(filename: str, line: int, line_text: LineText) -> tuple[int, int] | None:
    """The ``for`` or ``while`` statement at or above ``line`` whose body holds it: (its line, its
    indentation). py-spy gives the line of a ``for``'s next() call as the ``for`` line or, on 3.11, a line
    of its body; a ``while`` loop's next(it) is a line of its body."""
    text = line_text(filename, line)
    if not text.strip():
        return None
    if _LOOP_LINE.match(text):
        return line, _indent(text)
    return _loop_above(filename, line, _indent(text), line_text)


def _loop_above(filename: str, line: int, depth: int, line_text: LineText) -> tuple[int, int] | None:
    """The ``for`` or ``while`` statement above ``line`` (indented ``depth``) whose body holds it, within
    its function: (its line, its indentation)."""
    for number in range(line - 1, max(0, line - _LOOP_SEARCH_LINES), -1):
        above = line_text(filename, number)
        if not above.strip() or above.lstrip().startswith("#") or _indent(above) >= depth:
            continue
        if _LOOP_LINE.match(above):
            return number, _indent(above)
        depth = _indent(above)  # a block opener (if, with, try, def): keep looking outside it
        if above.lstrip().startswith(("def ", "async def ", "class ")):
            return None
    return None


@dataclass
class _Loop:
    """The training loop's ``for`` or ``while`` statement in the job's own code, and its body's lines."""

    filename: str
    name: str
    line: int
    depth: int
    line_text: LineText
    _body: dict[int, bool] = field(default_factory=dict)
    _outer: dict[int, bool] = field(default_factory=dict)

    def label(self, line: int) -> str:
        return f"{_short(self.filename)}:{line}"

    def between_passes(self, line: int) -> bool:
        """``line`` runs between the loop's passes: in the body of a loop that encloses the training
        loop's statement (``for epoch ...:``), outside the training loop itself (evaluation, checkpoints
        after each epoch)."""
        if line not in self._outer:
            outer = _loop_above(self.filename, self.line, self.depth, self.line_text)
            self._outer[line] = (
                outer is not None
                and line != self.line
                and not self.in_body(line)
                and self.holds(outer[0], outer[1], line)
            )
        return self._outer[line]

    def holds(self, opener: int, depth: int, line: int) -> bool:
        """``line`` is in the body of the block opened at line ``opener`` (indented ``depth``)."""
        for number in range(opener + 1, line + 1) if line > opener else ():
            text = self.line_text(self.filename, number)
            if text.strip() and not text.lstrip().startswith("#") and _indent(text) <= depth:
                return False
        return line > opener

    def frame_in(self, frames: tuple[Frame, ...]) -> Frame | None:
        """The stack's frame of the function that runs the loop, if it passes through it."""
        return next((f for f in frames if f.filename == self.filename and f.name == self.name), None)

    def in_body(self, line: int) -> bool:
        if line not in self._body:
            self._body[line] = self.holds(self.line, self.depth, line)
        return self._body[line]


def _find_loop(
    stacks: list[ThreadStack], line_text: LineText | None, waits: Iterable[ThreadStack] = ()
) -> _Loop | None:
    """The function that runs ``for batch in loader`` or a ``while`` loop of ``next(it)`` (the caller of
    the DataLoader in the window's data samples, else of the model and optimizer, else the loop whose body
    holds the ``waits``), and that loop's statement above the line with most samples. Only a loop in the
    job's own code (not a framework's, under site-packages) counts: a framework's hooks are not the
    user's bookkeeping."""
    if line_text is None:
        return None

    def waiting_in_a_loop(frames: tuple[Frame, ...]) -> Frame | None:
        in_loop = (f for f in frames if _is_own(f) and _loop_statement(f.filename, f.line, line_text))
        return next(in_loop, None)

    # The function that asks the DataLoader for batches; in a window that caught none of those calls
    # (a fast loader), the one that calls the model, backward and the optimizer; in a window that caught
    # neither (a few large kernels: the host launches them in a blink, then waits in .item()), the one
    # whose loop body waits for the GPU.
    model_callers = _loop_callers(stacks, lambda frames: _caller_of(frames, _computes))
    model_fn = _model_function(stacks, model_callers, line_text)
    callers = _loop_callers(stacks, lambda frames: _data_loop_frame(frames, model_fn))
    if callers and model_fn is not None:
        # A loader read through a generator of the job's own (``for batch in progress(loader)``) where
        # py-spy shows no frame beyond the generator's: the function that asks the loader is never on
        # the way to the model. The training loop is then the one around the model's calls.
        reader = max(callers, key=lambda k: sum(callers[k].values()))
        stepping = [s for s in stacks if any(_computes(f) for f in s.frames)]
        if not any((f.filename, f.name) == reader for s in stepping for f in s.frames):
            callers = _loop_callers(stepping, waiting_in_a_loop) or callers
    callers = callers or model_callers or _loop_callers(waits, waiting_in_a_loop)
    if not callers:
        return None
    filename, name = max(callers, key=lambda k: sum(callers[k].values()))
    lines = callers[(filename, name)]
    # The line with most samples: the loop's own line, or (py-spy on 3.11) one of its body's.
    found = _loop_statement(filename, max(lines, key=lambda n: lines[n]), line_text)
    if found is None:
        return None
    return _training_loop(_Loop(filename, name, found[0], found[1], line_text), stacks)


def _training_loop(loop: _Loop, stacks: list[ThreadStack]) -> _Loop:
    """``loop``, or the loop around it whose body trains where ``loop``'s does not: a validation pass
    written in the training loop's body (``for vx, vy in val_loader:``) whose reads outnumber the
    training loader's in the window (session 31's j63)."""
    trained = {
        frame.line
        for stack in stacks
        if any(_trains(f) for f in stack.frames) and (frame := loop.frame_in(stack.frames)) is not None
    }
    outer: _Loop | None = loop
    while outer is not None and trained and not any(outer.in_body(line) for line in trained):
        above = _loop_above(outer.filename, outer.line, outer.depth, outer.line_text)
        outer = _Loop(loop.filename, loop.name, above[0], above[1], loop.line_text) if above else None
    return outer or loop


def _trains(frame: Frame) -> bool:
    """A frame only a training step runs: backward, the optimizer's step (not its constructor)."""
    return _matches(frame, _TRAINING) and not _matches(frame, _CONSTRUCTION)


def _model_function(
    stacks: list[ThreadStack], model_callers: dict[tuple[str, str], dict[int, int]], line_text: LineText
) -> tuple[str, str] | None:
    """The job's own function that calls the model most; but where that one never trains (no backward nor
    optimizer step under it: an ``evaluate()`` of the job's own) and is called from inside a loop of the
    function that does, that one: the training loop, which validates every N steps. Session 31's j74 (its
    passes 66% of the time) read the evaluation's loop as the training loop: "input-bound 11%"."""
    if not model_callers:
        return None
    most = max(model_callers, key=lambda k: sum(model_callers[k].values()))
    trainers = _loop_callers(stacks, lambda frames: _caller_of(frames, _trains))
    if not trainers or most in trainers:
        return most
    trainer = max(trainers, key=lambda k: sum(trainers[k].values()))
    for stack in stacks:
        caller = _caller_of(stack.frames, _computes)
        if caller is None or (caller.filename, caller.name) != most:
            continue
        outer = next((f for f in stack.frames if (f.filename, f.name) == trainer), None)
        if outer is not None and _loop_statement(outer.filename, outer.line, line_text) is not None:
            return trainer
    return most


@dataclass(frozen=True)
class _Passes:
    """Where the training loop's body makes passes over another DataLoader (a validation pass every N
    steps): the body's lines that call a function of the job's own reading that loader in a loop of its
    own (``evaluate(model, val_loader)``), and the loops over it written in the body itself (``for vx, vy
    in val_loader:``): (statement line, indentation)."""

    calls: frozenset[int] = frozenset()
    loops: tuple[tuple[int, int], ...] = ()

    def hold(self, loop: _Loop | None, stack: ThreadStack) -> bool:
        line = _body_line(loop, stack)
        if loop is None or line is None:
            return False
        return line in self.calls or any(
            line == at or loop.holds(at, depth, line) for at, depth in self.loops
        )


def _passes(loop: _Loop | None, stacks: Iterable[ThreadStack], line_text: LineText | None) -> _Passes:
    """The loop body's passes over another DataLoader (_Passes). A loader read on a body line outside
    any other loop (``next(aux_it)``, zipped inputs) is the step's input, not a pass."""
    if loop is None or line_text is None:
        return _Passes()
    calls: set[int] = set()
    loops: set[tuple[int, int]] = set()
    for stack in stacks:
        reader = _loop_frame(stack.frames)
        line = _body_line(loop, stack)
        if reader is None or line is None or line == loop.line:
            continue
        statement = _loop_statement(reader.filename, reader.line, line_text)
        if statement is None:
            continue
        if reader.filename != loop.filename or reader.name != loop.name:
            calls.add(line)
        elif statement[0] != loop.line and loop.in_body(statement[0]):
            loops.add(statement)
    return _Passes(frozenset(calls), tuple(sorted(loops)))


def _in_body(loop: _Loop | None, stack: ThreadStack) -> int | None:
    """The line of the loop's body that ``stack`` runs, None where it is not in the body."""
    if loop is None:
        return None
    frame = loop.frame_in(stack.frames)
    return frame.line if frame is not None and loop.in_body(frame.line) else None


def _saves(stack: ThreadStack) -> bool:
    return any(_matches(f, _CHECKPOINTING) for f in stack.frames)


def _body_line(loop: _Loop | None, stack: ThreadStack) -> int | None:
    """The line of the loop's body that ``stack`` runs, None where it is not in the body; a checkpoint
    written in the body is the loop's work too, but not its per-step bookkeeping (_checkpoint_line)."""
    return None if _saves(stack) else _in_body(loop, stack)


def _checkpoint_line(loop: _Loop | None, stack: ThreadStack) -> int | None:
    """The line of the loop's body that writes a checkpoint in ``stack`` (torch.save every N steps);
    None for any other stack, and for a checkpoint written outside the loop (at its end, in a callback
    the loop does not run)."""
    return _in_body(loop, stack) if _saves(stack) else None


def _iterable_line(loop: _Loop | None, stack: ThreadStack) -> int | None:
    """The loop's own statement where ``stack`` runs below it: the loop asks its own iterable for the
    next batch (a generator that builds it, a Python sequence). A DataLoader's next() there is classified
    before this is asked (data or loading); None for any other stack."""
    if loop is None:
        return None
    frame = loop.frame_in(stack.frames)
    calls = frame is not None and frame.line == loop.line and frame is not stack.frames[0]
    return loop.line if calls else None


def _loop_own(loop: _Loop | None, stack: ThreadStack, cls: SampleClass) -> bool:
    """A sample of the loop's own work that its class would place elsewhere: a checkpoint in its body
    (whatever torch.save calls), or the tensor maths of its own iterable building the next batch (a
    generator's torch.tensor(); its copies and syncs stay what they are, a DataLoader's next() data)."""
    if _checkpoint_line(loop, stack) is not None:
        return True
    return cls == "compute" and _iterable_line(loop, stack) is not None


def _placed_in_loop(loop: _Loop | None, stack: ThreadStack, cls: SampleClass) -> SampleClass:
    """A sample's class once the training loop is known: the loop waiting in a queue's get() for batches a
    producer of the job's own makes (a process or a thread, not a DataLoader) waits for data; a checkpoint
    it writes and the batch its own iterable builds are its own work ("other")."""
    if cls == "other" and _in_loop(loop, stack) and any(_matches(f, _QUEUE_WAIT) for f in stack.frames):
        return "data_wait"
    return "other" if _loop_own(loop, stack, cls) else cls


def _in_loop(loop: _Loop | None, stack: ThreadStack) -> bool:
    """``stack`` is the training loop's own work: its body's lines, or its statement's iterable."""
    return _in_body(loop, stack) is not None or _iterable_line(loop, stack) is not None


def _loop_work(
    loop: _Loop | None,
    stacks: Iterable[ThreadStack],
    total: int,
    line_of: Callable[[_Loop | None, ThreadStack], int | None] = _body_line,
) -> LoopHost:
    """The share of ``total`` samples that ``stacks`` spend on lines of the loop's body (``line_of``
    each one's), and its busiest lines."""
    if loop is None or not total:
        return LoopHost(0.0)
    by_line: dict[str, int] = {}
    for stack in stacks:
        line = line_of(loop, stack)
        if line is not None:
            label = loop.label(line)
            by_line[label] = by_line.get(label, 0) + stack.count
    return _work(loop, by_line, total)


def _validates(stack: ThreadStack) -> bool:
    return any(_matches(f, _VALIDATING) for f in stack.frames)


def _validation_work(
    placed: list[tuple[ThreadStack, SampleClass]], total: int, validating: set[int]
) -> LoopHost:
    """The share of ``total`` samples validation passes hold besides their waits for data (their model
    calls, copies, syncs and Python), with the lines that hold most of them (the job's own innermost
    frame: a Trainer's validation_step, a plain loop's evaluate(); else the framework's). None of it
    where the window does not also train: a job that only validates (trainer.validate(),
    trainer.evaluate()) has no training loop to hold up. ``validating``: the ids of the stacks in a pass
    (``_validates``, _Passes)."""
    trains = any(id(s) not in validating and any(_trains(f) for f in s.frames) for s, _ in placed)
    if not trains or not total:
        return LoopHost(0.0)
    by_line: dict[str, int] = {}
    for stack, cls in placed:
        if cls in ("data_wait", "main_loading") or id(stack) not in validating:
            continue
        # Innermost first: a frame of the job's own inside the framework's pass (its validation_step),
        # else the framework's outermost validation function (Trainer.evaluate); a pass of the job's own
        # loop, its innermost own frame (the evaluate()'s line).
        passes = [i for i, f in enumerate(stack.frames) if _matches(f, _VALIDATING)]
        own = next((f for f in (stack.frames[: passes[0]] if passes else stack.frames) if _is_own(f)), None)
        outer = stack.frames[passes[-1] if passes else -1]
        label = (
            f"{_short(own.filename)}:{own.line}" if own else f"{outer.function} ({_short(outer.filename)})"
        )
        by_line[label] = by_line.get(label, 0) + stack.count
    return _by_lines(by_line, total) if by_line else LoopHost(0.0)


def _iterable_work(loop: _Loop | None, stacks: Iterable[ThreadStack], total: int) -> LoopHost:
    """The share of ``total`` samples in which ``stacks`` produce the loop's next batch in its own
    iterable, and the job's own lines in it that hold most of them (a generator's, not the loop's)."""
    if loop is None or not total:
        return LoopHost(0.0)
    by_line: dict[str, int] = {}
    for stack in stacks:
        if _iterable_line(loop, stack) is not None:
            own = next(f for f in stack.frames if _is_own(f))  # the loop's own frame at the latest
            label = f"{_short(own.filename)}:{own.line}"
            by_line[label] = by_line.get(label, 0) + stack.count
    return _work(loop, by_line, total)


def _iterable_wraps_loader(
    loop: _Loop | None, stacks: Iterable[ThreadStack], placed: list[tuple[ThreadStack, SampleClass]]
) -> bool:
    """The loop's own iterable (``stacks`` that run below its statement) is a function of the job's that also
    reads a DataLoader's batches (a sample waiting for or loading one runs below it): it wraps the loader."""
    wrappers = {
        (own.filename, own.function)
        for stack in stacks
        if _iterable_line(loop, stack) is not None
        and (own := next((f for f in stack.frames if _is_own(f)), None)) is not None
    }
    return bool(wrappers) and any(
        cls in ("data_wait", "main_loading")
        and any((f.filename, f.function) in wrappers for f in stack.frames)
        for stack, cls in placed
    )


def _between_passes(loop: _Loop | None, stacks: Iterable[ThreadStack], total: int) -> LoopHost:
    """The share of ``total`` samples that ``stacks`` (outside the loop's phases) spend between its passes
    (_Loop.between_passes), and the loop function's lines that hold most of them."""
    if loop is None or not total:
        return LoopHost(0.0)
    by_line: dict[str, int] = {}
    for stack in stacks:
        frame = loop.frame_in(stack.frames)
        if frame is not None and loop.between_passes(frame.line):
            label = loop.label(frame.line)
            by_line[label] = by_line.get(label, 0) + stack.count
    return _work(loop, by_line, total)


def _work(loop: _Loop, by_line: dict[str, int], total: int) -> LoopHost:
    return _by_lines(by_line, total, loop.label(loop.line))


def _by_lines(by_line: dict[str, int], total: int, loop_line: str = "") -> LoopHost:
    """Samples by line ("file.py:61" -> count) as a share of ``total``, with the three busiest lines."""
    top = sorted(by_line.items(), key=lambda item: -item[1])[:3]
    return LoopHost(
        share=sum(by_line.values()) / total,
        loop_line=loop_line,
        top_lines=tuple((label, count / total) for label, count in top),
    )


#: At least this share of the main thread's samples in the training loop's own machinery (the DataLoader,
#: the model, autograd, the optimizer, a sync) and the window shows the loop running; below it the job is
#: still starting (building data, the model, compiling). 5 samples of a 2 s window at 50 Hz.
LOOP_SEEN_MIN_SHARE = 0.05
#: Classes only a running training loop produces (a sync only in the loop's body: start-up's .numpy()
#: and .tolist() of the data it builds read as syncs too).
_LOOP_CLASSES: frozenset[SampleClass] = frozenset({"data_wait", "main_loading"})
# Frames of the job's own code: not a library's (site-packages), the standard library's or the
# interpreter's (<frozen importlib._bootstrap>).
_NOT_OWN = re.compile(r"/(site|dist)-packages/|/lib/python\d[\d.]*/|^<")
#: Importing a module, whatever the module's own code does meanwhile.
_IMPORTING = (_rule("<frozen importlib._bootstrap>", "*"), _rule("importlib/", "*"))
#: What the main thread is doing outside the training loop, by the frames below the job's own: the first
#: that matches (an import is an import, whatever module it runs: Adam's constructor imports torch._dynamo).
_SETUP_DOINGS: tuple[tuple[tuple[_Rule, ...], str], ...] = (
    (_IMPORTING, "importing modules"),
    ((_rule("torch/serialization.py", "load", "_load"), _rule("safetensors/", "*")), "loading a checkpoint"),
    ((_rule("torch/serialization.py", "save", "_save"),), "saving a checkpoint"),
    ((_rule("torch/_dynamo/", "*"), _rule("torch/_inductor/", "*")), "compiling (torch.compile)"),
    (
        (_rule("torch/nn/init.py", "*"), _rule("torch/nn/modules/", "__init__", "reset_parameters")),
        "building the model",
    ),
    ((_rule("torch/distributed/", "*"),), "setting up torch.distributed"),
    # The first CUDA call: the driver's context, seconds on a GPU box (a module-level `.to("cuda")`).
    ((_rule("torch/cuda/__init__.py", "_lazy_init"),), "initialising CUDA"),
)
_CLASS_DOINGS: dict[SampleClass, str] = {
    "compute": "building data",  # tensor maths on the job's own lines outside a training loop
    "copy": "copying or converting tensors",  # .to() of a dtype reads as a copy too
    "gpu_sync": "waiting for the GPU",
}


@dataclass(frozen=True)
class MainThreadAt:
    """The job's own function that holds most of a set of main-thread samples (outside the training
    loop), at its busiest line, and what it is doing there when the frames say."""

    function: str
    #: "train.py:41"
    location: str
    share: float
    #: "building data", "loading a checkpoint", ...; "" when the frames do not say.
    doing: str = ""

    def __str__(self) -> str:
        place = (
            f"at {self.location} (module level)"
            if self.function == "<module>"
            else f"in {self.function} ({self.location})"
        )
        return f"{self.doing} {place}" if self.doing else place


def _is_own(frame: Frame) -> bool:
    return not _NOT_OWN.search(frame.filename.replace("\\", "/"))


def _doing(frames: tuple[Frame, ...], cls: SampleClass) -> str:
    for rules, words in _SETUP_DOINGS:
        if any(_matches(f, rules) for f in frames):
            return words
    return _CLASS_DOINGS.get(cls, "")


def _main_thread_at(classified: Iterable[tuple[ThreadStack, SampleClass]], total: int) -> MainThreadAt | None:
    """Where ``classified`` samples (as classify_stack placed them) spend most of ``total``: the job's
    own innermost function that holds most of them, at its busiest line, doing what that line's samples
    mostly do (a script's module level holds its imports and its first `.to("cuda")` alike: what the
    imports did is not what its busiest line does); None when none has a frame of the job's own."""
    lines: dict[tuple[str, str], dict[int, int]] = {}
    doings: dict[tuple[str, str, int], dict[str, int]] = {}
    for stack, cls in classified:
        frame = next((f for f in stack.frames if _is_own(f)), None)
        if frame is None:
            continue
        key = (frame.filename, frame.name)
        at_line = lines.setdefault(key, {})
        at_line[frame.line] = at_line.get(frame.line, 0) + stack.count
        by_doing = doings.setdefault((key[0], key[1], frame.line), {})
        doing = _doing(stack.frames, cls)
        by_doing[doing] = by_doing.get(doing, 0) + stack.count
    if not lines or not total:
        return None
    key = max(lines, key=lambda k: sum(lines[k].values()))
    line = max(lines[key], key=lambda n: lines[key][n])
    at = doings[(key[0], key[1], line)]
    return MainThreadAt(
        function=key[1],
        location=f"{_short(key[0])}:{line}",
        share=sum(lines[key].values()) / total,
        doing=max(at, key=lambda d: at[d]),
    )


def _loop_seen(
    classified: list[tuple[ThreadStack, SampleClass]], total: int, loop: _Loop | None, lines_known: bool
) -> bool:
    """The window shows the training loop running: enough samples in the DataLoader, the model, autograd,
    the optimizer, or on a line of the loop's body (a sync anywhere, where no line could be read to find
    the loop). The body's own lines count: a loop whose augmentation holds 95% of each step leaves the
    loader and a small model only a few samples of a short window."""
    running = sum(
        s.count
        for s, cls in classified
        if cls in _LOOP_CLASSES
        or any(_dispatches(f) for f in s.frames)
        or _body_line(loop, s) is not None
        or (cls not in _LOOP_CLASSES and _iterable_line(loop, s) is not None)
        or (cls == "gpu_sync" and not lines_known)
    )
    return not total or running >= LOOP_SEEN_MIN_SHARE * total


def _own_maths(stack: ThreadStack, cls: SampleClass) -> bool:
    """Compute by the tensor maths on a line of its own (classify_stack's last rule), not in a module call,
    autograd or the optimizer."""
    return cls == "compute" and not any(_dispatches(f) for f in stack.frames)


def _place_own_maths(
    classified: list[tuple[ThreadStack, SampleClass]],
    loop: _Loop | None,
    loop_seen: bool,
    span: tuple[int, int] | None,
) -> tuple[list[tuple[ThreadStack, SampleClass]], list[ThreadStack]]:
    """Tensor maths on the job's own lines, outside the model, is a training step's compute only inside
    the training loop. Before the loop (start-up builds data and weights: no loop in the window, or a line
    of the loop's function above its statement) it is "other": outside the phases. Returns the classes
    so placed, and the stacks of the loop body's own tensor maths: those up to the body's first line that
    calls the model step (``model(x.float() / 255)`` normalises before the call) and after its last. After
    the first up to the last (the loss computed from the model's output, on which backward runs) it is
    the model step's, as `xfertop run`'s partition counts it; after it, a model's forward is the loop's
    work too (an evaluation, an EMA model: _model_lines). ``span``: the body's model lines
    (_model_lines)."""
    placed: list[tuple[ThreadStack, SampleClass]] = []
    in_body: list[ThreadStack] = []
    for stack, cls in classified:
        if _own_maths(stack, cls):
            frame = loop.frame_in(stack.frames) if loop is not None else None
            if not loop_seen or (loop is not None and frame is not None and 0 < frame.line < loop.line):
                cls = "other"
            elif (line := _body_line(loop, stack)) is not None and not (span and span[0] < line <= span[1]):
                in_body.append(stack)
        elif (
            cls == "compute"
            and loop_seen
            and span is not None
            and (line := _body_line(loop, stack)) is not None
            and line > span[1]
            and not any(_trains(f) for f in stack.frames)
        ):
            in_body.append(stack)  # a model called after the step's last backward or optimizer step
        placed.append((stack, cls))
    return placed, in_body


def _model_lines(loop: _Loop | None, stacks: list[ThreadStack]) -> tuple[int, int] | None:
    """The loop body's first line that calls the model (a module call: the forward comes first in a
    step), or where none is seen its first that runs the model step (autograd, the optimizer), and its
    last line that runs the step in at least a tenth of the step's samples (an EMA's
    ``model.parameters()`` is a Module call too, a few samples on the EMA's own line); None where no line
    does. The first needs no such share: a small model's forward can be a few samples beside a backward
    through a large loss. Anchoring it on the forward keeps out an ``optimizer.zero_grad()`` at the
    body's top (the batch's normalising after it is the loop's, not the model's) and a sample py-spy read
    with the loop's frame still on an earlier line (session 29's j49: one optimizer sample on the line
    before the batch was built made that building the model's). A held line runs the step in at least half
    of its own samples too: py-spy, reading a running thread, now and then names the loop's frame at a
    line the thread left (an optimizer step seen on an EMA's line, 2 of that line's 36 samples and of the
    window's 14 model samples on a loaded 2-core machine), and such a line is not the model's."""
    model_lines: dict[int, int] = {}
    line_samples: dict[int, int] = {}
    forward_lines: set[int] = set()
    training_lines: set[int] = set()
    for stack in stacks:
        line = _body_line(loop, stack)
        if line is None:
            continue
        line_samples[line] = line_samples.get(line, 0) + stack.count
        if any(_dispatches(f) for f in stack.frames):
            model_lines[line] = model_lines.get(line, 0) + stack.count
            if any(_matches(f, _MODULE_CALL) for f in stack.frames):
                forward_lines.add(line)
            if any(_trains(f) for f in stack.frames):
                training_lines.add(line)
    total = sum(model_lines.values())
    held = [
        line for line, count in model_lines.items() if count * 10 >= total and count * 2 >= line_samples[line]
    ]
    if not held:
        return None
    # A training step ends at its last backward or optimizer step, as the step clock's model end has it: a
    # model called after that (an evaluation on held-out data, an EMA model's forward) is the loop's own
    # work after the step (session 47's trial: an inline evaluation every 20 steps, 50% of the samples,
    # read "healthy: model and loop 91%" attached, "loop-bound after the step" under `xfertop run`).
    last = max([line for line in held if line in training_lines] or held)
    return min(min(forward_lines or model_lines), last), last


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
    #: Share of the main thread's samples in iter(loader) or an iterator's shutdown (workers started
    #: or stopped), part of the input share.
    worker_start_share: float = 0.0
    #: The loop body's line that both calls iter(loader) (starting or stopping its iterator) and asks it
    #: for a batch, in most of the window's iterator start and stop samples: ``next(iter(loader))`` in
    #: the loop, a new iterator every step. None where the loop makes them elsewhere (its ``for``).
    new_iterator_line: str | None = None
    #: Share of the main thread's samples running a Dataset inside next(loader) (a loader with
    #: num_workers=0), part of the loading share; unpickling and pinning workers' batches are not.
    main_fetch_share: float = 0.0
    #: Share of the main thread's samples rebuilding the tensors of workers' batches inside next(loader)
    #: (part of the loading share): a batch of many small tensors costs more to pass than to make.
    receive_share: float = 0.0
    #: The main thread drawing indices from a loader's sampler inside next(loader) (part of the data
    #: wait), with the sampler's lines that hold it: a sampler written in Python, which no worker runs.
    sampler: LoopHost = LoopHost(0.0)
    #: Workers sampled in the window that had ended by its end while the job ran on: the DataLoader
    #: restarts its workers (each epoch without persistent_workers, or a loader made anew).
    workers_ended: int = 0
    #: Where the workers alive at the window's end may run, and how busy those cores were; None
    #: when unknown (no placement read, no worker alive).
    workers_allowed_cpus: tuple[int, ...] = ()
    workers_cpu_percent: float | None = None
    workers_cores_busy_percent: float | None = None
    #: Their time ready to run but waiting for a CPU over the window, percent of one core, summed.
    workers_run_delay_percent: float | None = None
    #: What /proc said around the window (children, cores, the cgroup's CPU quota); None if unread.
    placement: WindowPlacement | None = None
    #: Main-thread samples without a frame (py-spy read no stack), left out of the shares.
    frameless_samples: int = 0
    #: The training loop's own Python work (part of "other").
    loop_host: LoopHost = LoopHost(0.0)
    #: Tensor maths on the training loop body's own lines, outside the model, autograd and the optimizer
    #: (part of "compute"): augmentation or metrics written in the loop.
    loop_tensor: LoopHost = LoopHost(0.0)
    #: Most of ``loop_tensor`` is on lines of the loop's body after its last line that calls the model
    #: step (an EMA of the weights, metrics on tensors), not between the batch and the model.
    loop_tensor_after_model: bool = False
    #: Most of ``loop_host`` is on lines of the loop's body before its first line that calls the model
    #: (tokenising, converting, augmenting the batch in Python), not bookkeeping after the step: the
    #: work `xfertop run` books as the loop's own before the model.
    loop_host_before_model: bool = False
    #: A DataLoader was seen in the window (its workers, or its frames on any thread): without one the
    #: loop makes its own data (a generator, an environment it steps), and "move it into the Dataset"
    #: names a part the job does not have.
    loader_seen: bool = True
    #: The training loop waiting in a queue's get() or a future's result() for batches a producer of the
    #: job's own makes (not a DataLoader; part of "data_wait"), and in which of the two most.
    queue_wait_share: float = 0.0
    queue_wait_in: str = "a queue's get()"
    #: Checkpoints the training loop's body writes (torch.save every N steps; part of "other").
    loop_checkpoint: LoopHost = LoopHost(0.0)
    #: Validation passes inside the training run, besides their waits for data (part of "other"):
    #: Lightning's evaluation loop, the Hugging Face Trainer's evaluate(), a plain loop's own (_Passes).
    loop_validation: LoopHost = LoopHost(0.0)
    #: ... and their waits for their loader's batches (part of "data_wait" and "main_loading").
    loop_validation_wait_share: float = 0.0
    #: The loop's own iterable making its next batch in the main thread (``for x, y in batches():``, a
    #: generator; not a DataLoader; part of "other").
    loop_iterable: LoopHost = LoopHost(0.0)
    #: That iterable wraps a DataLoader (a progress generator of the job's own around it: the same function
    #: of the job's also reads the loader's batches): its own work is the wrapper's, not batch building.
    loop_iterable_wraps_loader: bool = False
    #: The loop function's own code between the training loop's passes (in an enclosing ``for epoch``
    #: loop's body, outside the training loop: evaluation, checkpoints after each epoch; part of "other"),
    #: with its lines in that function.
    between_passes: LoopHost = LoopHost(0.0)
    #: Share of the main thread's samples in the model step: module calls, autograd, the optimizer.
    dispatch_share: float = 0.0
    #: The part of ``dispatch_share`` in an optimizer's step (torch/optim/, not its constructor).
    optimizer_share: float = 0.0
    #: Share of the main thread's samples in torch.compile's compilation (_COMPILING), wherever it was
    #: called from: a model's first calls in the loop compile before they run.
    compiling_share: float = 0.0
    #: The window shows the training loop running (LOOP_SEEN_MIN_SHARE); False while the job starts up.
    loop_seen: bool = True
    #: The thread the training loop runs on where it is not the main one (its name, else "tid N"): the
    #: shares above are that thread's. None: the main thread.
    loop_thread: str | None = None
    #: The process under the attached one that runs the training loop where the attached one only waits
    #: for it (a launcher: torch.multiprocessing.spawn, a wrapper script); the shares are its. None: the
    #: attached process.
    loop_process: int | None = None
    #: Where the main thread spends most of its samples outside the training phases; None if nowhere.
    outside_at: MainThreadAt | None = None
    #: NVML utilisation of the rank's GPU over the window, where the rank is that GPU's only user
    #: (sampled_verdict.gpu_busy_share); None: not measured.
    gpu_busy_share: float | None = None

    @property
    def workers_restarted(self) -> int:
        """Workers that ended while the job ran on, with the main thread seen starting or stopping a
        loader's workers: restarts (a validation loader's workers that just finished are not)."""
        return self.workers_ended if self.worker_start_share > 0 else 0

    @property
    def workers_mean_busy(self) -> float | None:
        """The workers' mean busy share over the window; None without workers."""
        return statistics.mean(w.busy_share for w in self.workers) if self.workers else None

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
            "frameless_samples": self.frameless_samples,
            "loop_host_share": round(self.loop_host.share, 4),
            "loop_host_lines": _lines(self.loop_host),
            "loop_tensor_share": round(self.loop_tensor.share, 4),
            "loop_tensor_lines": _lines(self.loop_tensor),
            "loop_tensor_after_model": self.loop_tensor_after_model,
            "loop_host_before_model": self.loop_host_before_model,
            "loader_seen": self.loader_seen,
            "queue_wait_share": round(self.queue_wait_share, 4),
            "queue_wait_in": self.queue_wait_in,
            "loop_checkpoint_share": round(self.loop_checkpoint.share, 4),
            "loop_checkpoint_lines": _lines(self.loop_checkpoint),
            "loop_validation_share": round(self.loop_validation.share, 4),
            "loop_validation_lines": _lines(self.loop_validation),
            "loop_validation_wait_share": round(self.loop_validation_wait_share, 4),
            "loop_iterable_share": round(self.loop_iterable.share, 4),
            "between_passes_share": round(self.between_passes.share, 4),
            "between_passes_lines": _lines(self.between_passes),
            "loop_iterable_lines": _lines(self.loop_iterable),
            "loop_iterable_wraps_loader": self.loop_iterable_wraps_loader,
            "dispatch_share": round(self.dispatch_share, 4),
            "optimizer_share": round(self.optimizer_share, 4),
            "compiling_share": round(self.compiling_share, 4),
            "loop_seen": self.loop_seen,
            "loop_thread": self.loop_thread,
            "loop_process": self.loop_process,
            "outside_at": None if self.outside_at is None else str(self.outside_at),
            "gpu_busy_share": None if self.gpu_busy_share is None else round(self.gpu_busy_share, 4),
            "worker_start_share": round(self.worker_start_share, 4),
            "main_fetch_share": round(self.main_fetch_share, 4),
            "receive_share": round(self.receive_share, 4),
            "new_iterator_line": self.new_iterator_line,
            "sampler_share": round(self.sampler.share, 4),
            "sampler_lines": _lines(self.sampler),
            "workers_ended": self.workers_ended,
            "workers_allowed_cpus": list(self.workers_allowed_cpus),
            "workers_cpu_percent": _round1(self.workers_cpu_percent),
            "workers_cores_busy_percent": _round1(self.workers_cores_busy_percent),
            "workers_run_delay_percent": _round1(self.workers_run_delay_percent),
            "cpu_quota_cores": self.placement.cpu_quota_cores if self.placement else None,
            "cpu_throttled_share": self.placement.cpu_throttled_share if self.placement else None,
            "cpu_quota_used_share": self.placement.cpu_quota_used_share if self.placement else None,
            "error": self.error,
        }


def _lines(work: LoopHost) -> list[list[object]]:
    return [[line, round(share, 4)] for line, share in work.top_lines]


def _round1(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


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


def _share_in(main: list[ThreadStack], rules: tuple[_Rule, ...]) -> float:
    """Share of the samples with a frame ``rules`` accept."""
    total = sum(s.count for s in main)
    inside = sum(s.count for s in main if any(_matches(f, rules) for f in s.frames))
    return inside / total if total else 0.0


def _new_iterator_line(loop: _Loop | None, main: list[ThreadStack]) -> str | None:
    """The body line where most iterator starts and stops happen, if the loop also asks its batches
    there (a new iterator every step); None otherwise."""
    starting: dict[int, int] = {}
    asking: set[int] = set()
    for stack in main:
        line = _in_body(loop, stack)
        if line is None:
            continue
        if any(_matches(f, _ITERATOR_START_STOP) for f in stack.frames):
            starting[line] = starting.get(line, 0) + stack.count
        elif any(_matches(f, _NEXT_BATCH) for f in stack.frames):
            asking.add(line)
    if loop is None or not starting:
        return None
    line = max(starting, key=starting.__getitem__)
    return loop.label(line) if line in asking and starting[line] * 2 >= sum(starting.values()) else None


def training_process(window: StackWindow) -> int:
    """The process that runs the training loop: the attached one, unless none of its threads reads a
    DataLoader or runs the model step while a process under it does (a launcher that waits for its
    child: torch.multiprocessing.spawn, a wrapper script). DataLoader workers, inside their worker
    loop, never are; of several such processes (spawned ranks), the one sampled most in the loop."""
    root = window.root_pid
    training: dict[int, int] = {}
    for stack in window.stacks:
        if _worker_busy(stack.frames) is not None:
            continue
        if any(_computes(f) or _matches(f, _NEXT_BATCH) for f in stack.frames):
            training[stack.pid] = training.get(stack.pid, 0) + stack.count
    if root in training or not training:
        return root
    return max(training, key=training.__getitem__)


def _loop_thread(window: StackWindow, root: int) -> int:
    """The training process's thread that runs the training loop: the main thread, unless it neither runs
    the model step nor reads a DataLoader while another thread does (a service that trains on a thread of
    its own): the one that does both, else (a starved loop whose window caught no model step) the one that
    reads the loader most. A thread that only runs the model's Python (an autograd thread's hooks) is not
    the loop; a prefetcher beside a main thread that runs the model is not either."""
    model: dict[int, int] = {}
    reads: dict[int, int] = {}
    for stack in window.stacks:
        if stack.pid != root:
            continue
        if any(_computes(f) for f in stack.frames):
            model[stack.tid] = model.get(stack.tid, 0) + stack.count
        if any(_matches(f, _NEXT_BATCH) for f in stack.frames):
            reads[stack.tid] = reads.get(stack.tid, 0) + stack.count
        elif stack.tid == root and any(_matches(f, _QUEUE_WAIT) for f in stack.frames):
            reads[root] = reads.get(root, 0) + stack.count  # takes its batches from a prefetcher's queue
    if root in model or root in reads:
        return root
    # A starved loop may show no model step in a short window: its reads of the loader then say it.
    looping = {tid: count for tid, count in model.items() if tid in reads} or reads
    return max(looping, key=looping.__getitem__) if looping else root


def _thread_label(stacks: list[ThreadStack], tid: int) -> str:
    name = next((s.thread_name for s in stacks if s.thread_name), None)
    return name or f"tid {tid}"


def _prefetch_thread(window: StackWindow, root: int, loop_tid: int) -> bool:
    """A thread of the training process other than the loop's asks a DataLoader for batches."""
    return any(
        s.pid == root and s.tid != loop_tid and any(_matches(f, _NEXT_BATCH) for f in s.frames)
        for s in window.stacks
    )


def _fetch_in_main_share(main: list[ThreadStack]) -> float:
    """Share of the main thread's samples running a Dataset inside next(loader): it loads itself."""
    total = sum(s.count for s in main)
    fetching = 0
    for stack in main:
        for index, frame in enumerate(stack.frames):
            if _matches(frame, _NEXT_BATCH):
                if any(_matches(f, _FETCH_IN_MAIN) for f in stack.frames[:index]):
                    fetching += stack.count
                break
    return fetching / total if total else 0.0


def _sampler_work(main: list[ThreadStack], total: int) -> LoopHost:
    """The share of ``total`` samples the main thread spends in a loader's sampler inside next(loader),
    and the sampler's lines that hold most of them (its innermost frame: the job's own where it has one,
    so a Python sampler's loop line, else torch's)."""
    by_line: dict[str, int] = {}
    for stack in main:
        frames = stack.frames
        at = next((i for i, f in enumerate(frames) if _matches(f, _SAMPLING)), None)
        if at is None or not any(_matches(f, _NEXT_BATCH) for f in frames[at + 1 :]):
            continue
        inner = frames[:at] or frames[at : at + 1]
        frame = next((f for f in inner if _is_own(f)), inner[0])
        label = f"{_short(frame.filename)}:{frame.line}"
        by_line[label] = by_line.get(label, 0) + stack.count
    if not total or not by_line:
        return LoopHost(0.0)
    return _by_lines(by_line, total)


@dataclass(frozen=True)
class _WorkersPlaced:
    ended: int = 0
    allowed_cpus: tuple[int, ...] = ()
    cpu_percent: float | None = None
    cores_busy_percent: float | None = None
    run_delay_percent: float | None = None


def _placed(workers: tuple[WorkerLoad, ...], placement: WindowPlacement | None) -> _WorkersPlaced:
    """The sampled workers against the children alive at the window's end."""
    if placement is None or not placement.root_alive or not workers:
        return _WorkersPlaced()
    alive = {child.pid: child for child in placement.children}
    ended = sum(1 for w in workers if w.pid not in alive)
    # The sampled workers still alive at the end; none (all restarted since): where they run is unknown
    # (other descendants, a forkserver or a logger's service, are not the workers).
    now = [alive[w.pid] for w in workers if w.pid in alive]
    allowed = tuple(sorted({cpu for child in now for cpu in child.allowed_cpus}))
    if not allowed:
        return _WorkersPlaced(ended=ended)
    known = [c.cpu_percent for c in now if c.cpu_percent is not None]
    delays = [c.run_delay_percent for c in now if c.run_delay_percent is not None]
    cores = placement.cores_busy_percent
    busy = [cores[cpu] for cpu in allowed if cpu < len(cores)]
    return _WorkersPlaced(
        ended=ended,
        allowed_cpus=allowed,
        cpu_percent=sum(known) if known else None,
        cores_busy_percent=sum(busy) / len(busy) if busy and len(busy) == len(allowed) else None,
        run_delay_percent=sum(delays) if delays and len(delays) == len(now) else None,
    )


def _without_xfertop(window: StackWindow) -> StackWindow:
    """``window`` with xfertop's own frames taken out of its stacks: a job under `xfertop run` (or
    ``xfertop.watch``) is read as the same job run plainly. Its hooks sit between the loop and what it calls
    (next(), backward(), .to(), .item()): under site-packages they were skipped as a library's, but the
    innermost line read for a copy or a sync was the hook's own; from a checkout (``pip install -e``) they
    read as the job's code and took the loop's place (session 48's trial: a sleep after the step read
    "healthy: 54% of samples outside the training phases", loop-bound when the job ran plainly)."""
    if not any(_XFERTOP_IN_JOB.search(f.filename) for s in window.stacks for f in s.frames):
        return window
    stacks = []
    for stack in window.stacks:
        frames = tuple(f for f in stack.frames if not _XFERTOP_IN_JOB.search(f.filename))
        stacks.append(replace(stack, frames=frames) if frames and len(frames) < len(stack.frames) else stack)
    return replace(window, stacks=tuple(stacks))


def summarise_window(
    window: StackWindow,
    line_text: LineText | None = None,
    gpu_busy_share: float | None = None,
    root: int | None = None,
) -> RankStacks:
    """The main thread's class shares, the workers' load and the pin thread's load in one window, with
    the GPU's busy share over it (NVML) where it is known. ``root``: the window's training_process where
    the caller has it already."""
    if window.error:
        shares = ClassShares(counts={})
        return RankStacks(window.root_pid, shares, error=window.error, gpu_busy_share=gpu_busy_share)
    window = _without_xfertop(window)
    # "Main" from here on: the thread that runs the training loop, the main one but for a job that trains
    # on a thread of its own (_loop_thread).
    root = training_process(window) if root is None else root
    loop_tid = _loop_thread(window, root)
    on_main = [s for s in window.stacks if s.pid == root and s.tid == loop_tid]
    # A sample without a single frame says nothing of where the thread was (py-spy read no stack):
    # left out of the shares, not counted as "other" (they can be many: docs/attach.md).
    main = [s for s in on_main if s.frames]
    classified = [(s, classify_stack(s.frames, line_text)) for s in main]
    if _prefetch_thread(window, root, loop_tid):
        # The loader is read on a thread of the job's own: the main thread waits for data in its queue.
        classified = [
            (s, "data_wait" if cls == "other" and any(_matches(f, _QUEUE_WAIT) for f in s.frames) else cls)
            for s, cls in classified
        ]
    placement = window.placement
    if placement is not None and placement.uses_cuda is False and gpu_busy_share is None:
        # Known to use no GPU (its maps show no CUDA driver, NVML lists it nowhere): an .item(), .tolist()
        # or .cpu() of a CPU tensor waits for nothing but its own host maths. Every face of the window (the
        # verdict, the attach text, the rank line) reads it so, as `xfertop run` does.
        classified = [(s, "compute" if cls == "gpu_sync" else cls) for s, cls in classified]
    total = sum(s.count for s in main)
    # A sync waits for the GPU's work only where the GPU has work: start-up's .numpy() of the data it
    # builds on the CPU reads as a sync too.
    gpu_busy = gpu_busy_share is not None and gpu_busy_share >= GPU_BUSY_MIN_SHARE
    waits = [s for s, cls in classified if cls == "gpu_sync"] if gpu_busy else []
    loop = _find_loop(main, line_text, waits)
    loop_seen = _loop_seen(classified, total, loop, line_text is not None)
    if loop_seen:
        classified = [(s, _placed_in_loop(loop, s, c)) for s, c in classified]
    passes = _passes(loop, main, line_text) if loop_seen else _Passes()
    in_pass = {id(s) for s in main if passes.hold(loop, s)} if passes.calls or passes.loops else set()
    model_span = _model_lines(loop, [s for s in main if id(s) not in in_pass])
    placed, loop_maths = _place_own_maths(classified, loop, loop_seen, model_span)
    validating = {id(s) for s, _ in placed if _validates(s) or id(s) in in_pass} if loop_seen else set()
    validation = _validation_work(placed, total, validating) if validating else LoopHost(0.0)
    if validation.share:
        # Its model calls are not the training step's compute: the loop's own work ("other"), apart.
        placed = [
            (s, "other" if cls not in ("data_wait", "main_loading") and id(s) in validating else cls)
            for s, cls in placed
        ]
    # The loop's own work besides its validation passes (counted apart above).
    if validation.share:
        loop_maths = [s for s in loop_maths if id(s) not in validating]
    loop_other = [s for s, cls in placed if cls == "other" and not (validation.share and id(s) in validating)]
    validation_waits = (
        sum(s.count for s, cls in placed if id(s) in validating and cls in ("data_wait", "main_loading"))
        if validation.share
        else 0
    )
    # Outside the phases: everything while the job starts up (as first classified: its tensor maths
    # builds data), else the "other" samples that are not the loop's own work (its body, its iterable,
    # a Trainer's validation passes).
    outside = (
        classified
        if not loop_seen
        else [
            (s, cls)
            for s, cls in placed
            if cls == "other" and not _in_loop(loop, s) and not (validation.share and id(s) in validating)
        ]
    )
    workers = worker_loads(window.stacks, root)
    placed_workers = _placed(workers, window.placement)
    queue_wait = _queue_wait(placed, loop, total) if loop_seen else (0.0, _IN_QUEUE_GET)
    between = _between_passes(loop, [s for s, _ in outside], total) if loop_seen else LoopHost(0.0)
    return RankStacks(
        pid=window.root_pid,
        shares=class_shares(placed),
        workers=workers,
        pin_busy_share=pin_busy_share(window.stacks, root),
        worker_start_share=_share_in(main, _ITERATOR_START_STOP),
        main_fetch_share=_fetch_in_main_share(main),
        receive_share=_share_in(main, _RECEIVING),
        # A pass over another loader written on one line (`sum(... for x, y in val_loader)`) starts its
        # iterator and asks its batches there too: a pass, not a new iterator every step.
        new_iterator_line=_new_iterator_line(loop, [s for s in main if id(s) not in in_pass])
        if loop_seen
        else None,
        sampler=_sampler_work(main, total),
        workers_ended=placed_workers.ended,
        workers_allowed_cpus=placed_workers.allowed_cpus,
        workers_cpu_percent=placed_workers.cpu_percent,
        workers_cores_busy_percent=placed_workers.cores_busy_percent,
        workers_run_delay_percent=placed_workers.run_delay_percent,
        placement=window.placement,
        frameless_samples=sum(s.count for s in on_main if not s.frames),
        loop_host=_loop_work(loop, loop_other, total),
        loop_tensor=_loop_work(loop, loop_maths, total),
        loop_tensor_after_model=_after_the_model(loop, model_span, loop_maths),
        loop_host_before_model=_before_the_model(loop, model_span, loop_other),
        loader_seen=bool(workers) or any(_matches(f, _NEXT_BATCH) for s in window.stacks for f in s.frames),
        queue_wait_share=queue_wait[0],
        queue_wait_in=queue_wait[1],
        loop_checkpoint=_loop_work(loop, loop_other, total, _checkpoint_line) if loop_seen else LoopHost(0.0),
        loop_iterable=_iterable_work(loop, loop_other, total) if loop_seen else LoopHost(0.0),
        loop_iterable_wraps_loader=loop_seen and _iterable_wraps_loader(loop, loop_other, placed),
        loop_validation=validation,
        loop_validation_wait_share=validation_waits / total if total else 0.0,
        between_passes=between,
        dispatch_share=_dispatch_share(placed, total, loops_own=frozenset(id(s) for s in loop_maths)),
        optimizer_share=_dispatch_share(placed, total, _OPTIMIZER_STEP),
        compiling_share=_compiling_share(main, total),
        loop_seen=loop_seen,
        loop_thread=None if loop_tid == root else _thread_label(main, loop_tid),
        loop_process=None if root == window.root_pid else root,
        outside_at=_main_thread_at(outside, total),
        gpu_busy_share=gpu_busy_share,
    )


_IN_QUEUE_GET, _IN_FUTURE_RESULT = "a queue's get()", "a future's result()"


def _queue_wait(
    placed: list[tuple[ThreadStack, SampleClass]], loop: _Loop | None, total: int
) -> tuple[float, str]:
    """Share of the samples in which the training loop waits in a queue's get() or a future's result()
    of its own (_placed_in_loop), not in the DataLoader's (a loader with workers waits in its data
    queue's get()), and which of the two holds more of them."""
    waiting = {_IN_QUEUE_GET: 0, _IN_FUTURE_RESULT: 0}
    for s, cls in placed:
        if (
            cls == "data_wait"
            and _in_loop(loop, s)
            and any(_matches(f, _QUEUE_WAIT) for f in s.frames)
            and not any(_matches(f, _NEXT_BATCH) for f in s.frames)
        ):
            future = any(_matches(f, _FUTURE_RESULT) for f in s.frames)
            waiting[_IN_FUTURE_RESULT if future else _IN_QUEUE_GET] += s.count
    share = sum(waiting.values()) / total if total else 0.0
    return share, max(waiting, key=waiting.__getitem__)


def _after_the_model(loop: _Loop | None, span: tuple[int, int] | None, maths: list[ThreadStack]) -> bool:
    """Most of the loop body's own tensor maths runs on lines after the body's last line that calls the
    model step (``span``: _model_lines)."""
    if span is None:
        return False
    after = sum(s.count for s in maths if (_body_line(loop, s) or 0) > span[1])
    return after * 2 > sum(s.count for s in maths)


def _before_the_model(loop: _Loop | None, span: tuple[int, int] | None, stacks: list[ThreadStack]) -> bool:
    """Most of the samples ``stacks`` spend on the loop body's lines (its own Python, _body_line) are on
    lines before the body's first line that calls the model step (``span``: _model_lines)."""
    if span is None:
        return False
    lines = [(line, s.count) for s in stacks if (line := _body_line(loop, s)) is not None]
    before = sum(count for line, count in lines if line < span[0])
    return before * 2 > sum(count for _, count in lines)


def _compiling_share(main: list[ThreadStack], total: int) -> float:
    """Share of the main thread's samples inside torch.compile's compilation; importing those modules
    (Adam's constructor imports torch._dynamo) is an import, not a compile."""
    compiling = sum(
        s.count
        for s in main
        if any(_matches(f, _COMPILING) for f in s.frames)
        and not any(_matches(f, _IMPORTING) for f in s.frames)
    )
    return compiling / total if total else 0.0


def _dispatch_share(
    placed: list[tuple[ThreadStack, SampleClass]],
    total: int,
    within: tuple[_Rule, ...] = (),
    loops_own: frozenset[int] = frozenset(),
) -> float:
    """Share of the samples computing inside the model step (a module call, autograd, the optimizer);
    with ``within``, only those also inside one of its frames. ``loops_own``: ids of stacks that are the
    loop's own work though they call a model (a forward after the step: _place_own_maths)."""
    dispatching = sum(
        s.count
        for s, cls in placed
        if cls == "compute"
        and id(s) not in loops_own
        and any(_dispatches(f) for f in s.frames)
        and (not within or any(_matches(f, within) for f in s.frames))
    )
    return dispatching / total if total else 0.0
