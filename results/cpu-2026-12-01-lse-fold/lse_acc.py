"""CPU: verify's rows with the VJP's weights as exp2(s log2e - lse2) vs the series as it is.

LSE_DIR holds `pallas_triton.py` (`python -m tokamax_softcap patch show pallas_triton`)
and `pallas_triton_vjp.py` (the same with `vjp-lse.diff` applied).

.venv/bin/python -P lse_acc.py float32 LSE_DIR
"""
import sys
from tokamax_softcap import harness, interpret, patched, verify
def op(m):
  return m["pallas_triton"].PallasTritonFlashAttention(vjp=m["pallas_triton_vjp"].PallasTritonFlashAttentionVjp(bypass_device_check=True), bypass_device_check=True)
LSE = patched.load_modules("lse", lambda m: (open(f"{sys.argv[2]}/{m}.py").read(), f"<lse {m}>"))
NOW = patched.load_modules("now", lambda m: (patched.patched_source(m), f"<now {m}>"))
dtype = sys.argv[1]
for c in verify.sized_configs(["gemma2-2b", "pr-check"], "cpu"):
  for variant in ("causal", "packed-k-start", "bias", "window"):
    for name, m in (("now", NOW), ("lse", LSE)):
      with interpret.if_needed():
        g = harness.gradients(c, variant, dtype, op=op(m))
      print(c.name, variant, dtype, name, {k: f"{v:.3e}" for k, v in verify._errors(g.actual, g.expected).items()}, flush=True)
