"""tokamax's attention test suite, from the installed wheel, run on our op.

Mirrors upstream's `PallasTritonFlashAttentionWithPallasTritonVjpTest`
(`tokamax/_src/ops/attention/pallas_triton_test.py`), except that soft capping
is expected to work: only `dropout_mask` is still expected to fail.
"""

import jax.numpy as jnp
from tokamax._src.ops.attention import test_base
import tokamax_softcap


class PallasTritonFlashAttentionWithSoftCapVjpTest(test_base.AttentionTestBase):

  def __init__(self, *args):
    vjp = tokamax_softcap.PallasTritonFlashAttentionVjp(
        dbias_intermediate_dtype=jnp.float32
    )
    attention_fn = tokamax_softcap.PallasTritonFlashAttention(vjp=vjp)
    super().__init__(*args, attention_fn=attention_fn)

  def _run_test_with_inputs(self, *args, expect_supported=True, **kwargs):
    if kwargs.get("test_vjp", True):
      all_kwargs = kwargs | kwargs.get("impl_kwargs", {})
      if all_kwargs.get("dropout_mask") is not None:
        expect_supported = False
    super()._run_test_with_inputs(
        *args, expect_supported=expect_supported, **kwargs
    )

  def test_normalize_output(self):
    self.skipTest("`normalize_output=False` not supported.")
