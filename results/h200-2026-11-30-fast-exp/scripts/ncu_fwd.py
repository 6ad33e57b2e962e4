"""One capped and one uncapped forward (bf16, B4 T4096 H8/4 D128, causal), for ncu."""
import functools, sys
import jax, jax.numpy as jnp, numpy as np
import tokamax_softcap
d = int(sys.argv[1]) if len(sys.argv) > 1 else 128
rng = np.random.default_rng(0)
mk = lambda h, s: jax.device_put((rng.standard_normal((4, 4096, h, d)) * s).astype(jnp.bfloat16))
q, k, v = mk(8, 50 ** 0.5), mk(4, 50 ** 0.5), mk(4, 1.0)
op = tokamax_softcap.PallasTritonFlashAttention()
for cap in (50.0, None):
  f = jax.jit(functools.partial(op, logits_soft_cap=cap, is_causal=True))
  jax.block_until_ready(f(q, k, v))
