"""Head dims past 256 (320, 384, 512) and f32 at head_dim 256 with TF32.

Before patch 0015 the forward's default config did not fit in a Hopper GPU's
shared memory for these shapes (it asked for 256-512 KiB; an H200 has 227
KiB): a compile error. Here the kernels run with the default configs their
heuristics pick, against the fp32 reference.
"""

import dataclasses

import jax
import jax.numpy as jnp
import pytest
import tokamax_softcap
from tokamax_softcap import harness
from tokamax_softcap import reference
import configs  # pylint: disable=g-bad-import-order
import numerics  # pylint: disable=g-bad-import-order

CAP = configs.CAP
LOGIT_STD = 2 * CAP


def _config(head_dim: int, cap: float | None = CAP) -> harness.Config:
  return dataclasses.replace(
      configs.GQA_WIDE, head_dim=head_dim, logits_soft_cap=cap
  )


@pytest.mark.parametrize(
    "head_dim, variant",
    [
        (512, "causal"),
        (512, "window"),
        (512, "bias"),
        (384, "causal"),
        (320, "window"),
    ],
)
def test_f32_gradients_match_reference(head_dim, variant):
  grads = harness.gradients(_config(head_dim), variant, "float32", LOGIT_STD)
  assert grads.max_logit >= 5 * CAP
  pairs = [
      (a, e) for a, e in zip(grads.actual, grads.expected) if e is not None
  ]
  numerics.assert_close_f32(*zip(*pairs), atol=numerics.WIDE_F32_ATOL)


def test_f32_uncapped_gradients_match_reference():
  # Logits of standard deviation 2 (largest 7.5): without a cap, the tests'
  # logits (to 75) leave one key per row and amplify f32 rounding past the
  # tolerance (7e-5 relative, one element) between kernel and reference.
  grads = harness.gradients(_config(512, None), "causal", "float32", 2.0)
  numerics.assert_close_f32(
      grads.actual[:3], grads.expected[:3], atol=numerics.WIDE_F32_ATOL
  )


@pytest.mark.parametrize("head_dim", [256, 512])
def test_f32_default_precision(head_dim):
  # On a GPU, DEFAULT lets the dots take TF32 operands (and the forward's
  # shared memory differs from HIGHEST's); on a CPU it is f32.
  bound = numerics.WIDE_F32_ATOL
  if jax.default_backend() == "gpu":
    bound = numerics.TF32_BOUND
  grads = harness.gradients(
      _config(head_dim),
      "causal",
      "float32",
      LOGIT_STD,
      precision=jax.lax.Precision.DEFAULT,
  )
  assert grads.max_logit >= 5 * CAP
  for name, actual, expected in zip(
      harness.GRADS, grads.actual, grads.expected
  ):
    if expected is not None:
      error = harness.relative_error(actual, expected)
      assert error <= bound, (name, error)


@pytest.mark.parametrize(
    "head_dim, dtype",
    [(512, "bfloat16"), (384, "float16"), (320, "bfloat16"), (512, "float16")],
)
def test_16bit_gradients_match_reference(head_dim, dtype):
  grads = harness.gradients(
      _config(head_dim),
      "causal",
      dtype,
      LOGIT_STD,
      precision=jax.lax.Precision.DEFAULT,
  )
  assert grads.max_logit >= 5 * CAP
  for name, actual, expected in zip(
      harness.GRADS, grads.actual, grads.expected
  ):
    if expected is None:
      continue
    assert actual.dtype == jnp.dtype(dtype)
    error = harness.relative_error(actual, expected)
    assert error <= numerics.WIDE_16BIT_BOUND[dtype], (name, error)


@pytest.mark.parametrize("qk_dim, v_dim", [(512, 64), (64, 512), (256, 512)])
def test_f32_value_head_dim_differs(qk_dim, v_dim):
  # The forward's config must fit the widest of `q`, `k` and `v`, and its
  # `block_d_out` divide v's head dim.
  scale = (LOGIT_STD * qk_dim**0.5) ** 0.5 / qk_dim**0.25
  q, k, v, _, dout = numerics.random_inputs(
      (1, 128, 2, qk_dim), 1, scale=scale, v_dim=v_dim
  )
  numerics.assert_cap_active(q, k, CAP, 3)
  op = tokamax_softcap.PallasTritonFlashAttention()
  mask = jnp.tri(128, dtype=bool)
  f = lambda q, k, v: op(
      q,
      k,
      v,
      is_causal=True,
      logits_soft_cap=CAP,
      precision=jax.lax.Precision.HIGHEST,
  )
  ref = lambda q, k, v: reference.attention(
      q, k, v, mask=mask, logits_soft_cap=CAP
  )
  out, f_vjp = jax.vjp(f, q, k, v)
  ref_out, ref_vjp = jax.vjp(ref, q, k, v)
  numerics.assert_close_f32(
      (out, *f_vjp(dout)),
      (ref_out, *ref_vjp(dout)),
      atol=numerics.WIDE_F32_ATOL,
  )
