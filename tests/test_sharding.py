"""tokamax's manual-partitioning attention suite on our op, capped and not.

Each case shards the inputs over a mesh (`q_sharding`: batch, sequence or
heads) and compares with the unsharded op (`atol=0`). Without a GPU,
`conftest.py` gives the CPU four devices.
"""

import jax
import jax.numpy as jnp
from tokamax._src.ops.attention import test_base
import tokamax_softcap
from tokamax_softcap import interpret
from tokamax_softcap import reference

CAP = 1.0  # Inputs are N(0, 1): pre-cap logits ~N(0, 1), the largest ~5.

# Measured on the CPU interpreter (2 cores, 2026-11-29): the other cases take
# 25-40 s each; `test_vmap` uses 8x larger inputs, and `test_quantized_int8`
# does not differentiate (nothing of this package runs in it) and has 18
# cases. Both run on GPUs.
_CPU_SKIPS = {
    "test_vmap": "8x larger inputs than the other cases (~4 min each here)",
    "test_quantized_int8": "forward only (no VJP); 18 cases",
}


class PallasTritonFlashAttentionPartitioningTest(
    test_base.AttentionManualPartitioningTestBase
):

  def __init__(self, *args):
    attention_fn = tokamax_softcap.PallasTritonFlashAttention()
    super().__init__(*args, attention_fn=attention_fn)

  def setUp(self):
    super().setUp()
    if interpret.is_needed():
      for prefix, reason in _CPU_SKIPS.items():
        if self._testMethodName.startswith(prefix):
          self.skipTest(f"Too slow for the CPU interpreter: {reason}.")
    self.assertGreaterEqual(
        jax.device_count(), 2 if interpret.is_needed() else 1
    )


class PallasTritonFlashAttentionPartitioningSoftCapTest(
    PallasTritonFlashAttentionPartitioningTest
):

  def _run_test(self, **kwargs):
    q, k, _, bias, _, _ = test_base._create_inputs(  # pylint: disable=protected-access
        q_shape=kwargs.get("q_shape") or self._TEST_SHAPE,
        kv_shape=kwargs.get("kv_shape"),
        bias_shape=kwargs.get("bias_shape"),
    )
    u = reference.logits(q, k, bias=bias)
    assert float(jnp.max(jnp.abs(u))) >= 3 * CAP, "the cap would be inactive"
    super()._run_test(logits_soft_cap=CAP, **kwargs)
