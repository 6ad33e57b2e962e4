"""bf16 gradient errors on the CPU (interpreter): ds rounded to bf16 before the dq/dk dots vs ds split in two bf16 parts; with delta from the bf16 out or the exact out."""
import json, sys
import jax, jax.numpy as jnp
from tokamax._src.ops.attention import api
from tokamax_softcap import harness, interpret, patched, reference

SRC = {n: patched.patched_source(n) for n in patched.MODULES}
SPLIT = {
  "dk += plgpu.dot(dsT.astype(q.dtype), q, precision=q_k_dot_precision)":
  "dsT_hi = dsT.astype(q.dtype)\n    dsT_lo = (dsT - dsT_hi.astype(dsT.dtype)).astype(q.dtype)\n    dk += plgpu.dot(dsT_hi, q, precision=q_k_dot_precision) + plgpu.dot(dsT_lo, q, precision=q_k_dot_precision)",
  "return dq + plgpu.dot(ds.astype(k.dtype), k, precision=q_k_dot_precision)":
  "ds_hi = ds.astype(k.dtype)\n    ds_lo = (ds - ds_hi.astype(ds.dtype)).astype(k.dtype)\n    return dq + plgpu.dot(ds_hi, k, precision=q_k_dot_precision) + plgpu.dot(ds_lo, k, precision=q_k_dot_precision)",
}
F16 = {
  "dk += plgpu.dot(dsT.astype(q.dtype), q, precision=q_k_dot_precision)":
  "dk += plgpu.dot(dsT.astype(jnp.float16), q.astype(jnp.float16), precision=q_k_dot_precision)",
  "return dq + plgpu.dot(ds.astype(k.dtype), k, precision=q_k_dot_precision)":
  "return dq + plgpu.dot(ds.astype(jnp.float16), k.astype(jnp.float16), precision=q_k_dot_precision)",
}
def modules(split, exact_delta):
  def src(name):
    s = SRC[name]
    if name == "pallas_triton_vjp":
      if split:
        for a, b in (F16 if split == "f16" else SPLIT).items():
          assert a in s; s = s.replace(a, b)
      if exact_delta:
        a = '''  delta = jnp.einsum(
      "qhd,qhd->hq", out, dout, preferred_element_type=jnp.float32
  )'''
        assert a in s
        s = s.replace(a, '''  delta = jnp.einsum(
      "qhd,qhd->hq", EXACT_OUT[0], dout, preferred_element_type=jnp.float32
  )''')
        s = "EXACT_OUT = [None]\n" + s
    return s, f"<{name} split={split} exact={exact_delta}>"
  return patched.load_modules(f"exp_{split}{int(exact_delta)}", src)

name = sys.argv[1] if len(sys.argv) > 1 else "pr-check"
cfg = harness.cpu_sized(harness.CONFIGS[name])
xla = api.IMPLEMENTATIONS["xla"]
for variant in ("causal",):
  op_kwargs, mask = harness.mask_variant(cfg, variant)
  q, k, v, bias, dout = harness.make_inputs(cfg, jnp.bfloat16, cfg.logits_soft_cap, False)
  f32 = lambda x: x.astype(jnp.float32)
  ref = lambda q, k, v: reference.attention(q, k, v, None, mask=jnp.asarray(mask), logits_soft_cap=cfg.logits_soft_cap)
  out_ref, ref_vjp = jax.vjp(ref, f32(q), f32(k), f32(v))
  expected = ref_vjp(f32(dout))
  def errs(op):
    f = lambda q, k, v: op(q, k, v, logits_soft_cap=cfg.logits_soft_cap, precision=jax.lax.Precision.DEFAULT, **op_kwargs)
    _, pull = jax.vjp(f, q, k, v)
    return [harness.relative_error(a, e) for a, e in zip(pull(dout), expected)]
  print(json.dumps(dict(config=name, variant=variant, impl="xla", errors=errs(xla))), flush=True)
  with interpret.interpret():
    for split in (sys.argv[2:] or [False, True]):
      for exact in (False, True) if len(sys.argv) < 3 else (True,):
        mods = modules(split, exact)
        if exact:
          sys.modules[mods["pallas_triton_vjp"].__name__].EXACT_OUT[0] = out_ref[0]
        op = mods["pallas_triton"].PallasTritonFlashAttention(vjp=mods["pallas_triton_vjp"].PallasTritonFlashAttentionVjp(bypass_device_check=True), bypass_device_check=True)
        print(json.dumps(dict(config=name, variant=variant, ds_split=split, exact_delta=exact, errors=errs(op))), flush=True)
