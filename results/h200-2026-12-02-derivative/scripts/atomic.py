"""The VJP with dq added atomically from the dk/dv loop, against two passes.

Patch series at "WIP atomic dq": with `pallas_triton_vjp.ATOMIC_DQ`, the VJP
kernel's dk/dv loop also computes each block's `ds @ k` and adds it to an f32
dq (`plgpu.atomic_add`), and the dq loop (which recomputes the logits and
`dp`) is not run. Times fwd+bwd (bench's CUPTI timer) with the flag off and on,
with and without the cap, and compares the gradients of both on one input.
Prints JSON lines.
"""

import json

import jax
import jax.numpy as jnp
import numpy as np

from tokamax_softcap import bench
from tokamax_softcap import patched

vjp = patched.pallas_triton_vjp


def compare(shape):
  (q, k, v), = bench._inputs(shape, jnp.bfloat16, 1)
  op, kwargs = bench._implementation("ours")
  do = jax.random.normal(jax.random.PRNGKey(7), q.shape, q.dtype)
  grads = {}
  for flag in (False, True):
    vjp.ATOMIC_DQ = flag
    f = jax.jit(lambda q, k, v: jax.vjp(
        lambda *a: op(*a, **kwargs, **shape.mask_kwargs()), q, k, v)[1](do))
    grads[flag] = [np.asarray(g, np.float32) for g in f(q, k, v)]
  diff = [float(np.abs(a - b).max() / np.abs(a).max())
          for a, b in zip(grads[False], grads[True])]
  print(json.dumps(dict(kind="compare", shape=str(shape), dq_dk_dv=diff)),
        flush=True)


def timing(shapes):
  for shape in shapes:
    sets = bench._inputs(shape, jnp.bfloat16, 2)
    for impl in ("ours", "ours-nocap"):
      op, kwargs = bench._implementation(impl)
      for flag in (False, True, True, False):
        vjp.ATOMIC_DQ = flag
        ms, mem = bench._time(op, kwargs, shape, "fwd+bwd", sets, reps=10)
        print(json.dumps(dict(kind="time", shape=str(shape), impl=impl,
                              atomic=flag, fwd_bwd=ms, peak_mb=mem)),
              flush=True)
  vjp.ATOMIC_DQ = False


if __name__ == "__main__":
  compare(bench.Shape(seq_len=4096, head_dim=128, heads="gqa", mask="causal",
                      batch=1))
  shapes = [
      bench.Shape(seq_len=8192, head_dim=d, heads=h, mask=m, batch=b)
      for d, h, m, b in ((64, "mha", "causal", 2), (64, "gqa", "full", 2),
                         (128, "mha", "causal", 2), (128, "gqa", "full", 2),
                         (256, "gqa", "causal", 2), (256, "gqa", "full", 2),
                         (512, "gqa", "causal", 1))
  ]
  timing(shapes)
