"""Mosaic GPU FlashAttention whose VJP is the faster one for the call.

On Hopper, tokamax's default implementation chain `("mosaic", "triton",
"xla")` takes Mosaic GPU's op, forward and VJP. Its forward is the fastest
we measured; its VJP does not skip the blocks that windows and key or query
ranges mask, and is slow at head_dim 256. `PallasMosaicGpuFlashAttention`
keeps Mosaic GPU's forward and computes the VJP with `MosaicGpuOrTritonVjp`:
this package's Pallas-Triton VJP or Mosaic GPU's, as `use_triton_vjp` rules.
The two ops agree on the residuals: `(m, l)` per query row, `m` a row
offset in natural-log units (the row's maximum logit with the stable
softmax; 0 with the unstable one) and `l = sum(exp(s - m))` over the row's
logits `s`, so `m + log(l)` is the row's log-sum-exp (zero rows: `l = 0`).
"""

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from tokamax._src import gpu_utils
from tokamax._src.ops import op
from tokamax._src.ops.attention import base
from tokamax._src.ops.attention import pallas_mosaic_gpu as upstream
from tokamax._src.ops.attention import pallas_mosaic_gpu_vjp as upstream_vjp
from tokamax_softcap import pallas_triton
from tokamax_softcap import pallas_triton_vjp

# Mosaic GPU's VJP is taken only up to this head_dim (of q, k and v).
# Measured on an H200 (bf16, soft cap 50, B2 T8192, with Mosaic GPU's
# forward; results/h200-2026-12-04-default-chain.md): with a causal or no
# mask, ours takes 0.98-1.15x its backward time at head_dim 64 and 128, and
# 0.37-0.68x at 256; with windows or documents 0.06-0.42x at any head_dim.
MOSAIC_VJP_MAX_HEAD_DIM = 128
_DEFAULT_PRECISION = ((jax.lax.Precision.DEFAULT,) * 2,) * 2


def _skips_blocks(mask: base.Mask) -> bool:
  """Whether our VJP's loops skip blocks that `mask` removes (Mosaic's don't).

  Our kernels bound their loops by windows (`CausalMask.window_size`),
  offset diagonals and key and query ranges; a plain causal mask both skip,
  and a boolean array neither does.
  """
  causal = mask.causal_mask
  window_or_offset = causal is not None and not mask.is_causal
  ranges = (mask.q_start, mask.q_end, mask.k_start, mask.k_end)
  return window_or_offset or any(x is not None for x in ranges)


def use_triton_vjp(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    *,
    mask: base.Mask,
    precision: tuple[base.CanonicalPrecision, base.CanonicalPrecision],
    device: jax.Device | None = None,
) -> bool:
  """Returns whether our Pallas-Triton VJP, not Mosaic GPU's, runs a call.

  The one rule of `MosaicGpuOrTritonVjp`. Mosaic GPU's VJP is kept where it
  runs and was the faster, or where no measurement says otherwise:

  - on GPUs other than sm90 and sm100 (Ampere, Ada), ours: Mosaic GPU's VJP
    supports neither;
  - on sm100 (Blackwell), Mosaic GPU's: not measured;
  - on sm90 (Hopper), Mosaic GPU's only for bf16 or f16 `q`, `k`, `v` at the
    default precision, a head_dim of at most `MOSAIC_VJP_MAX_HEAD_DIM`, and
    a mask whose blocks our loops would not skip (`_skips_blocks`); else
    ours. f32 inputs and `precision=HIGHEST` take ours: Mosaic GPU's rejects
    f32 at the default precision, and ours keeps bf16 and f16 gradients near
    f32 accuracy at `HIGHEST` (README, "Use").

  Args:
    q: Queries, `[*B, T, H, D]`.
    k: Keys, `[*B, t, h, D]`.
    v: Values, `[*B, t, h, d]`.
    mask: The bound `base.Mask`.
    precision: The bound (canonical) `(q @ k.T, p @ v)` precisions.
    device: The GPU (default: JAX's default device).

  Returns:
    True to run this package's VJP, False for Mosaic GPU's.
  """
  if gpu_utils.is_sm100(device):
    return False
  if not gpu_utils.is_sm90(device):
    return True
  return (
      any(x.dtype not in (jnp.bfloat16, jnp.float16) for x in (q, k, v))
      or tuple(precision) != _DEFAULT_PRECISION
      or max(q.shape[-1], v.shape[-1]) > MOSAIC_VJP_MAX_HEAD_DIM
      or _skips_blocks(mask)
  )


@dataclasses.dataclass(frozen=True, kw_only=True)
class MosaicGpuOrTritonVjp:
  """A VJP that runs `triton` or `mosaic`, as `use_triton_vjp` rules.

  Called as tokamax calls an op's `vjp`: `(residuals, out, dout, q, k, v,
  **forward keyword arguments)`, with `residuals` `(m, l)` `[*B, H, T]` f32
  from Mosaic GPU's forward. Returns what the chosen VJP returns: `dq`,
  `dk`, `dv` and `dbias`.

  Attributes:
    triton: This package's Pallas-Triton VJP.
    mosaic: tokamax's Mosaic GPU VJP.
  """

  triton: Any = dataclasses.field(
      default_factory=pallas_triton_vjp.PallasTritonFlashAttentionVjp
  )
  mosaic: Any = dataclasses.field(
      default_factory=upstream_vjp.PallasMosaicGpuFlashAttentionVjp
  )

  def __call__(self, residuals, out, dout, q, k, v, **kwargs):
    triton = use_triton_vjp(
        q, k, v, mask=kwargs["mask"], precision=kwargs["precision"]
    )
    vjp = self.triton if triton else self.mosaic
    return vjp(residuals, out, dout, q, k, v, **kwargs)


@dataclasses.dataclass(frozen=True)
class PallasMosaicGpuFlashAttention(upstream.PallasMosaicGpuFlashAttention):
  """tokamax's Mosaic GPU FlashAttention, with the faster VJP for each call.

  A drop-in subclass of tokamax's op of the same name (same fields, `Config`
  and autotuning data): its forward is tokamax's, unchanged. What differs:

  - the default `vjp` is `MosaicGpuOrTritonVjp()`: this package's
    Pallas-Triton VJP where `use_triton_vjp` says so (e.g. head_dim 256,
    windows, packed documents), else Mosaic GPU's;
  - `logits_soft_cap` is checked as this package's Pallas-Triton op checks
    it.

  Call it as tokamax's op: `q` `[*B, T, H, D]`, `k` `[*B, t, h, D]`, `v`
  `[*B, t, h, d]`, optional `bias`, `mask` and the rest of `tokamax`'s
  `DotProductAttention` arguments; returns `[*B, T, H, d]` in the dtype of
  `q`.

  Raises:
    ValueError: if `logits_soft_cap` is not `None` or a finite, positive
      real scalar.
    NotImplementedError: where Mosaic GPU's forward does not run (e.g. not
      on a GPU), as tokamax's op.
  """

  def __post_init__(self):
    if self.vjp is None:
      object.__setattr__(self, "vjp", MosaicGpuOrTritonVjp())

  def bind(self, *args, logits_soft_cap=None, **kwargs) -> op.BoundArguments:
    logits_soft_cap = pallas_triton.check_logits_soft_cap(logits_soft_cap)
    return super().bind(*args, logits_soft_cap=logits_soft_cap, **kwargs)
