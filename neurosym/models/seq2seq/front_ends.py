"""Source front ends: map a source sequence to vectors ``[B, S, dim]`` for the encoder."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from neurosym.layers.factory import factory_kwargs
from neurosym.layers.shape_checks import check_sizes, check_tensor
from neurosym.layers.value_checks import TOKEN_ID_DTYPES, check_intensities, check_token_ids, values_are_readable
from neurosym.models.seq2seq.base import check_source_mask, padding_zeroed
from neurosym.training.checks import int_at_least


class TokenFrontEnd(nn.Module):
    """Token ids ``[B, S]`` (int64 or int32, as ``nn.Embedding`` takes them and as the targets may be) -> embeddings
    ``[B, S, dim]``; other dtypes raise ``ValueError`` naming the dtype, a source that is no tensor ``TypeError``.
    ``device`` and ``dtype`` are torch's factory keyword arguments (:mod:`neurosym.layers.factory`) of the embedding."""

    def __init__(
        self, vocab_size: int, dim: int, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        vocab_size, dim = check_sizes(vocab_size=vocab_size, dim=dim)  # 2.5 and True failed in torch.empty()
        self.vocab_size = vocab_size
        self.dim = dim
        self.embedding = nn.Embedding(vocab_size, dim, **factory)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """Token ids ``src [B, S]`` with ``src_mask [B, S]`` (``True`` marks padding) -> embeddings ``[B, S, dim]``."""
        check_tensor(src, "src")  # (a list failed on src.dim())
        if src.dim() != 2 or src.dtype not in TOKEN_ID_DTYPES:
            raise ValueError(f"token sources must be int64 or int32 ids [batch, length], got {src.dtype} {tuple(src.shape)}")
        check_source_mask(src, src_mask)
        ids = src.masked_fill(src_mask, 0)
        check_token_ids(ids, self.vocab_size, "source")
        return self.embedding(ids)


class ImageWindowFrontEnd(nn.Module):
    """One image per source position, ``[B, S, C, H, W]`` -> ``[B, S, dim]`` (float intensities in ``[0, 1]``, or uint8
    pixels 0..255 read as 0..1; a source that is no tensor raises ``TypeError``, float values outside ``[0, 1]``, e.g.
    pixels 0..255 as floats, or not finite, and other dtypes ``ValueError``:
    :func:`~neurosym.layers.value_checks.check_intensities`).

    Every non-padding window goes through ``encoder`` (any CNN mapping ``[N, C, H, W] -> [N, features]``,
    e.g. :class:`neurosym.perception.cnn.ResNet18` or ``SmallCNN``), then a linear map to ``dim``;
    padding windows get a zero vector and never reach the CNN (nor its batch-norm statistics).
    ``device`` and ``dtype`` are torch's factory keyword arguments (:mod:`neurosym.layers.factory`) of the linear map (the ``encoder`` is built by the caller).
    """

    def __init__(
        self,
        encoder: nn.Module,
        features: int,
        dim: int,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        features, dim = check_sizes(features=features, dim=dim)  # dim=0 gave vectors of width 0
        self.encoder = encoder
        self.proj = nn.Linear(features, dim, **factory)
        self.dim = dim

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """Image windows ``src [B, S, C, H, W]`` with ``src_mask [B, S]`` (``True`` marks padding) -> ``[B, S, dim]``;
        padding windows get zeros and never reach the encoder."""
        check_tensor(src, "src")  # (a list failed on src.dim())
        if src.dim() != 5:
            raise ValueError(f"image sources must have shape [batch, length, C, H, W], got {tuple(src.shape)}")
        check_source_mask(src, src_mask)
        check_intensities(padding_zeroed(src, src_mask))  # (pixels 0..255 as floats read as white; padding: anything)
        real = ~src_mask
        dtype = self.proj.weight.dtype  # (pixels divided in float32 lost a float64 model's precision)
        windows = src[real].to(dtype) / 255.0 if src.dtype == torch.uint8 else src[real].to(dtype)
        encoded = self.encoder(windows)
        if encoded.shape[-1] != self.proj.in_features:
            raise ValueError(f"the encoder gives {encoded.shape[-1]} features per window, the front end was built for "
                             f"{self.proj.in_features}")  # fmt: skip
        features = self.proj(encoded)
        out = features.new_zeros(*src_mask.shape, self.dim)
        out[real] = features
        return out


class BoundaryMarkers(nn.Module):
    """Frames the sequence of another front end with a learned start and end vector, as the HINT release
    frames every source with START and END tokens.

    ``forward(src, src_mask [B, S]) -> [B, S + 2, dim]``: the start vector at position 0, the ``n`` real
    positions of a source at ``1 .. n``, the end vector at ``n + 1``, zeros after it;
    :meth:`output_mask` gives the matching padding mask ``[B, S + 2]``. Sources must be right-padded (every
    padding position after every real one): the seq2seq models bring theirs into that form first
    (:func:`~neurosym.models.seq2seq.padding.real_first`); other padding raises ``ValueError`` where values
    are readable (:func:`~neurosym.layers.value_checks.values_are_readable`). Both vectors are initialised
    N(0, 1), like embedding rows. ``device`` and ``dtype`` are torch's factory keyword arguments (:mod:`neurosym.layers.factory`) of the two vectors (the ``front_end`` is built by the caller).
    """

    def __init__(
        self, front_end: nn.Module, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        self.front_end = front_end
        self.dim = front_end_dim(front_end)
        self.start = nn.Parameter(torch.empty(self.dim, **factory))
        self.end = nn.Parameter(torch.empty(self.dim, **factory))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Both vectors drawn from N(0, 1) (the front end resets its own parameters)."""
        with torch.no_grad():
            self.start.normal_()
            self.end.normal_()

    def output_mask(self, src_mask: torch.Tensor) -> torch.Tensor:
        """``[B, S]`` source padding -> ``[B, S + 2]`` padding of the framed sequence."""
        check_right_padded(src_mask)
        positions = torch.arange(src_mask.shape[1] + 2, device=src_mask.device)
        return positions > (~src_mask).sum(dim=1, keepdim=True) + 1

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """The front end's ``[B, S, dim]`` for ``src`` and ``src_mask [B, S]``, framed -> ``[B, S + 2, dim]``: the start
        vector, a source's real positions, the end vector, zeros after it."""
        body = self.front_end(src, src_mask).masked_fill(src_mask.unsqueeze(-1), 0.0)
        check_right_padded(src_mask)  # (after the front end, which names a mask that does not fit the source)
        framed = F.pad(body, (0, 0, 1, 1))  # [B, S + 2, dim]
        positions = torch.arange(framed.shape[1], device=src_mask.device)
        end = positions == (~src_mask).sum(dim=1, keepdim=True) + 1  # [B, S + 2]
        framed = torch.where(end.unsqueeze(-1), self.end.to(framed.dtype), framed)
        return torch.where((positions == 0).view(1, -1, 1), self.start.to(framed.dtype), framed)


def check_right_padded(src_mask: torch.Tensor) -> None:
    """Raise ``ValueError`` when a real position follows a padding one in a row of ``src_mask [B, S]`` (``True`` =
    padding), where values are readable: framed as if right-padded, a left-padded source had its last real position
    overwritten by the end vector."""
    if values_are_readable(src_mask) and bool((src_mask[:, :-1] & ~src_mask[:, 1:]).any()):
        raise ValueError("BoundaryMarkers needs right-padded sources: a real position follows a padding one")


def front_end_dim(front_end: nn.Module) -> int:
    """The size of the vectors ``front_end`` gives: its ``dim`` attribute, which every front end has (``ValueError``
    for a module without one, such as a bare ``nn.Embedding``)."""
    return int_at_least(getattr(front_end, "dim", None), "the front end's vector size (its attribute `dim`)", 1)


def check_front_end_dtype(front_end: nn.Module, dtype: torch.dtype | None, owner: str) -> None:
    """Raise ``ValueError`` naming ``owner`` where ``front_end``'s floating-point parameters are of another dtype than
    the model built over it (``dtype``, else torch's default): the first forward failed inside torch ("mat1 and mat2
    must have the same dtype")."""
    wanted = dtype or torch.get_default_dtype()
    held = next((parameter.dtype for parameter in front_end.parameters() if parameter.is_floating_point()), wanted)
    if held != wanted:
        raise ValueError(
            f"{owner}: the front end's parameters are {held} but the model would be built in {wanted}: pass dtype={held} "
            f"(or build the front end with dtype={wanted})"
        )


def output_mask(front_end: nn.Module, src_mask: torch.Tensor) -> torch.Tensor:
    """The padding mask of what ``front_end`` returns for sources padded as ``src_mask [B, S]``: the same mask,
    unless the front end changes the length and says how (an ``output_mask`` method, as :class:`BoundaryMarkers`)."""
    resize = getattr(front_end, "output_mask", None)
    return src_mask if resize is None else resize(src_mask)
