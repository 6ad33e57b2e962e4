"""H200 probe: leaner soft cap / exp instruction sequences in the series' kernels.

python3 -P lean.py ncu VARIANT...      one fwd and one fwd+bwd call each (for ncu)
python3 -P lean.py accuracy VARIANT... f32 / bf16 errors vs the f32 reference
python3 -P lean.py time VARIANT...     fwd+bwd ms (bench._time), D64/128/256 GQA
"""
import functools, json, sys
import jax, jax.numpy as jnp, numpy as np
from tokamax_softcap import bench, harness, patched, reference

SRC = {n: patched.patched_source(n) for n in patched.MODULES}
HELPER = '''
def _lean_tanh(x):
  """tanh(x) = 1 - 2 / (1 + 2^(2 x log2(e))): ex2.approx.ftz, rcp.approx.ftz."""
  [t] = plgpu.elementwise_inline_asm(
      "{ .reg .f32 e; mul.f32 e, $1, 0f4038AA3B; ex2.approx.ftz.f32 e, e;"
      " add.f32 e, e, 0f3F800000; rcp.approx.ftz.f32 e, e;"
      " fma.rn.f32 $0, e, 0fC0000000, 0f3F800000; }",
      args=[x], constraints="=f,f", pack=1,
      result_shape_dtypes=[jax.ShapeDtypeStruct(x.shape, x.dtype)])
  return t

def _lean_exp(x):
  """exp(x) = 2^(x log2(e)): ex2.approx.ftz."""
  [y] = plgpu.elementwise_inline_asm(
      "{ .reg .f32 e; mul.f32 e, $1, 0f3FB8AA3B; ex2.approx.ftz.f32 $0, e; }",
      args=[x], constraints="=f,f", pack=1,
      result_shape_dtypes=[jax.ShapeDtypeStruct(x.shape, x.dtype)])
  return y
'''
FWD_T = "t = jnp.tanh(s.astype(jnp.float32) / logits_soft_cap)"
DKDV_T = "tT = jnp.tanh(sT.astype(jnp.float32) / logits_soft_cap)"
FWD_EXP = "exp = jnp.exp2 if use_base2 else jnp.exp"
DKDV_P = "pT = jnp.exp(sT - m) / l"
DQ_P = "p = jnp.exp(s - m) / l"
def tanh_with(fn):
  return {"pallas_triton": [(FWD_T, f"t = {fn}(s.astype(jnp.float32) * (1.0 / logits_soft_cap))")],
          "pallas_triton_vjp": [(DKDV_T, f"tT = {fn}(sT.astype(jnp.float32) * (1.0 / logits_soft_cap))"),
                                (FWD_T, f"t = {fn}(s.astype(jnp.float32) * (1.0 / logits_soft_cap))")]}
EXP = {"pallas_triton": [(FWD_EXP, "exp = jnp.exp2 if use_base2 else _lean_exp")],
       "pallas_triton_vjp": [(DKDV_P, "pT = _lean_exp(sT - m) * (1.0 / l)"), (DQ_P, "p = _lean_exp(s - m) * (1.0 / l)")]}
RCP = {"pallas_triton_vjp": [(DKDV_P, "pT = jnp.exp(sT - m) * (1.0 / l)"), (DQ_P, "p = jnp.exp(s - m) * (1.0 / l)")]}
def merge(*ds):
  out = {}
  for d in ds:
    for k, v in d.items(): out[k] = out.get(k, []) + v
  return out
VARIANTS = {
  "series": {},
  "mul": tanh_with("jnp.tanh"),
  "lean_tanh": tanh_with("_lean_tanh"),
  "approx": tanh_with("plgpu.approx_tanh"),
  "rcp": RCP,
  "lean_exp": EXP,
  "lean_all": merge(tanh_with("_lean_tanh"), EXP),
}
CACHE = {}
def op_for(name):
  if name not in CACHE:
    def src(mod):
      s = SRC[mod]
      for a, b in VARIANTS[name].get(mod, []):
        n = s.count(a); assert n >= 1, (name, mod, a); s = s.replace(a, b)
      return s + HELPER, f"<{mod} {name}>"
    mods = patched.load_modules(f"lean_{name}", src)
    CACHE[name] = mods["pallas_triton"].PallasTritonFlashAttention(vjp=mods["pallas_triton_vjp"].PallasTritonFlashAttentionVjp())
  return CACHE[name]

def parse(a):  # "lean_all" (capped) or "lean_all:nocap"
  name, _, nc = a.partition(":")
  return name, (None if nc == "nocap" else bench.CAP)

what, names = sys.argv[1], sys.argv[2:]
if what == "ncu":
  d = int(names.pop(0))
  shape = bench.Shape(seq_len=4096, head_dim=d, heads="gqa", mask="causal", batch=4)
  [s] = bench._inputs(shape, jnp.bfloat16, 1)
  from tokamax import benchmarking
  for a in names:
    name, cap = parse(a)
    for mode in ("fwd", "fwd+bwd"):
      fn = functools.partial(op_for(name), logits_soft_cap=cap, is_causal=True)
      f, x = benchmarking.standardize_function(fn, *s, mode=bench.MODES[mode], seed=None)
      c = jax.jit(f).lower(x).compile()
      print("RUN", a, mode, flush=True)
      jax.block_until_ready(c(x))
elif what == "accuracy":
  for dtype, prec in ((jnp.float32, jax.lax.Precision.HIGHEST), (jnp.bfloat16, jax.lax.Precision.DEFAULT)):
    for cname in ("pr-check", "gemma2-2b"):
      cfg = harness.CONFIGS[cname]
      cfg = harness.dataclasses.replace(cfg, batch=1, seq_len=2048, num_heads=4, num_kv_heads=2 if cfg.num_kv_heads < cfg.num_heads else 4)
      op_kwargs, mask = harness.mask_variant(cfg, "causal")
      q, k, v, _, dout = harness.make_inputs(cfg, dtype, cfg.logits_soft_cap, False)
      f32 = lambda x: x.astype(jnp.float32)
      with jax.default_matmul_precision("highest"):
        ref = lambda q, k, v: reference.attention(q, k, v, None, mask=jnp.asarray(mask), logits_soft_cap=cfg.logits_soft_cap)
        out_ref, ref_vjp = jax.vjp(ref, f32(q), f32(k), f32(v))
        expected = (out_ref,) + tuple(ref_vjp(f32(dout)))
      for name in names:
        op = op_for(name)
        f = lambda q, k, v: op(q, k, v, logits_soft_cap=cfg.logits_soft_cap, precision=prec, **op_kwargs)
        out, pull = jax.vjp(f, q, k, v)
        got = (out,) + tuple(pull(dout))
        print(json.dumps(dict(dtype=jnp.dtype(dtype).name, config=cname, variant=name, errors_out_dq_dk_dv=[harness.relative_error(a, e) for a, e in zip(got, expected)])), flush=True)
else:
  ds = [int(x) for x in names.pop(0).split(",")]
  for d in ds:
    shape = bench.Shape(seq_len=4096, head_dim=d, heads="gqa", mask="causal", batch=4)
    sets = bench._inputs(shape, jnp.bfloat16, 2)
    for rnd in range(2):
      for a in names:
        name, cap = parse(a)
        for mode in ("fwd", "fwd+bwd"):
          ms, _ = bench._time(op_for(name), cap, shape, mode, sets, 20)
          print(json.dumps(dict(shape=str(shape), round=rnd, variant=a, mode=mode, ms=round(ms, 4))), flush=True)
