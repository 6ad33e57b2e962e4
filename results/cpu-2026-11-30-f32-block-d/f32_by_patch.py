"""f32 gradient errors of gemma2-2b (verify's CPU size, causal, HIGHEST) with the series through patch N, for N in argv (interpreter without a GPU)."""
import contextlib, sys
import jax, jax.numpy as jnp
from tokamax_softcap import harness, interpret, patched, reference

def source_upto(n):
  """The modules' source with the series through patch `n` (`patch show --through`)."""
  return lambda name: (patched.patched_source(name, n), f"<{name} through {n}>")

cfg = harness.cpu_sized(harness.CONFIGS["gemma2-2b"])
op_kwargs, mask = harness.mask_variant(cfg, "causal")
q, k, v, _, dout = harness.make_inputs(cfg, jnp.float32, cfg.logits_soft_cap, False)
ref = lambda q, k, v: reference.attention(q, k, v, None, mask=jnp.asarray(mask), logits_soft_cap=cfg.logits_soft_cap)
with jax.default_matmul_precision("highest"):
  _, rv = jax.vjp(ref, q, k, v); exp = rv(dout)
with (contextlib.nullcontext() if jax.default_backend() == "gpu" else interpret.interpret()):
  for n in map(int, sys.argv[1:]):
    mods = patched.load_modules(f"b{n}", source_upto(n))
    op = mods["pallas_triton"].PallasTritonFlashAttention(vjp=mods["pallas_triton_vjp"].PallasTritonFlashAttentionVjp(bypass_device_check=True), bypass_device_check=True)
    f = lambda q, k, v: op(q, k, v, logits_soft_cap=cfg.logits_soft_cap, precision=jax.lax.Precision.HIGHEST, **op_kwargs)
    _, pull = jax.vjp(f, q, k, v)
    print(n, [f"{harness.relative_error(a, e):.2e}" for a, e in zip(pull(dout), exp)], flush=True)
