"""Forms of the soft cap's derivative and reciprocal, timed in one process.

Patch 0025's `soft_cap` returns `1 - t**2 = 4 min(e, 2**126) r r` (an
`FMNMX` and three multiplies a logit, and `e` live until then). Forms here:
- `ffma`: `4 (r - r r)`, one fused multiply-add and a multiply; relative
  accuracy kept where `r <= 1/2` (`u >= 0`), absolute (a few units of
  2**-24) where `r -> 1` (`u -> -inf`).
- `ffma-no4` and `min-no4`: the same without the factor 4, as if folded into
  the kernels' final scales (their gradients are 4x off: timing only).
- `newton`: the current derivative, with `r` from an integer seed and two
  cubic Newton steps on the FMA pipe instead of `rcp.approx` (the forward's
  special-function instructions drop from 3 to 2 a logit).
Prints JSON lines: accuracy on the GPU against f64, then fwd and fwd+bwd
times (bench's CUPTI timer) per shape and form, forms in alternating order.
"""

import json
import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu
import numpy as np

from tokamax_softcap import bench
from tokamax_softcap import patched

vjp = patched.pallas_triton_vjp
CURRENT = vjp.soft_cap
LOG2_E = float(np.log2(np.e))
CALLS = {}


def _rcp_newton(x):
  # x >= 1 (or inf). Seed from the bits (max relative error about 1/8), two
  # cubic steps y += y (e + e**2), e = 1 - x y; max(., 0) maps the NaN or
  # -inf of x >= 2**127 to 0.
  [y] = plgpu.elementwise_inline_asm(
      """{
      .reg .b32 i;
      .reg .f32 n, y, e, t;
      neg.f32 n, $1;
      .reg .b32 m;
      mov.b32 m, 0x7EF311C3;
      mov.b32 i, $1;
      sub.s32 i, m, i;
      mov.b32 y, i;
      fma.rn.ftz.f32 e, n, y, 0f3F800000;
      fma.rn.ftz.f32 t, e, e, e;
      fma.rn.ftz.f32 y, y, t, y;
      fma.rn.ftz.f32 e, n, y, 0f3F800000;
      fma.rn.ftz.f32 t, e, e, e;
      fma.rn.ftz.f32 y, y, t, y;
      max.ftz.f32 $0, y, 0f00000000;
      }""",
      args=[x],
      constraints="=f,f",
      pack=1,
      result_shape_dtypes=[jax.ShapeDtypeStruct(x.shape, jnp.float32)],
  )
  return y


def _form(name, derivative, reciprocal=None):
  def soft_cap(u, logits_soft_cap, *, u_scale=1.0, s_scale=1.0, s_offset=0.0):
    CALLS[name] = CALLS.get(name, 0) + 1
    u = u.astype(jnp.float32)
    c = abs(logits_soft_cap)
    e = vjp._ptx_f32("ex2.approx.ftz.f32", u * (2 * LOG2_E * u_scale / c))
    if reciprocal is None:
      r = vjp._ptx_f32("rcp.approx.ftz.f32", 1.0 + e)
    else:
      r = reciprocal(1.0 + e)
    s = (s_scale * c - s_offset) - (2 * s_scale * c) * r
    assert c <= vjp.MAX_CAP_OF_EXP_FORM
    return s, derivative(e, r)
  return soft_cap


def _current(*args, **kwargs):
  CALLS["current"] = CALLS.get("current", 0) + 1
  return CURRENT(*args, **kwargs)


FORMS = {
    "current": _current,
    "ffma": _form("ffma", lambda e, r: 4.0 * (r - r * r)),
    "ffma-no4": _form("ffma-no4", lambda e, r: r - r * r),
    "min-no4": _form("min-no4", lambda e, r: (jnp.minimum(e, 2.0**126) * r) * r),
    "newton": _form("newton", lambda e, r: 4.0 * (jnp.minimum(e, 2.0**126) * r) * r,
                    _rcp_newton),
}


def accuracy():
  n = 1 << 16
  z = np.linspace(-12.0, 12.0, n)
  caps = ((30.0, 1.0, 1.0, 0.0), (50.0, 1.0, 1.0, 0.0),
          (50.0, 0.125, LOG2_E, 0.0), (50.0, 0.125, LOG2_E, 80.0),
          (64.0, 1.0, 1.0, 0.0))
  for cap, u_scale, s_scale, s_offset in caps:
    u = (z * cap / u_scale).astype(np.float32)
    for name in ("current", "ffma", "newton"):
      form = FORMS[name]
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
      d_abs = np.abs(d - d_exp) / 2.0**-24
      ok = d_exp > 1e-30
      d_rel = np.abs(d[ok] - d_exp[ok]) / d_exp[ok] / 2.0**-24
      pos = z_u[ok] >= 0
      print(json.dumps(dict(
          kind="accuracy", form=name, cap=cap, u_scale=u_scale,
          s_scale=s_scale, s_offset=s_offset,
          s_err_neg=float(err[u < 0].max()),
          s_err_pos=float(err[u >= 0].max()),
          d_abs=float(d_abs.max()),
          d_rel_pos=float(d_rel[pos].max()),
          d_rel_neg_z_gt_m2=float(d_rel[~pos & (z_u[ok] > -2)].max()),
          d_rel_neg=float(d_rel[~pos].max()),
          nonfinite=int((~np.isfinite(s)).sum() + (~np.isfinite(d)).sum()))),
          flush=True)


def timing(shapes, forms, rounds):
  for shape in shapes:
    sets = bench._inputs(shape, jnp.bfloat16, 2)
    op, kwargs = bench._implementation("ours-nocap")
    row = dict(kind="time", shape=str(shape), form="nocap")
    for mode in ("fwd", "fwd+bwd"):
      row[mode], _ = bench._time(op, kwargs, shape, mode, sets, reps=10)
    print(json.dumps(row), flush=True)
    op, kwargs = bench._implementation("ours")
    for order in range(rounds):
      for name in (forms if order % 2 == 0 else forms[::-1]):
        vjp.soft_cap = FORMS[name]
        before = CALLS.get(name, 0)
        row = dict(kind="time", shape=str(shape), form=name, round=order)
        for mode in ("fwd", "fwd+bwd"):
          row[mode], _ = bench._time(op, kwargs, shape, mode, sets, reps=10)
        row["traced"] = CALLS.get(name, 0) - before
        print(json.dumps(row), flush=True)
  vjp.soft_cap = CURRENT


if __name__ == "__main__":
  accuracy()
  shapes = [
      bench.Shape(seq_len=8192, head_dim=d, heads=h, mask=m, batch=2)
      for d, h, m in ((64, "mha", "causal"), (64, "gqa", "full"),
                      (128, "mha", "causal"), (256, "gqa", "causal"))
  ]
  timing(shapes, ["current", "ffma", "ffma-no4", "min-no4", "newton"],
         int(sys.argv[1]) if len(sys.argv) > 1 else 2)
