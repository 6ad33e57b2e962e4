"""H200: series through 0017 vs through 0018 (approximate exp/tanh), fwd and fwd+bwd ms.

python3 -P after.py OUT.jsonl
"""
import concurrent.futures, functools, json, sys, time
import jax, jax.numpy as jnp, numpy as np
from tokamax import benchmarking
from tokamax_softcap import bench, patched

out = open(sys.argv[1], "a")
def emit(r):
  print(json.dumps(r), flush=True); out.write(json.dumps(r) + "\n"); out.flush()

def ops(through):
  src = lambda m: (patched.patched_source(m, through=through), f"<{m} {through}>")
  mods = patched.load_modules(f"through_{through}", src)
  return mods["pallas_triton"].PallasTritonFlashAttention(vjp=mods["pallas_triton_vjp"].PallasTritonFlashAttentionVjp())
OPS = {"0017": ops(17), "0018": ops(None)}
SHAPES = [bench.Shape(seq_len=4096, head_dim=d, heads=h, mask="causal", batch=4) for d, h in ((64, "gqa"), (128, "gqa"), (256, "gqa"), (128, "mha"))]
SETS = {str(s): bench._inputs(s, jnp.bfloat16, 2) for s in SHAPES}

def compile_one(op, shape, cap, mode):
  fn = functools.partial(op, logits_soft_cap=cap, **shape.mask_kwargs())
  std = [benchmarking.standardize_function(fn, *s, mode=bench.MODES[mode], seed=None) for s in SETS[str(shape)]]
  args = [a for _, a in std]
  return jax.jit(std[0][0]).lower(args[0]).compile(), args

def time_it(c, args, reps=20):
  for a in args: jax.block_until_ready(c(a))
  ts = []
  for _ in range(reps):
    t0 = time.perf_counter(); jax.block_until_ready([c(a) for a in args]); ts.append((time.perf_counter() - t0) * 1e3 / len(args))
  return float(np.median(ts))

jobs = [(dict(shape=str(s), series=v, cap=cap, mode=mode), OPS[v], s, cap, mode)
        for s in SHAPES for mode in ("fwd", "fwd+bwd") for cap in (bench.CAP, None) for v in OPS]
t0 = time.time()
with concurrent.futures.ThreadPoolExecutor(14) as ex:
  done = [f for f in [ex.submit(compile_one, op, s, cap, mode) for _, op, s, cap, mode in jobs]]
  done = [d.result() for d in done]
emit(dict(compiled=len(jobs), compile_s=round(time.time() - t0, 1)))
for rnd in range(3):
  for (tag, *_), c in zip(jobs, done):
    emit(dict(tag, round=rnd, ms=round(time_it(*c), 4)))
