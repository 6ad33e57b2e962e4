"""The VJP autotuning test's assertions on the series through 0019 and 0020.

Usage, from the repository root: python -P
results/cpu-2026-12-01-autotuning/space_by_patch.py (output:
space_by_patch.log, warnings left out).
"""
import jax.numpy as jnp
from tokamax_softcap import patched
for n in (19, 20):
  mods = patched.load_modules(f"through{n}", lambda name: (patched.patched_source(name, n), name))
  fa, fa_vjp = mods["pallas_triton"], mods["pallas_triton_vjp"]
  op = fa.PallasTritonFlashAttention(vjp=fa_vjp.PallasTritonFlashAttentionVjp(bypass_device_check=True), bypass_device_check=True)
  for q_shape, dtype in (((2, 256, 2, 64), jnp.bfloat16), ((1, 256, 2, 256), jnp.float32), ((1, 64, 2, 512), jnp.float32)):
    q = jnp.zeros(q_shape, dtype)
    r = jnp.zeros((q_shape[0], q_shape[2], q_shape[1]), jnp.float32)
    for is_causal in (False, True):
      ba = op.bind(q, q, q, is_causal=is_causal)
      kw = {k: x for k, x in ba.kwargs.items() if k != "return_residuals"}
      vba = op.vjp.bind((r, r), q, q, q, q, q, **kw)
      cs = op.vjp._get_autotuning_configs(vba)
      h = op.vjp._get_heuristics_config(vba)
      tiles = lambda c: c.block_n1 % c.block_m1 == 0 == c.block_m2 % c.block_n2
      print(n, q_shape, dtype.__name__, "causal" if is_causal else "full", len(cs), "heuristic in space:", h in cs, "8 warps:", 8 in {c.num_warps for c in cs}, "all tile:", all(map(tiles, cs)))
