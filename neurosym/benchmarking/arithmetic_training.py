"""Training one batched model of the arithmetic benchmark: all (operation, seed) runs of one model type.

Every run is an ensemble member of one :class:`TwoLayerArithmetic`; their losses are summed, so each
member gets the gradient it would get alone (up to the order of floating-point sums), and Adam's per-parameter statistics keep them
independent. The steps run in the library's one training loop
(:func:`neurosym.training.core.run_training`, weights clamped after each update): it evaluates every
``eval_every`` steps (validation = interpolation range, test = extrapolation range), writes an atomic
checkpoint at each evaluation, with the training data's random stream and the curves, and resumes from it.
The loss is not checked for finite values: an ensemble member may diverge without disturbing the others.
"""

from __future__ import annotations

import contextlib
import threading
import zlib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from neurosym.data.arithmetic import SimpleFunctionData, SubsetLayout, seed_stream
from neurosym.models.arithmetic import PAPER_ITERATIONS, TwoLayerArithmetic
from neurosym.training.allocator import release_free_memory
from neurosym.training.checkpoint import (
    ABSENT_IS_DEFAULT,
    LIST,
    MAPPING,
    Kind,
    check_resumable,
    load_checkpoint,
    require_entries,
    require_kinds,
)
from neurosym.training.checks import int_at_least, positive_number
from neurosym.training.core import Checkpointing, StopSource, run_training
from neurosym.training.device import mixed_precision
from neurosym.training.modes import evaluation_mode
from neurosym.training.stopping import TrainingInterrupted
from neurosym.training.update import Update, adam

SCHEDULES = ("published", "scaled")
"""Where the regulariser warm-ups sit: at the paper's iterations, or compressed to the run's budget."""


_GLOBAL_RANDOM_STATE = threading.Lock()
"""Held while a model is initialised from torch's global generator, which threads share."""


@dataclass(frozen=True)
class GroupConfig:
    """One batched model: ``model`` trained on every pair of ``operations`` × ``seeds``."""

    model: str
    operations: tuple[str, ...]
    seeds: tuple[int, ...]
    steps: int
    eval_every: int = 1000
    batch_size: int = 128
    learning_rate: float = 1e-3
    ranges: str = "[1,2]"
    evaluation_size: int = 10_000
    seed: int = 0
    input_size: int = 100
    subset_ratio: float = 0.25
    overlap_ratio: float = 0.5
    schedule: str = field(default="published", metadata={ABSENT_IS_DEFAULT: False})
    """``"published"``: regulariser warm-ups at the paper's iterations; ``"scaled"``: compressed to ``steps``
    (what checkpoints written before this field existed did, so they do not resume under the default)."""

    def __post_init__(self) -> None:
        if isinstance(self.operations, str):  # (a string would be read as its characters' operations)
            raise ValueError(f"operations must be a tuple of operation names, got the string {self.operations!r}")
        if not self.operations or not self.seeds:
            raise ValueError("a group needs at least one operation and one seed")
        for name in ("operations", "seeds"):  # (two runs of one (operation, seed) were reported as two cells)
            values = list(getattr(self, name))
            if repeated := sorted({value for value in values if values.count(value) > 1}):
                raise ValueError(f"{name} of a group are each trained once: {repeated} given more than once")
        if self.steps < 1 or self.eval_every < 1 or self.batch_size < 1:
            raise ValueError(
                f"steps, eval_every and batch_size must be positive, got {self.steps}, {self.eval_every}, {self.batch_size}"
            )
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        for name in ("steps", "eval_every", "batch_size"):  # steps=2.5 ran 3 steps, eval_every=1.5 evaluated at 3
            int_at_least(getattr(self, name), name, 1)
        positive_number(self.learning_rate, "learning_rate")

    @property
    def layout(self) -> SubsetLayout:
        return SubsetLayout(self.input_size, self.subset_ratio, self.overlap_ratio)

    @property
    def schedule_budget(self) -> int:
        """The budget the regulariser warm-ups are defined for (see :class:`TwoLayerArithmetic`)."""
        return PAPER_ITERATIONS if self.schedule == "published" else self.steps

    @property
    def members(self) -> list[tuple[str, int]]:
        """``(operation, seed)`` of each ensemble member, operation-major."""
        return [(operation, seed) for operation in self.operations for seed in self.seeds]

    @property
    def evaluation_steps(self) -> list[int]:
        """Steps after which the model is evaluated: every ``eval_every`` steps, and the last step."""
        steps = list(range(self.eval_every, self.steps + 1, self.eval_every))
        return steps if steps and steps[-1] == self.steps else steps + [self.steps]

    def stream(self, purpose: str) -> int:
        """A seed for one random stream of this group (``"init"`` or ``"batches"``), distinct per model."""
        return seed_stream(self.seed, zlib.crc32(f"{self.model}/{purpose}".encode()))


@dataclass
class Curves:
    """Evaluation history: ``steps [E]`` and, per evaluation, ``[S]`` tensors of validation MSE,
    test (extrapolation) MSE and sparsity error."""

    steps: list[int] = field(default_factory=list)
    validation: list[Tensor] = field(default_factory=list)
    test: list[Tensor] = field(default_factory=list)
    sparsity: list[Tensor] = field(default_factory=list)

    def stacked(self) -> dict[str, Tensor]:
        """``{"steps": [E], "validation": [E, S], "test": [E, S], "sparsity": [E, S]}``."""
        return {
            "steps": torch.tensor(self.steps),
            **{name: torch.stack(getattr(self, name)) for name in ("validation", "test", "sparsity")},
        }


@dataclass
class GroupRun:
    """The outcome of :func:`train_group`: curves so far, the steps done, the seconds spent training and
    evaluating (summed over every call of a resumed run), and why it stopped early (None when it did not)."""

    config: GroupConfig
    curves: Curves
    step: int
    seconds: float
    stop_reason: str | None = None

    @property
    def finished(self) -> bool:
        return self.step == self.config.steps


def build(config: GroupConfig, device: torch.device, batched: bool = True) -> tuple[SimpleFunctionData, TwoLayerArithmetic]:
    """The group's data and freshly initialised model (initialised on the CPU, so any device gets the same start).

    ``batched=False`` builds a plain model without an ensemble dimension (for a single-run group).
    """
    operations, seeds = zip(*config.members)
    data = SimpleFunctionData(
        operations,
        seeds,
        ranges=config.ranges,
        layout=config.layout,
        evaluation_size=config.evaluation_size,
        train_seed=config.stream("batches"),
        device=device,
    )
    with _GLOBAL_RANDOM_STATE, torch.random.fork_rng(devices=[]):  # groups built side by side take turns
        torch.manual_seed(config.stream("init"))
        ensemble = len(seeds) if batched else None
        model = TwoLayerArithmetic(config.model, config.schedule_budget, in_features=config.input_size, ensemble=ensemble)
    return data, model.to(device)


def group_loss(model: TwoLayerArithmetic, x: Tensor, target: Tensor, step: int | Tensor, amp: bool) -> Tensor:
    """The summed per-member loss ``Σ_members MSE + Σ λ(step)·R`` (``x [(S,) B, d]``, ``target [(S,) B, 1]``) -> scalar;
    ``step`` an int or a 0-d tensor on the model's device (see :meth:`TwoLayerArithmetic.regularization`)."""
    autocast = mixed_precision(x.device) if amp else contextlib.nullcontext()
    with autocast:
        output = model(x)
    squared_error = (output.float() - target).square()
    return (squared_error.mean(dim=(-2, -1)) + model.regularization(step)).sum()


def train_step(
    model: TwoLayerArithmetic, optimizer: torch.optim.Optimizer, x: Tensor, target: Tensor, step: int, amp: bool
) -> None:
    """One Adam step on :func:`group_loss`, then the weight clamp: the update :func:`train_group`'s loop makes."""
    Update(optimizer, after=model.clamp_weights_)(group_loss(model, x, target, step, amp))


GRAPH_WARMUP_STEPS = 3
"""Eager steps a :class:`GraphedStep` takes on a side stream before it captures (optimiser state, kernels)."""
_EAGER_CUDA_WORK = threading.Lock()
"""Held by a :class:`GraphedStep` while it warms up or captures, and by a CUDA-graph group's evaluations: groups
trained side by side (one thread each) never allocate or free while another captures; replays run freely."""


class GraphedStep:
    """A group's whole training step as one call ``step(index)``: draw the batch, the loss with the
    regulariser at a step counter held on the device, back-propagation, Adam and the weight clamp.

    On CUDA the first :data:`GRAPH_WARMUP_STEPS` steps run eagerly on a side stream; then the step is captured
    once into a CUDA graph (the batch drawn inside it, from the data's own generator) and every later step
    replays it: one launch instead of a few hundred kernel launches. ``optimizer`` must be capturable there
    (:func:`~neurosym.training.update.adam` with ``capturable=True``). On the CPU the same step runs eagerly
    and equals :func:`train_step`'s exactly. ``step`` returns ``None``: no loss is read back.

    ``compile_loss`` compiles the loss's forward and backward with ``torch.compile`` (during the warm-up), so that
    the captured step holds the compiler's fused kernels instead of one kernel per elementwise operation.
    """

    def __init__(
        self,
        model: TwoLayerArithmetic,
        optimizer: torch.optim.Optimizer,
        data: SimpleFunctionData,
        batch_size: int,
        compile_loss: bool = False,
    ):
        self.model, self.data, self.batch_size = model, data, batch_size
        self.update = Update(optimizer, after=model.clamp_weights_)
        self.device = data.device
        self.counter = torch.zeros((), dtype=torch.long, device=self.device)
        self.loss = torch.compile(self._loss, dynamic=False) if compile_loss else self._loss
        self.graph: torch.cuda.CUDAGraph | None = None
        self.eager_steps = 0
        self.next_index: int | None = None

    def _loss(self, x: Tensor, target: Tensor, counter: Tensor) -> Tensor:
        return group_loss(self.model, x, target, counter, amp=False)

    def _step(self) -> None:
        x, target = self.data.training_batch(self.batch_size)
        self.update(self.loss(x, target, self.counter))
        self.counter += 1

    def __call__(self, index: int) -> tuple[None, dict]:
        if index != self.next_index:
            self.counter.fill_(index)  # a fresh or resumed run: the counter starts at the loop's step
        self.next_index = index + 1
        if self.device.type != "cuda":
            self._step()
        elif self.graph is not None:
            self.graph.replay()
        elif self.eager_steps < GRAPH_WARMUP_STEPS:
            with _EAGER_CUDA_WORK:
                self._warm_up()
        else:
            with _EAGER_CUDA_WORK:
                self.graph = self._capture()
            self.graph.replay()
        return None, {}

    def _warm_up(self) -> None:
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            self._step()
        torch.cuda.current_stream(self.device).wait_stream(side)
        self.eager_steps += 1

    def _capture(self) -> torch.cuda.CUDAGraph:
        graph = torch.cuda.CUDAGraph()
        generator = self.data.stream.generator
        if generator is not None:
            if not hasattr(graph, "register_generator_state"):
                raise RuntimeError(
                    f"torch {torch.__version__} cannot capture draws from a generator of one's own in a CUDA graph; "
                    "train without the CUDA graph"
                )
            graph.register_generator_state(generator)
        self.update.optimizer.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):  # other groups' threads may replay meanwhile
            self._step()
        return graph


@torch.no_grad()
def evaluate(model: TwoLayerArithmetic, data: SimpleFunctionData, split: str) -> Tensor:
    """Mean squared error per member over the fixed ``split`` set: ``[S]`` (float64 accumulation, float32 model), read
    in evaluation mode (:func:`~neurosym.training.modes.evaluation_mode`: each module gets its own mode back after)."""
    total = torch.zeros(data.ensemble, dtype=torch.float64, device=data.device)
    with evaluation_mode(model):
        for x, target in data.evaluation_batches(split):
            total += (model(x) - target).double().square().sum(dim=(1, 2))
    return total / data.evaluation_size


def check_step_options(cuda_graph: bool, amp: bool, compile_loss: bool) -> None:
    """Raise ``ValueError`` for a training step that cannot be built: a CUDA-graph step with ``amp``, or
    ``compile_loss`` without ``cuda_graph``."""
    if cuda_graph and amp:
        raise ValueError("a CUDA-graph step runs in float32: train with cuda_graph or with amp, not both")
    if compile_loss and not cuda_graph:
        raise ValueError("compile_loss compiles the loss of a CUDA-graph step: give cuda_graph too")


def train_group(
    config: GroupConfig,
    device: torch.device,
    checkpoint: Path | None = None,
    resume: bool = False,
    stops: StopSource | None = None,
    amp: bool = False,
    progress: bool = True,
    cuda_graph: bool = False,
    compile_loss: bool = False,
) -> GroupRun:
    """Train (or, with ``resume``, continue from ``checkpoint``) the batched model of ``config``.

    ``cuda_graph`` takes each step as a :class:`GraphedStep` (on CUDA: captured once, then replayed; not with
    ``amp``), its loss compiled with ``compile_loss``. The results are those of the eager steps, up to the
    rounding of Adam's capturable update (and of the compiler's fused kernels).

    A checkpoint is written atomically at every evaluation. When ``stops`` reports a stop request (SIGINT,
    SIGTERM, time limit; without ``stops``, SIGINT and SIGTERM during this call) the run finishes its step,
    writes the checkpoint there and returns with ``stop_reason`` set; resuming later gives exactly the
    curves of an uninterrupted run. A checkpoint without its ``curves`` (or, unfinished, the ``generator`` state of its
    training stream), or whose ``curves`` are not those of :class:`Curves` (:data:`CURVES`), raises ``ValueError``
    naming it and the entry, before any of it is restored.
    """
    check_step_options(cuda_graph, amp, compile_loss)
    data, model = build(config, device)
    optimizer = adam(model.parameters(), config.learning_rate, capturable=cuda_graph and device.type == "cuda")
    curves = Curves()

    def eager_step(index: int) -> tuple[Tensor, dict]:
        x, target = data.training_batch(config.batch_size)
        return group_loss(model, x, target, index, amp), {}

    step = GraphedStep(model, optimizer, data, config.batch_size, compile_loss) if cuda_graph else eager_step

    def record(done: int, loss: float | None) -> None:
        with _EAGER_CUDA_WORK if cuda_graph else contextlib.nullcontext():  # no allocation while a group captures
            curves.steps.append(done)
            curves.validation.append(evaluate(model, data, "validation").cpu())
            curves.test.append(evaluate(model, data, "test").cpu())
            curves.sparsity.append(model.sparsity_error().detach().cpu())
            release_free_memory()  # the evaluation batches' freed blocks would otherwise pile up over a long run

    def save() -> dict[str, Any]:
        return {"generator": data.stream.state(), "curves": asdict(curves)}

    def load(saved: dict[str, Any]) -> None:
        nonlocal curves
        if saved["step"] < config.steps:  # a finished run needs no stream (and may predate UniformStream)
            data.stream.set_state(saved["generator"])
        saved_curves = {
            name: [value.cpu() for value in values] if name != "steps" else values for name, values in saved["curves"].items()
        }  # the checkpoint is read onto ``device``
        curves = Curves(**saved_curves)

    def check(saved: dict[str, Any]) -> None:
        _check_group_entries(saved, checkpoint, config.steps)

    checkpointing = None
    if checkpoint is not None:
        checkpointing = Checkpointing(checkpoint, config, config.eval_every, (), save, load, resume=resume, check_extra=check)
    description = f"{config.model} ({data.ensemble} runs)"
    try:
        result = run_training(
            model, step, Update(optimizer, after=model.clamp_weights_), config.steps, device=device, evaluate=record,
            eval_every=config.eval_every, checkpoint=checkpointing, stops=stops, progress=progress,
            description=description, check_finite=False,
        )  # fmt: skip
    except TrainingInterrupted as stop:
        assert stop.seconds is not None  # run_training reports the seconds of every stop it raises
        return GroupRun(config, curves, stop.step, stop.seconds, stop.reason)
    return GroupRun(config, curves, result.step, result.seconds, None)


TENSORS = Kind("a list of tensors", lambda value: isinstance(value, list) and all(isinstance(item, Tensor) for item in value))
CURVES = {spec.name: LIST if spec.name == "steps" else TENSORS for spec in fields(Curves)}
"""The entries of a :func:`train_group` checkpoint's ``curves``, those of :class:`Curves`, with the kind of each."""


def _check_group_entries(saved: dict[str, Any], checkpoint: Any, steps: int) -> None:
    """Refuse (``ValueError`` naming ``checkpoint`` and the entry) the :func:`train_group` checkpoint ``saved`` of a run of
    ``steps`` steps without its ``curves`` (or, unfinished, the ``generator`` state of its stream: a finished run reads
    none), with ``curves`` that are no mapping, or with curves that lack one of :data:`CURVES` (read as none), have
    another (a ``TypeError``) or hold another kind of value."""
    what = "train_group"
    require_entries(saved, ["curves", *(["generator"] if saved["step"] < steps else [])], checkpoint, what)
    require_kinds(saved, {"curves": MAPPING}, checkpoint, what)
    require_entries(saved["curves"], CURVES, checkpoint, f"{what} (its curves)")
    require_kinds(saved["curves"], CURVES, checkpoint, f"{what} (its curves)", only=True)


def checkpoint_name(model: str) -> str:
    """The file name of a model's checkpoint: ``NAC•`` -> ``nac_mul.pt``, ``NAC+`` -> ``nac_add.pt``, ``NMU`` -> ``nmu.pt``."""
    return model.lower().replace("•", "_mul").replace("+", "_add") + ".pt"


def train_groups(
    configs: list[GroupConfig],
    device: torch.device,
    checkpoints: Path,
    resume: bool,
    stops: StopSource,
    amp: bool = False,
    progress: bool = True,
    cuda_graph: bool = False,
    side_by_side: bool | None = None,
    compile_loss: bool = False,
) -> tuple[list[GroupRun], list[str]]:
    """Train (or resume) the groups with :func:`train_group` (``cuda_graph`` and ``compile_loss`` as there), each checkpointed in
    ``checkpoints`` (:func:`checkpoint_name`). Returns the runs (those stopped with ``stop_reason`` set) and the
    models not started.

    In turn, a stop request ends the group in training and the rest wait for the next call. ``side_by_side``
    (default: with ``cuda_graph`` on CUDA) trains every group at once, each in a thread with a CUDA stream of its
    own, so that the GPU runs the groups' small graphs together; a stop request then ends every group."""
    if side_by_side is None:
        side_by_side = cuda_graph and device.type == "cuda"
    if resume:
        _check_resumable_groups(configs, checkpoints)
    if side_by_side:
        return _train_side_by_side(configs, device, checkpoints, resume, stops, amp, progress, cuda_graph, compile_loss), []
    runs: list[GroupRun] = []
    pending: list[str] = []
    for config in configs:
        if runs and runs[-1].stop_reason is not None:
            pending.append(config.model)
            continue
        checkpoint = checkpoints / checkpoint_name(config.model)
        runs.append(train_group(config, device, checkpoint, resume, stops, amp, progress, cuda_graph, compile_loss))
    return runs, pending


def _check_resumable_groups(configs: list[GroupConfig], checkpoints: Path) -> None:
    """Refuse (:class:`~neurosym.training.checkpoint.CheckpointMismatch`) before any group trains a checkpoint in
    ``checkpoints`` written under another configuration than its group's: each was checked only as its turn came, after
    the groups before it had trained."""
    for config in configs:
        path = checkpoints / checkpoint_name(config.model)
        saved = load_checkpoint(path)
        if isinstance(saved, dict) and isinstance(saved.get("config"), Mapping):  # (other damage: named at its turn)
            check_resumable(saved["config"], config, (), path)


def _train_side_by_side(
    configs: list[GroupConfig],
    device: torch.device,
    checkpoints: Path,
    resume: bool,
    stops: StopSource,
    amp: bool,
    progress: bool,
    cuda_graph: bool,
    compile_loss: bool,
) -> list[GroupRun]:
    def train(config: GroupConfig) -> GroupRun:
        stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        with torch.cuda.stream(stream):  # None: the current stream
            checkpoint = checkpoints / checkpoint_name(config.model)
            return train_group(config, device, checkpoint, resume, stops, amp, progress, cuda_graph, compile_loss)

    with ThreadPoolExecutor(max_workers=len(configs), thread_name_prefix="group") as pool:
        return list(pool.map(train, configs))
