"""Our op under jax.jit, jax.grad, jax.vmap and jax.checkpoint, with a cap.

(Through `tokamax.dot_product_attention`: `test_api.py`.)
"""

import chex
import jax
import jax.numpy as jnp
import tokamax_softcap
from tokamax_softcap import reference

CAP = 1.0
HIGHEST = jax.lax.Precision.HIGHEST


def _inputs(batch_shape=(2,)):
  keys = jax.random.split(jax.random.PRNGKey(0), 3)
  q, k, v = (jax.random.normal(x, (*batch_shape, 128, 2, 32)) for x in keys)
  assert float(jnp.max(jnp.abs(reference.logits(q, k)))) >= 3 * CAP
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
  scale = max(float(jnp.max(jnp.abs(x))) for x in jax.tree.leaves(expected))
  chex.assert_trees_all_close(actual, expected, atol=5e-6 * scale, rtol=5e-7)


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
