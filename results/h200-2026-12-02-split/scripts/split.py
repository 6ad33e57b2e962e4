"""dv in a kernel of its own (patch 0026) against one dk/dv kernel.

python -P split.py OUT.jsonl [RUN]. Run 1 (the default) as described here;
run 2 times a second grid at head_dim 512, 256 (causal and full) and 128
(B2 T8192 H16/16, causal), each shape's default configs with and without the
cap, without the split, and XLA at head_dim 512. Patch 0026 computes dv in its own kernel when
the head dim (padded to a power of two) is at least
`pallas_triton_vjp.SPLIT_DKDV_HEAD_DIM` (512). Times fwd+bwd (bf16, cap 50,
causal and full) at head_dim 512 (B1 T8192 H8/4) with that split on and off
for a grid of VJP configs (block_m1, block_n1, block_m2, block_n2, warps,
stages), and at head_dim 256 (B2 T8192 H8/4, causal) with the split moved to
256; XLA at head_dim 512 in the same run. Every job is compiled first
(threads, grouped by the split setting, which is read when tracing), then
timed with bench's CUPTI timer: the median of 10 rounds, each the mean over 2
input sets. Then the gradients with and without the split are compared.
"""
import concurrent.futures, functools, json, sys, time
import jax, jax.numpy as jnp, numpy as np
import tokamax_softcap
from tokamax import benchmarking
from tokamax_softcap import bench, pallas_triton_vjp, patched

vjp_module = patched.pallas_triton_vjp
OFF = 1 << 30
out = open(sys.argv[1], "a")
def emit(r):
  print(json.dumps(r), flush=True); out.write(json.dumps(r) + "\n"); out.flush()

RUN = int(sys.argv[2]) if len(sys.argv) > 2 else 1
if RUN == 1:
  D512 = [(32, 32, 32, 32, 8, 2), (32, 32, 32, 32, 4, 2), (32, 32, 32, 32, 8, 3),
          (32, 64, 64, 32, 8, 1), (16, 64, 64, 16, 8, 1), (16, 32, 32, 16, 8, 2),
          (16, 32, 32, 16, 4, 2), (32, 32, 32, 32, 4, 3)]
  D256 = [None, (64, 128, 128, 64, 8, 1), (32, 128, 128, 32, 8, 2),
          (32, 64, 64, 32, 8, 2), (64, 64, 64, 64, 4, 2)]
  SHAPES = {512: dict(batch=1, heads="gqa"), 256: dict(batch=2, heads="gqa")}
  keys = [(512, "causal"), (512, "full"), (256, "causal")]
else:
  D512 = [(32, 32, 32, 32, 4, 3), (32, 32, 32, 32, 4, 4), (16, 32, 32, 16, 4, 3),
          (32, 64, 64, 32, 4, 1), (16, 32, 32, 16, 4, 4), (32, 32, 32, 32, 2, 3)]
  D256 = [(64, 128, 128, 64, 8, 1), (32, 128, 128, 32, 8, 1),
          (32, 128, 128, 32, 8, 2), (16, 128, 128, 16, 8, 2),
          (16, 128, 128, 16, 8, 3), (64, 64, 64, 64, 8, 1),
          (32, 128, 128, 32, 4, 2), (64, 128, 128, 64, 16, 1)]
  D128 = [(64, 128, 128, 64, 8, 2), (32, 128, 128, 32, 8, 2),
          (64, 128, 128, 64, 8, 3), (64, 128, 128, 64, 4, 2)]
  SHAPES = {512: dict(batch=1, heads="gqa"), 256: dict(batch=2, heads="gqa"),
            128: dict(batch=2, heads="mha")}
  keys = [(512, "causal"), (512, "full"), (256, "causal"), (256, "full"),
          (128, "causal")]

def shape_of(d, mask):
  return bench.Shape(seq_len=8192, head_dim=d, mask=mask, **SHAPES[d])

def op_with(vc):
  op = tokamax_softcap.PallasTritonFlashAttention()
  if vc is None:
    return op
  cfg = pallas_triton_vjp.Config(
      block_m1=vc[0], block_n1=vc[1], block_m2=vc[2], block_n2=vc[3],
      num_warps=vc[4], num_stages=vc[5])
  return op.replace(vjp=op.vjp.replace(config=cfg))

sets = {s: bench._inputs(shape_of(*s), jnp.bfloat16, 2) for s in keys}

def compile_one(tag, op, kwargs):
  s = (tag["head_dim"], tag["mask"])
  f = functools.partial(op, **kwargs, **shape_of(*s).mask_kwargs())
  std = [benchmarking.standardize_function(f, *x, mode=bench.MODES["fwd+bwd"], seed=None)
         for x in sets[s]]
  args = [a for _, a in std]
  return jax.jit(std[0][0]).lower(args[0]).compile(), args

groups = {OFF: [], 512: [], 256: [], 128: []}
capped = dict(logits_soft_cap=bench.CAP)
def job(group, vc, cap=True, **tag):
  groups[group].append((dict(tag, impl="ours" if cap else "ours-nocap",
                             split=group < OFF, vjp=vc),
                        op_with(vc), capped if cap else {}))
if RUN == 1:
  for mask in ("causal", "full"):
    base = dict(head_dim=512, mask=mask)
    xla, kw = bench._implementation("xla")
    groups[OFF].append((dict(base, impl="xla"), xla, kw))
    for vc in [None] + D512:
      for split in (OFF, 512):
        if split == OFF and vc not in (None, D512[0], D512[1]) and mask == "full":
          continue
        job(split, vc, **base)
    job(512, None, cap=False, **base)
  for vc in D256:
    for split in (OFF, 256):
      if split == OFF and vc is not None:
        continue
      job(split, vc, head_dim=256, mask="causal")
else:
  for d, mask in keys:
    base = dict(head_dim=d, mask=mask)
    job(OFF, None, **base)
    job(OFF, None, cap=False, **base)
    for vc in {512: D512, 256: D256, 128: D128}[d]:
      job(d, vc, **base)
    job(d, {512: D512, 256: D256, 128: D128}[d][0], cap=False, **base)
  for mask in ("causal", "full"):
    xla, kw = bench._implementation("xla")
    groups[OFF].append((dict(head_dim=512, mask=mask, impl="xla"), xla, kw))

t0 = time.time()
jobs, done = [], []
for split, group in groups.items():
  vjp_module.SPLIT_DKDV_HEAD_DIM = split
  with concurrent.futures.ThreadPoolExecutor(16) as ex:
    futs = [ex.submit(compile_one, *j) for j in group]
    for j, fu in zip(group, futs):
      jobs.append(j)
      try: done.append(fu.result())
      except Exception as e: done.append(e)
emit(dict(compiled=len(jobs), compile_s=round(time.time() - t0, 1)))
timer = bench.benchmarking._TIMERS[bench.timing_method()]
for (tag, _, _), c in zip(jobs, done):
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

shape = shape_of(512, "causal")
(q, k, v), = bench._inputs(shape, jnp.bfloat16, 1)
do = jax.random.normal(jax.random.PRNGKey(7), q.shape, q.dtype)
op = tokamax_softcap.PallasTritonFlashAttention()
grads = {}
for split in (OFF, 512):
  vjp_module.SPLIT_DKDV_HEAD_DIM = split
  f = jax.jit(lambda q, k, v: jax.vjp(lambda *a: op(
      *a, logits_soft_cap=bench.CAP, **shape.mask_kwargs()), q, k, v)[1](do))
  grads[split] = [np.asarray(g, np.float32) for g in f(q, k, v)]
diff = [float(np.abs(a - b).max() / np.abs(a).max())
        for a, b in zip(grads[OFF], grads[512])]
emit(dict(kind="compare", shape=str(shape), dq_dk_dv=diff))
