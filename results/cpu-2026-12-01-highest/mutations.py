"""Undoes half of patch 0019 on `test_bf16_highest_precision`'s inputs; says which of out, dq, dk, dv then exceed 1.25x XLA's error.

`python -P results/cpu-2026-12-01-highest/mutations.py MODE`, MODE `nosplit` (each operand as one bf16 term, `delta` from the f32 weights kept) or `nodelta` (`delta` from `out`, the split kept). Output: mutations.log.
"""
import sys, jax, jax.numpy as jnp
from tokamax._src.ops.attention import base
import tokamax_softcap
from tokamax_softcap import interpret, patched
mode = sys.argv[1]
if mode == "nosplit":
  patched.pallas_triton_vjp.split_for_dot = lambda x, d, s: (x.astype(d),)
if mode == "nodelta":
  # delta from out: run the delta pass never (f32_operands only for splitting)
  src = patched.patched_source("pallas_triton_vjp").replace("  if f32_operands:\n    # `rowsum(dout * out)`", "  if False:\n    # `rowsum(dout * out)`")
  assert "if False:" in src
  mods = patched.load_modules("mut", lambda n: (src if n == "pallas_triton_vjp" else patched.patched_source(n), n))
  ours = mods["pallas_triton"].PallasTritonFlashAttention(vjp=mods["pallas_triton_vjp"].PallasTritonFlashAttentionVjp(dbias_intermediate_dtype=jnp.float32, bypass_device_check=True), bypass_device_check=True)
else:
  ours = tokamax_softcap.PallasTritonFlashAttention(vjp=tokamax_softcap.PallasTritonFlashAttentionVjp(dbias_intermediate_dtype=jnp.float32, bypass_device_check=True), bypass_device_check=True)
keys = jax.random.split(jax.random.PRNGKey(0), 4)
q, k, v, dout = (jax.random.normal(x, (1, 256, 2, 64), jnp.bfloat16) for x in keys)
q, k = 4.0 * q, 4.0 * k
f32 = lambda x: x.astype(jnp.float32)
H = jax.lax.Precision.HIGHEST
err = lambda x, y: float(jnp.max(jnp.abs(f32(x) - y)) / jnp.max(jnp.abs(y)))
for cap in (None, 30.0):
  def og(impl, *args, **kw):
    f = lambda *a: impl(*a, is_causal=True, logits_soft_cap=cap, **kw)
    out, fv = jax.vjp(f, *args); return out, *fv(dout.astype(out.dtype))
  e = og(base.DotProductAttention(), *map(f32, (q, k, v)), precision=H)
  x = og(base.DotProductAttention(), q, k, v)
  with interpret.interpret():
    a = og(ours, q, k, v, precision=H)
  bad = [(n, round(err(ai, ei), 5), round(1.25 * err(xi, ei), 5)) for n, ai, xi, ei in zip(("out", "dq", "dk", "dv"), a, x, e) if err(ai, ei) > 1.25 * err(xi, ei)]
  print(mode, cap, "FAIL" if bad else "pass", bad)
