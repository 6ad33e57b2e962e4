"""The default path of patch 0019: the same jaxpr as the series through 0018.

Traces forward + VJP (interpret mode) of the op built from the series
through 0018 and through 0019, for bf16 at DEFAULT and HIGH, f16 at DEFAULT
and f32 at HIGHEST and DEFAULT (causal, with and without a bias), and
prints whether the two jaxprs' texts are equal; bf16 at HIGHEST, the path
0019 changes, is the control. From the repository root:
`python -P results/cpu-2026-12-01-highest/same_default.py`.
"""

import jax
import jax.numpy as jnp
from tokamax_softcap import interpret
from tokamax_softcap import patched


def op(through):
  mods = patched.load_modules(
      f"through{through}",
      lambda n: (patched.patched_source(n, through), f"<{n} {through}>"),
  )
  vjp = mods["pallas_triton_vjp"].PallasTritonFlashAttentionVjp(
      bypass_device_check=True
  )
  return mods["pallas_triton"].PallasTritonFlashAttention(
      vjp=vjp, bypass_device_check=True
  )


ops = {n: op(n) for n in (18, 19)}
P = jax.lax.Precision
for dtype, precision in (
    (jnp.bfloat16, P.DEFAULT),
    (jnp.bfloat16, P.HIGH),
    (jnp.float16, P.DEFAULT),
    (jnp.float32, P.HIGHEST),
    (jnp.float32, P.DEFAULT),
    (jnp.bfloat16, P.HIGHEST),  # The control: the path 0019 changes.
):
  for with_bias in (False, True):
    x = jnp.ones((1, 128, 4, 64), dtype)
    kv = jnp.ones((1, 128, 2, 64), dtype)
    bias = jnp.ones((1, 4, 128, 128), dtype) if with_bias else None
    texts = []
    for o in ops.values():
      f = lambda q, k, v, b: o(
          q, k, v, bias=b, is_causal=True, logits_soft_cap=30.0,
          precision=precision,
      )
      g = lambda *a: jax.vjp(f, *a)[1](jnp.ones_like(x))
      with interpret.interpret():
        # Names of the modules differ; compare the programs.
        texts.append(str(jax.make_jaxpr(g)(x, kv, kv, bias)))
    print(
        f"{jnp.dtype(dtype).name} {precision.name} bias={with_bias}:"
        f" {'same' if texts[0] == texts[1] else 'DIFFERENT'}"
    )
