"""Soft-capped gradients against the fp32 reference, with the cap active.

Inputs have pre-cap logits with standard deviation 2x the cap, so that most
of them lie where `tanh` bends and the largest pass 5x the cap (asserted in
every test that compares values).
"""

import dataclasses

import chex
import jax.numpy as jnp
import pytest
from tokamax_softcap import harness
import configs  # pylint: disable=g-bad-import-order
import numerics  # pylint: disable=g-bad-import-order

CAP = configs.CAP
LOGIT_STD = 2 * CAP
CONFIG = configs.GQA_64
CONFIG_MHA_128 = configs.MHA_128_RAGGED


@pytest.mark.parametrize("variant", harness.MASK_VARIANTS)
@pytest.mark.parametrize(
    "config", [CONFIG, CONFIG_MHA_128], ids=lambda c: c.name
)
def test_f32_gradients_match_reference(config, variant):
  grads = harness.gradients(config, variant, "float32", LOGIT_STD)
  assert grads.max_logit >= 5 * CAP
  pairs = [
      (a, e) for a, e in zip(grads.actual, grads.expected) if e is not None
  ]
  numerics.assert_close_f32(*zip(*pairs))


@pytest.mark.parametrize("variant", harness.MASK_VARIANTS)
def test_bf16_gradients_match_reference(variant):
  grads = harness.gradients(CONFIG, variant, "bfloat16", LOGIT_STD)
  assert grads.max_logit >= 5 * CAP
  for name, actual, expected in zip(
      harness.GRADS, grads.actual, grads.expected
  ):
    if expected is None:
      continue
    assert actual.dtype == jnp.bfloat16
    error = harness.relative_error(actual, expected)
    assert error <= numerics.BF16_REGRESSION_BOUND, (name, error)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_k_start_packing_equals_dense_packing_bitwise(dtype):
  # Compared with each other: no reference needed.
  kwargs = dict(with_reference=False)
  k_start = harness.gradients(
      CONFIG, "packed-k-start", dtype, LOGIT_STD, **kwargs
  )
  dense = harness.gradients(CONFIG, "packed-dense", dtype, LOGIT_STD, **kwargs)
  assert k_start.max_logit >= 5 * CAP
  chex.assert_trees_all_equal(k_start.actual, dense.actual)


def test_gradients_are_deterministic():
  kwargs = dict(with_reference=False)
  first = harness.gradients(CONFIG, "bias", "float32", LOGIT_STD, **kwargs)
  second = harness.gradients(CONFIG, "bias", "float32", LOGIT_STD, **kwargs)
  chex.assert_trees_all_equal(first.actual, second.actual)


def test_cap_changes_the_gradients():
  """Guards the tests above: with these inputs, the cap is not a no-op."""
  kwargs = dict(with_reference=False)
  capped = harness.gradients(CONFIG, "causal", "float32", LOGIT_STD, **kwargs)
  uncapped_config = dataclasses.replace(CONFIG, logits_soft_cap=1e6)
  uncapped = harness.gradients(
      uncapped_config, "causal", "float32", LOGIT_STD, **kwargs
  )
  dq, dq_uncapped = capped.actual[0], uncapped.actual[0]
  assert harness.relative_error(dq, dq_uncapped) > 0.5
