"""Run at 98a4fb1 (series 0001-0016), whose source the replacements match. H200: accuracy (full verify size) and fwd+bwd time of the ds split and an exact delta (out + its bf16 rounding error)."""
import dataclasses, json, sys
import jax, jax.numpy as jnp
from tokamax._src.ops.attention import api
from tokamax_softcap import bench, harness, patched, reference

SRC = {n: patched.patched_source(n) for n in patched.MODULES}
DK = ("dk += plgpu.dot(dsT.astype(q.dtype), q, precision=q_k_dot_precision)",
      "dsT_hi = dsT.astype(q.dtype)\n    dsT_lo = (dsT - dsT_hi.astype(dsT.dtype)).astype(q.dtype)\n    dk += plgpu.dot(dsT_hi, q, precision=q_k_dot_precision) + plgpu.dot(dsT_lo, q, precision=q_k_dot_precision)")
DQ = ("return dq + plgpu.dot(ds.astype(k.dtype), k, precision=q_k_dot_precision)",
      "ds_hi = ds.astype(k.dtype)\n    ds_lo = (ds - ds_hi.astype(ds.dtype)).astype(k.dtype)\n    return dq + plgpu.dot(ds_hi, k, precision=q_k_dot_precision) + plgpu.dot(ds_lo, k, precision=q_k_dot_precision)")
DELTA = ('''  delta = jnp.einsum(
      "qhd,qhd->hq", out, dout, preferred_element_type=jnp.float32
  )''', '''  delta = jnp.einsum(
      "qhd,qhd->hq", EXACT_OUT[0] if EXACT_OUT[0] is not None else out, dout, preferred_element_type=jnp.float32
  )''')
CACHE = {}
def op_for(split):
  if split not in CACHE:
    def src(name):
      s = SRC[name]
      if name == "pallas_triton_vjp":
        kind = {"f16": F16, "tf32": TF32}.get(split, {"dq": DQ, "dk": DK})
        for on, (a, b) in (("dq" in split or split in ("f16", "tf32"), kind["dq"]), ("dk" in split or split in ("f16", "tf32"), kind["dk"]), (True, DELTA)):
          if on:
            assert a in s; s = s.replace(a, b)
        s = "EXACT_OUT = [None]\n" + s
      return s, f"<{name} {split}>"
    mods = patched.load_modules(f"exp_{split or 'none'}", src)
    op = mods["pallas_triton"].PallasTritonFlashAttention(vjp=mods["pallas_triton_vjp"].PallasTritonFlashAttentionVjp())
    CACHE[split] = (op, mods["pallas_triton_vjp"])
  return CACHE[split]

F16 = {"dk": (DK[0], "dk += plgpu.dot(dsT.astype(jnp.float16), q.astype(jnp.float16), precision=q_k_dot_precision)"),
       "dq": (DQ[0], "return dq + plgpu.dot(ds.astype(jnp.float16), k.astype(jnp.float16), precision=q_k_dot_precision)")}
TF32 = {"dk": (DK[0], "dk += plgpu.dot(dsT, q.astype(jnp.float32), precision=jax.lax.DotAlgorithmPreset.TF32_TF32_F32)"),
       "dq": (DQ[0], "return dq + plgpu.dot(ds, k.astype(jnp.float32), precision=jax.lax.DotAlgorithmPreset.TF32_TF32_F32)")}
SPLITS = ["", "dqdk", "f16", "tf32"]
# `python3 -P ds_gpu.py accuracy`; `python3 -P ds_gpu.py time series dq dk
# dqdk` (time-split.jsonl); `... time series f16 tf32` (time-f16-tf32.jsonl).
what = sys.argv[1]
VARIANTS = ["" if a == "series" else a for a in sys.argv[2:]]
if what == "accuracy":
  xla = api.IMPLEMENTATIONS["xla"]
  for name in ("pr-check", "gemma2-2b"):
    cfg = dataclasses.replace(harness.CONFIGS[name], batch=1)
    op_kwargs, mask = harness.mask_variant(cfg, "causal")
    q, k, v, bias, dout = harness.make_inputs(cfg, jnp.bfloat16, cfg.logits_soft_cap, False)
    f32 = lambda x: x.astype(jnp.float32)
    with jax.default_matmul_precision("highest"):
      ref = lambda q, k, v: reference.attention(q, k, v, None, mask=jnp.asarray(mask), logits_soft_cap=cfg.logits_soft_cap)
      out_ref, ref_vjp = jax.vjp(ref, f32(q), f32(k), f32(v))
      expected = ref_vjp(f32(dout))
    def errs(op):
      f = lambda q, k, v: op(q, k, v, logits_soft_cap=cfg.logits_soft_cap, **op_kwargs)
      out, pull = jax.vjp(f, q, k, v)
      return out, [harness.relative_error(a, e) for a, e in zip(pull(dout), expected)]
    print(json.dumps(dict(config=name, impl="xla", errors=errs(xla)[1])), flush=True)
    for split in SPLITS:
      op, mod = op_for(split)
      for exact in (False, True):
        mod.EXACT_OUT[0] = None
        if exact:
          out, _ = errs(op)
          lo = (out_ref - f32(out)).astype(jnp.bfloat16)
          mod.EXACT_OUT[0] = (f32(out) + f32(lo))[0]
        print(json.dumps(dict(config=name, split=split, exact_delta=exact, errors=errs(op)[1])), flush=True)
        mod.EXACT_OUT[0] = None
      del op
else:
  shapes = [bench.Shape(seq_len=4096, head_dim=128, heads="mha", mask="causal", batch=4),
            bench.Shape(seq_len=4096, head_dim=128, heads="gqa", mask="causal", batch=4),
            bench.Shape(seq_len=8192, head_dim=256, heads="gqa", mask="causal", batch=2),
            bench.Shape(seq_len=4096, head_dim=64, heads="mha", mask="causal", batch=4)]
  for shape in shapes:
    sets = bench._inputs(shape, jnp.bfloat16, 2)
    for rnd in range(2):
      for split in VARIANTS:
        op, _ = op_for(split)
        ms, peak = bench._time(op, bench.CAP, shape, "fwd+bwd", sets, 20)
        print(json.dumps(dict(shape=str(shape), round=rnd, split=split, fwd_bwd_ms=ms, peak_mb=peak)), flush=True)
