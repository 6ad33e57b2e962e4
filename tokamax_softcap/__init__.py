"""Soft-cap-aware VJP for tokamax's Pallas-Triton flash attention.

tokamax 0.0.17's Pallas-Triton attention supports `logits_soft_cap` (Gemma-2
style, `s = c * tanh(u / c)`) in its forward pass, but its VJP raises
`NotImplementedError`. This package provides drop-in subclasses of tokamax's
ops whose VJP supports it, and importing it registers them as tokamax's
`"triton"` implementation; tokamax's `"mosaic"` GPU implementation (first in
its default chain) becomes Mosaic GPU's forward with the faster of Mosaic
GPU's VJP and ours for each call (`use_triton_vjp`):

    import tokamax
    import tokamax_softcap  # registers

    loss = lambda q, k, v: tokamax.dot_product_attention(
        q, k, v, is_causal=True, logits_soft_cap=50.0, implementation="triton"
    ).sum()
    dq, dk, dv = jax.grad(loss, argnums=(0, 1, 2))(q, k, v)

The kernels are tokamax's with the patch series in `patches/` applied (see
`tokamax_softcap.patched`).
"""

from tokamax_softcap.pallas_mosaic_gpu import MosaicGpuOrTritonVjp
from tokamax_softcap.pallas_mosaic_gpu import PallasMosaicGpuFlashAttention
from tokamax_softcap.pallas_mosaic_gpu import use_triton_vjp
from tokamax_softcap.pallas_triton import Config
from tokamax_softcap.pallas_triton import PallasTritonFlashAttention
from tokamax_softcap.pallas_triton_vjp import Config as VjpConfig
from tokamax_softcap.pallas_triton_vjp import PallasTritonFlashAttentionVjp
from tokamax_softcap.registration import is_registered
from tokamax_softcap.registration import register
from tokamax_softcap.registration import registered
from tokamax_softcap.registration import unregister

__version__ = "0.1.0"

register()
