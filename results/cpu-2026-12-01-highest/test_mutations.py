"""Runs tests/test_precision.py's sweep (GQA_64, causal and bias, bf16 and f16) with patch 0019 undone in part.

`python -P results/cpu-2026-12-01-highest/test_mutations.py MODE` from the repository root, MODE `on` (the series), `off` (`precision=HIGHEST` ignored) or `nosplit` (each operand as one 16-bit term). Output: test_mutations.log.
"""
import sys, jax
sys.path.insert(0, "tests")
from tokamax_softcap import patched, harness, interpret
import test_precision as t, configs
mode = sys.argv[1]
orig = patched.pallas_triton_vjp.keeps_f32_operands
if mode == "off":
  patched.pallas_triton_vjp.keeps_f32_operands = lambda *a: False
elif mode == "nosplit":
  patched.pallas_triton_vjp.split_for_dot = lambda x, d, s: (x.astype(d),)
with interpret.interpret():
  for dtype in ("bfloat16", "float16"):
    for variant in ("causal", "bias"):
      try:
        t.test_highest_precision_matches_xla(configs.GQA_64, dtype, variant); print(mode, dtype, variant, "pass")
      except AssertionError as e: print(mode, dtype, variant, "FAIL", e)
  if mode == "on":
    for dtype in ("bfloat16", "float16"):
      c = configs.GQA_64
      h = harness.gradients(c, "causal", dtype, t.LOGIT_STD, precision=t.HIGHEST)
      d = harness.gradients(c, "causal", dtype, t.LOGIT_STD, precision=jax.lax.Precision.DEFAULT)
      print(dtype, "dq diff", harness.relative_error(d.actual[0], h.actual[0]))
