"""The VJP's kernels timed one at a time over a grid of configs (H200).

python -P sweep.py OUT.jsonl [DIMS]

For each shape (bf16, cap 50, causal, default precision; DIMS a comma list
of 512 and 256, default both): forward + VJP with the series' dispatch at
the heuristic config; the forward alone; at the heuristic config (`kernels.py`)
with no VJP kernel (the forward with its residuals and zero gradients:
XLA drops `delta` and the GQA sums, which nothing then uses) and with the series' dq + dk kernel alone; with only the
dq, only the dk or only the dv kernel at each config of the shape's grid.
Configs mirror the loops (`block_m2 = block_n1` held rows, `block_n2 =
block_m1` step rows). Compiled in 16 threads, timed as each compile ends
with bench's CUPTI timer: the median of 10 rounds, each the mean over 2
input sets.
"""
import concurrent.futures, functools, json, os, sys, time
sys.path.insert(0, os.path.dirname(__file__))
import jax, numpy as np
import tokamax_softcap
from tokamax import benchmarking
from tokamax_softcap import bench
import kernels

mod = kernels.module()
out = open(sys.argv[1], "a")
dims = [int(d) for d in (sys.argv[2] if len(sys.argv) > 2 else "512,256").split(",")]
SHAPES = {
    512: (bench.Shape(seq_len=8192, head_dim=512, heads="gqa", mask="causal", batch=1),
          [(h, s) for h in (32, 64) for s in (16, 32, 64) if s <= h],
          (4, 8), (1, 2, 3), (32, 32, 4, 3)),
    256: (bench.Shape(seq_len=8192, head_dim=256, heads="gqa", mask="causal", batch=2),
          [(h, s) for h in (64, 128) for s in (32, 64)],
          (4, 8), (1, 2), (128, 64, 8, 1)),
}
KINDS = {"dq": ((0,),), "dk": ((1,),), "dv": ((2,),)}
timer = bench.benchmarking._TIMERS[bench.timing_method()]  # pylint: disable=protected-access


def emit(r):
  print(json.dumps(r), flush=True); out.write(json.dumps(r) + "\n"); out.flush()


def cfg(held, step, warps, stages):
  return mod.Config(block_m1=step, block_n1=held, block_m2=held, block_n2=step,
                    num_warps=warps, num_stages=stages)


def compile_one(shape, sets, outputs, config, mode="fwd+bwd"):
  kernels.PROBE.outputs = outputs
  vjp = None if config is None else mod.PallasTritonFlashAttentionVjp(config=config)
  op = tokamax_softcap.PallasTritonFlashAttention(vjp=vjp)
  f = functools.partial(op, logits_soft_cap=bench.CAP, **shape.mask_kwargs())
  std = [benchmarking.standardize_function(f, *s, mode=bench.MODES[mode], seed=None)
         for s in sets]
  args = [a for _, a in std]
  return jax.jit(std[0][0]).lower(args[0]).compile(), args


for d in dims:
  shape, blocks, warps, stages, heuristic = SHAPES[d]
  sets = bench._inputs(shape, jax.numpy.bfloat16, 2)  # pylint: disable=protected-access
  jobs = [dict(kind="series", outputs=((0, 1), (2,)), config=None),
          dict(kind="none", outputs=(), config=heuristic),
          dict(kind="dq+dk", outputs=((0, 1),), config=heuristic),
          dict(kind="fwd", outputs=(), config=None, mode="fwd")]
  jobs += [dict(kind=kind, outputs=o, config=(h, s, w, st))
           for kind, o in KINDS.items() for (h, s) in blocks
           for w in warps for st in stages]
  t0 = time.time()
  with concurrent.futures.ThreadPoolExecutor(16) as ex:
    futs = {ex.submit(compile_one, shape, sets, j["outputs"],
                      None if j["config"] is None else cfg(*j["config"]),
                      j.get("mode", "fwd+bwd")): j for j in jobs}
    for fu in concurrent.futures.as_completed(futs):
      j = futs[fu]
      r = dict(head_dim=d, batch=shape.batch_size, kind=j["kind"],
               config=j["config"], t=round(time.time() - t0, 1))
      try:
        compiled, args = fu.result()
        timers = [timer(compiled, a) for a in args]
        r["ms"] = round(float(np.median(
            [np.mean([t(False)[0] for t in timers]) for _ in range(10)])), 4)
      except Exception as e:  # pylint: disable=broad-except
        r["error"] = (str(e).splitlines() or [type(e).__name__])[0][:300]
      emit(r)
