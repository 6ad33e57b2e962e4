"""H200: patch 0018 at f343b20 vs its exponential form alone (`soft_cap`, as at e508b9e), vs 0017.

Run from a checkout at f343b20 (whose package runs "0018" as it was then), with
`lean18/pallas_triton.py` and `lean18/pallas_triton_vjp.py` the modules of
e508b9e (`python -m tokamax_softcap patch show pallas_triton_vjp` there):

python3 -P lean18.py OUT_DIR
"""
import os, sys
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import pallas as pl
from tokamax_softcap import interpret, patched
sys.path.append(os.path.dirname(os.path.abspath(__file__)))
import compare  # pylint: disable=g-import-not-at-top

emit = compare.emitter(f"{sys.argv[1]}/lean18.jsonl")
MODS = {
    "0017": compare.through_17(),
    "0018": compare.modules("0018"),
    "lean": patched.load_modules("lean18", lambda m: (open(f"lean18/{m}.py").read(), f"<lean18 {m}>")),
}

# Accuracy on this backend.
x, caps = compare.X, compare.CAPS
V = MODS["lean"]["pallas_triton_vjp"]
def kernel(x_ref, *refs):
  for i, c in enumerate(caps):
    refs[2 * i][...], refs[2 * i + 1][...] = V.soft_cap(x_ref[...], c)
spec = pl.BlockSpec((1024,), lambda i: (i,))
with interpret.if_needed():
  outs = [np.asarray(o) for o in pl.pallas_call(kernel, [jax.ShapeDtypeStruct(x.shape, jnp.float32)] * (2 * len(caps)),
          grid=(len(x) // 1024,), in_specs=[spec], out_specs=[spec] * (2 * len(caps)))(x)]
for i, c in enumerate(caps):
  s_, d_ = outs[2 * i], outs[2 * i + 1]
  z = x.astype(np.float64) / c; t = np.tanh(z); ref_s = c * t; ref_d = 1 / np.cosh(z) ** 2
  fin = np.isfinite(x); ok = fin & (np.abs(ref_s) > 1e-30)
  abs_err = np.abs(s_ - ref_s)[fin] / (c * 2.0**-24)
  rel_err = (np.abs(s_ - ref_s) / np.abs(ref_s))[ok] / 2.0**-24
  okd = fin & (ref_d > 1e-30)
  rel_d = (np.abs(d_ - ref_d) / ref_d)[okd] / 2.0**-24
  sat_d = (np.abs(z) < 10) & (ref_d > 1e-30)
  emit(dict(acc="lean", backend=jax.default_backend(), cap=c, max_abs_err_in_2em24c=float(abs_err.max()),
            max_rel_err_ulp=float(rel_err.max()), at=float(x[ok][rel_err.argmax()]),
            max_rel_err_ds_du_ulp_z_lt_10=float((np.abs(d_ - ref_d) / ref_d)[sat_d].max() / 2.0**-24),
            max_abs_s_over_c=float(np.abs(s_[fin]).max() / c), specials=[float(v) for v in s_[~fin]],
            specials_d=[float(v) for v in d_[~fin]]))

if jax.default_backend() == "gpu":
  compare.time_variants(MODS, emit)
