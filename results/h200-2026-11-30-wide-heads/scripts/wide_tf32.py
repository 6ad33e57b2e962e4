import json, sys
import jax
sys.path.insert(0, "tests")
from tokamax_softcap import harness
import test_wide_heads as w
for d in (256, 512):
  g = harness.gradients(w._config(d), "causal", "float32", w.LOGIT_STD, precision=jax.lax.Precision.DEFAULT)
  errs = {n: harness.relative_error(a, e) for n, a, e in zip(harness.GRADS, g.actual, g.expected) if e is not None}
  print(json.dumps(dict(head_dim=d, precision="DEFAULT", max_logit=g.max_logit, errors=errs)), flush=True)
