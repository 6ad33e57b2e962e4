"""Which patch makes the uncapped f32 output with a bias differ from upstream's on the GPU."""
import jax, jax.numpy as jnp, numpy as np
from tokamax._src.ops.attention import pallas_triton as up_fwd, pallas_triton_vjp as up_vjp
from tokamax_softcap import patched

def source_upto(n):
  """The modules' source with the series through patch `n` (`patch show --through`)."""
  return lambda name: (patched.patched_source(name, n), f"<{name} through {n}>")

b, t, h, d = 2, 128, 4, 64
keys = jax.random.split(jax.random.PRNGKey(0), 5)
sc = 2 * np.sqrt(10.0)
q = sc * jax.random.normal(keys[0], (b, t, h, d)); k = sc * jax.random.normal(keys[1], (b, t, 2, d))
v = jax.random.normal(keys[2], (b, t, 2, d)); dout = jax.random.normal(keys[3], (b, t, h, d))
bias = jax.random.normal(jax.random.PRNGKey(1), (2, 4, 128, 128))

def run(fwd_mod, vjp_mod, **kw):
  op = fwd_mod.PallasTritonFlashAttention(vjp=vjp_mod.PallasTritonFlashAttentionVjp())
  f = lambda q, k, v: op(q, k, v, **kw)
  out, pull = jax.vjp(f, q, k, v)
  return (out, *pull(dout))

ref = {name: run(up_fwd, up_vjp, **kw) for name, kw in [("bias", dict(bias=bias)), ("causal", dict(is_causal=True))]}
for n in range(1, 15):
  mods = patched.load_modules(f"bis{n}", source_upto(n))
  for name, kw in [("bias", dict(bias=bias)), ("causal", dict(is_causal=True))]:
    try:
      got = run(mods["pallas_triton"], mods["pallas_triton_vjp"], **kw)
      diffs = [float(jnp.max(jnp.abs(a - b))) for a, b in zip(got, ref[name])]
      fr = [float(jnp.mean(a != b)) for a, b in zip(got, ref[name])]
      print(n, name, "max|diff| out,dq,dk,dv", ["%.2e" % x for x in diffs], "frac", ["%.3f" % x for x in fr], flush=True)
    except Exception as e:
      print(n, name, "error", type(e).__name__, str(e)[:200], flush=True)
