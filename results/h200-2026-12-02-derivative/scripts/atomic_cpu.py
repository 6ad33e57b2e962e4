"""The WIP atomic-dq VJP against the two-pass one in the CPU interpreter.

Run from the repository root with scripts/0026-WIP-atomic-dq.patch copied
into tokamax_softcap/patches/: SHAPE=B,T,H,KV,D python atomic_cpu.py (default
1,256,4,2,64). Prints, for a full and a causal mask, the max |difference| of
dq, dk, dv relative to the two-pass gradient's max (cap 20, f32).
"""
import jax, jax.numpy as jnp, numpy as np, sys
import tokamax_softcap
from tokamax_softcap import patched, interpret, reference
vjp = patched.pallas_triton_vjp
op = tokamax_softcap.PallasTritonFlashAttention()
import os; B,T,H,KV,D = map(int, os.environ.get("SHAPE","1,256,4,2,64").split(","))
ks = jax.random.split(jax.random.PRNGKey(0), 4)
q = 4*jax.random.normal(ks[0], (B,T,H,D)); k = 4*jax.random.normal(ks[1], (B,T,KV,D)); v = jax.random.normal(ks[2], (B,T,KV,D)); do = jax.random.normal(ks[3], (B,T,H,D))
def run(causal):
  f = lambda q,k,v: op(q,k,v, is_causal=causal, logits_soft_cap=20.0)
  o, pb = jax.vjp(f, q,k,v); return pb(do)
res = {}
with interpret.interpret():
  for flag in (False, True):
    vjp.ATOMIC_DQ = flag
    for causal in (False, True):
      res[(flag, causal)] = run(causal)
for causal in (False, True):
  a, b = res[(False, causal)], res[(True, causal)]
  print(causal, [float(jnp.max(jnp.abs(x-y))/jnp.max(jnp.abs(x))) for x, y in zip(a, b)])
