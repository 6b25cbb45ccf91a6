"""Training infrastructure shared by every benchmark: device choice, atomic checkpoints, the shared loop and
its clean stop (SIGINT, SIGTERM, time limit)."""

from neurosym.training.checkpoint import load_checkpoint, save_checkpoint
from neurosym.training.device import autocast_dtype, mixed_precision, resolve_device
from neurosym.training.distributed import DistributedContext, init_distributed, shutdown_distributed
from neurosym.training.loop import TrainConfig, TrainResult, train
from neurosym.training.stopping import StopRequests, TrainingInterrupted

__all__ = ["autocast_dtype", "mixed_precision", "resolve_device", "save_checkpoint", "load_checkpoint"]
__all__ += ["DistributedContext", "init_distributed", "shutdown_distributed", "TrainConfig", "TrainResult", "train"]
__all__ += ["StopRequests", "TrainingInterrupted"]
