"""Forward and VJP configs at head_dim 64 and 128 on Hopper (bf16, cap 50).

python -P sweep.py OUT.jsonl [HEAD_DIMS] [MASKS] [PARTS]

B4 T4096 H16/16, default precision. PARTS: fwd (forward configs, forward
timed alone), vjp (VJP configs, forward + VJP timed with the forward's
default config), highest (at precision=HIGHEST, the configs of patch 0024
against the earlier defaults; forward alone and forward + VJP). Every config is compiled first (threads), then each is
timed with bench's CUPTI timer: the median of 10 rounds, each the mean over
2 input sets. The defaults, with and without the cap, are timed in the same
run.
"""
import concurrent.futures, functools, itertools, json, sys, time
import jax, numpy as np
import tokamax_softcap
from tokamax import benchmarking
from tokamax_softcap import bench, pallas_triton, pallas_triton_vjp

out_path = sys.argv[1]
head_dims = [int(d) for d in (sys.argv[2] if len(sys.argv) > 2 else "64,128").split(",")]
masks = (sys.argv[3] if len(sys.argv) > 3 else "causal,full").split(",")
parts = (sys.argv[4] if len(sys.argv) > 4 else "fwd,vjp").split(",")
out = open(out_path, "a")
def emit(r):
  print(json.dumps(r), flush=True); out.write(json.dumps(r) + "\n"); out.flush()

FWD = list(itertools.product((64, 128), (32, 64, 128), (4, 8), (2, 3, 4)))
VJP_BLOCKS = [(32, 64, 64, 32), (64, 64, 64, 64), (32, 128, 128, 32),
              (64, 128, 128, 64), (32, 32, 32, 32), (16, 64, 64, 16),
              (16, 128, 128, 16), (64, 32, 32, 64)]
VJP = [b + (w, s) for b in VJP_BLOCKS for w in (4, 8) for s in (2, 3, 4)]

HIGHEST_FWD = [(64, 64, 4, 2), (64, 32, 4, 3)]
HIGHEST_VJP = [(32, 64, 64, 32, 4, 2), (64, 64, 64, 64, 4, 2),
               (64, 64, 64, 64, 4, 3)]

def op_with(fc, vc):
  fcfg = None if fc is None else pallas_triton.Config(
      block_q=fc[0], block_k=fc[1], num_warps=fc[2], num_stages=fc[3])
  vcfg = None if vc is None else pallas_triton_vjp.Config(
      block_m1=vc[0], block_n1=vc[1], block_m2=vc[2], block_n2=vc[3],
      num_warps=vc[4], num_stages=vc[5])
  op = tokamax_softcap.PallasTritonFlashAttention(config=fcfg)
  return op.replace(vjp=op.vjp.replace(config=vcfg))

def shape_of(d, mask):
  return bench.Shape(seq_len=4096, head_dim=d, heads="mha", mask=mask)

jobs = []
for d in head_dims:
  for mask in masks:
    base = dict(head_dim=d, mask=mask)
    for mode in ("fwd", "fwd+bwd"):
      for cap in (bench.CAP, None):
        jobs.append((dict(base, mode=mode, cap=cap, fwd=None, vjp=None), op_with(None, None)))
    if "fwd" in parts:
      for fc in FWD:
        jobs.append((dict(base, mode="fwd", cap=bench.CAP, fwd=fc, vjp=None), op_with(fc, None)))
    if "highest" in parts:
      for fc in HIGHEST_FWD:
        jobs.append((dict(base, mode="fwd", cap=bench.CAP, fwd=fc, vjp=None, precision="highest"), op_with(fc, None)))
      for vc in HIGHEST_VJP:
        jobs.append((dict(base, mode="fwd+bwd", cap=bench.CAP, fwd=(64, 64, 4, 2), vjp=vc, precision="highest"), op_with((64, 64, 4, 2), vc)))
    if "vjp" in parts:
      for vc in VJP:
        jobs.append((dict(base, mode="fwd+bwd", cap=bench.CAP, fwd=None, vjp=vc), op_with(None, vc)))

sets = {(d, m): bench._inputs(shape_of(d, m), jax.numpy.bfloat16, 2) for d in head_dims for m in masks}

def compile_one(tag, op):
  shape = shape_of(tag["head_dim"], tag["mask"])
  kw = dict(precision=jax.lax.Precision.HIGHEST) if tag.get("precision") == "highest" else {}
  f = functools.partial(op, logits_soft_cap=tag["cap"], **kw, **shape.mask_kwargs())
  std = [benchmarking.standardize_function(f, *s, mode=bench.MODES[tag["mode"]], seed=None)
         for s in sets[(tag["head_dim"], tag["mask"])]]
  args = [a for _, a in std]
  return jax.jit(std[0][0]).lower(args[0]).compile(), args

t0 = time.time()
with concurrent.futures.ThreadPoolExecutor(16) as ex:
  futs = [ex.submit(compile_one, *j) for j in jobs]
  done = []
  for fu in futs:
    try: done.append(fu.result())
    except Exception as e: done.append(e)
emit(dict(compiled=len(jobs), compile_s=round(time.time() - t0, 1)))
timer = bench.benchmarking._TIMERS[bench.timing_method()]
for (tag, _), c in zip(jobs, done):
  r = dict(tag)
  if isinstance(c, Exception):
    r["error"] = str(c).splitlines()[0][:300] if str(c) else type(c).__name__
    emit(r); continue
  compiled, args = c
  try:
    timers = [timer(compiled, a) for a in args]
    r["ms"] = round(float(np.median([np.mean([t(False)[0] for t in timers]) for _ in range(10)])), 4)
  except Exception as e:
    r["error"] = (str(e).splitlines() or [type(e).__name__])[0][:300]
  emit(r)
