"""Wide heads on the GPU: which forward / VJP configs compile, and their times."""
import concurrent.futures, functools, json, re, sys, time, traceback
import jax, jax.numpy as jnp, numpy as np
import tokamax_softcap
from tokamax import benchmarking
from tokamax._src.ops.attention import api
from tokamax_softcap import bench, pallas_triton, pallas_triton_vjp

out_path = sys.argv[1]
res = []
def emit(r):
  print(json.dumps(r), flush=True); res.append(r)
  json.dump(res, open(out_path, "w"), indent=1)

FWD = {"bfloat16-512": [None, (64,64,8,1,None), (32,64,4,1,None), (64,64,4,1,64), (32,32,4,1,None), (64,32,8,1,None), (32,64,8,1,None), (64,64,8,1,128), (64,64,4,1,None)],
       "float32-256": [None, (32,64,4,1,None), (64,64,4,1,64), (32,32,4,1,None), (128,64,8,1,None), (64,64,8,1,128), (64,64,4,1,None)],
       "float32-512": [None, (32,32,4,1,None), (64,32,4,1,None), (32,64,4,1,None), (32,32,8,1,None), (32,32,4,1,128)]}
FWD["bfloat16-384"] = [c for c in FWD["bfloat16-512"] if not (c and c[4])]
VJP = {"bfloat16-512": [None, (32,32,32,32,4,2), (32,32,32,32,4,1), (16,16,16,16,4,1), (16,32,32,16,4,1), (16,32,32,16,8,1), (32,32,32,32,8,1), (32,32,32,32,8,2), (16,32,32,16,4,2), (16,16,16,16,4,2), (32,64,64,32,4,1)],
       "float32-256": [None, (32,32,32,32,4,1), (16,32,32,16,4,2), (16,16,16,16,2,1), (32,32,32,32,8,1), (16,16,16,16,4,1)],
       "float32-512": [None, (16,32,32,16,4,2), (16,32,32,16,4,1), (16,16,16,16,4,1), (16,16,16,16,4,2), (16,32,32,16,8,2)]}
VJP["bfloat16-384"] = VJP["bfloat16-512"]

def fcfg(c):
  if c is None: return None
  return pallas_triton.Config(block_q=c[0], block_k=c[1], num_warps=c[2], num_stages=c[3], block_d=c[4], block_d_out=c[4])
def vcfg(c):
  if c is None: return None
  return pallas_triton_vjp.Config(block_m1=c[0], block_n1=c[1], block_m2=c[2], block_n2=c[3], num_warps=c[4], num_stages=c[5])

def op_with(fc, vc):
  op = tokamax_softcap.PallasTritonFlashAttention(config=fcfg(fc))
  return op.replace(vjp=op.vjp.replace(config=vcfg(vc)))

def inputs(b, t, d, dtype, seed=0):
  keys = jax.random.split(jax.random.PRNGKey(seed), 4)
  s = np.sqrt(50.0) / d ** 0.25 * 8 ** 0.25  # logits std ~ 50 / sqrt(...)
  q = jax.random.normal(keys[0], (b, t, 8, d), dtype) * 3
  k = jax.random.normal(keys[1], (b, t, 4, d), dtype) * 3
  v = jax.random.normal(keys[2], (b, t, 4, d), dtype)
  return q, k, v

def compile_one(op, mode, args, cap=50.0):
  f = functools.partial(op, logits_soft_cap=cap, is_causal=True)
  fn, a = benchmarking.standardize_function(f, *args, mode=bench.MODES[mode], seed=None)
  c = jax.jit(fn).lower(a).compile()
  return c, a

def time_it(c, a, reps=10):
  jax.block_until_ready(c(a))
  ts = []
  for _ in range(reps):
    t0 = time.perf_counter(); jax.block_until_ready(c(a)); ts.append((time.perf_counter() - t0) * 1e3)
  return float(np.median(ts))

def short(e):
  s = str(e)
  m = re.search(r"Required: (\d+).*?Hardware limit:? (\d+)", s, re.S)
  if m: return f"shared memory: required {m.group(1)}, limit {m.group(2)}"
  return type(e).__name__ + ": " + s[:300]

def run(jobs, rounds=2):
  """jobs: list of (tag dict, op, mode, args). Compiles all in threads, then times serially."""
  with concurrent.futures.ThreadPoolExecutor(12) as ex:
    futs = [ex.submit(compile_one, op, mode, args) for tag, op, mode, args in jobs]
    done = []
    for fu in futs:
      try: done.append(fu.result())
      except Exception as e: done.append(e)
  for rnd in range(rounds):
    for (tag, op, mode, args), c in zip(jobs, done):
      r = dict(tag, round=rnd)
      if isinstance(c, Exception):
        if rnd == 0:
          r["error"] = short(c); emit(r)
        continue
      r["ms"] = time_it(*c, reps=20)
      r["peak_mb"] = c[0].memory_analysis().peak_memory_in_bytes / 1e6
      emit(r)

which = sys.argv[2]
CASES = [(512, jnp.bfloat16), (384, jnp.bfloat16), (256, jnp.float32), (512, jnp.float32)]
T = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
if which in ("fwd", "all"):
  jobs = []
  for d, dt in CASES:
    args = inputs(1, T, d, dt)
    for fc in FWD[f"{jnp.dtype(dt).name}-{d}"]:
      jobs.append((dict(kind="fwd", d=d, dtype=jnp.dtype(dt).name, cfg=fc), op_with(fc, None), "fwd", args))
  run(jobs)
if which in ("vjp", "all"):
  fwd_ok = {}
  for r in res:
    if r.get("kind") == "fwd" and "ms" in r:
      key = f"{r['d']}-{r['dtype']}"
      if r["round"] == 1 and (key not in fwd_ok or r["ms"] < fwd_ok[key][1]):
        fwd_ok[key] = (r["cfg"], r["ms"])
  fwd_ok = {k: v[0] for k, v in fwd_ok.items()}
  emit(dict(best_fwd=fwd_ok))
  jobs = []
  for d, dt in CASES:
    key = f"{d}-{jnp.dtype(dt).name}"
    if key not in fwd_ok: continue
    fc = fwd_ok[key]; fc = tuple(fc) if fc else None
    args = inputs(1, T, d, dt)
    for vc in VJP[f"{jnp.dtype(dt).name}-{d}"]:
      jobs.append((dict(kind="fwd+bwd", d=d, dtype=jnp.dtype(dt).name, fwd=fc, cfg=vc), op_with(fc, vc), "fwd+bwd", args))
  run(jobs)
if which in ("xla", "all"):
  xla = api.IMPLEMENTATIONS["xla"]
  jobs = []
  for t in (T,):
    for d, dt in [(512, jnp.bfloat16), (384, jnp.bfloat16), (256, jnp.float32)]:
      args = inputs(1, t, d, dt)
      for mode in ("fwd", "fwd+bwd"):
        jobs.append((dict(kind="xla " + mode, t=t, d=d, dtype=jnp.dtype(dt).name), xla, mode, args))
  run(jobs)
