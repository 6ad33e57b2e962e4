"""H200: soft_cap_tanh as a rational function (1 rcp) vs patch 0018's (ex2 + rcp + series) at f343b20.

From a checkout at f343b20; coefficients from `fit_tanh.py` (X = 9, degrees 4/4):
python3 -P rational.py OUT_DIR      timing (after.py's protocol) + accuracy on the GPU
"""
import concurrent.futures, functools, json, re, sys, time
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import pallas as pl
from tokamax import benchmarking
from tokamax_softcap import bench, interpret, patched

OUT = sys.argv[1]
out = open(f"{OUT}/rational.jsonl", "a")
def emit(r):
  print(json.dumps(r), flush=True); out.write(json.dumps(r) + "\n"); out.flush()

P = (1.0, 0.13381025195121765, 0.003495587967336178, 2.0609082639566623e-05, 1.3354662264930539e-08)
Q = (1.0, 0.4671434164047241, 0.025876982137560844, 0.0003285634738858789, 7.776558277328149e-07)
def poly(c):
  s = f"{c[-1]!r}"
  for x in c[-2::-1]:
    s = f"({s}) * y + {x!r}"
  return s
RATIONAL = f'''def soft_cap_tanh(u, logits_soft_cap):
  z = u.astype(jnp.float32) * (1.0 / logits_soft_cap)
  y = jnp.where(z * z > 81.0, 81.0, z * z)
  p = {poly(P)}
  q = {poly(Q)}
  t = z * p * _ptx_f32("rcp.approx.ftz.f32", q)
  t = jnp.where(t > 1.0, 1.0, t)
  return jnp.where(t < -1.0, -1.0, t)


def causal_window_as_ranges('''

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
MODS = {
    "0017": patched.load_modules("through_17", lambda m: (patched.patched_source(m, through=17), f"<{m} 17>")),
    "0018": ops_of("0018", variant(None)),
    "rational": ops_of("rational", variant(RATIONAL)),
}
def op(m):
  return m["pallas_triton"].PallasTritonFlashAttention(vjp=m["pallas_triton_vjp"].PallasTritonFlashAttentionVjp())

# Accuracy on this backend.
x = np.concatenate([np.linspace(-130.0, 130.0, 1 << 16), np.geomspace(1e-30, 400, 1 << 15), -np.geomspace(1e-30, 400, 1 << 14),
                    [0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
x = np.concatenate([x[:-4], np.zeros((1 << 17) - len(x), np.float32), x[-4:]])
caps = (1.0, 30.0, 50.0, 1e6)
for name, m in MODS.items():
  if name == "0017":
    continue
  V = m["pallas_triton_vjp"]
  def kernel(x_ref, *t_refs):
    for r, c in zip(t_refs, caps): r[...] = V.soft_cap_tanh(x_ref[...], c)
  spec = pl.BlockSpec((1024,), lambda i: (i,))
  with interpret.if_needed():
    outs = [np.asarray(o) for o in pl.pallas_call(kernel, [jax.ShapeDtypeStruct(x.shape, jnp.float32)] * len(caps),
            grid=(len(x) // 1024,), in_specs=[spec], out_specs=[spec] * len(caps))(x)]
  for c, got in zip(caps, outs):
    z = x.astype(np.float64) / c; ref = np.tanh(z); fin = np.isfinite(x)
    sp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    ulp = np.abs(got - ref) / np.maximum(sp, 2.0**-149)
    ok = fin & (np.abs(ref) > 2.0**-126)
    small = ok & (np.abs(z) < 0.25)
    emit(dict(acc=name, backend=jax.default_backend(), cap=c, max_ulp_of_t=float(ulp[ok].max()), at=float(x[ok][ulp[ok].argmax()]),
              max_ulp_small=float(ulp[small].max()), max_ulp_big=float(ulp[ok & ~small].max()) if (ok & ~small).any() else 0.0,
              max_abs_t=float(np.abs(got[fin]).max()), specials=[float(v) for v in got[~fin]]))

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
