"""Cheaper forms of the soft cap's derivative in the VJP loops: a timing probe.

`enabled(form)` replaces `soft_cap` of the patched VJP module with one whose
derivative (`1 - t**2`, `4 e r**2` in the kernels: a `min` and three
multiplies a logit) is `e r**2` ("no4": the factor 4 left out, as if folded
into the gradients' final scale; one multiply fewer) or `r - r**2` ("rr": one
fused multiply-add; relative accuracy lost where `r -> 1`, `u << 0`). The
gradients of "no4" are 4 times too small and those of "rr" too: for timing
only. Not a change of the kernels.
"""
import contextlib
import jax.numpy as jnp
from tokamax_softcap import patched

V = patched.pallas_triton_vjp
EXACT = V.soft_cap


def _soft_cap(form):
  def soft_cap(u, logits_soft_cap, *, u_scale=1.0, s_scale=1.0, s_offset=0.0):
    u = u.astype(jnp.float32)
    c = abs(logits_soft_cap)
    e = V._ptx_f32("ex2.approx.ftz.f32", u * (2 * V._LOG2_E * u_scale / c))  # pylint: disable=protected-access
    r = V._ptx_f32("rcp.approx.ftz.f32", 1.0 + e)  # pylint: disable=protected-access
    s = (s_scale * c - s_offset) - (2 * s_scale * c) * r
    if form == "no4":
      return s, (jnp.minimum(e, 2.0**126) * r) * r
    return s, r - r * r
  return soft_cap


@contextlib.contextmanager
def enabled(form):
  V.soft_cap = _soft_cap(form)
  try:
    yield
  finally:
    V.soft_cap = EXACT
