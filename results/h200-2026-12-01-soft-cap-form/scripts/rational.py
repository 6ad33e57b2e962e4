"""H200: soft_cap_tanh as a rational function (1 rcp) vs patch 0018's (ex2 + rcp + series) at f343b20.

From a checkout at f343b20; coefficients from `fit_tanh.py` (X = 9, degrees 4/4):
python3 -P rational.py OUT_DIR      timing (after.py's protocol) + accuracy on the GPU
"""
import os, sys
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import pallas as pl
from tokamax_softcap import interpret
sys.path.append(os.path.dirname(os.path.abspath(__file__)))
import compare  # pylint: disable=g-import-not-at-top

emit = compare.emitter(f"{sys.argv[1]}/rational.jsonl")
P = (1.0, 0.13381025195121765, 0.003495587967336178, 2.0609082639566623e-05, 1.3354662264930539e-08)
Q = (1.0, 0.4671434164047241, 0.025876982137560844, 0.0003285634738858789, 7.776558277328149e-07)
def poly(c):
  s = f"{c[-1]!r}"
  for x in c[-2::-1]:
    s = f"({s}) * y + {x!r}"
  return s
RATIONAL = f'''def soft_cap_tanh(u, logits_soft_cap):
  z = u.astype(jnp.float32) * (1.0 / logits_soft_cap)
  y = jnp.where(z * z > 81.0, 81.0, z * z)
  p = {poly(P)}
  q = {poly(Q)}
  t = z * p * _ptx_f32("rcp.approx.ftz.f32", q)
  t = jnp.where(t > 1.0, 1.0, t)
  return jnp.where(t < -1.0, -1.0, t)


def causal_window_as_ranges('''

MODS = {"0017": compare.through_17(), "0018": compare.modules("0018"), "rational": compare.modules("rational", RATIONAL)}

# Accuracy on this backend.
x, caps = compare.X, compare.CAPS
for name, m in MODS.items():
  if name == "0017":
    continue
  V = m["pallas_triton_vjp"]
  def kernel(x_ref, *t_refs):
    for r, c in zip(t_refs, caps): r[...] = V.soft_cap_tanh(x_ref[...], c)
  spec = pl.BlockSpec((1024,), lambda i: (i,))
  with interpret.if_needed():
    outs = [np.asarray(o) for o in pl.pallas_call(kernel, [jax.ShapeDtypeStruct(x.shape, jnp.float32)] * len(caps),
            grid=(len(x) // 1024,), in_specs=[spec], out_specs=[spec] * len(caps))(x)]
  for c, got in zip(caps, outs):
    z = x.astype(np.float64) / c; ref = np.tanh(z); fin = np.isfinite(x)
    sp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    ulp = np.abs(got - ref) / np.maximum(sp, 2.0**-149)
    ok = fin & (np.abs(ref) > 2.0**-126)
    small = ok & (np.abs(z) < 0.25)
    emit(dict(acc=name, backend=jax.default_backend(), cap=c, max_ulp_of_t=float(ulp[ok].max()), at=float(x[ok][ulp[ok].argmax()]),
              max_ulp_small=float(ulp[small].max()), max_ulp_big=float(ulp[ok & ~small].max()) if (ok & ~small).any() else 0.0,
              max_abs_t=float(np.abs(got[fin]).max()), specials=[float(v) for v in got[~fin]]))

if jax.default_backend() == "gpu":
  compare.time_variants(MODS, emit)
