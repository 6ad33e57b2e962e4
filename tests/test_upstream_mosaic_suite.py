"""tokamax's Mosaic GPU attention test class, on the op this package registers.

Upstream's `PallasMosaicGpuFlashAttentionTest` (from the installed wheel) with
`tokamax_softcap.PallasMosaicGpuFlashAttention`: Mosaic GPU's forward, and
the VJP `use_triton_vjp` picks (each given `dbias` in f32, as upstream's
class gives Mosaic GPU's). Then the same cases with an active soft cap, as
`test_upstream_suite_soft_cap.py` runs upstream's Pallas-Triton class.
Mosaic GPU's kernels have no CPU interpreter: without a GPU that runs them,
the module is skipped.
"""

import jax.numpy as jnp
import pytest
from tokamax._src import gpu_utils
from tokamax._src.ops.attention import pallas_mosaic_gpu_test
from tokamax._src.ops.attention import pallas_mosaic_gpu_vjp
import tokamax_softcap
import test_upstream_suite_soft_cap  # pylint: disable=g-bad-import-order

if not gpu_utils.has_mosaic_gpu_support():
  pytest.skip(
      "Mosaic GPU's kernels need an NVIDIA GPU.", allow_module_level=True
  )

# Upstream marks its class `skip` for open-source runs ("Too slow for OSS
# regression tests"), and pytest gives a class the marks of its bases: this
# module is where the class runs, so the mark goes (in this process only).
# (Not bound to a name here, where pytest would collect upstream's class.)
if "pytestmark" in vars(pallas_mosaic_gpu_test.PallasMosaicGpuFlashAttentionTest):
  del pallas_mosaic_gpu_test.PallasMosaicGpuFlashAttentionTest.pytestmark


def _op() -> tokamax_softcap.PallasMosaicGpuFlashAttention:
  vjp = tokamax_softcap.MosaicGpuOrTritonVjp(
      triton=tokamax_softcap.PallasTritonFlashAttentionVjp(
          dbias_intermediate_dtype=jnp.float32
      ),
      mosaic=pallas_mosaic_gpu_vjp.PallasMosaicGpuFlashAttentionVjp(
          dbias_intermediate_dtype=jnp.float32
      ),
  )
  return tokamax_softcap.PallasMosaicGpuFlashAttention(vjp=vjp)


class MosaicGpuWithFasterVjpTest(
    pallas_mosaic_gpu_test.PallasMosaicGpuFlashAttentionTest
):

  def __init__(self, *args):
    super().__init__(*args, attention_fn=_op())

  def _test_op_parameters(self, use_stable_softmax, rescale_threshold):
    # Without a cap, the softmax without a running maximum can overflow:
    # this op refuses it (as our Pallas-Triton op does) where tokamax's runs.
    if use_stable_softmax:
      super()._test_op_parameters(use_stable_softmax, rescale_threshold)
    else:
      with self.assertRaisesRegex(ValueError, "use_stable_softmax=False"):
        super()._test_op_parameters(use_stable_softmax, rescale_threshold)


class MosaicGpuWithFasterVjpSoftCapTest(
    test_upstream_suite_soft_cap.SoftCapSuite, MosaicGpuWithFasterVjpTest
):

  def _test_op_parameters(self, use_stable_softmax, rescale_threshold):
    # With the cap, both softmaxes run (`CAP` fits every dtype's weights).
    pallas_mosaic_gpu_test.PallasMosaicGpuFlashAttentionTest._test_op_parameters(  # pylint: disable=protected-access
        self, use_stable_softmax, rescale_threshold
    )
