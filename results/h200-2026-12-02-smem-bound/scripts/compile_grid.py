"""Compiles a grid of configs given by hand on the GPU, with patch 0025's check off.

Usage: python compile_grid.py OUT.jsonl
For each forward config (with the VJP's heuristic one) and each VJP config
(with the forward's heuristic one), at B1 T2048 H8/4, causal, cap 50: the
lower bound patch 0025 computes (`pipelined_tiles_bytes`, recorded where the
op calls `check_shared_memory`, which here raises nothing) and whether XLA
compiles the kernels, or the shared memory its error requested. Lowering runs
in order, compiling in 16 threads. Writes one JSON line a config and prints
a summary: every config whose bound exceeds the GPU's shared memory must
fail to compile, and every failure must have requested at least the bound.
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
POINTS = ([("forward", "bfloat16", d, c) for d in (256, 512) for c in FWD]
          + [("forward", "float32", d, c) for d in (128, 256) for c in FWD]
          + [("vjp", "bfloat16", d, c) for d in (256, 512) for c in VJP]
          + [("vjp", "float32", 256, c) for c in VJP])


def op_for(kind, blocks):
  """The op with `blocks` as the forward's or the VJP's config."""
  if kind == "forward":
    names = ("block_q", "block_k", "num_warps", "num_stages")
    return tokamax_softcap.PallasTritonFlashAttention(
        config=tokamax_softcap.Config(**dict(zip(names, blocks))))
  names = ("block_m1", "block_n1", "block_m2", "block_n2", "num_warps",
           "num_stages")
  vjp = tokamax_softcap.PallasTritonFlashAttentionVjp(
      config=tokamax_softcap.VjpConfig(**dict(zip(names, blocks))))
  return tokamax_softcap.PallasTritonFlashAttention(vjp=vjp)


def lower(kind, dtype, d, blocks, causal=True):
  op = op_for(kind, blocks)
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
  work = []
  for kind, dtype, d, blocks in POINTS:
    lowered, bound = lower(kind, dtype, d, blocks)
    work.append((dict(kernel=kind, dtype=dtype, head_dim=d, config=blocks,
                      bound=bound), lowered))
  budget = V.shared_memory_per_block()
  bad = 0
  with concurrent.futures.ThreadPoolExecutor(16) as pool, \
       open(sys.argv[1], "w") as out:
    for (row, _), result in zip(work, pool.map(compile_, [l for _, l in work])):
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
      out.write(json.dumps(row) + "\n")
      print(json.dumps(row), flush=True)
  print(f"budget {budget}; {len(work)} configs; inconsistent: {bad}")


if __name__ == "__main__":
  main()
