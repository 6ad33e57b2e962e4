"""Is `delta` from the bf16 `out` the bf16 gradients' error? (CPU, interpreter)"""

import sys

import jax
import jax.numpy as jnp
import tokamax_softcap
from tokamax_softcap import interpret
from tokamax_softcap import patched
from tokamax_softcap import reference
from tokamax_softcap import harness

mod = patched.pallas_triton_vjp
real_jnp = jnp
OVERRIDE = {}


class Proxy:

  def __getattr__(self, n):
    return getattr(real_jnp, n)

  def einsum(self, spec, *args, **kw):
    if spec == "qhd,qhd->hq" and "out" in OVERRIDE:
      args = (OVERRIDE["out"], args[1])
    return real_jnp.einsum(spec, *args, **kw)


mod.jnp = Proxy()
name = sys.argv[1] if len(sys.argv) > 1 else "pr-check"
cfg = harness.cpu_sized(harness.CONFIGS[name])
for variant in ("causal", "window"):
  op_kwargs, mask = harness.mask_variant(cfg, variant)
  q, k, v, bias, dout = harness.make_inputs(
      cfg, jnp.bfloat16, cfg.logits_soft_cap, False
  )
  f32 = lambda x: x.astype(jnp.float32)
  ref = lambda q, k, v: reference.attention(
      q, k, v, None, mask=jnp.asarray(mask), logits_soft_cap=cfg.logits_soft_cap
  )
  out_ref, ref_vjp = jax.vjp(ref, f32(q), f32(k), f32(v))
  expected = ref_vjp(f32(dout))
  op = tokamax_softcap.PallasTritonFlashAttention()
  kernel = lambda q, k, v: op(
      q,
      k,
      v,
      logits_soft_cap=cfg.logits_soft_cap,
      precision=jax.lax.Precision.DEFAULT,
      **op_kwargs,
  )
  with interpret.interpret():
    for label, o in (
        ("bf16 out (today)", None),
        ("f32 out (reference's)", out_ref[0]),
    ):
      OVERRIDE.clear()
      if o is not None:
        OVERRIDE["out"] = o
      jax.clear_caches()
      _, f_vjp = jax.vjp(kernel, q, k, v)
      got = f_vjp(dout)
      errs = [harness.relative_error(a, e) for a, e in zip(got, expected)]
      print(
          name,
          variant,
          label,
          "dq dk dv",
          " ".join(f"{e:.2e}" for e in errs),
          flush=True,
      )
