"""`kernels.py`'s dispatch against the series' op, in the Pallas interpreter.

python -P results/h200-2026-12-04-vjp-kernels/scripts/cpu_check.py

f32 B1 T128 H4/2 head_dim 64, causal, cap 50 (q and k of standard deviation
7: pre-cap logits of standard deviation about 49, past the cap); VJP config
(16, 32, 32, 16, 4, 2). Prints, for each dispatch, the largest difference of
dq, dk, dv from the series' op relative to the largest value of the latter.
`((0,),)` computes dq alone (dk, dv zero: 1.0 there).
"""
import os, sys; sys.path.insert(0, os.path.dirname(__file__))
import jax, jax.numpy as jnp
import tokamax_softcap
from tokamax_softcap import interpret
import kernels
mod = kernels.module()
B,T,H,KV,D = 1,128,4,2,64
ks = jax.random.split(jax.random.PRNGKey(0), 3)
q = 7*jax.random.normal(ks[0], (B,T,H,D), jnp.float32)
k = 7*jax.random.normal(ks[1], (B,T,KV,D), jnp.float32)
v = jax.random.normal(ks[2], (B,T,KV,D), jnp.float32)
cfg = mod.Config(block_m1=16, block_n1=32, block_m2=32, block_n2=16, num_warps=4, num_stages=2)
def grads(vjp):
  op = tokamax_softcap.PallasTritonFlashAttention(vjp=vjp, bypass_device_check=True)
  f = lambda q,k,v: (op(q,k,v,is_causal=True,logits_soft_cap=50.0)**2).sum()
  with interpret.interpret():
    return jax.grad(f, argnums=(0,1,2))(q,k,v)
ref = grads(None)
for sel in [((0,1),(2,)), ((0,),(1,),(2,)), ((0,1,2),), ((0,),)]:
  kernels.PROBE.outputs = sel
  g = grads(mod.PallasTritonFlashAttentionVjp(config=cfg, bypass_device_check=True))
  print(sel, [float(jnp.max(jnp.abs(a-b))/jnp.max(jnp.abs(b))) for a,b in zip(g,ref)])
