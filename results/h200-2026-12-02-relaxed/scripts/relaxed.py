"""dq by relaxed atomic adds from the dk/dv loop, against the two-pass VJP.

python -P relaxed.py OUT.jsonl, with the WIP patch
(../../h200-2026-12-02-derivative/scripts/0026-WIP-atomic-dq.patch) in
tokamax_softcap/patches/. Pallas's `_atomic_rmw` lowering is given
`MemSemantic.RELAXED` (its default is acquire-release; `plgpu.atomic_add` has
no argument for the order). B2 T8192, bf16, cap 50 and no cap, fwd+bwd:
the two-pass VJP at its heuristic config, and the atomic VJP at a grid of
(block_m1, block_n1, num_warps, num_stages). Every job is compiled first
(threads; the two-pass jobs before `ATOMIC_DQ` is set), then timed with
bench's CUPTI timer: the median of 10 rounds, each the mean over 2 input sets.
Then the gradients of both VJPs at one shape per head_dim are compared.
"""
import concurrent.futures, functools, json, sys, time
import jax, jax.numpy as jnp, numpy as np
from jax._src.pallas.triton import lowering
from jax._src.lib.triton import dialect as tt_dialect
import tokamax_softcap
from tokamax import benchmarking
from tokamax_softcap import bench, pallas_triton_vjp, patched

lowering._atomic_rmw = functools.partial(
    lowering._atomic_rmw, semantic=tt_dialect.MemSemantic.RELAXED)
vjp_module = patched.pallas_triton_vjp

out = open(sys.argv[1], "a")
def emit(r):
  print(json.dumps(r), flush=True); out.write(json.dumps(r) + "\n"); out.flush()

SHAPES = [(64, "mha", "causal"), (64, "gqa", "full"), (128, "mha", "causal"),
          (128, "gqa", "full"), (256, "gqa", "causal")]
GRID = {64: [(64, 64, 4, 2), (64, 64, 4, 3), (32, 64, 4, 2), (32, 64, 4, 3),
             (64, 64, 8, 2), (64, 128, 8, 2), (32, 128, 4, 2), (64, 32, 4, 2)],
        128: [(64, 64, 4, 2), (64, 64, 4, 3), (32, 64, 4, 2), (32, 64, 4, 3),
              (64, 64, 8, 2), (64, 128, 8, 2), (32, 128, 4, 2), (64, 32, 4, 2)],
        256: [(32, 64, 8, 2), (64, 64, 8, 1), (32, 64, 4, 2), (32, 32, 4, 2)]}

def shape_of(d, heads, mask):
  return bench.Shape(seq_len=8192, head_dim=d, heads=heads, mask=mask, batch=2)

def op_with(vc):
  op = tokamax_softcap.PallasTritonFlashAttention()
  if vc is None:
    return op
  m, n, w, s = vc
  cfg = pallas_triton_vjp.Config(
      block_m1=m, block_n1=n, block_m2=m, block_n2=n, num_warps=w, num_stages=s)
  return op.replace(vjp=op.vjp.replace(config=cfg))

sets = {s: bench._inputs(shape_of(*s), jnp.bfloat16, 2) for s in SHAPES}

def compile_one(tag, op):
  s = (tag["head_dim"], tag["heads"], tag["mask"])
  f = functools.partial(op, logits_soft_cap=tag["cap"], **shape_of(*s).mask_kwargs())
  std = [benchmarking.standardize_function(f, *x, mode=bench.MODES["fwd+bwd"], seed=None)
         for x in sets[s]]
  args = [a for _, a in std]
  return jax.jit(std[0][0]).lower(args[0]).compile(), args

two_pass, atomic = [], []
for s in SHAPES:
  base = dict(head_dim=s[0], heads=s[1], mask=s[2])
  for cap in (bench.CAP, None):
    two_pass.append((dict(base, cap=cap, atomic=False, vjp=None), op_with(None)))
    atomic.append((dict(base, cap=cap, atomic=True, vjp=None), op_with(None)))
    for vc in GRID[s[0]]:
      atomic.append((dict(base, cap=cap, atomic=True, vjp=vc), op_with(vc)))

def compile_all(jobs):
  with concurrent.futures.ThreadPoolExecutor(16) as ex:
    futs = [ex.submit(compile_one, *j) for j in jobs]
    done = []
    for fu in futs:
      try: done.append(fu.result())
      except Exception as e: done.append(e)
  return done

t0 = time.time()
vjp_module.ATOMIC_DQ = False
done = compile_all(two_pass)
vjp_module.ATOMIC_DQ = True
done += compile_all(atomic)
emit(dict(compiled=len(done), compile_s=round(time.time() - t0, 1)))
timer = bench.benchmarking._TIMERS[bench.timing_method()]
for (tag, _), c in zip(two_pass + atomic, done):
  r = dict(tag)
  if isinstance(c, Exception):
    r["error"] = (str(c).splitlines() or [type(c).__name__])[0][:300]
    emit(r); continue
  compiled, args = c
  try:
    timers = [timer(compiled, a) for a in args]
    r["ms"] = round(float(np.median([np.mean([t(False)[0] for t in timers]) for _ in range(10)])), 4)
  except Exception as e:
    r["error"] = (str(e).splitlines() or [type(e).__name__])[0][:300]
  emit(r)

for s in SHAPES[::2]:
  shape = shape_of(*s)
  (q, k, v), = bench._inputs(shape, jnp.bfloat16, 1)
  do = jax.random.normal(jax.random.PRNGKey(7), q.shape, q.dtype)
  op = tokamax_softcap.PallasTritonFlashAttention()
  grads = {}
  for flag in (False, True):
    vjp_module.ATOMIC_DQ = flag
    f = jax.jit(lambda q, k, v: jax.vjp(lambda *a: op(
        *a, logits_soft_cap=bench.CAP, **shape.mask_kwargs()), q, k, v)[1](do))
    try:
      grads[flag] = [np.asarray(g, np.float32) for g in f(q, k, v)]
    except Exception as e:
      emit(dict(kind="compare", shape=str(shape), error=str(e)[:300])); break
  else:
    diff = [float(np.abs(a - b).max() / np.abs(a).max())
            for a, b in zip(grads[False], grads[True])]
    emit(dict(kind="compare", shape=str(shape), dq_dk_dv=diff))
