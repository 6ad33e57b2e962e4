"""Errors of the wide-head test cases on the GPU (to set the bounds)."""
import dataclasses, json, sys
import jax
sys.path.insert(0, "tests")
from tokamax_softcap import harness
import test_wide_heads as w
cases = [(d, v, "float32", jax.lax.Precision.HIGHEST) for d, v in [(512, "causal"), (512, "window"), (512, "bias"), (384, "causal"), (320, "window")]]
cases += [(d, "causal", "float32", jax.lax.Precision.DEFAULT) for d in (256, 512)]
cases += [(d, "causal", dt, jax.lax.Precision.DEFAULT) for d, dt in [(512, "bfloat16"), (384, "float16"), (320, "bfloat16"), (512, "float16")]]
for d, v, dt, p in cases:
  g = harness.gradients(w._config(d), v, dt, w.LOGIT_STD, precision=p)
  errs = {n: harness.relative_error(a, e) for n, a, e in zip(harness.GRADS, g.actual, g.expected) if e is not None}
  print(json.dumps(dict(head_dim=d, variant=v, dtype=dt, precision=str(p), max_logit=g.max_logit, errors=errs)), flush=True)
