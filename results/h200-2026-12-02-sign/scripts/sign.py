"""The soft cap with the sign of `u` in its exponent, or copied onto `s`.

Patch 0023's `soft_cap` takes `e = exp2(u * k)` with the sign of `u`, so for
`u < 0` its `s = A - 2 A r` cancels (`r` in (1/2, 1)). The variant here takes
`e = exp2(|u| * k)` and `s = copysign(A - 2 A r, u) - offset` (PTX
`copysign.f32`): one instruction more a logit in the forward, two in the VJP
(the offset no longer folds into the multiply-add). This measures, on the GPU
and in one process, both forms' error against f64 and their fwd+bwd times.

Writes JSON lines to stdout.
"""

import json
import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu
import numpy as np

import tokamax_softcap
from tokamax_softcap import bench
from tokamax_softcap import patched

vjp = patched.pallas_triton_vjp
CURRENT = vjp.soft_cap
LOG2_E = float(np.log2(np.e))
CALLS = {"current": 0, "copysign": 0}


def _copysign(sign, magnitude):
  [y] = plgpu.elementwise_inline_asm(
      "copysign.f32 $0, $1, $2;",
      args=[sign, magnitude],
      constraints="=f,f,f",
      pack=1,
      result_shape_dtypes=[jax.ShapeDtypeStruct(sign.shape, jnp.float32)],
  )
  return y


def soft_cap_copysign(u, logits_soft_cap, *, u_scale=1.0, s_scale=1.0,
                      s_offset=0.0):
  CALLS["copysign"] += 1
  u = u.astype(jnp.float32)
  c = abs(logits_soft_cap)
  e = vjp._ptx_f32("ex2.approx.ftz.f32",
                   jnp.abs(u) * (2 * LOG2_E * u_scale / c))
  r = vjp._ptx_f32("rcp.approx.ftz.f32", 1.0 + e)
  s = _copysign(u, (s_scale * c) - (2 * s_scale * c) * r)
  if not (isinstance(s_offset, float) and s_offset == 0.0):
    s = s - s_offset
  if c > vjp.MAX_CAP_OF_EXP_FORM:
    z = u * (u_scale / c)
    z2 = z * z
    series = ((62 / 2835 * z2 - 17 / 315) * z2 + 2 / 15) * z2 - 1 / 3
    series = (s_scale * c) * (z + z * z2 * series) - s_offset
    s = jnp.where(jnp.abs(z) < 0.25, series, s)
  return s, 4.0 * (jnp.minimum(e, 2.0**126) * r) * r


def soft_cap_current(*args, **kwargs):
  CALLS["current"] += 1
  return CURRENT(*args, **kwargs)


FORMS = {"current": soft_cap_current, "copysign": soft_cap_copysign}


def accuracy():
  n = 1 << 16
  z = np.linspace(-12.0, 12.0, n)
  caps = ((30.0, 1.0, 1.0, 0.0), (50.0, 1.0, 1.0, 0.0),
          (50.0, 0.125, LOG2_E, 0.0), (50.0, 0.125, LOG2_E, 80.0),
          (64.0, 1.0, 1.0, 0.0))
  for cap, u_scale, s_scale, s_offset in caps:
    u = (z * cap / u_scale).astype(np.float32)
    for name, form in FORMS.items():
      def kernel(u_ref, s_ref, d_ref):
        s, d = form(u_ref[...], cap, u_scale=u_scale, s_scale=s_scale,
                    s_offset=s_offset)
        s_ref[...] = s
        d_ref[...] = d
      f32 = jax.ShapeDtypeStruct(u.shape, jnp.float32)
      s, d = map(np.asarray, pl.pallas_call(kernel, [f32, f32])(u))
      z_u = u.astype(np.float64) * u_scale / cap
      s = (s.astype(np.float64) + s_offset) / s_scale
      err = np.abs(s - cap * np.tanh(z_u)) / (2.0**-24 * cap)
      d_exp = 1 / np.cosh(z_u) ** 2
      ok = d_exp > 1e-30
      d_err = np.abs(d[ok] - d_exp[ok]) / d_exp[ok] / 2.0**-24
      print(json.dumps(dict(
          kind="accuracy", form=name, cap=cap, u_scale=u_scale,
          s_scale=s_scale, s_offset=s_offset,
          max_err_neg=float(err[u < 0].max()),
          max_err_pos=float(err[u >= 0].max()),
          mean_err=float(err.mean()),
          max_sech2_rel=float(d_err.max()))), flush=True)


def timing(shapes, rounds):
  op, kwargs = bench._implementation("ours")
  for shape in shapes:
    sets = bench._inputs(shape, jnp.bfloat16, 2)
    for order in range(rounds):
      for name in (("current", "copysign") if order % 2 == 0
                   else ("copysign", "current")):
        vjp.soft_cap = FORMS[name]
        before = dict(CALLS)
        row = dict(kind="time", shape=str(shape), form=name, round=order)
        for mode in ("fwd", "fwd+bwd"):
          ms, _ = bench._time(op, kwargs, shape, mode, sets, reps=10)
          row[mode] = ms
        row["traced"] = CALLS[name] - before[name]
        print(json.dumps(row), flush=True)
  vjp.soft_cap = CURRENT


if __name__ == "__main__":
  accuracy()
  shapes = [
      bench.Shape(seq_len=8192, head_dim=d, heads=h, mask=m, batch=2)
      for d, h, m in ((64, "mha", "causal"), (64, "gqa", "full"),
                      (128, "mha", "causal"), (128, "gqa", "full"))
  ]
  timing(shapes, int(sys.argv[1]) if len(sys.argv) > 1 else 2)
