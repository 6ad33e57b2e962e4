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
import concurrent.futures, importlib.util, json, pathlib, sys

# The earlier grid's configs, its lowering (with the op's check replaced by a
# recorder) and its compile.
_PATH = (pathlib.Path(__file__).parents[2] / "h200-2026-12-02-smem-bound"
         / "scripts" / "compile_grid.py")
_SPEC = importlib.util.spec_from_file_location("smem_bound_grid", _PATH)
base = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(base)

GRID = [(r, h, h, r, w, s) for r, h in ((16, 32), (16, 64), (16, 128),
                                        (32, 32), (32, 64), (32, 128),
                                        (64, 64), (64, 128))
        for w in (4, 8) for s in (1, 2, 3)]
FOUR = [(r, h, h, r, 4, 4) for r, h in ((16, 32), (32, 32), (32, 64))]
POINTS = ([(kind, dtype, d, c, True) for kind, dtype, d, c in base.POINTS]
          + [("vjp", "bfloat16", d, c, True) for d in (64, 128, 256, 512)
             for c in GRID]
          + [("vjp", "bfloat16", 256, c, False) for c in GRID]
          + [("vjp", "bfloat16", d, c, True) for d in (256, 512) for c in FOUR])


def main():
  budget = base.V.shared_memory_per_block()
  rows, futures = [], []
  pool = concurrent.futures.ThreadPoolExecutor(16)
  try:  # Compiles each config as soon as it is lowered.
    for kind, dtype, d, blocks, causal in POINTS:
      lowered, bound = base.lower(kind, dtype, d, blocks, causal)
      rows.append(dict(kernel=kind, dtype=dtype, head_dim=d, config=blocks,
                       causal=causal, bound=bound))
      futures.append(pool.submit(base.compile_, lowered))
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

if __name__ == "__main__":
  main()
