"""Max |actual - expected| of upstream's harness for f32 head_dim 256/512 with DEFAULT (TF32) precision."""
import jax, jax.numpy as jnp
from tokamax._src.ops.attention import test_base
from tokamax._src import test_utils
import tokamax_softcap
seen = []
def record(actual, expected, **kw):
  seen.append([float(jnp.max(jnp.abs(a - e))) for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected))])
test_utils.assert_trees_all_close = record
op = tokamax_softcap.PallasTritonFlashAttention(vjp=tokamax_softcap.PallasTritonFlashAttentionVjp(dbias_intermediate_dtype=jnp.float32))
for d in (256, 512):
  seen.clear()
  q, k, v, bias, mask, ss = test_base._create_inputs(q_shape=(1, 256, 2, d), kv_shape=None, bias_shape=None, mask_shape=None, dtype=jnp.float32)
  test_base._run_test(q, k, v, bias=bias, seed_seq=ss, impl=op, impl_supports_precisions=True,
      impl_kwargs=dict(is_causal=True, precision=jax.lax.Precision.DEFAULT), ref_kwargs=dict(mask=jnp.tri(256, dtype=bool)), atol=1.0)
  print("head_dim", d, "max abs diff: inference out, training out, grads (dq, dk, dv):", seen, flush=True)
