"""CPU: verify's bf16 rows with patch 0018 at f343b20 and as now (Pallas interpreter).

OLD_DIR holds `pallas_triton.py` and `pallas_triton_vjp.py` as f343b20 runs
them (`python -m tokamax_softcap patch show pallas_triton_vjp` in a checkout
of f343b20). VARIANTS: comma-separated `harness.VARIANTS` at seed 0 ("" for
none); N_SEEDS: seeds 1..N of gemma2-2b `packed-k-start`.

.venv/bin/python -P bf16_seeds.py OLD_DIR VARIANTS [N_SEEDS]
"""
import sys
from tokamax_softcap import harness, patched, verify, interpret
def mods(d):
  return patched.load_modules(f"m_{abs(hash(d))}", lambda m: (open(f"{d}/{m}.py").read(), f"<{d} {m}>"))
OLD = mods(sys.argv[1])
NOW = patched.load_modules("now", lambda m: (patched.patched_source(m), f"<now {m}>"))
cfg = [c for c in verify.sized_configs(["gemma2-2b", "pr-check"], "cpu")]
for c in cfg if sys.argv[2] else []:
  for variant in sys.argv[2].split(","):
    for name, m in (("f343b20", OLD), ("now", NOW)):
      op = m["pallas_triton"].PallasTritonFlashAttention(vjp=m["pallas_triton_vjp"].PallasTritonFlashAttentionVjp(bypass_device_check=True), bypass_device_check=True)
      with interpret.if_needed():
        g = harness.gradients(c, variant, "bfloat16", op=op)
      print(c.name, variant, name, {k: f"{v:.3e}" for k, v in verify._errors(g.actual, g.expected).items()}, flush=True)

if len(sys.argv) > 3:
  import functools
  orig = harness.make_inputs
  c = cfg[0]
  for seed in range(1, int(sys.argv[3]) + 1):
    harness.make_inputs = functools.partial(orig, seed=seed)
    for name, m in (("f343b20", OLD), ("now", NOW)):
      op = m["pallas_triton"].PallasTritonFlashAttention(vjp=m["pallas_triton_vjp"].PallasTritonFlashAttentionVjp(bypass_device_check=True), bypass_device_check=True)
      with interpret.if_needed():
        g = harness.gradients(c, "packed-k-start", "bfloat16", op=op)
      print("seed", seed, c.name, name, {k: f"{v:.3e}" for k, v in verify._errors(g.actual, g.expected).items()}, flush=True)
