"""Our op under jax.jit, jax.grad, jax.vmap and jax.checkpoint, with a cap.

(Through `tokamax.dot_product_attention`: `test_api.py`.)
"""

import chex
import jax
import jax.numpy as jnp
import tokamax_softcap
from tokamax_softcap import reference
import numerics  # pylint: disable=g-bad-import-order

CAP = 1.0
HIGHEST = jax.lax.Precision.HIGHEST


def _inputs(batch_shape=(2,)):
  q, k, v, _, _ = numerics.random_inputs((*batch_shape, 128, 2, 32), 2)
  numerics.assert_cap_active(q, k, CAP, 3)
  return q, k, v


def _attention(q, k, v):
  return tokamax_softcap.PallasTritonFlashAttention()(
      q, k, v, is_causal=True, logits_soft_cap=CAP, precision=HIGHEST
  )


def _reference(q, k, v):
  mask = jnp.tri(q.shape[-3], dtype=bool)
  return reference.attention(q, k, v, mask=mask, logits_soft_cap=CAP)


def _loss(f):
  return lambda q, k, v: jnp.sum(jnp.sin(f(q, k, v)))


def _close(actual, expected):
  numerics.assert_close_f32(actual, expected, scale=numerics.max_abs(expected))


def test_jit():
  q, k, v = _inputs()
  _close(jax.jit(_attention)(q, k, v), _reference(q, k, v))


def test_grad():
  q, k, v = _inputs()
  grad = lambda f: jax.grad(_loss(f), argnums=(0, 1, 2))(q, k, v)
  _close(grad(_attention), grad(_reference))


def test_vmap():
  q, k, v = _inputs(batch_shape=(3, 2))
  grad = lambda f: jax.grad(_loss(jax.vmap(f)), argnums=(0, 1, 2))(q, k, v)
  _close(grad(_attention), grad(_reference))


def test_checkpoint():
  q, k, v = _inputs()
  grad = lambda f: jax.grad(_loss(f), argnums=(0, 1, 2))(q, k, v)
  remat = grad(jax.checkpoint(_attention))
  chex.assert_trees_all_equal(remat, grad(_attention))
  _close(remat, grad(_reference))
