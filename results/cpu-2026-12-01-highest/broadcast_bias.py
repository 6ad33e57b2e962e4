"""A bias broadcast over the batch at precision=HIGHEST: dq, dk, dv, dbias errors (ours, XLA) against the fp32 reference, bf16 and f16.

`python -P results/cpu-2026-12-01-highest/broadcast_bias.py MODE`, MODE `on` (patch 0019) or `bf16ds` (the broadcast bias's ds kept in the input dtype). Output: broadcast_bias.log.
"""
import sys, jax, jax.numpy as jnp
sys.path.insert(0, "tests")
import numerics
from tokamax._src.ops.attention import api
import tokamax_softcap
from tokamax_softcap import interpret, reference, harness, patched
mode = sys.argv[1] if len(sys.argv) > 1 else "on"
if mode == "bf16ds":
  src = patched.patched_source("pallas_triton_vjp").replace("        ds_dtype = jnp.float32  # Summed over the broadcast axes in f32.", "        pass")
  mods = patched.load_modules("mb", lambda n: (src if n == "pallas_triton_vjp" else patched.patched_source(n), n))
  op = mods["pallas_triton"].PallasTritonFlashAttention(bypass_device_check=True, vjp=mods["pallas_triton_vjp"].PallasTritonFlashAttentionVjp(bypass_device_check=True))
else:
  op = tokamax_softcap.PallasTritonFlashAttention()
H = jax.lax.Precision.HIGHEST
for dtype in (jnp.bfloat16, jnp.float16):
  q, k, v, bias, dout = numerics.random_inputs((2, 256, 4, 64), 2, scale=20 ** 0.5, with_bias=True)
  bias = bias[:1, :, :, :]  # broadcast over the batch
  cast = lambda x: x.astype(dtype)
  args = tuple(map(cast, (q, k, v, bias)))
  ref = lambda q, k, v, b: reference.attention(q, k, v, b, logits_soft_cap=10.0, mask=jnp.tri(256, dtype=bool))
  _, rv = jax.vjp(ref, *map(lambda x: x.astype(jnp.float32), args)); e = rv(cast(dout).astype(jnp.float32))
  def grads(o, prec):
    f = lambda q, k, v, b: o(q, k, v, bias=b, logits_soft_cap=10.0, is_causal=True, precision=prec)
    _, fv = jax.vjp(f, *args); return fv(cast(dout))
  xp = jax.lax.Precision.DEFAULT if dtype == jnp.bfloat16 else jax.lax.DotAlgorithmPreset.F32_F32_F32
  x = grads(api.IMPLEMENTATIONS["xla"], xp)
  with interpret.interpret():
    a = grads(op, H)
  print(mode, dtype.__name__, "ours", [f"{harness.relative_error(g, r):.3g}" for g, r in zip(a, e)], "xla", [f"{harness.relative_error(g, r):.3g}" for g, r in zip(x, e)])
