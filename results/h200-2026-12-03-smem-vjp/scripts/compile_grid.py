"""Compiles configs given by hand on the GPU, with the shared-memory check off.

Usage: python -P compile_grid.py OUT.jsonl
The 84 configs of `h200-2026-12-02-smem-bound/scripts/compile_grid.py`
(forward and VJP, bf16 and f32 with TF32 dots, causal) and the VJP configs of
`cpu-2026-12-03-smem-vjp/grid.py` for sm90 (bf16, head_dim 64 to 512, causal;
head_dim 256 without a mask; four stages), at B1 T2048 H8/4, cap 50: the
lower bound the op computes (recorded where it calls `check_shared_memory`,
which here raises nothing) and whether XLA compiles the kernels, or the
shared memory its error requested. Lowering runs in order, compiling in 16
threads as each is lowered (on SIGINT, it writes those done). Writes one
JSON line a config and prints a summary: a config whose
bound exceeds the GPU's shared memory must fail to compile, and a failure
must have requested at least the bound.
"""
import concurrent.futures, json, re, sys
import jax, jax.numpy as jnp
import tokamax_softcap
from tokamax_softcap import patched

V = patched.pallas_triton_vjp
NEEDED = []
V.check_shared_memory = lambda config, needed: NEEDED.append((config, needed))

FWD = [(32, 64, 4, 1), (32, 64, 4, 2), (64, 32, 4, 3), (64, 64, 4, 2),
       (64, 64, 8, 2), (64, 64, 4, 3), (128, 64, 8, 2), (128, 32, 8, 3),
       (64, 128, 4, 2), (32, 32, 4, 4), (16, 32, 4, 2), (128, 128, 8, 1)]
VJP = [(32, 32, 32, 32, 4, 1), (32, 32, 32, 32, 8, 2), (32, 64, 64, 32, 4, 2),
       (64, 64, 64, 64, 8, 2), (64, 64, 64, 64, 4, 3), (16, 32, 32, 16, 4, 2),
       (32, 64, 64, 32, 4, 3), (64, 128, 128, 64, 8, 2), (16, 16, 16, 16, 4, 4),
       (64, 64, 64, 64, 4, 1), (32, 32, 32, 32, 4, 3),
       (128, 128, 128, 128, 8, 2)]
GRID = [(r, h, h, r, w, s) for r, h in ((16, 32), (16, 64), (16, 128),
                                        (32, 32), (32, 64), (32, 128),
                                        (64, 64), (64, 128))
        for w in (4, 8) for s in (1, 2, 3)]
FOUR = [(r, h, h, r, 4, 4) for r, h in ((16, 32), (32, 32), (32, 64))]
POINTS = ([("forward", "bfloat16", d, c, True) for d in (256, 512) for c in FWD]
          + [("forward", "float32", d, c, True) for d in (128, 256) for c in FWD]
          + [("vjp", "bfloat16", d, c, True) for d in (256, 512) for c in VJP]
          + [("vjp", "float32", 256, c, True) for c in VJP]
          + [("vjp", "bfloat16", d, c, True) for d in (64, 128, 256, 512)
             for c in GRID]
          + [("vjp", "bfloat16", 256, c, False) for c in GRID]
          + [("vjp", "bfloat16", d, c, True) for d in (256, 512) for c in FOUR])


def lower(kind, dtype, d, blocks, causal):
  if kind == "forward":
    names = ("block_q", "block_k", "num_warps", "num_stages")
    op = tokamax_softcap.PallasTritonFlashAttention(
        config=tokamax_softcap.Config(**dict(zip(names, blocks))))
  else:
    names = ("block_m1", "block_n1", "block_m2", "block_n2", "num_warps",
             "num_stages")
    vjp = tokamax_softcap.PallasTritonFlashAttentionVjp(
        config=tokamax_softcap.VjpConfig(**dict(zip(names, blocks))))
    op = tokamax_softcap.PallasTritonFlashAttention(vjp=vjp)
  q = jax.ShapeDtypeStruct((1, 2048, 8, d), jnp.dtype(dtype))
  k = jax.ShapeDtypeStruct((1, 2048, 4, d), jnp.dtype(dtype))
  attend = lambda q, k, v: op(q, k, v, is_causal=causal, logits_soft_cap=50.0)
  f = attend
  if kind == "vjp":
    loss = lambda q, k, v: attend(q, k, v).astype(jnp.float32).sum()
    f = jax.grad(loss, argnums=(0, 1, 2))
  del NEEDED[:]
  lowered = jax.jit(f).lower(q, k, k)
  vjp_kernel = lambda c: hasattr(c, "block_m1")
  needed = [n for c, n in NEEDED if vjp_kernel(c) == (kind == "vjp")]
  return lowered, needed[0]


def compile_(lowered):
  try:
    lowered.compile()
    return None
  except Exception as e:  # XLA's compile error.
    m = re.search(r"requested (\d+), available: (\d+)", str(e))
    return (int(m[1]), int(m[2])) if m else str(e)[:300]


def main():
  budget = V.shared_memory_per_block()
  rows, futures = [], []
  pool = concurrent.futures.ThreadPoolExecutor(16)
  try:  # Compiles each config as soon as it is lowered.
    for kind, dtype, d, blocks, causal in POINTS:
      lowered, bound = lower(kind, dtype, d, blocks, causal)
      rows.append(dict(kernel=kind, dtype=dtype, head_dim=d, config=blocks,
                       causal=causal, bound=bound))
      futures.append(pool.submit(compile_, lowered))
    concurrent.futures.wait(futures)
  except KeyboardInterrupt:  # A time limit: writes what finished.
    print("interrupted", flush=True)
  pool.shutdown(wait=False, cancel_futures=True)
  bad = rejected = failed = 0
  with open(sys.argv[1], "w") as out:
    for row, future in zip(rows, futures):
      if not future.done() or future.cancelled():
        continue
      result = future.result()
      row["compiled"] = result is None
      if isinstance(result, tuple):
        row["requested"], row["available"] = result
      elif result is not None:
        row["error"] = result
      over = row["bound"] > budget
      ok = (not over or not row["compiled"]) and (
          row["compiled"] or row.get("requested", 0) >= row["bound"])
      row["consistent"] = ok
      bad += not ok
      failed += not row["compiled"]
      rejected += over
      out.write(json.dumps(row) + "\n")
  done = sum(f.done() and not f.cancelled() for f in futures)
  print(f"budget {budget}; {done} of {len(POINTS)} configs; {failed} failed to"
        f" compile; {rejected} rejected by the bound; inconsistent: {bad}")

main()
