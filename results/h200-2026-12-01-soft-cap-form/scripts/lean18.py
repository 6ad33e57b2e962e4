"""H200: patch 0018 at f343b20 vs its exponential form alone (`soft_cap`, as at e508b9e), vs 0017.

Run from a checkout at f343b20 (whose package runs "0018" as it was then), with
`lean18/pallas_triton.py` and `lean18/pallas_triton_vjp.py` the modules of
e508b9e (`python -m tokamax_softcap patch show pallas_triton_vjp` there):

python3 -P lean18.py OUT_DIR
"""
import concurrent.futures, functools, json, re, sys, time
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import pallas as pl
from tokamax import benchmarking
from tokamax_softcap import bench, interpret, patched

OUT = sys.argv[1]
out = open(f"{OUT}/lean18.jsonl", "a")
def emit(r):
  print(json.dumps(r), flush=True); out.write(json.dumps(r) + "\n"); out.flush()

def variant(body):
  def src(m):
    s = patched.patched_source(m)
    if m == "pallas_triton_vjp" and body is not None:
      s, n = re.subn(r"def soft_cap_tanh\(.*?\ndef causal_window_as_ranges\(", lambda _: body, s, flags=re.S)
      assert n == 1
    return s, f"<{m} {hash(body)}>"
  return src

def ops_of(name, src):
  mods = patched.load_modules(f"v_{name}", src)
  return mods
def lean_src(m):
  return open(f"lean18/{m}.py").read(), f"<lean18 {m}>"
MODS = {
    "0017": patched.load_modules("through_17", lambda m: (patched.patched_source(m, through=17), f"<{m} 17>")),
    "0018": ops_of("0018", variant(None)),
    "lean": patched.load_modules("lean18", lean_src),
}
def op(m):
  return m["pallas_triton"].PallasTritonFlashAttention(vjp=m["pallas_triton_vjp"].PallasTritonFlashAttentionVjp())

# Accuracy on this backend.
x = np.concatenate([np.linspace(-130.0, 130.0, 1 << 16), np.geomspace(1e-30, 400, 1 << 15), -np.geomspace(1e-30, 400, 1 << 14),
                    [0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
x = np.concatenate([x[:-4], np.zeros((1 << 17) - len(x), np.float32), x[-4:]])
caps = (1.0, 30.0, 50.0, 1e6)
V = MODS["lean"]["pallas_triton_vjp"]
def kernel(x_ref, *refs):
  for i, c in enumerate(caps):
    refs[2 * i][...], refs[2 * i + 1][...] = V.soft_cap(x_ref[...], c)
spec = pl.BlockSpec((1024,), lambda i: (i,))
with interpret.if_needed():
  outs = [np.asarray(o) for o in pl.pallas_call(kernel, [jax.ShapeDtypeStruct(x.shape, jnp.float32)] * (2 * len(caps)),
          grid=(len(x) // 1024,), in_specs=[spec], out_specs=[spec] * (2 * len(caps)))(x)]
for i, c in enumerate(caps):
  s_, d_ = outs[2 * i], outs[2 * i + 1]
  z = x.astype(np.float64) / c; t = np.tanh(z); ref_s = c * t; ref_d = 1 / np.cosh(z) ** 2
  fin = np.isfinite(x); ok = fin & (np.abs(ref_s) > 1e-30)
  abs_err = np.abs(s_ - ref_s)[fin] / (c * 2.0**-24)
  rel_err = (np.abs(s_ - ref_s) / np.abs(ref_s))[ok] / 2.0**-24
  okd = fin & (ref_d > 1e-30)
  rel_d = (np.abs(d_ - ref_d) / ref_d)[okd] / 2.0**-24
  sat_d = (np.abs(z) < 10) & (ref_d > 1e-30)
  emit(dict(acc="lean", backend=jax.default_backend(), cap=c, max_abs_err_in_2em24c=float(abs_err.max()),
            max_rel_err_ulp=float(rel_err.max()), at=float(x[ok][rel_err.argmax()]),
            max_rel_err_ds_du_ulp_z_lt_10=float((np.abs(d_ - ref_d) / ref_d)[sat_d].max() / 2.0**-24),
            max_abs_s_over_c=float(np.abs(s_[fin]).max() / c), specials=[float(v) for v in s_[~fin]],
            specials_d=[float(v) for v in d_[~fin]]))

if jax.default_backend() != "gpu":
  sys.exit()
SHAPES = [bench.Shape(seq_len=4096, head_dim=d, heads=h, mask="causal", batch=4) for d, h in ((64, "gqa"), (128, "gqa"), (256, "gqa"), (128, "mha"))]
SETS = {str(s): bench._inputs(s, jnp.bfloat16, 2) for s in SHAPES}

def compile_one(o, shape, cap, mode):
  fn = functools.partial(o, logits_soft_cap=cap, **shape.mask_kwargs())
  std = [benchmarking.standardize_function(fn, *s, mode=bench.MODES[mode], seed=None) for s in SETS[str(shape)]]
  args = [a for _, a in std]
  return jax.jit(std[0][0]).lower(args[0]).compile(), args

def time_it(c, args, reps=20):
  for a in args: jax.block_until_ready(c(a))
  ts = []
  for _ in range(reps):
    t0 = time.perf_counter(); jax.block_until_ready([c(a) for a in args]); ts.append((time.perf_counter() - t0) * 1e3 / len(args))
  return float(np.median(ts))

jobs = []
for s in SHAPES:
  for mode in ("fwd", "fwd+bwd"):
    for v, m in MODS.items():
      jobs.append((dict(shape=str(s), series=v, cap=bench.CAP, mode=mode), op(m), s, bench.CAP, mode))
    for v in ("0017", "0018"):
      jobs.append((dict(shape=str(s), series=v, cap=None, mode=mode), op(MODS[v]), s, None, mode))
t0 = time.time()
with concurrent.futures.ThreadPoolExecutor(14) as ex:
  done = [ex.submit(compile_one, o, s, cap, mode) for _, o, s, cap, mode in jobs]
  done = [d.result() for d in done]
emit(dict(compiled=len(jobs), compile_s=round(time.time() - t0, 1)))
for rnd in range(3):
  for (tag, *_), c in zip(jobs, done):
    emit(dict(tag, round=rnd, ms=round(time_it(*c), 4)))
