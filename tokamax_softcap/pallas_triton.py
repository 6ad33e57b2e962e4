"""Pallas-Triton FlashAttention whose default VJP supports `logits_soft_cap`.

The kernels that run are tokamax's own source with this package's patch
series (`patches/`) applied, executed by `tokamax_softcap.patched`;
`python -m tokamax_softcap patch show MODULE` prints that source, and `patch
tree` / `patch export` edit it (CONTRIBUTING.md).
"""

import dataclasses
import functools
import math
import numbers

import jax
from tokamax._src.ops import op
from tokamax._src.ops.attention import base
from tokamax._src.ops.attention import pallas_triton as upstream
from tokamax._src.ops.attention import pallas_triton_vjp as upstream_vjp
from tokamax_softcap import pallas_triton_vjp
from tokamax_softcap import patched

Config = upstream.Config
_PATCHED = patched.pallas_triton.PallasTritonFlashAttention


def check_logits_soft_cap(logits_soft_cap: object) -> float | None:
  """Returns `logits_soft_cap` as a Python `float` (or `None`).

  Args:
    logits_soft_cap: `None`, or the soft cap `c` of `s = c * tanh(u / c)`: a
      real, finite, positive scalar (Python or NumPy; not a traced array, as the
      kernels specialise on it).

  Raises:
    ValueError: if `logits_soft_cap` is not `None` and not such a scalar.
  """
  if logits_soft_cap is None:
    return None
  if isinstance(logits_soft_cap, bool) or not isinstance(
      logits_soft_cap, numbers.Real
  ):
    raise ValueError(
        "`logits_soft_cap` must be None or a real Python/NumPy scalar, got"
        f" {logits_soft_cap!r} of type {type(logits_soft_cap).__name__}."
    )
  value = float(logits_soft_cap)
  if not (math.isfinite(value) and value > 0):
    raise ValueError(
        f"`logits_soft_cap` must be finite and positive, got {value}."
    )
  return value


@dataclasses.dataclass(frozen=True, kw_only=True)
class PallasTritonFlashAttention(upstream.PallasTritonFlashAttention):
  """tokamax's Pallas-Triton FlashAttention, differentiable with a soft cap.

  A drop-in subclass of tokamax's op of the same name: same constructor,
  fields, `Config` and autotuning search space; the forward kernel is
  tokamax's with the series in `patches/` applied. What differs:

  - the default `vjp` is `tokamax_softcap.PallasTritonFlashAttentionVjp`
    (built with this op's `bypass_device_check`), which supports
    `logits_soft_cap`;
  - the kernels always take their softmax in base 2, with the logits' scale
    folded into the cap's constants, and return the residual `m` in base e,
    which the VJP expects; `use_base2` changes nothing (upstream's
    `use_base2=True` returned base 2, and its gradients were wrong);
  - a query row that attends to no key has zero output whatever softmax
    `logits_soft_cap` selects (upstream averages `v` with the stable one);
  - with a 16-bit `logits_dtype` the cap is taken in f32 and cast back
    (upstream divides in 16 bits, which Triton cannot compile);
  - the softmax without a running maximum only where its weights fit the
    dtype of `v` (upstream overflowed f16);
  - `logits_scale` multiplies the f32 logits (upstream rounded `q * scale`
    in the input dtype);
  - a windowed or offset causal mask runs as key ranges, whose fully masked
    blocks are skipped (upstream used a dense mask);
  - tuned heuristics for 16-bit head_dim 256 on Hopper, and default configs
    that fit in shared memory for head_dim up to 512 (and f32 head_dim 256);
  - `logits_soft_cap` and the shapes and dtypes of the arguments are
    validated.

  Call it as tokamax's op: `q` `[*B, T, H, D]`, `k` `[*B, t, h, D]`, `v`
  `[*B, t, h, d]` (f32, bf16 or f16; `H` a multiple of `h`), optional `bias`
  broadcastable to `[*B, H, T, t]`, `mask`, `logits_soft_cap` and the rest of
  `tokamax`'s `DotProductAttention` arguments; it returns `[*B, T, H, d]` in
  the dtype of `q`.

  Raises:
    ValueError: if `logits_soft_cap` is not `None` or a finite, positive real
      scalar; if an argument's shape does not fit the others (see
      `check_arguments` of the patched `pallas_triton_vjp`); if
      `use_stable_softmax=False` with a cap the weights cannot hold.
    TypeError: if an argument has the wrong kind of dtype.
    NotImplementedError: if `dropout_mask` or a quantized (qwix `QArray`)
      `q`, `k` or `v` is given while residuals are requested (which is how
      tokamax differentiates an op) and the VJP is the Pallas-Triton one, which
      supports neither: raised in the forward call, so a caller that tries
      implementations in turn can fall back (inference supports both). Also on
      devices without Triton support (unless `bypass_device_check`).
  """

  def __post_init__(self):
    if self.vjp is None:
      vjp = pallas_triton_vjp.PallasTritonFlashAttentionVjp(
          bypass_device_check=self.bypass_device_check
      )
      object.__setattr__(self, "vjp", vjp)

  @functools.wraps(base.DotProductAttention.__call__)
  def __call__(
      self,
      q,
      k,
      v,
      *,
      logits_soft_cap=None,
      precision=jax.lax.Precision.DEFAULT,
      logits_dtype=base.AUTO,
      **kwargs,
  ):
    # Checked before tokamax's type check (jaxtyping), which raises a
    # `TypeError` for some invalid caps (e.g. complex, traced) and accepts
    # others, and whose errors on shapes do not say which relation fails.
    logits_soft_cap = check_logits_soft_cap(logits_soft_cap)
    patched.pallas_triton_vjp.check_options(precision, logits_dtype)
    patched.pallas_triton_vjp.check_arguments(
        dict(kwargs, q=q, k=k, v=v, logits_dtype=logits_dtype)
    )
    return base.DotProductAttention.__call__(
        self,
        q,
        k,
        v,
        logits_soft_cap=logits_soft_cap,
        precision=precision,
        logits_dtype=logits_dtype,
        **kwargs,
    )

  @functools.wraps(base.DotProductAttention.bind)
  def bind(
      self,
      *args,
      precision=jax.lax.Precision.DEFAULT,
      logits_dtype=base.AUTO,
      **kwargs,
  ) -> op.BoundArguments:
    # As the patched op's `bind` (whose `super()` is not this class's).
    patched.pallas_triton_vjp.check_options(precision, logits_dtype)
    ba = base.DotProductAttention.bind(
        self, *args, precision=precision, logits_dtype=logits_dtype, **kwargs
    )
    patched.pallas_triton_vjp.check_arguments(ba.arguments)
    arguments = dict(ba.arguments)
    arguments["logits_soft_cap"] = check_logits_soft_cap(
        arguments["logits_soft_cap"]
    )
    if arguments["return_residuals"] and isinstance(
        self.vjp, upstream_vjp.PallasTritonFlashAttentionVjp
    ):
      if arguments["dropout_mask"] is not None:
        raise NotImplementedError(
            "`dropout_mask` is not supported by the Pallas-Triton VJP."
        )
      quantized = [n for n in "qkv" if isinstance(arguments[n], base.QArray)]
      if quantized:
        raise NotImplementedError(
            f"Quantized (qwix `QArray`) {', '.join(quantized)} are not"
            " supported by the Pallas-Triton VJP; differentiate with"
            " dequantized inputs."
        )
    return op.BoundArguments(self, arguments)

  _fwd = patched.op_method(_PATCHED._fwd)
  _get_heuristics_config = patched.op_method(_PATCHED._get_heuristics_config)
  _get_autotuning_configs = patched.op_method(_PATCHED._get_autotuning_configs)
