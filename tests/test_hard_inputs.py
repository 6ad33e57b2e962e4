"""Soft-capped attention on hard inputs, each against the value it must give."""

import math

import chex
import jax
import jax.numpy as jnp
import pytest
from tokamax._src.ops.attention import base
import tokamax_softcap
from tokamax_softcap import harness
from tokamax_softcap import reference
import numerics  # pylint: disable=g-bad-import-order

HIGHEST = jax.lax.Precision.HIGHEST
SHAPE = (2, 128, 4, 64)  # B, T, H, D
KV_HEADS = 2


def _normal(seed, shape, scale=1.0, dtype=jnp.float32):
  return (scale * jax.random.normal(jax.random.PRNGKey(seed), shape)).astype(
      dtype
  )


def _qkv(scale=1.0, dtype=jnp.float32, shape=SHAPE):
  b, t, h, d = shape
  q = _normal(0, shape, scale, dtype)
  k = _normal(1, (b, t, KV_HEADS, d), scale, dtype)
  v = _normal(2, (b, t, KV_HEADS, d), 1.0, dtype)
  dout = _normal(3, shape, 1.0, dtype)
  return q, k, v, dout


def _vjp(f, *args):
  """Returns `f(*args[:-1])` and its VJP at cotangent `args[-1]`."""
  out, f_vjp = jax.vjp(f, *args[:-1])
  return out, f_vjp(args[-1])


def _op(**kwargs):
  op = tokamax_softcap.PallasTritonFlashAttention()
  return lambda q, k, v, bias=None: op(
      q, k, v, bias=bias, precision=HIGHEST, **kwargs
  )


def _ref(**kwargs):
  return lambda q, k, v, bias=None: reference.attention(q, k, v, bias, **kwargs)


def test_saturated_cap_gives_zero_dq_dk():
  """Pre-cap logits >= 100x the cap everywhere: `1 - t^2` is 0 in f32.

  Right value: `dq = dk = 0` exactly (every logit is on the flat part of
  `tanh`); `out` and `dv` as the reference's (softmax over `s = +-c`).
  """
  cap = 1.0
  b, t, h, d = SHAPE
  direction = jnp.ones((d,)) / math.sqrt(d)
  sign = jnp.sign(_normal(4, (b, t, KV_HEADS, 1)))
  # u = q.k / sqrt(D) ~ +-40 * 40 / 8 = +-200 (>= 100 with the noise).
  q = 40.0 * direction + 0.1 * _normal(0, SHAPE)
  k = sign * 40.0 * direction + 0.1 * _normal(1, (b, t, KV_HEADS, d))
  v, dout = _normal(2, (b, t, KV_HEADS, d)), _normal(3, SHAPE)
  u = reference.logits(q, k)
  assert float(jnp.min(jnp.abs(u))) >= 100 * cap
  out, (dq, dk, dv) = _vjp(_op(logits_soft_cap=cap), q, k, v, dout)
  ref_out, (_, _, ref_dv) = _vjp(_ref(logits_soft_cap=cap), q, k, v, dout)
  assert not jnp.any(dq) and not jnp.any(dk)
  numerics.assert_close_f32((out, dv), (ref_out, ref_dv))


def test_tiny_cap():
  """Cap 0.05: logits in [-0.05, 0.05]; right value: the reference's."""
  cap = 0.05
  q, k, v, dout = _qkv()
  numerics.assert_cap_active(q, k, cap, 3)
  actual = _vjp(_op(logits_soft_cap=cap), q, k, v, dout)
  expected = _vjp(_ref(logits_soft_cap=cap), q, k, v, dout)
  numerics.assert_close_f32(actual, expected)


def test_huge_cap_equals_uncapped():
  """Cap 1e6 over logits of ~5: `c tanh(u/c) = u` to f32 rounding.

  Right value: the uncapped op's output and gradients (both use the stable
  softmax, as `c > 60`).
  """
  q, k, v, dout = _qkv()
  capped = _vjp(_op(logits_soft_cap=1e6), q, k, v, dout)
  uncapped = _vjp(_op(), q, k, v, dout)
  numerics.assert_close_f32(capped, uncapped)


@pytest.mark.parametrize("logits_dtype", [None, jnp.bfloat16])
def test_bf16_logits_near_1e4_head_dim_256(logits_dtype):
  """bf16, head_dim 256, pre-cap logits up to ~1e4, cap 50.

  Right value: finite; within 2x the error of tokamax's XLA implementation on
  the same inputs (the cap saturates: gradients come from the few logits
  within a few caps of zero).
  """
  cap = 50.0
  shape = (1, 128, 2, 256)
  q, k, v, dout = _qkv(
      scale=math.sqrt(1e4 / 4), dtype=jnp.bfloat16, shape=shape
  )
  f32 = lambda x: x.astype(jnp.float32)
  u = reference.logits(f32(q), f32(k))
  assert float(jnp.max(jnp.abs(u))) >= 1e4
  kwargs = dict(logits_soft_cap=cap)
  if logits_dtype is not None:
    kwargs["logits_dtype"] = logits_dtype
  op = tokamax_softcap.PallasTritonFlashAttention()
  xla = base.DotProductAttention()
  actual = _vjp(lambda q, k, v: op(q, k, v, **kwargs), q, k, v, dout)
  baseline = _vjp(lambda q, k, v: xla(q, k, v, **kwargs), q, k, v, dout)
  expected = _vjp(_ref(logits_soft_cap=cap), *map(f32, (q, k, v, dout)))
  chex.assert_tree_all_finite(actual)
  for a, x, e in zip(
      jax.tree.leaves(actual),
      jax.tree.leaves(baseline),
      jax.tree.leaves(expected),
  ):
    err = harness.relative_error(a, e)
    baseline_err = harness.relative_error(x, e)
    assert err <= max(2 * baseline_err, 1e-3), (err, baseline_err)


def test_zero_cotangent_gives_zero_gradients():
  q, k, v, dout = _qkv(scale=3.0)
  bias = _normal(5, (2, 4, 128, 128))
  _, grads = _vjp(
      _op(logits_soft_cap=1.0, is_causal=True),
      q,
      k,
      v,
      bias,
      jnp.zeros_like(dout),
  )
  for g in grads:
    assert not jnp.any(g)


def test_min_bias_as_mask_is_squashed_to_minus_cap():
  """A bias of `finfo.min` is not a mask under a cap: `c tanh(u/c) = -c`.

  Right value: the reference's, which applies the cap after the bias, as the
  kernels do. Those entries keep weight `exp(-c)` relative to a zero logit,
  so the result differs from masking them (use `mask=` to mask).
  """
  cap = 2.0
  q, k, v, dout = _qkv()
  keep = jax.random.bernoulli(jax.random.PRNGKey(6), 0.7, (2, 4, 128, 128))
  bias = jnp.where(keep, 0.0, jnp.finfo(jnp.float32).min)
  actual = _vjp(_op(logits_soft_cap=cap), q, k, v, bias, dout)
  expected = _vjp(_ref(logits_soft_cap=cap), q, k, v, bias, dout)
  numerics.assert_close_f32(actual, expected)
  masked = _ref(logits_soft_cap=cap, mask=keep)(q, k, v)
  assert float(jnp.max(jnp.abs(actual[0] - masked))) > 1e-2


@pytest.mark.parametrize("cap", [10.0, 100.0], ids=["unstable", "stable"])
@pytest.mark.parametrize("how", ["dense", "k_start"])
def test_fully_masked_rows_are_zero(cap, how):
  """Rows 0-63 attend to no key. Cap 10 (<= 60) selects the unstable softmax,
  100 the stable one; `k_start` past the last key makes the forward visit no
  block for them.

  Right value: those rows' output and `dq` are exactly 0, they add nothing to
  `dk` and `dv` (equal to the gradients with their `dout` zeroed), nothing is
  NaN, and the other rows match the reference.
  """
  q, k, v, dout = _qkv(scale=2.0)
  t = q.shape[1]
  attends = jnp.arange(t) >= 64
  if how == "dense":
    mask = attends[None, :, None]
  else:
    mask = base.Mask(k_start=jnp.where(attends, 0, t))
  f = _op(logits_soft_cap=cap, mask=mask)
  out, (dq, dk, dv) = _vjp(f, q, k, v, dout)
  _, (_, dk_rest, dv_rest) = _vjp(f, q, k, v, dout.at[:, :64].set(0.0))
  chex.assert_tree_all_finite((out, dq, dk, dv))
  assert not jnp.any(out[:, :64]) and not jnp.any(dq[:, :64])
  chex.assert_trees_all_equal((dk, dv), (dk_rest, dv_rest))
  ref_mask = jnp.broadcast_to(attends[:, None], (t, t))
  ref = _ref(logits_soft_cap=cap, mask=ref_mask)
  ref_out, ref_grads = _vjp(ref, q, k, v, dout.at[:, :64].set(0.0))
  numerics.assert_close_f32(
      (out[:, 64:], dk, dv), (ref_out[:, 64:], *ref_grads[1:])
  )


# Relative bounds `max|x - ref| / max|ref|` for logits up to ~900: f32, as
# `verify`'s (the f32 rounding of such logits, an ulp of 6e-5, moves the
# weights; measured 1.7e-5 here); f16, 2x the measured 1.1e-3 (f16 inputs).
STABLE_BOUNDS = {jnp.float32: 3e-5, jnp.float16: 2.2e-3}


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float16])
def test_stable_softmax_with_saturating_cap(dtype):
  """Cap 100 (> 60 selects the stable softmax) with logits past 5x the cap.

  Right value: the reference's, within `STABLE_BOUNDS`.
  """
  cap = 100.0
  q, k, v, dout = _qkv(scale=math.sqrt(2 * cap), dtype=dtype)
  f32 = lambda x: x.astype(jnp.float32)
  numerics.assert_cap_active(q, k, cap, 5)
  actual = _vjp(_op(logits_soft_cap=cap, is_causal=True), q, k, v, dout)
  mask = jnp.tri(q.shape[1], dtype=bool)
  expected = _vjp(
      _ref(logits_soft_cap=cap, mask=mask), *map(f32, (q, k, v, dout))
  )
  for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected)):
    assert harness.relative_error(a, e) <= STABLE_BOUNDS[dtype]
