"""tokamax's attention test suite, from the installed wheel, run on our op.

Mirrors upstream's `PallasTritonFlashAttentionWithPallasTritonVjpTest`
(`tokamax/_src/ops/attention/pallas_triton_test.py`), except that soft capping
is expected to work: only `dropout_mask` is still expected to fail. Without
the cap it runs on a GPU; on the CPU only with it (`SoftCapSuite`).
"""

import jax.numpy as jnp
from tokamax._src.ops.attention import test_base
import tokamax_softcap
from tokamax_softcap import interpret
import harness_reruns  # pylint: disable=g-bad-import-order


class PallasTritonFlashAttentionWithSoftCapVjpTest(test_base.AttentionTestBase):

  def __init__(self, *args):
    vjp = tokamax_softcap.PallasTritonFlashAttentionVjp(
        dbias_intermediate_dtype=jnp.float32
    )
    attention_fn = tokamax_softcap.PallasTritonFlashAttention(vjp=vjp)
    super().__init__(*args, attention_fn=attention_fn)

  def setUp(self):
    super().setUp()
    self.enterContext(harness_reruns.reuse_vjp_reruns())
    if (
        interpret.is_needed()
        and type(self) is PallasTritonFlashAttentionWithSoftCapVjpTest
    ):
      # The capped class (`test_upstream_suite_soft_cap.py`) runs the same
      # cases through the same ops; without the cap the kernels run on the
      # CPU against the fp32 reference in `test_precision.py` and
      # `test_mask_ranges.py`, against upstream's op in `test_api.py`,
      # sharded in `test_context_parallel.py`, and in upstream's tests of
      # the series (`test_series.py`). (This class took 485 s of the two
      # workers' 2,793 s on 2 CPU cores, 2026-12-04.)
      self.skipTest("On the CPU, the capped class's cases suffice.")

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

  def _test_small_sequences(self, seq_q, seq_kv):
    if not interpret.is_needed():
      return super()._test_small_sequences(seq_q, seq_kv)
    # In the Pallas interpreter on this project's CPU machine (XLA:CPU, 2
    # cores, 2026-11-30), `(seq_q, seq_kv) = (256, 8)` gives a dv error of
    # 2.67e-5 against upstream's `atol_grads=2e-5`, with or without this
    # package's patches (uniform(1, 2) inputs: logits ~18, peaked rows); it
    # passes at 2e-5 on the H200. 3e-5 is that measurement rounded up.
    with test_base.override_test_args(atol_grads=3e-5):
      return super()._test_small_sequences(seq_q, seq_kv)
