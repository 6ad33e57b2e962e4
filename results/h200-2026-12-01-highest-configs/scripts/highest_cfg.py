"""Forward and VJP configs at head_dim 256 with precision=HIGHEST (bf16).

python -P highest_cfg.py OUT.jsonl [MASKS]

B2 T8192 H8/4 D256, cap 50, masks (default causal,full). Every config is
compiled first (threads), then each is timed with bench's CUPTI timer: the
median of 20 rounds, each the mean over 2 input sets, forward and forward +
backward. The default precision's default config is timed in the same run.
"""
import concurrent.futures, functools, json, sys, time
import jax, numpy as np
import tokamax_softcap
from tokamax import benchmarking
from tokamax_softcap import bench, pallas_triton, pallas_triton_vjp

out_path = sys.argv[1]
masks = sys.argv[2].split(",") if len(sys.argv) > 2 else ["causal", "full"]
out = open(out_path, "a")
def emit(r):
  print(json.dumps(r), flush=True); out.write(json.dumps(r) + "\n"); out.flush()

HIGHEST = jax.lax.Precision.HIGHEST
FWD = [None, (64, 64, 8, 2), (64, 64, 4, 2), (128, 64, 8, 1), (64, 32, 8, 2),
       (128, 32, 8, 2), (64, 64, 8, 1)]
VJP = [None, (32, 32, 32, 32, 8, 2), (32, 32, 32, 32, 4, 2),
       (32, 64, 64, 32, 8, 2), (64, 32, 32, 64, 8, 2), (64, 64, 64, 64, 8, 1),
       (32, 32, 32, 32, 8, 3), (64, 64, 64, 64, 4, 2), (32, 32, 32, 32, 8, 1)]

def op_with(fc, vc):
  fcfg = None if fc is None else pallas_triton.Config(
      block_q=fc[0], block_k=fc[1], num_warps=fc[2], num_stages=fc[3])
  vcfg = None if vc is None else pallas_triton_vjp.Config(
      block_m1=vc[0], block_n1=vc[1], block_m2=vc[2], block_n2=vc[3],
      num_warps=vc[4], num_stages=vc[5])
  op = tokamax_softcap.PallasTritonFlashAttention(config=fcfg)
  return op.replace(vjp=op.vjp.replace(config=vcfg))

jobs = []
for mask in masks:
  shape = bench.Shape(seq_len=8192, head_dim=256, heads="gqa", mask=mask)
  jobs.append((dict(mask=mask, precision="default", mode="fwd+bwd", fwd=None, vjp=None), shape, op_with(None, None), {}))
  jobs.append((dict(mask=mask, precision="default", mode="fwd", fwd=None, vjp=None), shape, op_with(None, None), {}))
  for fc in FWD:
    jobs.append((dict(mask=mask, precision="highest", mode="fwd", fwd=fc, vjp=None), shape, op_with(fc, None), dict(precision=HIGHEST)))
  for vc in VJP:
    jobs.append((dict(mask=mask, precision="highest", mode="fwd+bwd", fwd=None, vjp=vc), shape, op_with(None, vc), dict(precision=HIGHEST)))

sets = {m: bench._inputs(bench.Shape(seq_len=8192, head_dim=256, heads="gqa", mask=m), jax.numpy.bfloat16, 2) for m in masks}

def compile_one(tag, shape, op, kw):
  f = functools.partial(op, logits_soft_cap=bench.CAP, **kw, **shape.mask_kwargs())
  std = [benchmarking.standardize_function(f, *s, mode=bench.MODES[tag["mode"]], seed=None) for s in sets[tag["mask"]]]
  args = [a for _, a in std]
  return jax.jit(std[0][0]).lower(args[0]).compile(), args

t0 = time.time()
with concurrent.futures.ThreadPoolExecutor(12) as ex:
  futs = [ex.submit(compile_one, *j) for j in jobs]
  done = []
  for fu in futs:
    try: done.append(fu.result())
    except Exception as e: done.append(e)
emit(dict(compiled=len(jobs), compile_s=round(time.time() - t0, 1)))
timer = bench.benchmarking._TIMERS[bench.timing_method()]
for (tag, *_), c in zip(jobs, done):
  r = dict(tag)
  if isinstance(c, Exception):
    r["error"] = str(c).splitlines()[0][:300] if str(c) else type(c).__name__
    emit(r); continue
  compiled, args = c
  timers = [timer(compiled, a) for a in args]
  r["ms"] = round(float(np.median([np.mean([t(False)[0] for t in timers]) for _ in range(20)])), 4)
  emit(r)
