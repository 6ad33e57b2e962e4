"""The interpreter's stand-ins for the PTX instructions the kernels use."""

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu
import jax.numpy as jnp
import numpy as np
import pytest
from tokamax_softcap import interpret

_TINY = float(np.finfo(np.float32).tiny)


def _ptx(instruction, x, constraints="=f,f"):
  """Runs `instruction` on `x` in a Pallas kernel, in the interpreter."""

  def kernel(x_ref, y_ref):
    [y_ref[...]] = plgpu.elementwise_inline_asm(
        f"{instruction} $0, $1;",
        args=[x_ref[...]],
        constraints=constraints,
        pack=1,
        result_shape_dtypes=[jax.ShapeDtypeStruct(x.shape, x.dtype)],
    )

  with interpret.interpret():
    return np.asarray(
        pl.pallas_call(kernel, jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    )


def test_ex2_is_within_three_ulp_and_flushes_subnormals():
  # Past |x| ~ 100, XLA's CPU `exp2` of the whole argument is 64 ulp off. Of
  # `|x - n| <= 1/2` it is within 1.3 ulp; interpreted on an H200, XLA's GPU
  # `exp2` gives 2.3 ulp (measured with jax 0.11.2).
  # 1e-39 is subnormal.
  specials = np.float32([-0.0, 1e-39, np.inf, -np.inf, np.nan])
  x = np.concatenate(
      [np.linspace(-160.0, 130.0, 4091, dtype=np.float32), specials]
  )
  got = _ptx("ex2.approx.ftz.f32", x)
  expected = np.exp2(x.astype(np.float64))
  normal = (expected >= _TINY) & (expected <= np.finfo(np.float32).max)
  ulps = np.abs(got[normal] - expected[normal]) / (expected[normal] * 2.0**-24)
  assert np.max(ulps) <= 3.0, np.max(ulps)
  np.testing.assert_array_equal(got[expected < _TINY], 0.0)  # -inf too.
  np.testing.assert_array_equal(got[-5:-3], 1.0)  # 2**-0 and 2**1e-39.
  assert np.all(got[expected > np.finfo(np.float32).max] == np.inf)
  assert np.isnan(got[-1])


def test_rcp_flushes_subnormal_inputs_and_results():
  x = np.float32([3.0, -0.5, 1e-39, -1e-39, 2e38, np.inf, 0.0, -0.0])
  got = _ptx("rcp.approx.ftz.f32", x)
  expected = np.float32(
      [1 / 3, -2.0, np.inf, -np.inf, 0.0, 0.0, np.inf, -np.inf]
  )
  np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    "instruction, constraints, dtype",
    [
        ("tanh.approx.f32", "=f,f", jnp.float32),  # Not one the kernels use.
        ("ex2.approx.ftz.f32", "=r,r", jnp.float32),
        ("ex2.approx.ftz.bf16", "=h,h", jnp.bfloat16),
    ],
)
def test_other_inline_assembly_raises(instruction, constraints, dtype):
  x = jnp.ones((16,), dtype)
  with pytest.raises(NotImplementedError, match="No CPU equivalent of inline"):
    _ptx(instruction, x, constraints)
