"""Softmax weights from a polynomial `2**x` on the FMA pipe: a probe.

`enabled()` replaces `fast_exp2` of the patched VJP module (which the
forward's and both VJP loops' weights call) with `exp2_poly`: no
special-function (MUFU) instruction, so with the cap each logit takes two
MUFU instructions (the cap's `ex2` and `rcp`) instead of three. Not a change
of the kernels: a measurement of what one would give. `enabled(True)`
takes the cap's `2**x` from it too (one MUFU instruction a logit, `rcp`).
"""
import contextlib
import jax
import jax.numpy as jnp
from tokamax_softcap import patched

V = patched.pallas_triton_vjp
EXACT = V.fast_exp2

# Minimax (relative error) fit of `2**f` on [-1/2, 1/2], degree 5, f32
# coefficients from `fit.py`: max relative error 1.9e-7 with f32 Horner.
COEFFS = (1.0, 0.6931470036506653, 0.24022242426872253, 0.05550733581185341,
          0.009671512991189957, 0.001326472731307149)
# `x + MAGIC` rounds `x` to an integer `n` held in the low mantissa bits of
# the sum as `n + 127` (1.5 * 2**23 keeps them from carrying).
MAGIC = 1.5 * 2**23 + 127


def exp2_poly(x):
  """`2**x` from `2**(x - n)` (polynomial) times `2**n` (exponent bits)."""
  dtype = x.dtype
  x = jnp.clip(x.astype(jnp.float32), -127.0, 127.0)
  t = x + MAGIC
  f = x - (t - MAGIC)
  p = COEFFS[-1]
  for c in COEFFS[-2::-1]:
    p = p * f + c
  bits = jax.lax.shift_left(jax.lax.bitcast_convert_type(t, jnp.int32), 23)
  return (p * jax.lax.bitcast_convert_type(bits, jnp.float32)).astype(dtype)


EXACT_PTX = V._ptx_f32  # pylint: disable=protected-access


def _ptx_f32_poly(instruction, x):
  if instruction == "ex2.approx.ftz.f32":
    return exp2_poly(x.astype(jnp.float32))
  return EXACT_PTX(instruction, x)


@contextlib.contextmanager
def enabled(everywhere=False):
  """Weights from `exp2_poly`; `everywhere`: the cap's `2**x` too."""
  V.fast_exp2 = exp2_poly
  if everywhere:
    V._ptx_f32 = _ptx_f32_poly  # pylint: disable=protected-access
  try:
    yield
  finally:
    V.fast_exp2 = EXACT
    V._ptx_f32 = EXACT_PTX  # pylint: disable=protected-access
