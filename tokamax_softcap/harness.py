"""The comparison `verify` and the tests make: op and fp32 reference, same inputs.

Attention layers to check (`Config`, `CONFIGS`), their mask variants
(`mask_variant`), random inputs (`make_inputs`), and `gradients`, which
differentiates the op (by default `PallasTritonFlashAttention`) and the
unfused fp32 reference (`tokamax_softcap.reference`, on the same inputs
upcast to f32) with JAX. `environment` names the facts of a run that `verify`
and `bench` report, `device_name` the device in plain words.

Inputs are random with the shapes of the configuration: `q`, `k` ~ N(0, s)
with `s = sqrt(logit_std)` (so with `logits_scale = 1/sqrt(D)` the pre-cap
logits have standard deviation `logit_std`; by default the cap, so most logits
are beyond the linear range of `tanh` and the largest reach ~5x the cap),
`v`, `dout` and `bias` ~ N(0, 1).
"""

from collections.abc import Sequence
import dataclasses
import datetime
import functools
import math
import platform

import jax
import jax.numpy as jnp
import numpy as np
import tokamax
from tokamax._src.ops.attention import base
import tokamax_softcap
from tokamax_softcap import pallas_triton
from tokamax_softcap import reference

GRADS = ("dq", "dk", "dv", "dbias")
PRECISION = {
    "bfloat16": jax.lax.Precision.DEFAULT,
    "float32": jax.lax.Precision.HIGHEST,
}
MASK_VARIANTS = ("causal", "packed-k-start", "packed-dense", "bias", "window")
# `sharded` is `causal` through `q_sharding`; it needs 2+ devices.
VARIANTS = (*MASK_VARIANTS, "sharded")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config:
  """An attention layer to verify.

  Attributes:
    name: Its name in the table.
    batch: Batch size `B`.
    seq_len: Sequence length `T` (self-attention).
    num_heads: Query heads `H`.
    num_kv_heads: Key/value heads `h` (`H % h == 0`; GQA when `h < H`).
    head_dim: `D`, for `q`, `k` and `v`.
    logits_soft_cap: The cap `c` (`None`: no cap).
    window: Sliding-window size of the `window` variant (keys `q - window < k
      <= q`); the variant runs only if `window < seq_len`.
  """

  name: str
  batch: int
  seq_len: int
  num_heads: int
  num_kv_heads: int
  head_dim: int
  logits_soft_cap: float | None
  window: int


# Gemma 2 2B: 8 query / 4 kv heads, head_dim 256, `attn_logit_softcapping`
# 50, sliding window 4096 on alternate layers, context 8192 (Gemma 2 paper,
# arXiv:2408.00118, and its `config.json`).
GEMMA2_2B = Config(
    name="gemma2-2b",
    batch=1,
    seq_len=8192,
    num_heads=8,
    num_kv_heads=4,
    head_dim=256,
    logits_soft_cap=50.0,
    window=4096,
)
# The upstream PR's check: cap 30, pre-cap logits past 150; MHA at the shape
# of tokamax's attention benchmarks (B2 T4096 H16 D128).
PR_CHECK = Config(
    name="pr-check",
    batch=2,
    seq_len=4096,
    num_heads=16,
    num_kv_heads=16,
    head_dim=128,
    logits_soft_cap=30.0,
    window=1024,
)
# A wide-head layer: head_dim 512, the widest the kernels take, with Gemma
# 2's GQA, cap and window at its context. Not in `DEFAULT_CONFIGS`: its f32
# rows with a bias reach 2.5e-5 in the CPU interpreter, near `verify`'s
# bound of 3e-5, where XLA:CPU's f32 dots round in each machine's own
# summation order (7.4e-6 at most on an H200).
WIDE_512 = Config(
    name="wide-512",
    batch=1,
    seq_len=8192,
    num_heads=8,
    num_kv_heads=4,
    head_dim=512,
    logits_soft_cap=50.0,
    window=4096,
)
CONFIGS = {c.name: c for c in (GEMMA2_2B, PR_CHECK, WIDE_512)}
# What `verify` runs unless told otherwise.
DEFAULT_CONFIGS = (GEMMA2_2B.name, PR_CHECK.name)


def cpu_sized(config: Config) -> Config:
  """Returns `config` at a size the Pallas interpreter runs in seconds."""
  seq_len = min(config.seq_len, 512)
  return dataclasses.replace(
      config,
      batch=1,
      seq_len=seq_len,
      num_heads=min(config.num_heads, 4),
      num_kv_heads=min(config.num_kv_heads, 2),
      window=min(config.window, seq_len // 2),
  )


def environment() -> dict[str, str]:
  """Returns the facts of a run to report: date, device, versions."""
  return dict(
      date=datetime.date.today().isoformat(),
      device=device_name(interpreted=False, reduced=False),
      python=platform.python_version(),
      jax=jax.__version__,
      tokamax=tokamax.__version__,
      tokamax_softcap=tokamax_softcap.__version__,
  )


def device_name(*, interpreted: bool, reduced: bool) -> str:
  """Returns the device a run's kernels run on, in plain words.

  Args:
    interpreted: Whether the Pallas interpreter runs the kernels.
    reduced: Whether the configurations are reduced (`cpu_sized`).

  Returns:
    E.g. `"NVIDIA H200"`, or `"CPU (Pallas interpreter, reduced sizes)"`.
  """
  device = jax.devices()[0]
  name = "CPU" if device.platform == "cpu" else device.device_kind
  how = []
  if interpreted:
    how.append("Pallas interpreter")
  if reduced:
    how.append("reduced sizes")
  return f"{name} ({', '.join(how)})" if how else name


def _doc_starts(seq_len: int) -> np.ndarray:
  """Returns the start of each position's document: 4 packed documents."""
  # Boundaries at uneven fractions, so documents straddle kernel blocks.
  bounds = [0, *(round(f * seq_len) + 3 for f in (0.37, 0.52, 0.81))]
  starts = np.zeros(seq_len, np.int32)
  for b in bounds:
    starts[b:] = b
  return starts


def mask_variant(
    config: Config, variant: str
) -> tuple[dict[str, object], np.ndarray]:
  """Returns the op's keyword arguments and the reference's dense mask."""
  pos = np.arange(config.seq_len)
  causal = pos[None, :] <= pos[:, None]
  doc_start = _doc_starts(config.seq_len)
  packed = causal & (pos[None, :] >= doc_start[:, None])
  window = causal & (pos[None, :] > pos[:, None] - config.window)
  return {
      "causal": (dict(is_causal=True), causal),
      "sharded": (dict(is_causal=True), causal),
      "bias": (dict(is_causal=True), causal),
      "packed-k-start": (
          dict(mask=base.Mask(k_start=jnp.asarray(doc_start), is_causal=True)),
          packed,
      ),
      "packed-dense": (
          dict(mask=jnp.asarray(packed)[None], is_causal=True),
          packed,
      ),
      "window": (dict(mask=base.CausalMask(window_size=config.window)), window),
  }[variant]


def make_inputs(
    config: Config, dtype: jnp.dtype, logit_std: float, with_bias: bool, seed=0
) -> tuple[jax.Array, ...]:
  """Returns `q, k, v, bias, dout` in `dtype` (`bias` is `None` if unused)."""
  b, t, hq, hk, d = (
      config.batch,
      config.seq_len,
      config.num_heads,
      config.num_kv_heads,
      config.head_dim,
  )
  keys = jax.random.split(jax.random.PRNGKey(seed), 5)
  s = math.sqrt(logit_std)
  q = s * jax.random.normal(keys[0], (b, t, hq, d), jnp.float32)
  k = s * jax.random.normal(keys[1], (b, t, hk, d), jnp.float32)
  v = jax.random.normal(keys[2], (b, t, hk, d), jnp.float32)
  dout = jax.random.normal(keys[3], (b, t, hq, d), jnp.float32)
  bias = None
  if with_bias:
    bias = jax.random.normal(keys[4], (b, hq, t, t), jnp.float32).astype(dtype)
  cast = lambda x: x.astype(dtype)
  return cast(q), cast(k), cast(v), bias, cast(dout)


def q_sharding(config: Config) -> jax.sharding.NamedSharding | None:
  """Returns a sharding of `q` over the devices for the `sharded` variant.

  The mesh has axes `("batch", "heads")`: on the batch axis the largest
  divisor of `config.batch` that is at most the device count, on the heads
  axis the largest divisor of `config.num_kv_heads` (tokamax shards `k` and
  `v` by head with `q`) that fits in the devices left; it uses the first
  `batch * heads` devices.

  Args:
    config: The attention layer.

  Returns:
    The sharding (`PartitionSpec("batch", None, "heads", None)`), or `None`
    if the mesh would have fewer than 2 devices.
  """
  devices = jax.devices()
  n = len(devices)
  batch = max(d for d in range(1, n + 1) if config.batch % d == 0)
  heads = max(
      d for d in range(1, n // batch + 1) if config.num_kv_heads % d == 0
  )
  if batch * heads < 2:
    return None
  mesh = jax.sharding.Mesh(
      np.array(devices[: batch * heads]).reshape(batch, heads),
      ("batch", "heads"),
  )
  spec = jax.sharding.PartitionSpec("batch", None, "heads", None)
  return jax.sharding.NamedSharding(mesh, spec)


def relative_error(x: jax.Array, ref: jax.Array) -> float:
  """Returns `max|x - ref| / max|ref|` in f32; `inf` if `x` is not finite.

  Finiteness is checked first: XLA:CPU's `max` can skip NaNs.
  """
  x = x.astype(jnp.float32)
  if not bool(jnp.all(jnp.isfinite(x))):
    return math.inf
  err = float(jnp.max(jnp.abs(x - ref)) / jnp.max(jnp.abs(ref)))
  return err if math.isfinite(err) else math.inf


def relative_errors(
    actual: Sequence[jax.Array | None], expected: Sequence[jax.Array | None]
) -> dict[str, float]:
  """Returns `relative_error` of each gradient of `GRADS` with a reference.

  Args:
    actual: `dq, dk, dv, dbias`, as `Gradients.actual`.
    expected: The references, as `Gradients.expected` (`None`: left out).
  """
  return {
      name: relative_error(a, e)
      for name, a, e in zip(GRADS, actual, expected)
      if e is not None
  }


@dataclasses.dataclass(frozen=True, kw_only=True)
class Gradients:
  """The kernel's and the reference's gradients for one run.

  Attributes:
    actual: `dq, dk, dv, dbias` of the op (dtype of the inputs; `dbias` is
      `None` without bias).
    expected: The same, of the fp32 reference on the inputs upcast to f32.
    max_logit: The largest pre-cap |u| over attended entries.
  """

  actual: tuple[jax.Array | None, ...]
  expected: tuple[jax.Array | None, ...]
  max_logit: float


def gradients(
    config: Config,
    variant: str,
    dtype: str,
    logit_std: float | None = None,
    op: base.DotProductAttention | None = None,
    with_reference: bool = True,
    precision: jax.lax.Precision | None = None,
) -> Gradients:
  """Differentiates the op and the reference on the same inputs.

  Args:
    config: The attention layer.
    variant: One of `VARIANTS`.
    dtype: `"bfloat16"`, `"float16"` or `"float32"`, of inputs and outputs
      (`"float16"` needs `precision`).
    logit_std: Standard deviation of the pre-cap logits; default the cap.
    op: The op, e.g. tokamax's XLA one; default
      `PallasTritonFlashAttention()` (`sharded` calls
      `tokamax.dot_product_attention(..., implementation="triton")`, which is
      this package's op once it is imported).
    with_reference: If false, `expected` holds `None`s (saves the fp32
      reference's time).
    precision: The op's `precision`; default `PRECISION[dtype]`.

  Raises:
    ValueError: for `sharded`, if `q_sharding(config)` is `None`.
  """
  if op is None:
    op = pallas_triton.PallasTritonFlashAttention()
  if logit_std is None:
    logit_std = config.logits_soft_cap
  cap = config.logits_soft_cap
  op_kwargs, mask = mask_variant(config, variant)
  q, k, v, bias, dout = make_inputs(
      config, jnp.dtype(dtype), logit_std, with_bias=variant == "bias"
  )

  # f32 at full f32 precision (DEFAULT would let the GPU use TF32); bf16 with
  # its default (bf16 operands, f32 accumulation), as tokamax's tests do.
  if precision is None:
    precision = PRECISION[dtype]

  def kernel(q, k, v, bias):
    return op(
        q,
        k,
        v,
        bias=bias,
        logits_soft_cap=cap,
        precision=precision,
        **op_kwargs,
    )

  if variant == "sharded":
    sharding = q_sharding(config)
    if sharding is None:
      raise ValueError(f"`sharded` needs 2+ devices; have {jax.devices()}.")

    def kernel(q, k, v, bias):  # pylint: disable=function-redefined
      return tokamax.dot_product_attention(
          q,
          k,
          v,
          bias=bias,
          logits_soft_cap=cap,
          precision=precision,
          implementation="triton",
          q_sharding=sharding,
          **op_kwargs,
      )

  def ref(q, k, v, bias):
    return reference.attention(
        q, k, v, bias, mask=jnp.asarray(mask), logits_soft_cap=cap
    )

  def vjp(f, *args):
    _, f_vjp = jax.vjp(f, *args[:-1])
    return f_vjp(args[-1])

  f32 = lambda x: None if x is None else x.astype(jnp.float32)
  actual = jax.jit(functools.partial(vjp, kernel))(q, k, v, bias, dout)
  expected = (None,) * len(actual)
  if with_reference:
    expected = jax.jit(functools.partial(vjp, ref))(
        *map(f32, (q, k, v, bias, dout))
    )
  u = reference.logits(f32(q), f32(k), bias=f32(bias))
  max_logit = float(jnp.max(jnp.where(jnp.asarray(mask), jnp.abs(u), 0.0)))
  return Gradients(actual=actual, expected=expected, max_logit=max_logit)
