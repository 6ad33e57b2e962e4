"""Uncapped f32 with a bias on the GPU: ours vs upstream vs the fp32 reference."""
import math, json
import jax, jax.numpy as jnp
from tokamax._src.ops.attention import pallas_triton as upstream, pallas_triton_vjp as upstream_vjp
import tokamax_softcap
from tokamax_softcap import reference, harness

b, t, h, d = 2, 128, 4, 64
scale = 2 * math.sqrt(10.0)
keys = jax.random.split(jax.random.PRNGKey(0), 4)
q = scale * jax.random.normal(keys[0], (b, t, h, d)); k = scale * jax.random.normal(keys[1], (b, t, 2, d))
v = jax.random.normal(keys[2], (b, t, 2, d)); dout = jax.random.normal(keys[3], (b, t, h, d))
bias = jax.random.normal(jax.random.PRNGKey(1), (2, 4, 128, 128))
def grads(f):
  out, pull = jax.vjp(f, q, k, v)
  return (out, *pull(dout))
ref = grads(lambda q, k, v: reference.attention(q, k, v, bias))
for prec in ("DEFAULT", "HIGHEST"):
  p = getattr(jax.lax.Precision, prec)
  ours = tokamax_softcap.PallasTritonFlashAttention()
  theirs = upstream.PallasTritonFlashAttention(vjp=upstream_vjp.PallasTritonFlashAttentionVjp())
  a = grads(lambda q, k, v: ours(q, k, v, bias=bias, precision=p))
  e = grads(lambda q, k, v: theirs(q, k, v, bias=bias, precision=p))
  print(json.dumps(dict(precision=prec,
      bitwise=[bool(jnp.all(x == y)) for x, y in zip(a, e)],
      ours_error=[harness.relative_error(x, r) for x, r in zip(a, ref)],
      upstream_error=[harness.relative_error(x, r) for x, r in zip(e, ref)])))
