"""Mosaic GPU FlashAttention whose VJP is the faster one for the call.

On Hopper, tokamax's default implementation chain `("mosaic", "triton",
"xla")` takes Mosaic GPU's op, forward and VJP. Its forward is the fastest
we measured; its two-kernel VJP does not skip the blocks that windows and
key or query ranges mask, and is slow at head_dim 256.
`PallasMosaicGpuFlashAttention` keeps Mosaic GPU's forward (run from the
series' tree, `patched`: patch 0030 fixes its hang with causal key ranges)
and computes the VJP with
`MosaicGpuOrTritonVjp`: Mosaic GPU's from the series' tree (its one-pass
kernel unless determinism is asked for) or this package's Pallas-Triton
VJP, as `use_triton_vjp` rules.
The two ops agree on the residuals: `(m, l)` per query row, `m` a row
offset in natural-log units (the row's maximum logit with the stable
softmax; 0 with the unstable one) and `l = sum(exp(s - m))` over the row's
logits `s`, so `m + log(l)` is the row's log-sum-exp (zero rows: `l = 0`).
"""

import dataclasses
import functools
import os
from typing import Any, override

import jax
import jax.numpy as jnp
from tokamax._src import gpu_utils
from tokamax._src import precision as precision_lib
from tokamax._src.ops import op
from tokamax._src.ops.attention import base
from tokamax._src.ops.attention import pallas_mosaic_gpu as upstream
from tokamax_softcap import pallas_triton
from tokamax_softcap import pallas_triton_vjp
from tokamax_softcap import patched

# tokamax's forward, run from the series' tree (`patched`): its kernels with
# the series' changes to them.
_PATCHED_FWD = patched.op_method(
    patched.pallas_mosaic_gpu.PallasMosaicGpuFlashAttention._fwd  # pylint: disable=protected-access
)
# Mosaic GPU's VJP is taken only up to this head_dim (of q, k and v).
# Measured on an H200 (bf16, soft cap 50, B2 T8192, with Mosaic GPU's
# forward; results/h200-2026-12-04-default-chain/README.md): with a causal or no
# mask, ours takes 0.98-1.15x its backward time at head_dim 64 and 128, and
# 0.37-0.68x at 256; with windows or documents 0.06-0.42x at any head_dim.
MOSAIC_VJP_MAX_HEAD_DIM = 128
# XLA's flags that ask for deterministic results (`XLA_FLAGS`).
_XLA_DETERMINISM_FLAGS = (
    "xla_gpu_deterministic_ops",
    "xla_gpu_exclude_nondeterministic_ops",
)
# The dots' algorithm at the default precision, per 16-bit input dtype.
_16BIT_PRESETS = {
    jnp.dtype(jnp.bfloat16): jax.lax.DotAlgorithmPreset.BF16_BF16_F32,
    jnp.dtype(jnp.float16): jax.lax.DotAlgorithmPreset.F16_F16_F32,
}


def _skips_blocks(
    mask: base.Mask, bias: jax.Array | None, indexed: bool
) -> bool:
  """Whether our VJP's loops skip blocks that `mask` removes.

  Our kernels bound their loops by windows (`CausalMask.window_size`),
  offset diagonals and key and query ranges, unless a bias is given (every
  block of `ds` is written) or `q_indices` / `k_indices` are (the mask is
  then dense). A plain causal mask both skip; a boolean array neither does.
  Mosaic GPU's two kernels skip only the plain causal mask's blocks.

  Args:
    mask: The bound `base.Mask`.
    bias: The bias, if any.
    indexed: Whether `q_indices` or `k_indices` is given.
  """
  if bias is not None or indexed:
    return False
  causal = mask.causal_mask
  window_or_offset = causal is not None and not mask.is_causal
  ranges = (mask.q_start, mask.q_end, mask.k_start, mask.k_end)
  return window_or_offset or any(x is not None for x in ranges)


def runs_one_pass(mosaic: Any, residuals, out, dout, q, k, v, **kwargs) -> bool:
  """Whether the series' Mosaic GPU VJP runs a call as one kernel.

  As its `_fwd` decides with `deterministic=False`: the config the call
  gets (`bind(...).default_config`: the VJP's `config`, else the fastest of
  tokamax's autotuning data for the GPU, else the heuristics') is sm90's
  (`is_sm90_config`: not sm100's, a subclass of it), and
  `supports_fused_kernel` takes it with what `decompose_mask` leaves of the
  masks (no bias or mask array; 64 x 64 blocks; head dims up to 256, with
  two compute warpgroups past 128; buffers that fit the shared memory).

  Args:
    mosaic: The series' `PallasMosaicGpuFlashAttentionVjp`.
    residuals: `(m, l)`, as the VJP is called.
    out: The forward's output.
    dout: Its cotangent.
    q: Queries, `[*B, T, H, D]`.
    k: Keys, `[*B, t, h, D]`.
    v: Values, `[*B, t, h, d]`.
    **kwargs: The forward's bound keyword arguments.
  """
  vjp = patched.pallas_mosaic_gpu_vjp
  config = mosaic.bind(residuals, out, dout, q, k, v, **kwargs).default_config
  if not vjp.is_sm90_config(config):
    return False
  mask, _, k_start, k_end = vjp.common.decompose_mask(
      kwargs["mask"], q, k, kwargs["q_indices"], kwargs["k_indices"]
  )
  return vjp.sm90.supports_fused_kernel(
      q, v, kwargs["bias"], mask, k_start, k_end, config
  )


def xla_deterministic_ops() -> bool:
  """Whether `XLA_FLAGS` asks XLA for deterministic GPU results.

  As XLA reads its boolean flags (`--flag`, `--flag=true`, `=1`, `=false`,
  `=0`, case-insensitive, quoted or not; the last one given wins), for
  `--xla_gpu_deterministic_ops` or `--xla_gpu_exclude_nondeterministic_ops`.
  Read at each call, where XLA reads `XLA_FLAGS` once per process: set it
  before the process starts. Flags in a file that `XLA_FLAGS` names are not
  read.
  """
  values = {}
  for arg in os.environ.get("XLA_FLAGS", "").split():
    name, eq, value = arg.removeprefix("--").partition("=")
    if arg.startswith("--") and name in _XLA_DETERMINISM_FLAGS:
      value = value.strip("'\"").lower()
      values[name] = not eq or value in ("true", "1")
  return any(values.values())


def _at_16bit_default(
    dtype: jnp.dtype,
    precision: tuple[base.CanonicalPrecision, base.CanonicalPrecision],
) -> bool:
  """Whether both dots run at the 16-bit default algorithm of `dtype`.

  As every spelling of the default precision does, and `HIGH`; `HIGHEST`
  too, which our kernels alone give f32-accurate operands
  (`keeps_f32_operands`).
  """
  preset = _16BIT_PRESETS.get(jnp.dtype(dtype))
  return preset is not None and all(
      precision_lib.to_dot_algorithm_preset(dtype, dtype, p) == preset
      for p in precision
  )


def use_triton_vjp(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    *,
    mask: base.Mask,
    precision: tuple[base.CanonicalPrecision, base.CanonicalPrecision],
    bias: jax.Array | None = None,
    q_indices: jax.Array | None = None,
    k_indices: jax.Array | None = None,
    one_pass: bool = False,
    device: jax.Device | None = None,
) -> bool:
  """Returns whether our Pallas-Triton VJP, not Mosaic GPU's, runs a call.

  The one rule of `MosaicGpuOrTritonVjp`. Mosaic GPU's VJP is kept where it
  runs and was the faster, or where no measurement says otherwise:

  - on GPUs other than sm90 and sm100 (Ampere, Ada), ours: Mosaic GPU's VJP
    supports neither;
  - on sm90 (Hopper), Mosaic GPU's only for `q`, `k`, `v` of one 16-bit
    dtype whose dots run at its default algorithm (`_at_16bit_default`):
    with `one_pass` (it runs the call as one kernel, `runs_one_pass`:
    measured on an H200 at B2 T8192, bf16, cap 50, its backward took 6.64
    ms at 16/8 heads, head_dim 256, causal, against 11.49 for ours and
    30.89 for its two kernels; results/h200-2026-12-05-fused-vjp/README.md),
    else only with head dims of at most `MOSAIC_VJP_MAX_HEAD_DIM` and a
    mask whose blocks our loops would not skip (`_skips_blocks`); else
    ours. So ours takes `precision=HIGHEST` (its f32-accurate operands:
    docs/accuracy.md), f32 and mixed dtypes (which Mosaic GPU's VJP
    rejects), query ranges, and, where Mosaic GPU's VJP would run its two
    kernels, head dims past 128, windows and packed documents;
  - on sm100 (Blackwell), Mosaic GPU's: not measured.

  Args:
    q: Queries, `[*B, T, H, D]`.
    k: Keys, `[*B, t, h, D]`.
    v: Values, `[*B, t, h, d]`.
    mask: The bound `base.Mask`.
    precision: The bound (canonical) `(q @ k.T, p @ v)` precisions.
    bias: The bias, if any.
    q_indices: The bound `q_indices`, if any.
    k_indices: The bound `k_indices`, if any.
    one_pass: Whether Mosaic GPU's VJP runs the call as one kernel (not
      deterministic, and `runs_one_pass`).
    device: The GPU (default: JAX's default device).

  Returns:
    True to run this package's VJP, False for Mosaic GPU's.
  """
  if gpu_utils.is_sm100(device):
    return False
  if not gpu_utils.is_sm90(device):
    return True
  indexed = q_indices is not None or k_indices is not None
  same_dtype = q.dtype == k.dtype == v.dtype
  head_dim = max(q.shape[-1], v.shape[-1])
  slower = not one_pass and (
      head_dim > MOSAIC_VJP_MAX_HEAD_DIM or _skips_blocks(mask, bias, indexed)
  )
  return (
      not (same_dtype and _at_16bit_default(q.dtype, precision))
      or patched.pallas_triton_vjp.keeps_f32_operands(q.dtype, precision)
      or slower
  )


@dataclasses.dataclass(frozen=True, kw_only=True)
class MosaicGpuOrTritonVjp:
  """A VJP that runs `triton` or `mosaic`, as `use_triton_vjp` rules.

  Called as tokamax calls an op's `vjp`: `(residuals, out, dout, q, k, v,
  **forward keyword arguments)`, with `residuals` `(m, l)` `[*B, H, T]` f32
  from Mosaic GPU's forward. Returns what the chosen VJP returns: `dq`,
  `dk`, `dv` and `dbias`.

  Attributes:
    triton: This package's Pallas-Triton VJP.
    mosaic: tokamax's Mosaic GPU VJP, run from the series' tree (patch 0032
      fixes its per-head bias and key ranges with GQA), with its
      `deterministic` field (the series') replaced by this one's.
    deterministic: Whether `dq` must be the same from run to run. `False`
      lets Mosaic GPU's VJP run its one-pass kernel (patches 0031 and 0033;
      `use_triton_vjp` then takes it for windows, key ranges and head dims
      up to 256 too), whose f32 `dq` adds run in the order its CTAs reach
      them, so that reruns differ by rounding (docs/accuracy.md gives the
      bound); `True` runs the two kernels or ours, which repeat bit for bit.
      `None` (the default): `True` where `XLA_FLAGS` asks for deterministic
      ops (`xla_deterministic_ops`) or `mosaic` has no `deterministic`
      field, else `False`.

  Raises:
    ValueError: for `deterministic=False` with a `mosaic` VJP that has no
      `deterministic` field.
  """

  triton: Any = dataclasses.field(
      default_factory=pallas_triton_vjp.PallasTritonFlashAttentionVjp
  )
  mosaic: Any = dataclasses.field(
      default_factory=patched.pallas_mosaic_gpu_vjp.PallasMosaicGpuFlashAttentionVjp
  )
  deterministic: bool | None = None

  def __post_init__(self):
    has_field = hasattr(self.mosaic, "deterministic")
    if self.deterministic is False and not has_field:
      raise ValueError(
          "`deterministic=False` needs a `mosaic` VJP with a `deterministic`"
          " field (the series' `PallasMosaicGpuFlashAttentionVjp`); got"
          f" {type(self.mosaic).__name__}."
      )

  def __call__(self, residuals, out, dout, q, k, v, **kwargs):
    mosaic = self.mosaic
    deterministic = self.deterministic
    if deterministic is None:
      has_field = hasattr(mosaic, "deterministic")
      deterministic = xla_deterministic_ops() or not has_field
    if getattr(mosaic, "deterministic", deterministic) != deterministic:
      mosaic = dataclasses.replace(mosaic, deterministic=deterministic)
    one_pass = not deterministic and runs_one_pass(
        mosaic, residuals, out, dout, q, k, v, **kwargs
    )
    triton = use_triton_vjp(
        q,
        k,
        v,
        **{
            name: kwargs[name]
            for name in ("mask", "precision", "bias", "q_indices", "k_indices")
        },
        one_pass=one_pass,
    )
    vjp = self.triton if triton else mosaic
    return vjp(residuals, out, dout, q, k, v, **kwargs)


@dataclasses.dataclass(frozen=True)
class PallasMosaicGpuFlashAttention(upstream.PallasMosaicGpuFlashAttention):
  """tokamax's Mosaic GPU FlashAttention, with the faster VJP for each call.

  A drop-in subclass of tokamax's op of the same name (same fields, `Config`
  and autotuning data): its forward kernels are tokamax's with the series
  applied (`patched`). What differs:

  - with a causal mask and `k_start` past a query block's first causal key
    block (rows that attend to no key), the forward returns; tokamax's
    hung (patch 0030);
  - Mosaic GPU's VJP runs from the series' tree: with GQA, tokamax's read a
    query head's bias (broadcast along a sequence axis) and key ranges at
    another head's index, wrong dk and dv (patch 0032);
  - the default `vjp` is `MosaicGpuOrTritonVjp` (built with this op's
    `bypass_device_check`): Mosaic GPU's one-pass kernel where it runs
    (no bias or mask array, head dims up to 256), unless `XLA_FLAGS` asks
    for deterministic ops; elsewhere this package's Pallas-Triton VJP or
    Mosaic GPU's two kernels, as `use_triton_vjp` rules;
  - `logits_soft_cap` is checked as this package's Pallas-Triton op checks
    it;
  - the softmax without a running maximum (`use_stable_softmax=AUTO` with a
    cap of at most 60) only where its weights fit the dtype of `v`, as in
    our Pallas-Triton op (tokamax's overflows f16 past a cap of 9.7);
  - quantized (qwix `QArray`) `q`, `k` or `v` raise `NotImplementedError`
    when differentiated (neither VJP supports them), in the forward call,
    so that tokamax's implementation chain falls back.

  Call it as tokamax's op: `q` `[*B, T, H, D]`, `k` `[*B, t, h, D]`, `v`
  `[*B, t, h, d]`, optional `bias`, `mask` and the rest of `tokamax`'s
  `DotProductAttention` arguments; returns `[*B, T, H, d]` in the dtype of
  `q`.

  Raises:
    ValueError: if `logits_soft_cap` is not `None` or a finite, positive
      real scalar; if `use_stable_softmax=False` with a cap the weights
      cannot hold.
    NotImplementedError: where Mosaic GPU's forward does not run (e.g. not
      on a GPU, or f32 inputs), as tokamax's op; for quantized inputs when
      differentiated.
  """

  def __post_init__(self):
    if self.vjp is None:
      bypass = self.bypass_device_check
      vjp = MosaicGpuOrTritonVjp(
          triton=pallas_triton_vjp.PallasTritonFlashAttentionVjp(
              bypass_device_check=bypass
          ),
          mosaic=patched.pallas_mosaic_gpu_vjp.PallasMosaicGpuFlashAttentionVjp(
              bypass_device_check=bypass
          ),
      )
      object.__setattr__(self, "vjp", vjp)

  @override
  @functools.wraps(base.DotProductAttention.bind)
  def bind(self, *args, logits_soft_cap=None, **kwargs) -> op.BoundArguments:
    logits_soft_cap = pallas_triton.check_logits_soft_cap(logits_soft_cap)
    ba = super().bind(*args, logits_soft_cap=logits_soft_cap, **kwargs)
    if ba.kwargs["return_residuals"]:
      quantized = [n for n in "qkv" if isinstance(ba.arguments[n], base.QArray)]
      if quantized:
        raise NotImplementedError(
            f"Quantized (qwix `QArray`) {', '.join(quantized)} are not"
            " supported by the VJPs; differentiate with dequantized inputs."
        )
    return ba

  def stable_softmax(
      self,
      logits_soft_cap: float | None,
      logits_dtype: jnp.dtype,
      weights_dtype: jnp.dtype,
  ) -> bool | type[base.AUTO]:
    """Returns the `use_stable_softmax` the forward runs with.

    `AUTO` (tokamax's choice: without a running maximum for a cap of at most
    60) where that choice is the stable softmax or the weights `exp(s)`,
    cast to `weights_dtype` for `p @ v`, fit it; else `True`.

    Raises:
      ValueError: for `use_stable_softmax=False` where they do not fit.
    """
    fits = patched.pallas_triton._unstable_softmax_fits(  # pylint: disable=protected-access
        logits_soft_cap, logits_dtype, weights_dtype
    )
    if self.use_stable_softmax is base.AUTO:
      stable = base.needs_stable_softmax(logits_dtype, logits_soft_cap)
      return base.AUTO if stable or fits else True
    if not self.use_stable_softmax and not fits:
      raise ValueError(
          "`use_stable_softmax=False` needs an f32 or bf16 `logits_dtype` and"
          " a `logits_soft_cap` `c` with `exp(c)` and `exp(-c)` normal in"
          f" {jnp.dtype(weights_dtype)} (the dtype of `v`) and `c <= 60`; got"
          f" `logits_dtype={logits_dtype}`,"
          f" `logits_soft_cap={logits_soft_cap}`."
      )
    return self.use_stable_softmax

  @override
  @functools.wraps(upstream.PallasMosaicGpuFlashAttention._fwd)
  def _fwd(self, q, k, v, *, logits_soft_cap, logits_dtype, **kwargs):
    use_stable_softmax = self.stable_softmax(
        logits_soft_cap, logits_dtype, v.dtype
    )
    op_ = self
    if use_stable_softmax is not self.use_stable_softmax:
      op_ = self.replace(use_stable_softmax=use_stable_softmax)
    return _PATCHED_FWD(
        op_,
        q,
        k,
        v,
        logits_soft_cap=logits_soft_cap,
        logits_dtype=logits_dtype,
        **kwargs,
    )
