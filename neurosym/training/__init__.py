"""Training infrastructure shared by every benchmark: device choice, atomic checkpoints, the one training
loop (:func:`run_training`, with its optimiser :class:`Update` and clean stop at SIGINT, SIGTERM or a time
limit) and its dataset layer :func:`train`."""

from neurosym.training.allocator import release_free_memory, retain_freed_memory
from neurosym.training.checkpoint import CheckpointMismatch, atomic_path, check_resumable, load_checkpoint, save_checkpoint
from neurosym.training.core import Checkpointing, LoopResult, run_training
from neurosym.training.device import autocast_dtype, mixed_precision, resolve_device
from neurosym.training.distributed import (
    DistributedContext,
    distributed_process,
    init_distributed,
    shutdown_distributed,
)
from neurosym.training.loop import TrainConfig, TrainResult, train
from neurosym.training.stopping import StopRequests, TrainingInterrupted
from neurosym.training.update import Update, grad_scaler
from neurosym.training.workers import StopSafeLoader

__all__ = ["autocast_dtype", "mixed_precision", "resolve_device", "save_checkpoint", "load_checkpoint"]
__all__ += ["DistributedContext", "init_distributed", "shutdown_distributed", "TrainConfig", "TrainResult", "train"]
__all__ += ["distributed_process", "StopRequests", "TrainingInterrupted", "check_resumable", "atomic_path"]
__all__ += ["CheckpointMismatch", "StopSafeLoader"]
__all__ += ["Checkpointing", "LoopResult", "run_training", "Update", "grad_scaler"]
__all__ += ["retain_freed_memory", "release_free_memory"]
