"""Unfused attention with a soft cap: the reference for tests and `verify`.

Written out from the definition (no tokamax code), so that comparing against
it, and against its gradients as JAX derives them, checks the kernels
independently:

    u = logits_scale * q @ k.T + bias          (pre-cap logits)
    s = c * tanh(u / c)                        (if logits_soft_cap = c)
    s = where(mask, s, finfo(dtype).min)
    out = softmax(s) @ v

A fully masked row thus gets uniform weights (as tokamax's XLA implementation
and `flax.linen.dot_product_attention` give it), whereas the Pallas-Triton
kernels give it zero output: compare only rows that attend to some key.

It computes in f32, or in f64 (`dtype=jnp.float64` under `jax.enable_x64`) where
a test must tell apart two kernels whose errors are near f32's own rounding.
"""

import math

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float  # pylint: disable=g-multiple-import,g-importing-member

_HIGHEST = jax.lax.Precision.HIGHEST


def _as(x: jax.Array | None, dtype: jnp.dtype) -> jax.Array | None:
  return None if x is None else jnp.asarray(x, dtype)


def logits(
    q: Float[Array, "*B T H D"],
    k: Float[Array, "*B t h D"],
    *,
    bias: Float[Array, "*#B #H #T #t"] | None = None,
    logits_scale: float | None = None,
    dtype: jnp.dtype = jnp.float32,
) -> Float[Array, "*B H T t"]:
  """Returns the pre-cap logits `u = logits_scale * q @ k.T + bias`.

  Args:
    q: Queries, `[*B, T, H, D]`, any float dtype (computed in `dtype`).
    k: Keys, `[*B, t, h, D]`; `H` must be a multiple of `h` (GQA: query head
      `i` uses key head `i // (H // h)`).
    bias: Optional, broadcastable to `[*B, H, T, t]`.
    logits_scale: Defaults to `1 / sqrt(D)`.
    dtype: The dtype computed in and returned: f32, or f64 (which needs
      `jax.enable_x64`).

  Raises:
    ValueError: if `H` is not a multiple of `h`.
  """
  q, k, bias = (_as(x, dtype) for x in (q, k, bias))
  num_heads_q, num_heads_k = q.shape[-2], k.shape[-2]
  if num_heads_q % num_heads_k:
    raise ValueError(
        f"q heads ({num_heads_q}) must be a multiple of k heads"
        f" ({num_heads_k})."
    )
  k = jnp.repeat(k, num_heads_q // num_heads_k, axis=-2)
  if logits_scale is None:
    logits_scale = 1 / math.sqrt(q.shape[-1])
  u = logits_scale * jnp.einsum(
      "...qhd,...khd->...hqk", q, k, precision=_HIGHEST
  )
  return u if bias is None else u + bias


def attention(
    q: Float[Array, "*B T H D"],
    k: Float[Array, "*B t h D"],
    v: Float[Array, "*B t h d"],
    bias: Float[Array, "*#B #H #T #t"] | None = None,
    *,
    mask: Bool[Array, "*#B #H #T #t"] | None = None,
    logits_soft_cap: float | None = None,
    logits_scale: float | None = None,
    dtype: jnp.dtype = jnp.float32,
) -> Float[Array, "*B T H d"]:
  """Returns soft-capped attention, computed unfused in `dtype`.

  Args:
    q: Queries, `[*B, T, H, D]`, any float dtype (computed in `dtype`).
    k: Keys, `[*B, t, h, D]`; `H` a multiple of `h` (GQA).
    v: Values, `[*B, t, h, d]`.
    bias: Optional additive bias, broadcastable to `[*B, H, T, t]`.
    mask: Optional boolean mask (`True` attends), broadcastable to
      `[*B, H, T, t]`.
    logits_soft_cap: Optional cap `c > 0`: `s = c * tanh(u / c)`.
    logits_scale: Defaults to `1 / sqrt(D)`.
    dtype: The dtype computed in and returned: f32, or f64 (which needs
      `jax.enable_x64`).

  Returns:
    The attention output, `[*B, T, H, d]`, in `dtype`.

  Raises:
    ValueError: if `H` is not a multiple of `h`.
  """
  s = logits(q, k, bias=bias, logits_scale=logits_scale, dtype=dtype)
  if logits_soft_cap is not None:
    s = logits_soft_cap * jnp.tanh(s / logits_soft_cap)
  if mask is not None:
    s = jnp.where(mask, s, jnp.finfo(dtype).min)
  weights = jax.nn.softmax(s, axis=-1)
  v = _as(v, dtype)
  v = jnp.repeat(v, q.shape[-2] // v.shape[-2], axis=-2)
  return jnp.einsum("...hqk,...khd->...qhd", weights, v, precision=_HIGHEST)
