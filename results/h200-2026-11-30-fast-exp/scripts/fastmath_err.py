"""Errors of the kernels' fast_exp / fast_exp2 / soft_cap_tanh against f64 (GPU: PTX; CPU: interpreter)."""
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import pallas as pl
from tokamax_softcap import interpret, patched
V = patched.pallas_triton_vjp
x = np.linspace(-130.0, 130.0, 1 << 16, dtype=np.float32)
caps = (1.0, 30.0, 50.0, 1e6)
def kernel(x_ref, e_ref, e2_ref, *t_refs):
  xv = x_ref[...]
  e_ref[...] = V.fast_exp(xv); e2_ref[...] = V.fast_exp2(xv)
  for r, c in zip(t_refs, caps): r[...] = V.soft_cap_tanh(xv, c)
with interpret.if_needed():
  outs = [np.asarray(o) for o in pl.pallas_call(kernel, [jax.ShapeDtypeStruct(x.shape, jnp.float32)] * 6)(x)]
x64 = x.astype(np.float64); tiny, big = float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)
for name, got, ref in (("exp", outs[0], np.exp(x64)), ("exp2", outs[1], np.exp2(x64))):
  ok = (ref >= 2 * tiny) & (ref <= big / 2); ulps = np.abs(got[ok] - ref[ok]) / ref[ok] / 2**-24
  absx = np.abs(x64[ok]); lim = 4 + 2 * absx
  print(f"{jax.default_backend()} {name}: max {ulps.max():.2f} ulp (at x={x[ok][ulps.argmax()]:.3f}); max ulp/(4+2|x|) {np.max(ulps/lim):.3f}; |x|<=60: {ulps[absx<=60].max():.2f} ulp")
for c, got in zip(caps, outs[2:]):
  ref = np.tanh(x64 / c); err = np.abs(got - ref) / 2**-24
  rel = err / np.maximum(np.abs(ref), 1e-30)
  print(f"{jax.default_backend()} tanh(x/{c}): max abs error {err.max():.2f} ulp of 1 (at x={x[err.argmax()]:.3f}); max relative {rel.max():.2f} ulp (at x={x[rel.argmax()]:.4f})")
