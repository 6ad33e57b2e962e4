"""Run-to-run spread of the fused VJP's gradients (patch 0031).

`dq` is added into f32 memory by TMA reduce-adds whose order is the CTAs':
runs on the same inputs may differ by rounding. Computes the gradients
`RERUNS` times at B2 T8192, 16/16 heads, head_dim 128, causal, bf16, cap 50
(Mosaic GPU's forward and the series' VJP) and prints, per gradient, the
largest difference from the first run relative to the gradient's largest
magnitude, and the fraction of elements that differ.
"""

import jax
import jax.numpy as jnp
import tokamax_softcap
from tokamax_softcap import patched

RERUNS = 10


def main():
  keys = jax.random.split(jax.random.PRNGKey(0), 4)
  shape = (2, 8192, 16, 128)
  q, k, v, dout = (
      jax.random.normal(x, shape, jnp.bfloat16) * s
      for x, s in zip(keys, (10.0, 10.0, 1.0, 1.0))
  )
  vjp = patched.pallas_mosaic_gpu_vjp.PallasMosaicGpuFlashAttentionVjp(
      deterministic=False
  )
  op = tokamax_softcap.PallasMosaicGpuFlashAttention(vjp=vjp)

  @jax.jit
  def grads(q, k, v):
    _, f_vjp = jax.vjp(
        lambda q, k, v: op(q, k, v, is_causal=True, logits_soft_cap=50.0),
        q,
        k,
        v,
    )
    return f_vjp(dout)

  first = grads(q, k, v)
  spread = [0.0] * 3
  differing = [0.0] * 3
  for _ in range(RERUNS - 1):
    again = grads(q, k, v)
    for i, (a, b) in enumerate(zip(first, again)):
      a, b = a.astype(jnp.float32), b.astype(jnp.float32)
      rel = float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(a)))
      spread[i] = max(spread[i], rel)
      differing[i] = max(differing[i], float(jnp.mean(a != b)))
  for name, s, d in zip(("dq", "dk", "dv"), spread, differing):
    print(
        f"{name}: {RERUNS} runs, max |diff| / max |grad| {s:.3g},"
        f" elements differing up to {d:.3%}"
    )


if __name__ == "__main__":
  main()
