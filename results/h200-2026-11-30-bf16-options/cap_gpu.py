"""H200: fwd+bwd time and f32/bf16 accuracy of cheaper soft caps (variants of the series' kernels)."""
import json, sys
import jax, jax.numpy as jnp
from tokamax_softcap import bench, harness, patched, reference

SRC = {n: patched.patched_source(n) for n in patched.MODULES}
HELPER = '''
def _soft_cap_exp2(u, cap):
  x = jnp.abs(u) * (2.0 * 1.4426950408889634 / cap)
  r = 1.0 / (jnp.exp2(x) + 1.0)
  t = jnp.where(u < 0.0, 2.0 * r - 1.0, 1.0 - 2.0 * r)
  return t, 4.0 * r * (1.0 - r)
'''
FWD = "t = jnp.tanh(s.astype(jnp.float32) / logits_soft_cap)"
DKDV = "tT = jnp.tanh(sT.astype(jnp.float32) / logits_soft_cap)"
DQ = "t = jnp.tanh(s.astype(jnp.float32) / logits_soft_cap)"
VARIANTS = {
  "series": {},
  "fold": {"pallas_triton_vjp": [
      ("""    pT = jnp.exp(sT - m) / l
    do = do_ref.at[span_m].load()
    dv += plgpu.dot(pT.astype(do.dtype), do, precision=weights_v_dot_precision)""",
       """    pT = jnp.exp(sT - m) / l
    do = do_ref.at[span_m].load()
    pT16 = pT.astype(do.dtype)
    if logits_soft_cap is not None:
      pT *= (1.0 - tT) * (1.0 + tT)
    dv += plgpu.dot(pT16, do, precision=weights_v_dot_precision)"""),
      ("""    dsT = pT * dpT
    if logits_soft_cap is not None:
      # `dk` and `dbias` are gradients w.r.t. the pre-cap logits `u`: apply
      # the cap's derivative `1 - t^2` (factored, to stay accurate as
      # `|t| -> 1`).
      dsT *= (1.0 - tT) * (1.0 + tT)
""", """    dsT = pT * dpT
"""),
      ("""    dp = plgpu.dot(do, v.T, precision=weights_v_dot_precision) - delta
    ds = p * dp
    if logits_soft_cap is not None:
      # `dq` is a gradient w.r.t. the pre-cap logits: apply `1 - t^2`.
      ds *= (1.0 - t) * (1.0 + t)
""", """    if logits_soft_cap is not None:
      p *= (1.0 - t) * (1.0 + t)
    dp = plgpu.dot(do, v.T, precision=weights_v_dot_precision) - delta
    ds = p * dp
""")]},
  "mul": {"pallas_triton": [(FWD, "t = jnp.tanh(s.astype(jnp.float32) * (1.0 / logits_soft_cap))")],
          "pallas_triton_vjp": [(DKDV, "tT = jnp.tanh(sT.astype(jnp.float32) * (1.0 / logits_soft_cap))"),
                                (DQ, "t = jnp.tanh(s.astype(jnp.float32) * (1.0 / logits_soft_cap))")]},
  "exp2": {"pallas_triton": [(FWD, "t = vjp._soft_cap_exp2(s.astype(jnp.float32), logits_soft_cap)[0]")],
           "pallas_triton_vjp": [(DKDV, "tT, dcapT = _soft_cap_exp2(sT.astype(jnp.float32), logits_soft_cap)"),
                                 ("dsT *= (1.0 - tT) * (1.0 + tT)", "dsT *= dcapT"),
                                 (DQ, "t, dcap = _soft_cap_exp2(s.astype(jnp.float32), logits_soft_cap)"),
                                 ("ds *= (1.0 - t) * (1.0 + t)", "ds *= dcap")]},
}
CACHE = {}
def op_for(name):
  if name not in CACHE:
    def src(mod):
      s = SRC[mod]
      for a, b in VARIANTS[name].get(mod, []):
        assert s.count(a) == 1, (name, mod, a); s = s.replace(a, b)
      if mod == "pallas_triton_vjp":
        s += HELPER
      return s, f"<{mod} {name}>"
    mods = patched.load_modules(f"cap_{name}", src)
    CACHE[name] = mods["pallas_triton"].PallasTritonFlashAttention(vjp=mods["pallas_triton_vjp"].PallasTritonFlashAttentionVjp())
  return CACHE[name]

# Run at 98a4fb1 (series 0001-0016), whose source the replacements match:
# `python3 -P cap_gpu.py accuracy series mul exp2` and `... time series mul exp2
# nocap --fwd` (*-cap-variants.jsonl); `... accuracy series fold` and `...
# time series fold nocap` (*-fold.jsonl). Both accuracy runs were stopped by
# their time limit after the float32 pr-check rows.
what = sys.argv[1]
if what == "accuracy":
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
      for name in sys.argv[2:]:
        op = op_for(name)
        f = lambda q, k, v: op(q, k, v, logits_soft_cap=cfg.logits_soft_cap, precision=prec, **op_kwargs)
        out, pull = jax.vjp(f, q, k, v)
        got = (out,) + tuple(pull(dout))
        print(json.dumps(dict(dtype=jnp.dtype(dtype).name, config=cname, variant=name, errors_out_dq_dk_dv=[harness.relative_error(a, e) for a, e in zip(got, expected)])), flush=True)
else:
  shapes = [bench.Shape(seq_len=4096, head_dim=128, heads="mha", mask="causal", batch=4),
            bench.Shape(seq_len=4096, head_dim=128, heads="gqa", mask="causal", batch=4),
            bench.Shape(seq_len=4096, head_dim=64, heads="mha", mask="causal", batch=4),
            bench.Shape(seq_len=8192, head_dim=256, heads="gqa", mask="causal", batch=2)]
  for shape in shapes:
    sets = bench._inputs(shape, jnp.bfloat16, 2)
    for rnd in range(2):
      for name in [a for a in sys.argv[2:] if a != "--fwd"]:
        op, cap = (op_for("series"), None) if name == "nocap" else (op_for(name), bench.CAP)
        for mode in ("fwd", "fwd+bwd") if "--fwd" in sys.argv else ("fwd+bwd",):
          ms, peak = bench._time(op, cap, shape, mode, sets, 20)
          print(json.dumps(dict(shape=str(shape), round=rnd, variant=name, mode=mode, ms=ms)), flush=True)
