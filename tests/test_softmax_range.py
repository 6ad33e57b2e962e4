"""Every intermediate stays in its dtype's range, for every cap and softmax.

With a soft cap `c <= 60` tokamax picks the softmax without a running maximum
(`p = exp(s)`, `s` in `[-c, c]`), and the kernel casts `p` to the dtype of `v`
for `p @ v`: in f16 `exp(s)` overflows above `s = 11.09`. The op now takes
that softmax only where `exp(c)` and `exp(-c)` are normal in that dtype (and
`c <= 60`), and rejects `use_stable_softmax=False` elsewhere.
"""

import math

import chex
import jax
import jax.numpy as jnp
import pytest
import tokamax
from tokamax._src.ops.attention import base
import tokamax_softcap
from tokamax_softcap import harness
from tokamax_softcap import reference
import numerics  # pylint: disable=g-bad-import-order

CAPS = (0.5, 5.0, 11.0, 12.0, 30.0, 50.0, 60.0, 61.0, 1000.0)
SHAPE = (1, 64, 2, 32)  # B, T, H, D; one kv head (MQA).
# `max|x - ref| / max|ref|` over out, dq, dk, dv (and dbias) for pre-cap
# logits from 0.1x to 100x the cap. Measured worst (CPU, interpret): f16
# 1.0e-2 and bf16 2.8e-2 (dk; docs/accuracy.md, "bf16", names the causes, none a
# range); f32 1.8e-5 for caps up to 61, and at cap 1000 6.3e-5 on one CPU,
# 1.13e-4 on an AMD EPYC (2026-12-01): the f32 rounding of pre-cap logits near
# the cap, an ulp of `c`, moves `s` by as much (1.9 units of `c * 2**-24`
# there), in the summation order of the machine's dots. So f32 gets
# `F32_CAP_UNITS` units of the cap where that is more than its bound.
BOUNDS = {jnp.float32: 1e-4, jnp.float16: 2e-2, jnp.bfloat16: 4e-2}
F32_CAP_UNITS = 4
SOFTMAX = {"auto": base.AUTO, "stable": True, "unstable": False}


def _inputs(cap, dtype, with_bias):
  """Returns q, k, v, bias, dout; row `i` of `u` reaches `g_i * cap`.

  `g` runs geometrically from 0.1 to 100 over the query rows. In f16 the
  scale is split between `q` and `k` so that both stay in range.
  """
  t = SHAPE[1]
  q, k, v, bias, dout = numerics.random_inputs(SHAPE, 1, with_bias=with_bias)
  row_max = jnp.max(jnp.abs(reference.logits(q, k)), axis=(1, 3))  # [B, T]
  factor = jnp.geomspace(0.1, 100.0, t) * cap / row_max
  k_scale = jnp.sqrt(jnp.max(factor)) if dtype == jnp.float16 else 1.0
  q *= (factor / k_scale)[..., None, None]
  k *= k_scale
  if with_bias:
    bias = 0.1 * cap * bias
  cast = lambda x: None if x is None else x.astype(dtype)
  return tuple(map(cast, (q, k, v, bias, dout)))


def _fits_unstable(cap, dtype):
  finfo = jnp.finfo(dtype)
  return cap <= min(60.0, math.log(finfo.max), -math.log(finfo.tiny))


def _op_vjp(cap, dtype, softmax, variant):
  """Returns the op's output and gradients as a function of its inputs.

  Args:
    cap: The soft cap.
    dtype: The inputs' dtype.
    softmax: A key of `SOFTMAX`.
    variant: `"causal"`, or `"bias"` (with a bias; not causal).

  Returns:
    `f(q, k, v, bias, dout) -> (out, dq, dk, dv[, dbias])` (no `dbias`
    without a bias).
  """
  op = tokamax_softcap.PallasTritonFlashAttention(
      use_stable_softmax=SOFTMAX[softmax]
  )
  kwargs = dict(logits_soft_cap=cap, is_causal=variant == "causal")
  if dtype == jnp.float32:  # Not TF32 on a GPU.
    kwargs["precision"] = jax.lax.Precision.HIGHEST

  def op_vjp(q, k, v, bias, dout):
    args = (q, k, v) if bias is None else (q, k, v, bias)
    f = lambda q, k, v, bias=None: op(q, k, v, bias=bias, **kwargs)
    out, f_vjp = jax.vjp(f, *args)
    return (out, *f_vjp(dout))

  return op_vjp


@pytest.mark.parametrize("variant", ["causal", "bias"])
@pytest.mark.parametrize("softmax", ["stable", "unstable"])
@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize(
    "dtype", [jnp.float32, jnp.bfloat16, jnp.float16], ids=lambda d: d.__name__
)
def test_range_sweep(dtype, cap, softmax, variant):
  """Right value: the fp32 reference's, within `BOUNDS`, all finite; a forced
  softmax without maximum that the dtype cannot hold raises `ValueError`.
  (`auto`, the default, is one of the two: `test_auto_softmax`.)"""
  q, k, v, bias, dout = _inputs(cap, dtype, variant == "bias")
  f32 = lambda x: None if x is None else x.astype(jnp.float32)
  row_max = jnp.max(jnp.abs(reference.logits(f32(q), f32(k))), axis=(0, 1, 3))
  # The cap is active: logits (before the bias, of about 0.3x the cap) from
  # within the cap to far beyond it.
  assert float(jnp.min(row_max)) <= 0.2 * cap
  assert float(jnp.max(row_max)) >= 90 * cap
  op_vjp = _op_vjp(cap, dtype, softmax, variant)
  if softmax == "unstable" and not _fits_unstable(cap, dtype):
    with pytest.raises(ValueError, match="use_stable_softmax"):
      op_vjp(q, k, v, bias, dout)
    return
  actual = op_vjp(q, k, v, bias, dout)
  args = (q, k, v) if bias is None else (q, k, v, bias)
  mask = jnp.tri(SHAPE[1], dtype=bool) if variant == "causal" else None
  ref = lambda q, k, v, bias=None: reference.attention(
      q, k, v, bias, mask=mask, logits_soft_cap=cap
  )
  ref_out, ref_vjp = jax.vjp(ref, *map(f32, args))
  expected = (ref_out, *ref_vjp(f32(dout)))
  chex.assert_tree_all_finite(actual)
  bound = BOUNDS[dtype]
  if dtype == jnp.float32:
    bound = max(bound, F32_CAP_UNITS * cap * 2.0**-24)
  for a, e in zip(actual, expected):
    assert harness.relative_error(a, e) <= bound


@pytest.mark.parametrize("variant", ["causal", "bias"])
@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize(
    "dtype", [jnp.float32, jnp.bfloat16, jnp.float16], ids=lambda d: d.__name__
)
def test_auto_softmax(dtype, cap, variant):
  """`auto` takes the softmax without maximum where the dtype holds it, the
  stable one elsewhere: on `test_range_sweep`'s inputs, the very program
  (traced, not run) whose values that test checks there."""
  inputs = _inputs(cap, dtype, variant == "bias")
  held = "unstable" if _fits_unstable(cap, dtype) else "stable"
  programs = {
      softmax: str(
          jax.make_jaxpr(_op_vjp(cap, dtype, softmax, variant))(*inputs)
      )
      for softmax in {"auto", "stable", held}
  }
  assert programs["auto"] == programs[held]
  if held == "unstable":  # The two softmaxes are distinct programs.
    assert programs["stable"] != programs["unstable"]


@pytest.mark.parametrize("via_api", [False, True])
def test_f16_logits_all_at_12(via_api):
  """`q = k = sqrt(3)`: every pre-cap logit is 12 (capped 11.77 at cap 50),
  `exp(11.77)` overflows f16 (`sqrt(3)` rounds up in f16). Right value:
  uniform weights, so `out`, `dk` and `dv` as the reference's, and `dq = 0`
  (the softmax gradient sums to zero over keys that are all equal) up to the
  f16 rounding of `out` (an ulp of 1 is 9.8e-4), all finite."""
  shape = (1, 16, 1, 16)
  q = jnp.full(shape, math.sqrt(3.0), jnp.float16)
  v = jax.random.normal(jax.random.PRNGKey(0), shape, jnp.float16)
  dout = jax.random.normal(jax.random.PRNGKey(1), shape, jnp.float16)
  if via_api:
    f = lambda q, k, v: tokamax.dot_product_attention(
        q, k, v, logits_soft_cap=50.0, implementation="triton"
    )
  else:
    f = lambda q, k, v: tokamax_softcap.PallasTritonFlashAttention()(
        q, k, v, logits_soft_cap=50.0
    )
  out, f_vjp = jax.vjp(f, q, q, v)
  dq, dk, dv = f_vjp(dout)
  f32 = lambda x: x.astype(jnp.float32)
  assert float(jnp.min(reference.logits(f32(q), f32(q)))) >= 12.0
  ref = lambda q, k, v: reference.attention(q, k, v, logits_soft_cap=50.0)
  ref_out, ref_vjp = jax.vjp(ref, f32(q), f32(q), f32(v))
  chex.assert_tree_all_finite((out, dq, dk, dv))
  assert harness.relative_error(out, ref_out) <= BOUNDS[jnp.float16]
  _, ref_dk, ref_dv = ref_vjp(f32(dout))
  assert harness.relative_error(dk, ref_dk) <= BOUNDS[jnp.float16]
  assert harness.relative_error(dv, ref_dv) <= BOUNDS[jnp.float16]
  assert float(jnp.max(jnp.abs(f32(dq)))) <= 1e-3


@pytest.mark.parametrize("cap", [50.0, 60.0])
def test_f16_causal_logits_sd_9(cap):
  """f16 `[1, 128, 2, 64]`, `q, k ~ N(0, 9)`, causal: 234 of 256 output rows
  were not finite. Right value: the reference's, all finite."""
  keys = jax.random.split(jax.random.PRNGKey(0), 4)
  shape = (1, 128, 2, 64)
  q, k = (3.0 * jax.random.normal(x, shape, jnp.float16) for x in keys[:2])
  v, dout = (jax.random.normal(x, shape, jnp.float16) for x in keys[2:])
  f32 = lambda x: x.astype(jnp.float32)
  assert float(jnp.max(reference.logits(f32(q), f32(k)))) > 11.09
  op = tokamax_softcap.PallasTritonFlashAttention()
  f = lambda q, k, v: op(q, k, v, logits_soft_cap=cap, is_causal=True)
  out, f_vjp = jax.vjp(f, q, k, v)
  actual = (out, *f_vjp(dout))
  mask = jnp.tri(shape[1], dtype=bool)
  ref = lambda q, k, v: reference.attention(
      q, k, v, mask=mask, logits_soft_cap=cap
  )
  ref_out, ref_vjp = jax.vjp(ref, f32(q), f32(k), f32(v))
  chex.assert_tree_all_finite(actual)
  for a, e in zip(actual, (ref_out, *ref_vjp(f32(dout)))):
    assert harness.relative_error(a, e) <= BOUNDS[jnp.float16]
