"""CPU: where verify's gemma2-2b packed-k-start bf16 row has its largest dq error.

Patch 0018 at f343b20 against the package as it runs; OLD_DIR as for
`bf16_seeds.py`.

.venv/bin/python -P bf16_element.py OLD_DIR
"""
import sys
import numpy as np
from tokamax_softcap import harness, interpret, patched, verify


def op(modules):
  vjp = modules["pallas_triton_vjp"].PallasTritonFlashAttentionVjp(
      bypass_device_check=True)
  return modules["pallas_triton"].PallasTritonFlashAttention(
      vjp=vjp, bypass_device_check=True)


old = patched.load_modules(
    "old", lambda m: (open(f"{sys.argv[1]}/{m}.py").read(), f"<old {m}>"))
now = patched.load_modules(
    "now", lambda m: (patched.patched_source(m), f"<now {m}>"))
config = verify.sized_configs(["gemma2-2b"], "cpu")[0]
dq = {}
with interpret.if_needed():
  for name, modules in (("f343b20", old), ("now", now)):
    g = harness.gradients(config, "packed-k-start", "bfloat16", op=op(modules))
    dq[name] = np.asarray(g.actual[0], np.float32)
    ref = np.asarray(g.expected[0], np.float32)
for name, x in dq.items():
  d = np.abs(x - ref)
  i = np.unravel_index(d.argmax(), d.shape)
  print(name, "max dq error", d.max() / np.abs(ref).max(), "at (b, t, h, d)",
        i, "value", x[i], "reference", ref[i])
diff = np.abs(dq["now"] - dq["f343b20"])
print("max |now - f343b20| / max|ref|", diff.max() / np.abs(ref).max(),
      "elements differing", int((diff > 0).sum()), "of", diff.size)
