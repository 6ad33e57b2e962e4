"""`bench`: time and memory of soft-capped attention against its alternatives.

For each shape of a sweep and each implementation, builds the forward and the
forward + backward functions with tokamax's benchmarking helpers
(`tokamax.benchmarking.standardize_function`), compiles them once and times
them as tokamax's benchmarks do (`tokamax._src.benchmarking`'s timers): on a
GPU, the time the call's kernels ran on it, read with CUPTI (`timing_method`),
each timed call right after an untimed one on the same inputs, so inputs that
fit in the L2 cache (50 MB on an H100: NVIDIA, "NVIDIA Hopper Architecture
In-Depth") are timed warm. A round times one call on each of `input_sets`
input sets in turn and takes their mean; the median over `reps` rounds is
reported. Peak memory is XLA's memory analysis of the compiled forward +
backward (an estimate made at compile time, not a runtime reading; none for a
program loaded from JAX's persistent compilation cache, whose analysis reads
0). The markdown report's tables: a row per shape, with each implementation's
forward + backward ms and their ratios; with shards, a row per shape,
implementation and layout, with the shards' times (below); a row per result,
with the forward's and the backward's ms and TFLOP/s, counting the FLOP of the
attended (query, key) pairs only (`Shape.fwd_flop`).

With `shards > 1`, a shape is also timed as the devices of a query-sharded
call would run it (tokamax's `q_sharding`, see `context_parallel`): each
shard's queries, with their global positions as `q_indices`, against all the
keys; a third table gives the slowest shard's time over the unsharded call's.

Implementations: this package's op with the cap (`ours`, which with a cap of
at most 60 uses the unstable softmax), the same with the stable softmax
forced (`ours-stable`: so `ours-stable / ours-nocap` is the cost of the cap
alone), with the cap at `precision=HIGHEST` (`ours-highest`: f32-accurate dot
operands and `delta` for bf16 inputs, patch 0019), without a cap
(`ours-nocap`: tokamax's Pallas-Triton kernels with the series' fixes), and,
with the cap: tokamax's Mosaic GPU op, its own forward and VJP (`mosaic`,
where the GPU supports it); Mosaic GPU's forward with our VJP for every call
(`mosaic-ours`); Mosaic GPU's forward and VJP, both with the series
(`mosaic-fused`: the VJP with `deterministic=False`, i.e. the one-pass
kernel of patches 0031 and 0033 where it applies, else tokamax's two
kernels, for every call); what a user gets naming no implementation
(`default`: tokamax's default chain with this package registered, i.e. on
Hopper Mosaic GPU's forward, with the series' patch 0030, and the VJP that
`use_triton_vjp` picks, the one-pass kernel where it runs unless XLA's
determinism flags are set; `mosaic` and `mosaic-ours` run tokamax's
forward without it); tokamax's XLA (`xla`)
and chunked XLA (`xla_chunked`) implementations; and, without the cap,
which it lacks, cuDNN's fused attention (`cudnn-nocap`, `CudnnNoCap`: the
speed a capped kernel is measured against). Ratios are taken within one
run.
"""

import argparse
from collections.abc import Callable, Iterator, Sequence
import csv
import dataclasses
import functools
import json
import math
import pathlib
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from tokamax._src import benchmarking
from tokamax._src.ops.attention import api
from tokamax._src.ops.attention import base
from tokamax._src.ops.attention import pallas_mosaic_gpu as upstream_mosaic_gpu
import tokamax_softcap
from tokamax_softcap import cli_types
from tokamax_softcap import context_parallel
from tokamax_softcap import harness
from tokamax_softcap import interpret
from tokamax_softcap import patched
from tokamax_softcap import registration
import tqdm

TOKENS_PER_CALL = 16384
SEQ_LENS = (1024, 2048, 4096, 8192, 16384, 32768)
HEAD_DIMS = (64, 128, 256)
# (query heads, kv heads): MHA as tokamax's attention benchmarks; GQA as
# Gemma 2 2B, 9B and 27B.
HEADS = {
    "mha": (16, 16),
    "gqa": (8, 4),
    "gqa-16/8": (16, 8),
    "gqa-32/16": (32, 16),
}
DEFAULT_HEADS = ("mha", "gqa")
IMPLEMENTATIONS = (
    "ours",
    "ours-stable",
    "ours-highest",
    "ours-nocap",
    "mosaic",
    "mosaic-ours",
    "mosaic-fused",
    "default",
    "xla",
    "xla_chunked",
    "cudnn-nocap",
)
# Those the dry run leaves out: they run on a GPU only (Mosaic GPU kernels
# have no CPU interpreter).
GPU_ONLY_IMPLEMENTATIONS = (
    "mosaic",
    "mosaic-ours",
    "mosaic-fused",
    "cudnn-nocap",
)
# The table's ratio columns: (numerator, denominators); of several
# denominators, the fastest at the shape.
RATIOS = (
    ("ours", ("ours-nocap",)),
    ("ours-stable", ("ours-nocap",)),
    ("ours-highest", ("ours",)),
    ("ours", ("mosaic",)),
    ("xla", ("ours",)),
    ("default", ("ours", "mosaic", "mosaic-ours", "mosaic-fused")),
    ("default", ("cudnn-nocap",)),
)
CAP = 50.0  # Gemma 2's `attn_logit_softcapping`.
# Masks: plain causal or none; a causal sliding window of `W` keys (Gemma 2's
# local layers: window 4096, `local_window_size=(W - 1, 0)`); `N` causal
# documents of equal length packed into each sequence (`k_start`).
MASKS = ("causal", "full", "window-1024", "window-4096", "docs-4")
DEFAULT_MASKS = ("causal", "full")
# How the query sequence is cut into shards: contiguous chunks, or
# `context_parallel`'s zigzag layout.
LAYOUTS = ("natural", "zigzag")
MODES = {"fwd": "forward", "fwd+bwd": "forward_and_vjp"}
# The backward's FLOP over the forward's: its five matmuls against two (the
# convention of FlashAttention-2's benchmarks, Dao 2023, arXiv:2307.08691).
BWD_FLOP_RATIO = 2.5
# The target of the cap's cost, `ours / ours-nocap`, drawn in the plot.
CAP_COST_TARGET = 1.05
# The plot's panel pairs per row.
PLOT_COLUMNS = 4
# Fewer rounds leave the median at the mercy of a few slow ones.
MIN_REPS = 20
REPS = 20
INPUT_SETS = 4
DRY_RUN_REPS = 2
DRY_RUN_NOTE = (
    "Dry run: tiny shapes and few rounds (on a CPU, in the Pallas"
    " interpreter) that exercise the code paths; the times mean nothing, and"
    " no TFLOP/s are reported."
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Shape:
  """One point of the sweep: `[batch, seq_len, heads, head_dim]` queries.

  With `shard` set, the point is that shard's part of a query-sharded call:
  its `seq_len // shards` queries (`positions`), passed with their global
  positions as `q_indices`, against all `seq_len` keys.
  """

  seq_len: int
  head_dim: int
  heads: str
  mask: str  # One of `MASKS`.
  batch: int = 0  # 0: `TOKENS_PER_CALL // seq_len` (at least 1).
  shards: int = 1
  shard: int | None = None  # In `range(shards)`; None: the whole sequence.
  layout: str = "natural"  # One of `LAYOUTS`.

  @property
  def num_heads(self) -> tuple[int, int]:
    return HEADS[self.heads]

  @property
  def batch_size(self) -> int:
    return self.batch or max(1, TOKENS_PER_CALL // self.seq_len)

  def positions(self) -> np.ndarray:
    """Returns the global positions of the queries this point runs, in order.

    Raises:
      ValueError: if `seq_len` is not a multiple of `shards` (of `2 * shards`
        for the zigzag layout).
    """
    t = self.seq_len
    if self.shard is None:
      return np.arange(t)
    if self.layout == "zigzag":
      order = np.asarray(context_parallel.zigzag_positions(t, self.shards))
    elif t % self.shards:
      raise ValueError(
          f"`seq_len` {t} is not a multiple of `shards` {self.shards}."
      )
    else:
      order = np.arange(t)
    rows = t // self.shards
    return order[self.shard * rows : (self.shard + 1) * rows]

  def mask_kwargs(self) -> dict[str, Any]:
    """Returns the attention op's mask arguments for `mask` (and the shard)."""
    kind, _, size = self.mask.partition("-")
    if kind == "causal":
      kwargs = dict(is_causal=True)
    elif kind == "full":
      kwargs = {}
    elif kind == "window":
      kwargs = dict(mask=base.CausalMask(window_size=int(size)))
    elif kind == "docs":
      doc_len = self.seq_len // int(size)
      k_start = self.positions() // doc_len * doc_len
      kwargs = dict(
          mask=base.Mask(k_start=jnp.asarray(k_start), is_causal=True)
      )
    else:
      raise ValueError(f"Unknown mask {self.mask!r}; one of {MASKS}.")
    if self.shard is not None:
      kwargs["q_indices"] = jnp.asarray(self.positions(), jnp.int32)[None]
    return kwargs

  def attended_pairs(self) -> int:
    """Returns how many (query, key) pairs `mask` lets attend.

    Per batch element and query head, over the queries of `positions`.
    """
    p = self.positions()
    kind, _, size = self.mask.partition("-")
    if kind == "full":
      keys = np.full_like(p, self.seq_len)
    elif kind == "causal":
      keys = p + 1
    elif kind == "window":
      keys = np.minimum(p + 1, int(size))
    elif kind == "docs":  # As `mask_kwargs`: a shorter last one if T % N > 0.
      keys = p % (self.seq_len // int(size)) + 1
    else:
      raise ValueError(f"Unknown mask {self.mask!r}; one of {MASKS}.")
    return int(keys.sum())

  def fwd_flop(self) -> int:
    """Returns the forward's FLOP: `q @ k.T` and `p @ v` over attended pairs.

    `4 * batch * query heads * attended pairs * head_dim` (a multiply-add is
    two FLOP); the backward's is `BWD_FLOP_RATIO` times this.
    """
    hq, _ = self.num_heads
    return 4 * self.batch_size * hq * self.attended_pairs() * self.head_dim

  def io_bytes(self, dtype=jnp.bfloat16) -> int:
    """Bytes of q, k, v, out, dout, dq, dk, dv (the memory target's unit).

    q, out, dout and dq of the queries of `positions`; k, v, dk and dv of all
    the keys (a shard's are the gathered ones, and its partial dk and dv).
    (The benchmark reuses `out` as the cotangent `dout`; the unit counts both,
    as training holds both.)
    """
    hq, hk = self.num_heads
    per_head = self.batch_size * self.head_dim
    rows = len(self.positions())
    return (
        per_head
        * (4 * hq * rows + 4 * hk * self.seq_len)
        * (jnp.dtype(dtype).itemsize)
    )

  def __str__(self) -> str:
    hq, hk = self.num_heads
    shard = (
        ""
        if self.shard is None
        else f" shard {self.shard}/{self.shards} {self.layout}"
    )
    return (
        f"B{self.batch_size} T{self.seq_len} H{hq}/{hk} D{self.head_dim}"
        f" {self.mask}{shard}"
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class Result:
  """One implementation at one shape."""

  shape: str
  seq_len: int
  head_dim: int
  heads: str
  mask: str
  implementation: str
  fwd_ms: float | None
  fwd_bwd_ms: float | None
  peak_memory_mb: float | None
  memory_ratio: float | None  # Peak memory over `Shape.io_bytes`.
  fwd_flop: int  # `Shape.fwd_flop`.
  error: str | None = None
  shards: int = 1  # As `Shape`'s.
  shard: int | None = None
  layout: str = "natural"


def sweep(
    seq_lens: Sequence[int] = SEQ_LENS,
    head_dims: Sequence[int] = HEAD_DIMS,
    heads: Sequence[str] = DEFAULT_HEADS,
    masks: Sequence[str] = DEFAULT_MASKS,
    shards: int = 1,
    layouts: Sequence[str] = LAYOUTS,
) -> list[Shape]:
  """Returns the shapes of the sweep (the full one by default).

  With `shards > 1`, each shape is followed by its shards' points, shard by
  shard, for each of `layouts`.
  """
  shapes = []
  for t in seq_lens:
    for d in head_dims:
      for h in heads:
        for m in masks:
          whole = Shape(seq_len=t, head_dim=d, heads=h, mask=m, shards=shards)
          shapes.append(whole)
          if shards > 1:
            shapes += [
                dataclasses.replace(whole, shard=i, layout=layout)
                for layout in layouts
                for i in range(shards)
            ]
  return shapes


def dry_run_shapes(
    shards: int = 1, layouts: Sequence[str] = LAYOUTS
) -> list[Shape]:
  """Returns tiny shapes that exercise every code path, e.g. on a CPU."""
  shapes = sweep((128,), (32,), ("gqa",), ("causal", "docs-4"), shards, layouts)
  return [dataclasses.replace(s, batch=1) for s in shapes]


@dataclasses.dataclass(frozen=True)
class CudnnNoCap:
  """cuDNN's fused attention without a soft cap, as a speed baseline.

  `jax.nn.dot_product_attention(..., implementation="cudnn")`, forward and
  VJP both cuDNN's flash attention kernels (cuDNN has no soft cap). Takes
  `bench`'s mask arguments (`Shape.mask_kwargs`): `is_causal` and a causal
  `base.CausalMask` window of `W` keys (`local_window_size=(W - 1, 0)`).
  `q`: `[B, T, H, D]`, `k`, `v`: `[B, t, h, D]` (`H` a multiple of `h`),
  16-bit floats; returns `[B, T, H, D]`.

  Raises:
    NotImplementedError: for key ranges (packed documents), a causal offset
      or `q_indices` (shards), which `jax.nn.dot_product_attention` lacks.
  """

  def supported_on(self, device: jax.Device) -> bool:
    return device.platform == "gpu"

  def __call__(self, q, k, v, *, is_causal=False, mask=None, q_indices=None):
    window = None
    if mask is not None:
      if not isinstance(mask, base.CausalMask) or mask.offset != 0:
        raise NotImplementedError(
            "CudnnNoCap: no key ranges and no causal offset."
        )
      is_causal = True
      if mask.window_size is not None:
        window = (mask.window_size - 1, 0)
    if q_indices is not None:
      raise NotImplementedError("CudnnNoCap: no `q_indices`.")
    return jax.nn.dot_product_attention(
        q,
        k,
        v,
        is_causal=is_causal,
        local_window_size=window,
        implementation="cudnn",
    )


def _implementation(
    name: str,
) -> tuple[Callable[..., Any] | None, dict[str, Any]]:
  """Returns `(attention op or None if absent, its call's keywords)`."""
  ours = tokamax_softcap.PallasTritonFlashAttention
  capped = dict(logits_soft_cap=CAP)
  if name == "ours":
    return ours(), capped
  if name == "ours-stable":
    return ours(use_stable_softmax=True), capped
  if name == "ours-highest":
    return ours(), capped | dict(precision=jax.lax.Precision.HIGHEST)
  if name == "ours-nocap":
    return ours(), dict(logits_soft_cap=None)
  if name == "mosaic":
    return upstream_mosaic_gpu.PallasMosaicGpuFlashAttention(), capped
  if name == "mosaic-ours":
    vjp = tokamax_softcap.PallasTritonFlashAttentionVjp()
    return upstream_mosaic_gpu.PallasMosaicGpuFlashAttention(vjp=vjp), capped
  if name == "mosaic-fused":
    vjp = patched.pallas_mosaic_gpu_vjp.PallasMosaicGpuFlashAttentionVjp(
        deterministic=False
    )
    return tokamax_softcap.PallasMosaicGpuFlashAttention(vjp=vjp), capped
  if name == "default":
    return registration.default_chain, capped
  if name == "cudnn-nocap":
    return CudnnNoCap(), {}
  return api.IMPLEMENTATIONS.get(name), capped


def supported(name: str) -> bool:
  """Returns whether an implementation exists and runs on the default device."""
  op, _ = _implementation(name)
  if op is registration.default_chain:
    return True
  return op is not None and op.supported_on(jax.devices()[0])


def _inputs(shape: Shape, dtype, num_sets: int) -> list[tuple[jax.Array, ...]]:
  """Returns `num_sets` sets of `(q, k, v)`, with logits past the cap."""
  hq, hk = shape.num_heads
  b, t, d = shape.batch_size, shape.seq_len, shape.head_dim
  # Pre-cap logits with standard deviation ~CAP, as `harness.make_inputs`'s.
  scale = math.sqrt(CAP)
  sets = []
  for seed in range(num_sets):
    keys = jax.random.split(jax.random.PRNGKey(seed), 3)
    q = scale * jax.random.normal(keys[0], (b, t, hq, d), dtype)
    k = scale * jax.random.normal(keys[1], (b, t, hk, d), dtype)
    v = jax.random.normal(keys[2], (b, t, hk, d), dtype)
    sets.append((q, k, v))
  return sets


def _shard_inputs(
    shape: Shape, sets: Sequence[tuple[jax.Array, ...]]
) -> list[tuple[jax.Array, ...]]:
  """Returns `sets` with only the queries of `shape.positions()`."""
  if shape.shard is None:
    return list(sets)
  rows = jnp.asarray(shape.positions())
  return [(q[:, rows], k, v) for q, k, v in sets]


def _time(
    op: Callable[..., Any],
    kwargs: dict[str, Any],
    shape: Shape,
    mode: str,
    input_sets: Sequence[tuple[jax.Array, ...]],
    reps: int,
) -> tuple[float, float | None]:
  """Returns `(median ms per call, peak memory MB or None)` of one mode."""
  f = functools.partial(op, **kwargs, **shape.mask_kwargs())
  standardized = [
      benchmarking.standardize_function(f, *s, mode=MODES[mode], seed=None)
      for s in input_sets
  ]
  args = [a for _, a in standardized]
  compiled = jax.jit(standardized[0][0]).lower(args[0]).compile()
  # A program loaded from JAX's persistent compilation cache reports a peak
  # of 0 (jax 0.11.2, H200: one program 503,653,420 bytes when compiled, 0
  # when loaded): no peak is reported then.
  peak = compiled.memory_analysis().peak_memory_in_bytes
  peak_mb = peak / 1e6 if peak else None
  # pylint: disable-next=protected-access
  timer = benchmarking._TIMERS[timing_method()]
  timers = [timer(compiled, a) for a in args]
  times = []
  for _ in range(reps):
    round_ms = [t(False)[0] for t in timers]
    if None in round_ms:  # CUPTI saw no kernel, e.g. under another profiler.
      raise RuntimeError(
          "CUPTI recorded no kernel time; is a profiler (ncu, nsys) attached?"
      )
    times.append(np.mean(round_ms))
  return float(np.median(times)), peak_mb


def timing_method() -> str:
  """Returns tokamax's timer for this backend: `"cupti"` on a GPU.

  Elsewhere (the dry run's interpreter on a CPU) `"wallclock"`.
  """
  # pylint: disable=protected-access
  return benchmarking._DEFAULT_TIMING_METHOD.get(
      jax.default_backend(), benchmarking._FALLBACK_TIMING_METHOD
  )


def run(
    shapes: Sequence[Shape],
    implementations: Sequence[str] = IMPLEMENTATIONS,
    *,
    reps: int = REPS,
    input_sets: int = INPUT_SETS,
    dtype=jnp.bfloat16,
) -> Iterator[Result]:
  """Benchmarks every implementation at every shape; yields results.

  Args:
    shapes: The sweep.
    implementations: Names from `IMPLEMENTATIONS` that are `supported` here
      (an unsupported one yields results with `error` set).
    reps: Timed rounds per implementation, shape and mode (after a warm-up).
    input_sets: Input sets, each timed once per round.
    dtype: Of q, k, v.

  Yields:
    A `Result` per implementation and shape; one that failed (e.g. out of
    memory) has its `error` set and no timings.
  """
  whole, whole_sets = None, []
  for shape in shapes:
    if whole != (w := dataclasses.replace(shape, shard=None, layout="natural")):
      whole, whole_sets = w, _inputs(w, dtype, input_sets)
    sets = _shard_inputs(shape, whole_sets)
    for name in implementations:
      op, kwargs = _implementation(name)
      common = dict(
          shape=str(shape),
          seq_len=shape.seq_len,
          head_dim=shape.head_dim,
          heads=shape.heads,
          mask=shape.mask,
          implementation=name,
          fwd_flop=shape.fwd_flop(),
          shards=shape.shards,
          shard=shape.shard,
          layout=shape.layout,
      )
      try:
        fwd_ms, _ = _time(op, kwargs, shape, "fwd", sets, reps)
        fwd_bwd_ms, peak = _time(op, kwargs, shape, "fwd+bwd", sets, reps)
      except Exception as e:  # pylint: disable=broad-exception-caught
        message = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        yield Result(
            **common,
            fwd_ms=None,
            fwd_bwd_ms=None,
            peak_memory_mb=None,
            memory_ratio=None,
            error=message,
        )
        continue
      yield Result(
          **common,
          fwd_ms=fwd_ms,
          fwd_bwd_ms=fwd_bwd_ms,
          peak_memory_mb=peak,
          memory_ratio=None
          if peak is None
          else peak * 1e6 / shape.io_bytes(dtype),
      )


def _ratio(
    timed: dict[str, float], numerator: str, denominators: Sequence[str]
) -> str:
  """Returns `timed[numerator]` over the least of `denominators`, or "—"."""
  times = [timed[d] for d in denominators if d in timed]
  if numerator not in timed or not times:
    return "—"
  return f"{timed[numerator] / min(times):.2f}x"


def table(results: Sequence[Result]) -> str:
  """Returns a markdown table: one row per shape, fwd+bwd ms and ratios.

  The times and ratios are of forward + backward (`Result.fwd_bwd_ms`); the
  forward's alone are in the JSON and CSV. Shards' results are left to
  `shards_table`.
  """
  by_shape: dict[str, dict[str, Result]] = {}
  for r in results:
    if r.shard is not None:
      continue
    by_shape.setdefault(r.shape, {})[r.implementation] = r
  names = [n for n in IMPLEMENTATIONS if any(n in v for v in by_shape.values())]
  ms = (
      lambda r: "—"
      if r is None or r.fwd_bwd_ms is None
      else (f"{r.fwd_bwd_ms:.2f}")
  )
  head = " | ".join(f"{n} fwd+bwd (ms)" for n in names)
  ratio_head = " | ".join(
      f"{n} / {d[0] if len(d) == 1 else 'fastest of ' + ', '.join(d)}"
      for n, d in RATIOS
  )
  lines = [
      f"| shape | {head} | {ratio_head} | ours peak mem / io |",
      "|---" * (len(names) + len(RATIOS) + 2) + "|",
  ]
  for shape, impls in by_shape.items():
    timed = {n: r.fwd_bwd_ms for n, r in impls.items() if r.fwd_bwd_ms}
    ours = impls.get("ours")
    mem = (
        "—" if not (ours and ours.memory_ratio) else f"{ours.memory_ratio:.2f}"
    )
    cells = " | ".join(ms(impls.get(n)) for n in names)
    ratios = " | ".join(_ratio(timed, n, d) for n, d in RATIOS)
    lines.append(f"| {shape} | {cells} | {ratios} | {mem} |")
  return "\n".join(lines)


def shards_table(results: Sequence[Result]) -> str:
  """Returns a markdown table of the shards' results, or "" if none.

  One row per shape, implementation and layout: the whole sequence's
  forward + backward ms, each shard's, the slowest shard's over the whole
  sequence's (ideal: `1 / shards`), and the slowest shard's peak memory over
  its `Shape.io_bytes`.
  """
  key = lambda r: (r.shape.split(" shard ")[0], r.implementation)
  whole = {key(r): r for r in results if r.shard is None}
  groups: dict[tuple[str, str, str], list[Result]] = {}
  for r in results:
    if r.shard is not None:
      groups.setdefault(key(r) + (r.layout,), []).append(r)
  if not groups:
    return ""
  ms = lambda r: "—" if r.fwd_bwd_ms is None else f"{r.fwd_bwd_ms:.2f}"
  lines = [
      "| shape | implementation | layout | whole fwd+bwd (ms) | shards'"
      " fwd+bwd (ms) | slowest shard / whole | slowest shard's peak mem /"
      " io |",
      "|---" * 7 + "|",
  ]
  for (shape, name, layout), shards in groups.items():
    shards = sorted(shards, key=lambda r: r.shard)
    w = whole.get((shape, name))
    timed = [r for r in shards if r.fwd_bwd_ms is not None]
    slowest = max(timed, key=lambda r: r.fwd_bwd_ms) if timed else None
    ratio = mem = "—"
    if slowest and len(timed) == len(shards):
      if w and w.fwd_bwd_ms:
        ratio = f"{slowest.fwd_bwd_ms / w.fwd_bwd_ms:.3f}"
      if slowest.memory_ratio:
        mem = f"{slowest.memory_ratio:.2f}"
    lines.append(
        f"| {shape} | {name} | {layout} | {ms(w) if w else '—'} |"
        f" {' / '.join(ms(r) for r in shards)} | {ratio} | {mem} |"
    )
  return "\n".join(lines)


def throughput_table(results: Sequence[Result]) -> str:
  """Returns a markdown table: forward and backward ms and TFLOP/s per result.

  The backward's time is the forward + backward median minus the forward
  median (each of its own rounds); its FLOP are `BWD_FLOP_RATIO` times the
  forward's (`Shape.fwd_flop`: over the attended pairs only, so a causal
  mask counts half the pairs of a full one).
  """
  lines = [
      "| shape | implementation | fwd (ms) | bwd (ms) | fwd TFLOP/s |"
      " bwd TFLOP/s |",
      "|---" * 6 + "|",
  ]
  tflops = lambda flop, ms: f"{flop / ms / 1e9:.1f}" if ms > 0 else "—"
  for r in results:
    if r.fwd_ms is None or r.fwd_bwd_ms is None:
      continue
    bwd_ms = r.fwd_bwd_ms - r.fwd_ms
    lines.append(
        f"| {r.shape} | {r.implementation} | {r.fwd_ms:.2f} | {bwd_ms:.2f} |"
        f" {tflops(r.fwd_flop, r.fwd_ms)} |"
        f" {tflops(BWD_FLOP_RATIO * r.fwd_flop, bwd_ms)} |"
    )
  return "\n".join(lines)


def plot(results: Sequence[Result], path: str):
  """Writes a PNG: fwd+bwd time vs T per implementation, and the cap overhead.

  One panel pair (time above, the cap's cost below) per (head_dim, heads,
  mask) group, `PLOT_COLUMNS` pairs to a row; whole sequences only.
  """
  import matplotlib  # pylint: disable=g-import-not-at-top

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top

  results = [r for r in results if r.shard is None]
  groups = sorted({(r.head_dim, r.heads, r.mask) for r in results})
  columns = min(len(groups), PLOT_COLUMNS)
  rows = -(-len(groups) // columns)
  fig, axes = plt.subplots(
      2 * rows, columns, figsize=(4 * columns, 7 * rows), squeeze=False
  )
  for i in range(len(groups), rows * columns):
    row, col = divmod(i, columns)
    axes[2 * row][col].set_visible(False)
    axes[2 * row + 1][col].set_visible(False)
  for i, (d, h, m) in enumerate(groups):
    group = [r for r in results if (r.head_dim, r.heads, r.mask) == (d, h, m)]
    row, col = divmod(i, columns)
    top, bottom = axes[2 * row][col], axes[2 * row + 1][col]
    for name in IMPLEMENTATIONS:
      points = sorted(
          (r.seq_len, r.fwd_bwd_ms)
          for r in group
          if r.implementation == name and r.fwd_bwd_ms
      )
      if points:
        top.plot(*zip(*points), marker="o", label=name)
    ours = {
        r.seq_len: r.fwd_bwd_ms for r in group if r.implementation == "ours"
    }
    nocap = {
        r.seq_len: r.fwd_bwd_ms
        for r in group
        if r.implementation == "ours-nocap"
    }
    overhead = sorted(
        (t, ours[t] / nocap[t]) for t in ours if ours[t] and nocap.get(t)
    )
    if overhead:
      bottom.plot(*zip(*overhead), marker="o", color="black")
    bottom.axhline(CAP_COST_TARGET, linestyle="--", color="gray")
    title = f"D{d} {h} {m}"
    top.set(title=title, xscale="log", yscale="log", ylabel="fwd+bwd ms")
    bottom.set(xscale="log", xlabel="T", ylabel="ours / ours-nocap")
    top.legend(fontsize=7)
  fig.tight_layout()
  fig.savefig(path, dpi=100)


def write_report(
    out: pathlib.Path,
    environment: dict[str, str],
    results: Sequence[Result],
    *,
    dry_run: bool = False,
) -> list[pathlib.Path]:
  """Writes the results as `bench.{json,csv,md,png}` into `out`.

  Args:
    out: The directory (created if missing).
    environment: Facts of the run (date, device, versions), names to values.
    results: The results, as `run` yields them.
    dry_run: Whether they are a dry run's: the markdown then opens with
      `DRY_RUN_NOTE` and has no throughput table.

  Returns:
    The paths written: JSON, CSV, the markdown table, the plot.

  Raises:
    ValueError: if `results` is empty.
  """
  if not results:
    raise ValueError("No results to write.")
  out.mkdir(parents=True, exist_ok=True)
  rows = [dataclasses.asdict(r) for r in results]
  paths = [out / f"bench.{ext}" for ext in ("json", "csv", "md", "png")]
  paths[0].write_text(
      json.dumps(dict(environment=environment, results=rows), indent=1) + "\n"
  )
  with open(paths[1], "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
  header = ", ".join(f"{k} {v}" for k, v in environment.items())
  tables = [table(results), shards_table(results)]
  if not dry_run:
    tables.append(throughput_table(results))
  markdown = "\n\n".join(
      ([DRY_RUN_NOTE] if dry_run else []) + [header] + [t for t in tables if t]
  )
  paths[2].write_text(markdown + "\n")
  plot(results, str(paths[3]))
  return paths


def benchmark(
    shapes: Sequence[Shape],
    implementations: Sequence[str],
    *,
    reps: int,
    input_sets: int,
    out: pathlib.Path,
    environment: dict[str, str],
    dry_run: bool = False,
) -> int:
  """Benchmarks: progress to stderr, the table to stdout, files to `out`.

  Args:
    shapes: The sweep.
    implementations: Of `IMPLEMENTATIONS`; those not `supported` on this
      device are skipped, with a message.
    reps: Timed rounds.
    input_sets: Input sets, each timed once per round.
    out: Directory for `write_report`.
    environment: The environment to report.
    dry_run: Whether this is a dry run (see `write_report`).

  Returns:
    The exit code: 0; 2 if nothing ran; 130 if interrupted (`SIGINT`), after
    writing the results timed until then, with `environment["interrupted"]`
    saying so.
  """
  impls = [n for n in implementations if supported(n)]
  if skipped := [n for n in implementations if n not in impls]:
    print(f"bench: not supported here, skipped: {skipped}", file=sys.stderr)
  print(
      f"bench: {len(shapes)} shapes x {impls} on {environment['device']}",
      file=sys.stderr,
  )
  results = []
  progress = tqdm.tqdm(total=len(shapes) * len(impls), file=sys.stderr)
  interrupted = False
  try:
    for result in run(shapes, impls, reps=reps, input_sets=input_sets):
      progress.set_description(f"{result.shape} {result.implementation}")
      progress.update()
      results.append(result)
  except KeyboardInterrupt:
    # E.g. `timeout -s INT`: a long sweep keeps what it has timed.
    interrupted = True
    environment = environment | {"interrupted": f"results: {len(results)}"}
  progress.close()
  if not results:
    if interrupted:
      print("bench: interrupted before any result.", file=sys.stderr)
      return 130
    print("bench: nothing to run.", file=sys.stderr)
    return 2
  paths = write_report(out, environment, results, dry_run=dry_run)
  print(paths[2].read_text())
  print(f"wrote {', '.join(map(str, paths))}", file=sys.stderr)
  if interrupted:
    print(
        f"bench: interrupted; the report holds the {len(results)} results"
        " timed before.",
        file=sys.stderr,
    )
    return 130
  return 0


def add_arguments(parser: argparse.ArgumentParser):
  """Declares `main`'s arguments as the command line's options."""
  parser.add_argument(
      "--seq-lens",
      type=cli_types.integers,
      default=",".join(map(str, SEQ_LENS)),
      help=f"sequence lengths T (batch: max(1, {TOKENS_PER_CALL} // T))",
  )
  parser.add_argument(
      "--head-dims",
      type=cli_types.integers,
      default=",".join(map(str, HEAD_DIMS)),
      help="head dims D",
  )
  layouts = ", ".join(f"{k} {q}/{kv}" for k, (q, kv) in HEADS.items())
  parser.add_argument(
      "--heads",
      **cli_types.comma_separated(HEADS, DEFAULT_HEADS),
      help=f"query/kv head layouts ({layouts})",
  )
  parser.add_argument(
      "--masks",
      **cli_types.comma_separated(MASKS, DEFAULT_MASKS),
      help=f"masks, of {','.join(MASKS)}",
  )
  parser.add_argument(
      "--shards",
      type=int,
      default=1,
      help="also time each shard of the query sequence cut into this many"
      " (its queries, with their positions, against all keys)",
  )
  parser.add_argument(
      "--layouts",
      **cli_types.comma_separated(LAYOUTS, LAYOUTS),
      help=f"with --shards: how the sequence is cut, of {','.join(LAYOUTS)}",
  )
  parser.add_argument(
      "--impls",
      **cli_types.comma_separated(IMPLEMENTATIONS),
      help="implementations (those the device lacks are skipped, with a"
      " message)",
  )
  parser.add_argument(
      "--reps",
      type=int,
      default=REPS,
      help=f"timed rounds (>= {MIN_REPS})",
  )
  parser.add_argument(
      "--input-sets",
      type=int,
      default=INPUT_SETS,
      help="input sets, each timed once per round",
  )
  parser.add_argument(
      "--out",
      default="bench",
      help="output directory, for bench.{json,csv,md,png}",
  )
  parser.add_argument(
      "--dry-run",
      action="store_true",
      help=f"tiny shapes of its own and {DRY_RUN_REPS} rounds (the sweep's"
      " options and --reps are ignored), every implementation the device"
      " has but Mosaic GPU (on a CPU: in the Pallas interpreter); numbers"
      " meaningless",
  )


def main(
    *,
    seq_lens: Sequence[int] = SEQ_LENS,
    head_dims: Sequence[int] = HEAD_DIMS,
    heads: Sequence[str] = DEFAULT_HEADS,
    masks: Sequence[str] = DEFAULT_MASKS,
    shards: int = 1,
    layouts: Sequence[str] = LAYOUTS,
    impls: Sequence[str] = IMPLEMENTATIONS,
    reps: int = REPS,
    input_sets: int = INPUT_SETS,
    out: pathlib.Path | str = "bench",
    dry_run: bool = False,
) -> int:
  """Runs `python -m tokamax_softcap bench`.

  Args:
    seq_lens: Sequence lengths of the sweep (see `sweep`).
    head_dims: Head dims of the sweep.
    heads: Keys of `HEADS`.
    masks: Of `MASKS`.
    shards: With more than 1, each shape's shards are timed too (`sweep`).
    layouts: Of `LAYOUTS`, with `shards > 1`.
    impls: Of `IMPLEMENTATIONS` (see `benchmark`).
    reps: Timed rounds, at least `MIN_REPS`.
    input_sets: Input sets, each timed once per round.
    out: Directory for `write_report`.
    dry_run: Instead of the sweep, `dry_run_shapes` with `DRY_RUN_REPS`
      rounds and without Mosaic GPU (on a CPU: in the Pallas interpreter);
      the numbers mean nothing, the code paths are exercised.

  Returns:
    The exit code: 0; 2 if nothing ran, if `reps < MIN_REPS`, if a
    sequence length cannot be cut into `shards` (`2 * shards` for the zigzag
    layout), or without a GPU unless `dry_run` (interpreted timings mean
    nothing); 130 if interrupted (see `benchmark`).
  """
  if interpret.is_needed() and not dry_run:
    print(
        "bench: no GPU, and timings of the CPU interpreter mean nothing."
        " Use --dry-run to exercise the benchmark at tiny sizes.",
        file=sys.stderr,
    )
    return 2
  if shards < 1:
    print(f"bench: --shards must be positive; got {shards}.", file=sys.stderr)
    return 2
  if shards == 1 and tuple(layouts) != LAYOUTS:
    print(
        "bench: --layouts applies with --shards > 1; ignored.", file=sys.stderr
    )
  if dry_run:
    sweep_options = dict(
        seq_lens=(seq_lens, SEQ_LENS),
        head_dims=(head_dims, HEAD_DIMS),
        heads=(heads, DEFAULT_HEADS),
        masks=(masks, DEFAULT_MASKS),
        reps=((reps,), (REPS,)),
    )
    # It exercises this package's code; Mosaic GPU's kernels are left out.
    shapes, reps = dry_run_shapes(shards, layouts), DRY_RUN_REPS
    impls = [n for n in impls if n not in GPU_ONLY_IMPLEMENTATIONS]
    print(f"bench: {DRY_RUN_NOTE}", file=sys.stderr)
    if ignored := [
        f"--{k.replace('_', '-')}"
        for k, (v, default) in sweep_options.items()
        if tuple(v) != tuple(default)
    ]:
      print(
          f"bench: --dry-run times its own tiny shapes ({len(shapes)});"
          f" {', '.join(ignored)} ignored.",
          file=sys.stderr,
      )
  elif reps < MIN_REPS:
    print(f"bench: --reps must be at least {MIN_REPS}.", file=sys.stderr)
    return 2
  else:
    shapes = sweep(seq_lens, head_dims, heads, masks, shards, layouts)
  try:
    for shape in shapes:
      shape.positions()
  except ValueError as e:
    print(f"bench: --shards {shards}: {e}", file=sys.stderr)
    return 2
  with interpret.if_needed():
    return benchmark(
        shapes,
        impls,
        reps=reps,
        input_sets=input_sets,
        out=pathlib.Path(out),
        environment=harness.environment() | {"timing": timing_method()},
        dry_run=dry_run,
    )
