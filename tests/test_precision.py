"""`precision=HIGHEST` gives 16-bit inputs the XLA implementation's accuracy.

With bf16 or f16 inputs the kernels round their f32 dot operands (the
weights `p` of `p @ v` and dv, `ds` of dq and dk) to the input dtype, and the
VJP takes `delta = rowsum(dout * out)` from the rounded `out`
(docs/accuracy.md, "bf16"). With `precision=HIGHEST` (patch 0019) they give
each operand as two 16-bit terms and take `delta` from the f32 weights: every
gradient's error against the fp32 reference is then within `verify`'s bound,
1.25x that of tokamax's XLA implementation on the same inputs, for every mask
variant, with and without the cap, MHA and GQA, and with a broadcast bias.
"""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import pytest
from tokamax._src.ops.attention import api
import tokamax_softcap
from tokamax_softcap import harness
from tokamax_softcap import patched
from tokamax_softcap import reference
from tokamax_softcap import verify
import configs  # pylint: disable=g-bad-import-order
import numerics  # pylint: disable=g-bad-import-order

CAP = configs.CAP
LOGIT_STD = 2 * CAP
HIGHEST = jax.lax.Precision.HIGHEST
# XLA's dots on the CPU: bf16 at its default; f16 as f32 (XLA:CPU has no
# `F16_F16_F32` dot; products of f16 numbers are exact in f32 either way).
XLA_PRECISION = {
    "bfloat16": jax.lax.Precision.DEFAULT,
    "float16": jax.lax.DotAlgorithmPreset.F32_F32_F32,
}
CONFIGS = (
    configs.GQA_64,
    configs.MHA_128_RAGGED,
    dataclasses.replace(configs.MHA_128_RAGGED, logits_soft_cap=None),
)


@pytest.mark.parametrize("variant", harness.MASK_VARIANTS)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize(
    "config",
    CONFIGS,
    ids=lambda c: c.name + ("" if c.logits_soft_cap else "-no-cap"),
)
def test_highest_precision_matches_xla(config, dtype, variant):
  grads = harness.gradients(
      config, variant, dtype, LOGIT_STD, precision=HIGHEST
  )
  xla = harness.gradients(
      config,
      variant,
      dtype,
      LOGIT_STD,
      op=api.IMPLEMENTATIONS["xla"],
      with_reference=False,
      precision=XLA_PRECISION[dtype],
  )
  if config.logits_soft_cap is not None:
    assert grads.max_logit >= 5 * config.logits_soft_cap
  errors = harness.relative_errors(grads.actual, grads.expected)
  xla_errors = harness.relative_errors(xla.actual, grads.expected)
  for name, error in errors.items():
    assert error <= verify.XLA_FACTOR * xla_errors[name], (
        name,
        error,
        xla_errors[name],
    )


def test_split_for_dot():
  """Two terms that sum to `x` to ~2x the bits; no NaN where `hi` overflows."""
  split = patched.pallas_triton_vjp.split_for_dot
  x = jax.random.normal(jax.random.PRNGKey(0), (64, 64)) * 100.0
  # bf16's `lo` holds 8 more bits; f16's 11, down to f16's smallest
  # subnormal, 2**-24, so half that bounds its absolute error.
  for dtype, bits, atol in ((jnp.bfloat16, 16, 0.0), (jnp.float16, 21, 2**-25)):
    (single,) = split(x, dtype, False)
    hi, lo = split(x, dtype, True)
    assert single.dtype == hi.dtype == lo.dtype == dtype
    chex.assert_trees_all_equal(single, hi)
    error = jnp.abs(hi.astype(jnp.float32) + lo.astype(jnp.float32) - x)
    assert bool(jnp.all(error <= 2.0**-bits * jnp.abs(x) + atol))
  hi, lo = split(jnp.array([[7e4, 1.0]]), jnp.float16, True)
  assert hi.tolist() == [[float("inf"), 1.0]] and lo.tolist() == [[0.0, 0.0]]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_highest_precision_broadcast_bias(dtype):
  """A bias broadcast over the batch: dbias within 1.25x XLA's error.

  Its `ds` is summed over the batch in f32: summed in f16, f16's dbias error
  was 3.6e-4 against XLA's 1.6e-4 (CPU interpreter).
  """
  cap = configs.CAP
  q, k, v, bias, dout = numerics.random_inputs(
      (2, 256, 4, 64), 2, scale=LOGIT_STD**0.5, with_bias=True
  )
  args = tuple(x.astype(dtype) for x in (q, k, v, bias[:1]))
  dout = dout.astype(dtype)
  f32 = lambda x: x.astype(jnp.float32)
  ref = lambda q, k, v, b: reference.attention(
      q, k, v, b, mask=jnp.tri(256, dtype=bool), logits_soft_cap=cap
  )
  _, ref_vjp = jax.vjp(ref, *map(f32, args))
  expected = ref_vjp(f32(dout))
  numerics.assert_cap_active(*map(f32, args[:2]), cap, 5)

  def grads(op, precision):
    f = lambda q, k, v, b: op(
        q,
        k,
        v,
        bias=b,
        logits_soft_cap=cap,
        is_causal=True,
        precision=precision,
    )
    _, f_vjp = jax.vjp(f, *args)
    return f_vjp(dout)

  actual = grads(tokamax_softcap.PallasTritonFlashAttention(), HIGHEST)
  xla = grads(api.IMPLEMENTATIONS["xla"], XLA_PRECISION[dtype])
  for name, a, x, e in zip(harness.GRADS, actual, xla, expected):
    error = harness.relative_error(a, e)
    xla_error = harness.relative_error(x, e)
    assert error <= verify.XLA_FACTOR * xla_error, (name, error, xla_error)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_default_precision_is_not_highest(dtype):
  """Guards the test above: on its inputs, `HIGHEST` changes the gradients."""
  config, variant = configs.GQA_64, "causal"
  # Compared with each other: no reference needed.
  kwargs = dict(with_reference=False)
  highest = harness.gradients(
      config, variant, dtype, LOGIT_STD, precision=HIGHEST, **kwargs
  )
  default = harness.gradients(
      config,
      variant,
      dtype,
      LOGIT_STD,
      precision=jax.lax.Precision.DEFAULT,
      **kwargs,
  )
  dq, dq_highest = default.actual[0], highest.actual[0]
  # Measured (CPU interpreter): bf16 6.2e-3, f16 9.3e-4.
  assert harness.relative_error(dq, dq_highest) > 1e-4
