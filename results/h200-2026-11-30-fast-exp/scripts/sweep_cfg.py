"""Config sweep: forward and VJP configs of the series on the GPU (bf16, causal).

python -P sweep_cfg.py OUT.jsonl PHASE [ARGS]
  fwd                 forward configs, capped and uncapped, D 64/128/256
  vjp1                VJP (m1, n1, warps, stages) with (m2, n2) as the default
  vjp2 BEST.json      VJP (m2, n2, stages) around the best of vjp1
"""
import concurrent.futures, functools, itertools, json, re, sys, time
import jax, jax.numpy as jnp, numpy as np
import tokamax_softcap
from tokamax import benchmarking
from tokamax_softcap import bench, pallas_triton, pallas_triton_vjp

out_path, phase = sys.argv[1], sys.argv[2]
DS = [int(x) for x in (sys.argv[4] if len(sys.argv) > 4 else "64,128,256").split(",")]
f = open(out_path, "a")
def emit(r):
  print(json.dumps(r), flush=True); f.write(json.dumps(r) + "\n"); f.flush()

def fcfg(c):
  return None if c is None else pallas_triton.Config(block_q=c[0], block_k=c[1], num_warps=c[2], num_stages=c[3])
def vcfg(c):
  return None if c is None else pallas_triton_vjp.Config(block_m1=c[0], block_n1=c[1], block_m2=c[2], block_n2=c[3], num_warps=c[4], num_stages=c[5])
def op_with(fc, vc):
  op = tokamax_softcap.PallasTritonFlashAttention(config=fcfg(fc))
  return op.replace(vjp=op.vjp.replace(config=vcfg(vc)))

def shape(d): return bench.Shape(seq_len=4096, head_dim=d, heads="gqa", mask="causal")
SETS = {d: bench._inputs(shape(d), jnp.bfloat16, 2) for d in DS}

def compile_one(op, mode, d, cap):
  fn = functools.partial(op, logits_soft_cap=cap, is_causal=True)
  std = [benchmarking.standardize_function(fn, *s, mode=bench.MODES[mode], seed=None) for s in SETS[d]]
  args = [a for _, a in std]
  c = jax.jit(std[0][0]).lower(args[0]).compile()
  return c, args

def time_it(c, args, reps=10):
  for a in args: jax.block_until_ready(c(a))
  ts = []
  for _ in range(reps):
    t0 = time.perf_counter(); jax.block_until_ready([c(a) for a in args]); ts.append((time.perf_counter() - t0) * 1e3 / len(args))
  return float(np.median(ts))

def short(e):
  s = str(e)
  m = re.search(r"[Ss]hared memory.*?(\d{5,}).*?(\d{5,})", s, re.S)
  if m: return f"smem {m.group(1)} > {m.group(2)}"
  return type(e).__name__ + ": " + s.splitlines()[0][:200] if s else type(e).__name__

def run(jobs, rounds=2):
  t0 = time.time()
  with concurrent.futures.ThreadPoolExecutor(14) as ex:
    futs = [ex.submit(compile_one, op, mode, d, cap) for tag, op, mode, d, cap in jobs]
    done = []
    for fu in futs:
      try: done.append(fu.result())
      except Exception as e: done.append(e)
  emit(dict(phase=phase, compiled=len(jobs), compile_s=round(time.time() - t0, 1)))
  for rnd in range(rounds):
    for (tag, op, mode, d, cap), c in zip(jobs, done):
      r = dict(tag, round=rnd)
      if isinstance(c, Exception):
        if rnd == 0: r["error"] = short(c); emit(r)
        continue
      r["ms"] = round(time_it(*c), 4)
      emit(r)

jobs = []
if phase == "fwd":
  for d in DS:
    bqs = (64, 128)
    bks = (32, 64, 128) if d <= 128 else (32, 64)
    sts = (2, 3, 4) if d <= 128 else (1, 2, 3)
    grid = [None] + list(itertools.product(bqs, bks, (4, 8), sts))
    for cap in (50.0, None):
      for c in grid:
        jobs.append((dict(kind="fwd", d=d, cap=cap, cfg=c), op_with(c, None), "fwd", d, cap))
elif phase == "vjp1":
  for d in DS:
    mn = [(16, 64), (32, 64), (64, 64), (16, 128), (32, 128), (64, 128)]
    grid = [None] + [(m1, n1, 64, 32, w, s) for (m1, n1) in mn for w in (4, 8) for s in (1, 2, 3)]
    for c in grid:
      jobs.append((dict(kind="fwd+bwd", d=d, cap=50.0, cfg=c), op_with(None, c), "fwd+bwd", d, 50.0))
elif phase == "vjp2":
  best = json.load(open(sys.argv[3]))  # {d: [m1, n1, m2, n2, w, s]}
  for d in DS:
    m1, n1, _, _, w, s0 = best[str(d)]
    grid = [None] + [(m1, n1, m2, n2, w, s) for (m2, n2) in [(64, 16), (64, 32), (64, 64), (128, 16), (128, 32), (128, 64)] for s in sorted({1, 2, 3, s0})]
    for cap in (50.0, None):
      for c in grid:
        jobs.append((dict(kind="fwd+bwd", d=d, cap=cap, cfg=c), op_with(None, c), "fwd+bwd", d, cap))
run(jobs)
