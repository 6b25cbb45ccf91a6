"""Self-attention with clipped relative positions on the CPU, in ``O(T·R)`` memory.

The score of query ``i`` and key ``j`` is ``s_ij = scale·q_i·(k_j + a^K_c) + b_c`` and the output is
``Σ_j α_ij (v_j + a^V_c)`` with ``c = clip(j - i, ±R)``: Shaw et al. (2018) with tables shared by the heads
and no ``b``; Transformer-XL attention with clipped distances (``RelativeMultiheadAttention(relative=
"xl_clipped")``) with one key table per head and a score bias ``b`` per head and distance. The keys of
query ``i`` fall into three parts:

* the **band** ``|j - i| <= R`` is scored explicitly: each block of ``block >= 2R`` queries meets a
  window of ``block + 2R`` keys in one batched GEMM, and the band's ``2R + 1`` diagonals are read out of
  those ``[block, block + 2R]`` scores by the skew trick (pad, reshape, cut). In these band coordinates
  the key term ``scale·q_i·a^K_c`` and the bias ``b_c`` add without a gather and the value term is one GEMM
  with ``a^V``;
* the **left tail** ``j <= i - R - 1``, where every key carries ``a_{-R}``, is causal attention of the
  queries ``R + 1 ..`` against the keys ``k + a^K_{-R}`` (values ``v + a^V_{-R}``) shifted by ``R + 1``:
  one call of the fused CPU flash-attention kernel, which skips the masked triangle;
* the **right tail** ``j >= i + R + 1`` (``a_{+R}``; none under a causal mask) is the same on both
  sequences reversed. A tail's bias ``b_{±R}`` is the same for all its keys, so it leaves the tail's
  output unchanged and shifts its log-normaliser.

Each part yields its output normalised over its own keys, ``O_p``, and its log-normaliser ``lse_p``; the
merge ``out = Σ_p β_p O_p`` with ``β_p = exp(lse_p - LSE)`` is exact whatever the scores. The backward
pass is written out: the kernel's backward computes ``D_i = dO_i·O_i`` from the output it is handed, and
handing it the *merged* output with ``dO = β_p·g`` yields exactly the gradient of the merged attention,
the log-normaliser's share included; the band does the same in explicit form. No ``[T, T]`` tensor is
ever built.

Restrictions (the caller computes explicit scores otherwise): CPU tensors (the log-normaliser comes from
the CPU flash-attention kernel), self-attention over positions ``0 .. T-1`` (no decoding offset), no key
padding, no attention dropout. Half-precision inputs, and inputs under autocast, are computed in float32.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from einops import rearrange, reduce, repeat
from torch import Tensor

# Private ATen operators (the CPU flash kernel returns the log-normaliser the merge needs). A PyTorch build
# without them leaves both None: :func:`banded_kernels_available` is then False and callers score explicitly.
_FLASH = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
_FLASH_BACKWARD = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None)


def banded_kernels_available() -> bool:
    """Whether this PyTorch build has the CPU flash-attention kernel and its backward, which
    :func:`clipped_relative_attention` needs."""
    return _FLASH is not None and _FLASH_BACKWARD is not None


def default_block(max_rel_pos: int) -> int:
    """Queries per band block: at least ``2R`` (the window is the block's own keys and ``2R`` more) and
    at least 32, so that the batched GEMMs are not dominated by their call overhead."""
    return max(2 * max_rel_pos, 32)


def _query_blocks(x: Tensor, block: int) -> Tensor:
    """``[G, T, f]`` -> ``[G, n, block, f]``, zero-padding the end (a view when ``block`` divides ``T``)."""
    padding = -x.shape[1] % block
    return rearrange(F.pad(x, (0, 0, 0, padding)) if padding else x, "g (n t) f -> g n t f", t=block)


def _unblock(x: Tensor, length: int) -> Tensor:
    """Inverse of :func:`_query_blocks`: ``[G, n, block, f]`` -> ``[G, length, f]``."""
    return rearrange(x, "g n t f -> g (n t) f")[:, :length]


def _key_windows(x: Tensor, reach: int, block: int) -> Tensor:
    """``[G, T, d]`` -> ``[G, n, block + 2R, d]``: window ``b`` holds positions ``b·block - R ..
    (b + 1)·block + R - 1`` (zeros outside the sequence)."""
    blocks = -(-x.shape[1] // block)
    padded = F.pad(x, (0, 0, reach, (blocks + 1) * block - x.shape[1] - reach))
    padded = rearrange(padded, "g (n t) d -> g n t d", t=block)
    return torch.cat([padded[:, :-1], padded[:, 1:, : 2 * reach]], dim=2)


def _window_gradient(grad: Tensor, length: int, reach: int) -> Tensor:
    """The adjoint of :func:`_key_windows`: ``[G, n, block + 2R, d]`` -> ``[G, length, d]``."""
    block = grad.shape[2] - 2 * reach
    total = grad.new_zeros(grad.shape[0], grad.shape[1] + 1, block, grad.shape[3])
    total[:, :-1] = grad[:, :, :block]
    total[:, 1:, : 2 * reach] += grad[:, :, block:]
    return rearrange(total, "g n t d -> g (n t) d")[:, reach : reach + length]


def _by_group(per_head: Tensor, groups: int) -> Tensor:
    """``[H, ...]`` (one entry per head) -> ``[G, 1, ...]`` over the ``G = B·H`` flattened batch-heads."""
    return repeat(per_head, "h ... -> (b h) 1 ...", b=groups // per_head.shape[0])


def _table_row(table: Tensor, row: int, groups: int) -> Tensor:
    """Row ``row`` of a table ``[2R + 1, d]`` shared by the heads (``[d]``) or ``[H, 2R + 1, d]`` (``[G, 1, d]``)."""
    return table[row] if table.dim() == 2 else _by_group(table[:, row], groups)


def _apply_table(x: Tensor, matrix: Tensor, heads: int) -> Tensor:
    """``x [G, T, a]`` times ``matrix [a, c]`` shared by the heads, or ``[H, a, c]`` one per head -> ``[G, T, c]``."""
    if matrix.dim() == 2:
        return x @ matrix
    return rearrange(rearrange(x, "(b h) t a -> b h t a", h=heads) @ matrix, "b h t c -> (b h) t c")


def _table_gradient(x: Tensor, y: Tensor, table: Tensor) -> Tensor:
    """``Σ_t x_tᵀ y_t`` over time and batch of ``x [G, T, c]`` and ``y [G, T, d]``, shaped like ``table``:
    ``[c, d]``, or ``[H, c, d]`` summed per head."""
    if table.dim() == 2:
        return x.flatten(0, 1).T @ y.flatten(0, 1)
    heads = table.shape[0]
    return rearrange(x, "(b h) t c -> h c (b t)", h=heads) @ rearrange(y, "(b h) t d -> h (b t) d", h=heads)


def _row_gradient(x: Tensor, table: Tensor) -> Tensor:
    """The gradient ``[G, t, d]`` of a table row added to every key, summed into the row's shape."""
    return x.sum((0, 1)) if table.dim() == 2 else reduce(x, "(b h) t d -> h d", "sum", h=table.shape[0])


def _diagonals(window: Tensor, width: int) -> Tensor:
    """``[..., rows, rows + 2R]`` (contiguous) -> ``[..., rows, width]`` with entry ``(i, c) = window[i, i + c]``:
    a strided view (row stride ``rows + 2R + 1``) copied out."""
    columns = window.shape[-1]
    return window.as_strided((*window.shape[:-1], width), (*window.stride()[:-2], columns + 1, 1)).contiguous()


def _undiagonals(band: Tensor, columns: int) -> Tensor:
    """The adjoint of :func:`_diagonals`: ``[..., rows, width]`` -> ``[..., rows, columns]``, zero off the band."""
    window = band.new_zeros(*band.shape[:-1], columns)
    window.as_strided(band.shape, (*window.stride()[:-2], columns + 1, 1)).copy_(band)
    return window


class _Tables(NamedTuple):
    """The distance terms: ``keys`` and ``values`` ``[2R + 1, d]`` shared by the heads or ``[H, 2R + 1, d]``
    (``values`` may be None), ``bias [H, 2R + 1]`` or None; ``heads`` is ``H``."""

    keys: Tensor
    values: Tensor | None
    bias: Tensor | None
    heads: int


class _Band:
    """The explicit band ``|j - i| <= R`` of every query (``rows``): ``output [G, T, d]`` and ``lse [G, T]``
    over the band's keys, with what its backward pass needs."""

    rows = slice(None)

    def __init__(
        self, scaled_q: Tensor, k: Tensor, v: Tensor, tables: _Tables, reach: int, causal: bool, block: int
    ):
        length = scaled_q.shape[1]
        self.reach, self.length = reach, length
        self.query_blocks = _query_blocks(scaled_q, block)
        self.key_windows, self.value_windows = _key_windows(k, reach, block), _key_windows(v, reach, block)
        width = 2 * reach + 1
        scores = _unblock(_diagonals(self.query_blocks @ self.key_windows.transpose(-1, -2), width), length)
        scores = scores + _apply_table(scaled_q, tables.keys.mT, tables.heads)
        if tables.bias is not None:
            scores = scores + _by_group(tables.bias, scores.shape[0])
        key_pos = torch.arange(length, device=k.device).unsqueeze(1) + torch.arange(-reach, reach + 1, device=k.device)
        hidden = (key_pos < 0) | (key_pos >= length)
        if causal:
            hidden = hidden | (torch.arange(width, device=k.device) > reach)
        scores = scores.masked_fill_(hidden, float("-inf"))
        self.lse = torch.logsumexp(scores, dim=-1)
        self.weights = (scores - self.lse.unsqueeze(-1)).exp_()  # [G, T, 2R + 1]
        self.weight_windows = _undiagonals(_query_blocks(self.weights, block), self.key_windows.shape[2])
        self.output = _unblock(self.weight_windows @ self.value_windows, length)
        if tables.values is not None:
            self.output = self.output + _apply_table(self.weights, tables.values, tables.heads)

    def gradients(self, grad: Tensor, merged: Tensor, tables: _Tables) -> tuple[Tensor | None, ...]:
        """From ``grad = β·∂L/∂out [G, T, d]`` and the merged output: gradients of ``scale·q``, ``k``, ``v``,
        the key table, the value table and the score bias (None without one)."""
        grad_blocks = _query_blocks(grad, self.query_blocks.shape[2])
        grad_window_weights = grad_blocks @ self.value_windows.transpose(-1, -2)
        grad_weights = _unblock(_diagonals(grad_window_weights, self.weights.shape[-1]), self.length)
        grad_value_table = None
        if tables.values is not None:
            grad_weights = grad_weights + _apply_table(grad, tables.values.mT, tables.heads)
            grad_value_table = _table_gradient(self.weights, grad, tables.values)
        # softmax backward against the merged output: D = grad·out covers the log-normaliser's share too
        grad_scores = self.weights * (grad_weights - (grad * merged).sum(-1, keepdim=True))
        grad_bias = None if tables.bias is None else reduce(grad_scores, "(b h) t c -> h c", "sum", h=tables.heads)
        scaled_q = _unblock(self.query_blocks, self.length)
        grad_key_table = _table_gradient(grad_scores, scaled_q, tables.keys)
        grad_windows = _undiagonals(_query_blocks(grad_scores, self.query_blocks.shape[2]), self.key_windows.shape[2])
        grad_q = _unblock(grad_windows @ self.key_windows, self.length)
        grad_q = grad_q + _apply_table(grad_scores, tables.keys, tables.heads)
        grad_k = _window_gradient(grad_windows.transpose(-1, -2) @ self.query_blocks, self.length, self.reach)
        grad_v = _window_gradient(self.weight_windows.transpose(-1, -2) @ grad_blocks, self.length, self.reach)
        return grad_q, grad_k, grad_v, grad_key_table, grad_value_table, grad_bias


class _Tail:
    """One tail (keys beyond ``R`` on one side) by the fused causal kernel: the queries ``rows`` against
    the keys ``keys`` shifted by table row ``row``, both reversed for the right tail; ``output [G, t, d]``
    and ``lse [G, t]`` over the tail's keys, the bias included (``kernel_lse`` without it)."""

    def __init__(self, q: Tensor, k: Tensor, v: Tensor, tables: _Tables, reach: int, right: bool, scale: float):
        near, far = slice(0, q.shape[1] - reach - 1), slice(reach + 1, q.shape[1])  # positions with a tail / in one
        self.rows, self.keys = (near, far) if right else (far, near)
        self.row, self.right, self.scale = (-1 if right else 0), right, scale
        groups = q.shape[0]
        keys, values = k[:, self.keys] + _table_row(tables.keys, self.row, groups), v[:, self.keys]
        if tables.values is not None:
            values = values + _table_row(tables.values, self.row, groups)
        self.query, self.key, self.value = (self.to_kernel(x) for x in (q[:, self.rows], keys, values))
        output, lse = _FLASH(self.query, self.key, self.value, is_causal=True, scale=scale)
        self.output, self.kernel_lse = self.from_kernel(output), self.from_kernel(lse)
        bias = None if tables.bias is None else tables.bias[:, self.row]
        self.lse = self.kernel_lse if bias is None else self.kernel_lse + _by_group(bias, groups)

    def to_kernel(self, x: Tensor) -> Tensor:
        """``[G, t, ...]`` -> the kernel's ``[G, 1, t, ...]``, reversed in time for the right tail."""
        return (x.flip(1) if self.right else x).unsqueeze(1)

    def from_kernel(self, x: Tensor) -> Tensor:
        """The kernel's ``[G, 1, t, ...]`` -> ``[G, t, ...]`` in sequence order."""
        x = x.squeeze(1)
        return x.flip(1) if self.right else x

    def gradients(self, grad: Tensor, merged: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """From ``grad = β·∂L/∂out`` of this tail's rows and the merged output of those rows: gradients of
        its queries, keys and values ``[G, t, d]``, and of its bias per row ``[G, t]`` (the bias shifts every
        score of the tail: ``Σ_j ∂L/∂s_ij = β·∂L/∂out·(O_tail - out)``)."""
        kernel_grad, kernel_merged, kernel_lse = (self.to_kernel(x) for x in (grad, merged, self.kernel_lse))
        grads = _FLASH_BACKWARD(
            kernel_grad, self.query, self.key, self.value, kernel_merged, kernel_lse, 0.0, True, scale=self.scale
        )
        grad_bias = (grad * (self.output - merged)).sum(-1)
        return *(self.from_kernel(x) for x in grads), grad_bias


class _ClippedRelativeAttention(torch.autograd.Function):
    """``q, k, v [G, T, d]``, tables and bias (see :class:`_Tables`) -> ``[G, T, d]`` (see the module docstring)."""

    @staticmethod
    def forward(
        ctx, q: Tensor, k: Tensor, v: Tensor, key_table: Tensor, value_table: Tensor | None, bias: Tensor | None,
        heads: int, reach: int, scale: float, causal: bool, block: int,
    ) -> Tensor:
        tables = _Tables(key_table, value_table, bias, heads)
        band = _Band(q * scale, k, v, tables, reach, causal, block)
        sides = [] if q.shape[1] <= reach + 1 else [False] if causal else [False, True]
        tails = [_Tail(q, k, v, tables, reach, right, scale) for right in sides]
        total = band.lse.clone()
        for tail in tails:
            total[:, tail.rows] = torch.logaddexp(total[:, tail.rows], tail.lse)
        shares = [(part.lse - total[:, part.rows]).exp_().unsqueeze(-1) for part in (band, *tails)]  # β
        out = band.output * shares[0]
        for tail, share in zip(tails, shares[1:]):
            out[:, tail.rows] += tail.output * share
        ctx.band, ctx.tails, ctx.shares, ctx.scale, ctx.heads = band, tails, shares, scale, heads
        ctx.save_for_backward(key_table, value_table, bias, out)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: Tensor) -> tuple[Tensor | None, ...]:
        band, (key_table, value_table, bias, out) = ctx.band, ctx.saved_tensors
        tables = _Tables(key_table, value_table, bias, ctx.heads)
        grad = grad.contiguous()
        band_share, *tail_shares = ctx.shares
        grad_q, grad_k, grad_v, grad_keys, grad_values, grad_bias = band.gradients(grad * band_share, out, tables)
        grad_q = grad_q * ctx.scale
        for tail, share in zip(ctx.tails, tail_shares):
            tail_q, tail_k, tail_v, tail_bias = tail.gradients(grad[:, tail.rows] * share, out[:, tail.rows])
            grad_q[:, tail.rows] += tail_q
            grad_k[:, tail.keys] += tail_k
            grad_v[:, tail.keys] += tail_v
            grad_keys[..., tail.row, :] += _row_gradient(tail_k, key_table)
            if grad_values is not None:
                grad_values[..., tail.row, :] += _row_gradient(tail_v, value_table)
            if grad_bias is not None:
                grad_bias[:, tail.row] += reduce(tail_bias, "(b h) t -> h", "sum", h=ctx.heads)
        return grad_q, grad_k, grad_v, grad_keys, grad_values, grad_bias, None, None, None, None, None


def clipped_relative_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    key_table: Tensor,
    value_table: Tensor | None,
    *,
    max_rel_pos: int,
    scale: float,
    causal: bool = False,
    block: int | None = None,
    score_bias: Tensor | None = None,
) -> Tensor:
    """Self-attention with clipped relative positions of CPU tensors ``q, k, v [B, H, T, d]`` (positions
    ``0 .. T-1``) -> ``[B, H, T, d]``.

    ``key_table``/``value_table`` are the ``a^K``/``a^V`` rows of the clipped distances ``-R .. R``: ``[2R + 1,
    d]`` shared by the heads (Shaw's), or ``[H, 2R + 1, d]`` one per head (``value_table=None``: keys only);
    ``score_bias [H, 2R + 1]`` (optional) is added to the scaled scores per head and distance;
    ``causal=True`` hides keys after the query; ``block`` (default :func:`default_block`) is the number of
    queries per band block, at least ``2R``.
    """
    if q.device.type != "cpu":
        raise ValueError(f"clipped_relative_attention runs on the CPU (its fused kernel is the CPU one), got {q.device}")
    if not banded_kernels_available():
        raise RuntimeError(
            f"clipped_relative_attention needs the CPU flash-attention kernel, which PyTorch {torch.__version__} "
            "does not provide; RelativeMultiheadAttention scores explicitly in that case"
        )
    block = default_block(max_rel_pos) if block is None else block
    if block < 2 * max_rel_pos:
        raise ValueError(f"block must be at least {2 * max_rel_pos} (2·max_rel_pos), got {block}")
    heads, width = q.shape[1], 2 * max_rel_pos + 1
    for name, table in (("key_table", key_table), ("value_table", value_table)):
        if table is not None and table.shape not in ((width, q.shape[-1]), (heads, width, q.shape[-1])):
            raise ValueError(
                f"{name} must have shape [{width}, {q.shape[-1]}] or [{heads}, {width}, {q.shape[-1]}], "
                f"got {list(table.shape)}"
            )
    if score_bias is not None and score_bias.shape != (heads, width):
        raise ValueError(f"score_bias must have shape [{heads}, {width}], got {list(score_bias.shape)}")
    dtype = q.dtype if q.dtype in (torch.float32, torch.float64) else torch.float32
    flat = [rearrange(x.to(dtype), "b h t d -> (b h) t d") for x in (q, k, v)]
    tables = [None if table is None else table.to(dtype) for table in (key_table, value_table, score_bias)]
    with torch.autocast("cpu", enabled=False):  # the hand-written backward needs one dtype throughout
        out = _ClippedRelativeAttention.apply(*flat, *tables, heads, max_rel_pos, scale, causal, block)
    return rearrange(out, "(b h) t d -> b h t d", h=heads).to(q.dtype)
