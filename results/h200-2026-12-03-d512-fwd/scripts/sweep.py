"""Forward configs at head_dim 512 on the H200 (bf16, cap 50, forward alone).

python -P sweep.py OUT.jsonl

B2 T8192 H8/4 D512 (`bench`'s shape), default precision. Every config of
`GRID` with a causal mask, then the `TOP` fastest of them without a mask,
the default config (heuristics) with both masks in the same run. Configs are
compiled in threads first; configs patch 0025 rejects (shared memory) raise
`ValueError` when traced and are recorded as errors. Each is timed with
bench's CUPTI timer: the median of 10 rounds, each the mean over 2 input
sets.
"""
import concurrent.futures, functools, itertools, json, sys, time
import jax, numpy as np
import tokamax_softcap
from tokamax import benchmarking
from tokamax_softcap import bench, pallas_triton

BLOCKS = [(32, 32), (32, 64), (64, 16), (64, 32), (64, 64), (128, 32),
          (128, 64)]
GRID = [b + (w, s, d) for b in BLOCKS for w in (4, 8) for s in (1, 2, 3)
        for d in (None, 128)]
TOP = 6
out = open(sys.argv[1], "a")


def emit(r):
  print(json.dumps(r), flush=True); out.write(json.dumps(r) + "\n"); out.flush()


def op_with(fc):
  if fc is None:
    return tokamax_softcap.PallasTritonFlashAttention()
  return tokamax_softcap.PallasTritonFlashAttention(config=pallas_triton.Config(
      block_q=fc[0], block_k=fc[1], num_warps=fc[2], num_stages=fc[3],
      block_d=fc[4], block_d_out=fc[4]))


def shape_of(mask):
  return bench.Shape(seq_len=8192, head_dim=512, heads="gqa", mask=mask)


sets = {m: bench._inputs(shape_of(m), jax.numpy.bfloat16, 2)  # pylint: disable=protected-access
        for m in ("causal", "full")}
timer = bench.benchmarking._TIMERS[bench.timing_method()]  # pylint: disable=protected-access


def compile_one(mask, fc):
  f = functools.partial(op_with(fc), logits_soft_cap=bench.CAP,
                        **shape_of(mask).mask_kwargs())
  std = [benchmarking.standardize_function(f, *s, mode=bench.MODES["fwd"],
                                           seed=None) for s in sets[mask]]
  args = [a for _, a in std]
  return jax.jit(std[0][0]).lower(args[0]).compile(), args


def run(jobs):
  t0 = time.time()
  with concurrent.futures.ThreadPoolExecutor(16) as ex:
    futs = [ex.submit(compile_one, *j) for j in jobs]
    done = []
    for fu in futs:
      try:
        done.append(fu.result())
      except Exception as e:  # pylint: disable=broad-except
        done.append(e)
  emit(dict(compiled=len(jobs), compile_s=round(time.time() - t0, 1)))
  rows = []
  for (mask, fc), c in zip(jobs, done):
    r = dict(mask=mask, fwd=fc)
    if isinstance(c, Exception):
      r["error"] = (str(c).splitlines() or [type(c).__name__])[0][:300]
    else:
      compiled, args = c
      try:
        timers = [timer(compiled, a) for a in args]
        r["ms"] = round(float(np.median(
            [np.mean([t(False)[0] for t in timers]) for _ in range(10)])), 4)
      except Exception as e:  # pylint: disable=broad-except
        r["error"] = (str(e).splitlines() or [type(e).__name__])[0][:300]
    emit(r); rows.append(r)
  return rows


rows = run([("causal", None), ("full", None)] + [("causal", fc) for fc in GRID])
timed = sorted((r for r in rows if "ms" in r and r["fwd"] is not None),
               key=lambda r: r["ms"])
run([("full", tuple(r["fwd"])) for r in timed[:TOP]])
