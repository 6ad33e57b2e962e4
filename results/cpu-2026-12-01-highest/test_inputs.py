"""Errors of out, dq, dk, dv on `test_bf16_highest_precision`'s inputs (patch 0019).

bf16, B1 T256 H2 D64, `q, k ~ N(0, 16)`, causal, without a cap and with cap
30; the op (CPU interpreter) at DEFAULT and HIGHEST precision and tokamax's
XLA implementation, each as `max|x - ref| / max|ref|` against the XLA
implementation on the inputs upcast to f32 at HIGHEST (the upstream test's
reference). From the repository root: `python -P
results/cpu-2026-12-01-highest/test_inputs.py`.
"""

import jax
import jax.numpy as jnp
from tokamax._src.ops.attention import base
import tokamax_softcap
from tokamax_softcap import interpret

keys = jax.random.split(jax.random.PRNGKey(0), 4)
q, k, v, dout = (
    jax.random.normal(x, (1, 256, 2, 64), jnp.bfloat16) for x in keys
)
q, k = 4.0 * q, 4.0 * k
f32 = lambda x: x.astype(jnp.float32)
HIGHEST = jax.lax.Precision.HIGHEST
vjp = tokamax_softcap.PallasTritonFlashAttentionVjp(
    dbias_intermediate_dtype=jnp.float32
)
ours = tokamax_softcap.PallasTritonFlashAttention(vjp=vjp)
error = lambda x, y: float(jnp.max(jnp.abs(f32(x) - y)) / jnp.max(jnp.abs(y)))
for cap in (None, 30.0):

  def out_and_grads(impl, *args, **kwargs):
    f = lambda *args: impl(*args, is_causal=True, logits_soft_cap=cap, **kwargs)
    out, f_vjp = jax.vjp(f, *args)
    return out, *f_vjp(dout.astype(out.dtype))

  expected = out_and_grads(
      base.DotProductAttention(), *map(f32, (q, k, v)), precision=HIGHEST
  )
  runs = {"xla": out_and_grads(base.DotProductAttention(), q, k, v)}
  with interpret.interpret():
    runs["default"] = out_and_grads(ours, q, k, v)
    runs["highest"] = out_and_grads(ours, q, k, v, precision=HIGHEST)
  for name, got in runs.items():
    errors = " / ".join(f"{error(x, e):.2g}" for x, e in zip(got, expected))
    print(f"cap {cap}, {name}: out / dq / dk / dv {errors}")
