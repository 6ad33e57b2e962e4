import sys, jax, jax.numpy as jnp
import tokamax_softcap
from tokamax_softcap import harness, interpret, reference
name = sys.argv[1]
cfg = harness.cpu_sized(harness.CONFIGS[name])
op_kwargs, mask = harness.mask_variant(cfg, "causal")
q, k, v, bias, dout = harness.make_inputs(cfg, jnp.bfloat16, cfg.logits_soft_cap, False)
f32 = lambda x: x.astype(jnp.float32)
ref = lambda q, k, v: reference.attention(q, k, v, None, mask=jnp.asarray(mask), logits_soft_cap=cfg.logits_soft_cap)
out_ref, ref_vjp = jax.vjp(ref, f32(q), f32(k), f32(v))
expected = ref_vjp(f32(dout))
def errs(op):
  f = lambda q, k, v: op(q, k, v, logits_soft_cap=cfg.logits_soft_cap, precision=jax.lax.Precision.DEFAULT, **op_kwargs)
  _, pull = jax.vjp(f, q, k, v)
  return [f"{harness.relative_error(a, e):.3e}" for a, e in zip(pull(dout), expected)]
with interpret.interpret():
  for flag in (False, True):
    tokamax_softcap.PallasTritonFlashAttentionVjp.takes_out_error = flag
    op = tokamax_softcap.PallasTritonFlashAttention(bypass_device_check=True)
    print(flag, errs(op))
