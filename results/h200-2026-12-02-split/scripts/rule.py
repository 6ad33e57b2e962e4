"""The split's register bound (`_DKDV_REGISTERS`) on and off at other dtypes.

python -P rule.py OUT.jsonl. Times fwd+bwd (cap 50, CUPTI: the median of 10
rounds, each the mean over 2 input sets) with the bound at 128 (the series)
and at 2^30 (never split), for configs that the bound splits: the heuristic
configs at bf16 `precision=HIGHEST` head_dim 256 (B2 T8192 H8/4, causal and
full) and f32 head_dim 512 (B1 T4096 H8/4, causal), and bf16 head_dim 512
(B1 T8192 H8/4, causal) with the config other GPUs than Hopper get
(32x32 blocks, 4 warps, 1 stage).
"""
import concurrent.futures, functools, json, sys, time
import jax, jax.numpy as jnp, numpy as np
import tokamax_softcap
from tokamax import benchmarking
from tokamax_softcap import bench, pallas_triton_vjp, patched

vjp_module = patched.pallas_triton_vjp
out = open(sys.argv[1], "a")
def emit(r):
  print(json.dumps(r), flush=True); out.write(json.dumps(r) + "\n"); out.flush()

HIGHEST = jax.lax.Precision.HIGHEST
CASES = [  # (head_dim, batch, seq_len, mask, dtype, precision, vjp config)
    (256, 2, 8192, "causal", jnp.bfloat16, HIGHEST, None),
    (256, 2, 8192, "full", jnp.bfloat16, HIGHEST, None),
    (512, 1, 4096, "causal", jnp.float32, None, None),
    (512, 1, 8192, "causal", jnp.bfloat16, None, (32, 32, 32, 32, 4, 1)),
]

def shape_of(c):
  return bench.Shape(seq_len=c[2], head_dim=c[0], heads="gqa", mask=c[3], batch=c[1])

def op_with(vc):
  op = tokamax_softcap.PallasTritonFlashAttention()
  if vc is None:
    return op
  cfg = pallas_triton_vjp.Config(
      block_m1=vc[0], block_n1=vc[1], block_m2=vc[2], block_n2=vc[3],
      num_warps=vc[4], num_stages=vc[5])
  return op.replace(vjp=op.vjp.replace(config=cfg))

sets = {i: bench._inputs(shape_of(c), c[4], 2) for i, c in enumerate(CASES)}

def compile_one(i):
  c = CASES[i]
  kw = dict(logits_soft_cap=bench.CAP)
  if c[5] is not None:
    kw["precision"] = c[5]
  f = functools.partial(op_with(c[6]), **kw, **shape_of(c).mask_kwargs())
  std = [benchmarking.standardize_function(f, *x, mode=bench.MODES["fwd+bwd"], seed=None)
         for x in sets[i]]
  args = [a for _, a in std]
  return jax.jit(std[0][0]).lower(args[0]).compile(), args

t0 = time.time()
jobs, done = [], []
for bound in (128, 1 << 30):
  vjp_module._DKDV_REGISTERS = bound
  with concurrent.futures.ThreadPoolExecutor(8) as ex:
    futs = [ex.submit(compile_one, i) for i in range(len(CASES))]
    for i, fu in enumerate(futs):
      jobs.append((i, bound))
      try: done.append(fu.result())
      except Exception as e: done.append(e)
vjp_module._DKDV_REGISTERS = 128
emit(dict(compiled=len(jobs), compile_s=round(time.time() - t0, 1)))
timer = bench.benchmarking._TIMERS[bench.timing_method()]
for (i, bound), c in zip(jobs, done):
  case = CASES[i]
  r = dict(shape=str(shape_of(case)), dtype=jnp.dtype(case[4]).name,
           precision=None if case[5] is None else str(case[5]), vjp=case[6],
           split=bound == 128)
  if isinstance(c, Exception):
    r["error"] = (str(c).splitlines() or [type(c).__name__])[0][:300]
    emit(r); continue
  compiled, args = c
  timers = [timer(compiled, a) for a in args]
  r["ms"] = round(float(np.median([np.mean([t(False)[0] for t in timers]) for _ in range(10)])), 4)
  emit(r)
