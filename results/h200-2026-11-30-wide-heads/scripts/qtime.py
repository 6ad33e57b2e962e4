"""fwd+bwd ms with 4 documents as query ranges: series through 0015 (dense mask in the VJP) vs through 0016."""
import json, time, functools
import jax, jax.numpy as jnp, numpy as np
from tokamax import benchmarking
from tokamax._src.ops.attention import base
from tokamax_softcap import patched
source_upto = lambda n: lambda name: (patched.patched_source(name, n), f"<{name} through {n}>")
T, D = 8192, 128
keys = jax.random.split(jax.random.PRNGKey(0), 3)
q = jax.random.normal(keys[0], (1, T, 8, D), jnp.bfloat16) * 3
k = jax.random.normal(keys[1], (1, T, 4, D), jnp.bfloat16) * 3
v = jax.random.normal(keys[2], (1, T, 4, D), jnp.bfloat16)
doc = jnp.arange(T) // 2048 * 2048
for name, mask in [("causal", base.Mask(is_causal=True)),
                   ("docs as q ranges", base.Mask(q_start=doc, q_end=doc + 2048, is_causal=True)),
                   ("docs as k_start", base.Mask(k_start=doc, is_causal=True))]:
  for n in (15, 16):
    mods = patched.load_modules(f"qt{n}", source_upto(n))
    op = mods["pallas_triton"].PallasTritonFlashAttention(vjp=mods["pallas_triton_vjp"].PallasTritonFlashAttentionVjp())
    f = functools.partial(op, logits_soft_cap=50.0, mask=mask)
    fn, a = benchmarking.standardize_function(f, q, k, v, mode="forward_and_vjp", seed=None)
    c = jax.jit(fn).lower(a).compile()
    jax.block_until_ready(c(a)); ts = []
    for _ in range(20):
      t0 = time.perf_counter(); jax.block_until_ready(c(a)); ts.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps(dict(mask=name, series_through=n, ms=float(np.median(ts)), peak_mb=c.memory_analysis().peak_memory_in_bytes / 1e6)), flush=True)
