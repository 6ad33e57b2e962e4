"""What `rational.py` and `lean18.py` share: the series' variants, their inputs and timing.

Timing is `after.py`'s protocol (`h200-2026-11-30-fast-exp/scripts`): every
op compiled first (14 threads), then three rounds over all of them, each the
median of 20 wall-clock calls on each of 2 input sets; B4 T4096 causal bf16,
GQA head_dim 64/128/256 and MHA 128, fwd and fwd+bwd, capped (cap 50) for
every variant and uncapped for 0017 and 0018.
"""
import concurrent.futures, functools, json, re, time
import jax, jax.numpy as jnp, numpy as np
from tokamax import benchmarking
from tokamax_softcap import bench, patched

# Accuracy inputs: linear and geometric sweeps, both signs, and the specials
# last, padded to a power of two (Pallas-Triton's block sizes).
X = np.concatenate([np.linspace(-130.0, 130.0, 1 << 16), np.geomspace(1e-30, 400, 1 << 15), -np.geomspace(1e-30, 400, 1 << 14)])
X = np.concatenate([X, np.zeros((1 << 17) - len(X) - 4), [0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
CAPS = (1.0, 30.0, 50.0, 1e6)
SHAPES = [bench.Shape(seq_len=4096, head_dim=d, heads=h, mask="causal", batch=4) for d, h in ((64, "gqa"), (128, "gqa"), (256, "gqa"), (128, "mha"))]


def emitter(path):
  out = open(path, "a")
  def emit(r):
    print(json.dumps(r), flush=True); out.write(json.dumps(r) + "\n"); out.flush()
  return emit


def modules(name, soft_cap_tanh_source=None):
  """The package's series, with `soft_cap_tanh` replaced by the given source."""
  def src(m):
    s = patched.patched_source(m)
    if m == "pallas_triton_vjp" and soft_cap_tanh_source is not None:
      s, n = re.subn(r"def soft_cap_tanh\(.*?\ndef causal_window_as_ranges\(", lambda _: soft_cap_tanh_source, s, flags=re.S)
      assert n == 1
    return s, f"<{m} {name}>"
  return patched.load_modules(f"v_{name}", src)


def through_17():
  return patched.load_modules("through_17", lambda m: (patched.patched_source(m, through=17), f"<{m} 17>"))


def op(m):
  return m["pallas_triton"].PallasTritonFlashAttention(vjp=m["pallas_triton_vjp"].PallasTritonFlashAttentionVjp())


def time_variants(mods, emit):
  """Times every variant of `mods` (name -> modules, with "0017" and "0018")."""
  sets = {str(s): bench._inputs(s, jnp.bfloat16, 2) for s in SHAPES}

  def compile_one(o, shape, cap, mode):
    fn = functools.partial(o, logits_soft_cap=cap, **shape.mask_kwargs())
    std = [benchmarking.standardize_function(fn, *s, mode=bench.MODES[mode], seed=None) for s in sets[str(shape)]]
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
      for v, m in mods.items():
        jobs.append((dict(shape=str(s), series=v, cap=bench.CAP, mode=mode), op(m), s, bench.CAP, mode))
      for v in ("0017", "0018"):
        jobs.append((dict(shape=str(s), series=v, cap=None, mode=mode), op(mods[v]), s, None, mode))
  t0 = time.time()
  with concurrent.futures.ThreadPoolExecutor(14) as ex:
    done = [ex.submit(compile_one, o, s, cap, mode) for _, o, s, cap, mode in jobs]
    done = [d.result() for d in done]
  emit(dict(compiled=len(jobs), compile_s=round(time.time() - t0, 1)))
  for rnd in range(3):
    for (tag, *_), c in zip(jobs, done):
      emit(dict(tag, round=rnd, ms=round(time_it(*c), 4)))
