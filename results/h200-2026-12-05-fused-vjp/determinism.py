"""Run-to-run spread of the fused VJP's gradients (patch 0031).

`dq` is added into f32 memory by TMA reduce-adds whose order is the CTAs':
runs on the same inputs may differ by rounding. Computes the gradients
`RERUNS` times at B2 T8192, bf16, causal, cap 50, with 16/16 heads at
head_dim 128 and 16/8 at 256 (the default op, without XLA's determinism
flags: Mosaic GPU's forward and the series' VJP, one-pass) and prints, per
gradient, the largest difference from the first run relative to the
gradient's largest magnitude, the largest in units of the bf16 rounding
step of the first run's element, and the fraction of elements that differ.
"""

import jax
import jax.numpy as jnp
import tokamax_softcap

RERUNS = 10


def spread(heads, kv_heads, head_dim):
  """Prints the reruns' spread at one shape."""
  keys = jax.random.split(jax.random.PRNGKey(0), 4)
  q_shape = (2, 8192, heads, head_dim)
  kv_shape = (2, 8192, kv_heads, head_dim)
  q, k, v, dout = (
      jax.random.normal(x, shape, jnp.bfloat16) * s
      for x, shape, s in zip(
          keys,
          (q_shape, kv_shape, kv_shape, q_shape),
          (10.0, 10.0, 1.0, 1.0),
      )
  )
  op = tokamax_softcap.PallasMosaicGpuFlashAttention()

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
  relative, steps, differing = ([0.0] * 3 for _ in range(3))
  for _ in range(RERUNS - 1):
    again = grads(q, k, v)
    for i, (a, b) in enumerate(zip(first, again)):
      a, b = a.astype(jnp.float32), b.astype(jnp.float32)
      diff = jnp.abs(a - b)
      relative[i] = max(relative[i], float(jnp.max(diff) / jnp.max(abs(a))))
      step = jnp.spacing(a.astype(jnp.bfloat16)).astype(jnp.float32)
      steps[i] = max(steps[i], float(jnp.max(diff / jnp.abs(step))))
      differing[i] = max(differing[i], float(jnp.mean(a != b)))
  print(f"{heads}/{kv_heads} heads, head_dim {head_dim}:")
  for name, r, s, d in zip(("dq", "dk", "dv"), relative, steps, differing):
    print(
        f"  {name}: {RERUNS} runs, max |diff| / max |grad| {r:.3g},"
        f" max |diff| in bf16 steps {s:.3g}, elements differing up to {d:.3%}"
    )


def main():
  spread(16, 16, 128)
  spread(16, 8, 256)


if __name__ == "__main__":
  main()
