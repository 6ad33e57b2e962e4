"""Pallas-Triton FlashAttention VJP with `logits_soft_cap` support.

The kernels that run are tokamax's own source with this package's patch
series (`patches/`) applied, executed by `tokamax_softcap.patched`;
`python -m tokamax_softcap patch show MODULE` prints that source, and `patch
tree` / `patch export` edit it (CONTRIBUTING.md).
"""

import dataclasses
from typing import ClassVar

from tokamax._src.ops import op
from tokamax._src.ops.attention import pallas_triton_vjp as upstream
from tokamax_softcap import patched

Config = upstream.Config
_PATCHED = patched.pallas_triton_vjp.PallasTritonFlashAttentionVjp


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class PallasTritonFlashAttentionVjp(upstream.PallasTritonFlashAttentionVjp):
  """tokamax's Pallas-Triton FlashAttention VJP, with soft-cap support.

  A drop-in subclass of tokamax's op of the same name, with the same fields
  and `Config`. It runs tokamax's kernels, heuristics and autotuning search
  space with the patch series of this package applied (see `patched`), which
  adds:

  - `logits_soft_cap`: the kernels recompute the logits as the forward does
    (`u = logits_scale * q @ k.T`, cast to `logits_dtype`, `+ bias`), cap them
    (`s = c * tanh(u / c)` in f32, cast back to `logits_dtype`, taking
    `t = tanh(u / c)` before masking) and
    multiply `ds` by `1 - t**2` (in f32) before `dq`, `dk` and `dbias` use it.
    Without a cap the kernels compute as upstream's, but for the fixes
    below (e.g. `logits_scale` applied to the f32 logits) and their
    approximate `exp` (PTX's `ex2.approx`).
  - the series' fixes and speed-ups (docs/patches.md): zero, not
    NaN, gradients for query blocks that `q_start` / `q_end` skip and for
    rows that attend to no key; the dk/dv logits computed as the forward's;
    causal loops kept within the sequence; default configs that fit in
    shared memory; a `ValueError` for causal configs whose blocks the causal
    loops cannot tile; `logits_scale` applied to the f32 logits; the shapes
    and dtypes of the arguments checked; loops bounded by windows, key
    ranges and query ranges; tuned head_dim 256 configs on Hopper; configs
    that fit head_dim 512; the cap's derivative applied before the dots;
    exponentials and the cap from the GPU's approximate `exp2` and
    reciprocal.

  Arguments are those of `tokamax`'s `DotProductAttentionVjp`: residuals
  `(m, l)` of shape `[*B, H, T]` (f32), `out` and `dout` of shape
  `[*B, T, H, d]`, `q` `[*B, T, H, D]`, `k` `[*B, t, h, D]`, `v` `[*B, t, h, d]`
  and the forward's keyword arguments. It returns `dq`, `dk`, `dv` (dtypes of
  `q`, `k`, `v`) and `dbias` (summed over the broadcast axes of `bias`).

  Raises:
    NotImplementedError: for `dropout_mask`, `normalize_output=False`,
      `return_residuals=True` or `paging_info` (as upstream).
  """

  config_cls: ClassVar[type[Config]] = Config
  # Re-declared with its default: a slotted base hides it from `dataclass`.
  config: Config | None = None

  def bind(self, *args, **kwargs) -> op.BoundArguments:
    # As the patched op's `bind` (whose `super()` is not this class's).
    ba = upstream.PallasTritonFlashAttentionVjp.bind(self, *args, **kwargs)
    patched.pallas_triton_vjp.check_arguments(ba.arguments)
    return ba

  _fwd = patched.op_method(_PATCHED._fwd)
  _get_heuristics_config = patched.op_method(_PATCHED._get_heuristics_config)
  _get_autotuning_configs = patched.op_method(_PATCHED._get_autotuning_configs)
