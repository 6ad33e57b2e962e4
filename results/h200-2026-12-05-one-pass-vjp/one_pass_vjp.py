"""A one-pass soft-capped attention VJP for sm90 in Mosaic GPU (a spike).

Each CTA owns `compute_wgs * block_kv` keys of one kv head and loops over the
query blocks (and the query heads of the kv head, GQA) that attend to them.
Each compute warpgroup computes, per (query block, key block), the logits
once, transposed as FlashAttention-2's dk/dv loop does (Dao 2023,
arXiv:2307.08691, Algorithm 2):

  S^T = K Q^T,  P^T = exp2(s log2(e) - lse2),  dV += P^T dO,
  dP^T = V dO^T,  dS^T = P^T (dP^T - delta) (1 - tanh^2),  dK += dS^T Q,
  dQ_part = dS K,

five tile dots, and adds `dQ_part` into an f32 `dq` in global memory with a
TMA store that reduces (`copy_smem_to_gmem(..., reduction_op=reduction)`), as
FlashAttention-3 does (Shah et al. 2024, arXiv:2407.08608, section 3.3).
`dq`'s order of addition is the CTAs' order: not deterministic.

Scope of the spike: bf16 q/k/v, head_dim a multiple of 64 up to 256, a
causal or no mask, no bias, sequence lengths multiples of the blocks.

Variants (`Variant`) are the levers measured in the record's README.
"""

import dataclasses
import math
import re

import jax
from jax import lax
from jax.experimental import pallas as pl
import jax.experimental.pallas.mosaic_gpu as plgpu
import jax.numpy as jnp
from tokamax._src import mosaic_gpu as mgpu_lib
from tokamax._src.ops.attention import base
from tokamax._src.ops.attention import pallas_mosaic_gpu_common as common

_WGMMA = plgpu.Layout.WGMMA
_WGMMA_COL = plgpu.Layout.WGMMA.reduce(0)
_LOG2E = math.log2(math.e)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Variant:
  """One point of the spike's design space.

  Attributes:
    block_q: Query rows per pipeline step.
    block_kv: Key rows per compute warpgroup.
    compute_wgs: Compute warpgroups per CTA.
    num_stages: Pipeline stages of q, dout, lse and delta.
    memory_registers: Registers a thread of the memory warpgroup keeps.
    fold_cap: Fold the cap's derivative `1 - t^2` into `p` before the dP dot
      (so `t` is dead during it) instead of multiplying `ds` after it.
    a_from_smem: Store P^T and dS^T to shared memory and feed the dV and dK
      dots from there, not from registers (Mosaic GPU's interpreter takes
      only shared-memory operands).
    shared_dq: The compute warpgroups share dS^T through shared memory
      (double-buffered, one barrier per step) and each computes and adds
      `head_dim / compute_wgs` columns of dq over all the CTA's keys, as
      FlashAttention-3 does: half the f32 stores and reduce-add bytes.
    probe: "" (the VJP), or "nocap" (the same kernel without the cap, to
      price the cap), or "nodq" (no dq dot or store: the dk/dv pass alone),
      or "nodqadd" (the dq dot and its f32 store to shared memory, no
      reduce-add to global memory: prices the TMA reduce). Probes are wrong
      by design and only timed.
  """

  block_q: int = 64
  block_kv: int = 64
  compute_wgs: int = 2
  num_stages: int = 2
  memory_registers: int = 40
  fold_cap: bool = False
  a_from_smem: bool = False
  shared_dq: bool = False
  probe: str = ""

  def name(self) -> str:
    fields = dataclasses.fields(self)
    default = Variant()
    parts = [
        f"{f.name}={getattr(self, f.name)}"
        for f in fields
        if getattr(self, f.name) != getattr(default, f.name)
    ]
    return ",".join(parts) or "base"


def one_pass_vjp(
    q: jax.Array,  # [B, T, H, D] bf16
    k: jax.Array,  # [B, t, h, D] bf16
    v: jax.Array,  # [B, t, h, D] bf16
    lse2: jax.Array,  # [B, H, T] f32: the rows' log-sum-exp, base 2.
    delta: jax.Array,  # [B, H, T] f32: rowsum(out * dout).
    dout: jax.Array,  # [B, T, H, D] bf16
    *,
    logits_scale: float,
    logits_soft_cap: float | None,
    is_causal: bool,
    window_size: int | None = None,
    variant: Variant = Variant(),
    interpret: bool = False,
) -> tuple[jax.Array, jax.Array, jax.Array]:
  """Returns `(dq, dk, dv)` in q's dtype (dq accumulated in f32).

  With `window_size` (causal only), query `i` attends to keys `j` with
  `i - window_size < j <= i` (tokamax's `CausalMask(window_size=...)`), and
  each CTA visits only the query blocks its keys' windows reach.
  """
  if window_size is not None and not is_causal:
    raise ValueError("`window_size` needs `is_causal=True`.")
  batch, seq_q, num_q_heads, head_dim = q.shape
  _, seq_kv, num_kv_heads, _ = k.shape
  group = num_q_heads // num_kv_heads
  block_q, block_kv = variant.block_q, variant.block_kv
  wgs = variant.compute_wgs
  tile_kv = wgs * block_kv
  if seq_q % block_q or seq_kv % tile_kv or head_dim % 64 or head_dim > 256:
    raise ValueError(f"Unsupported shapes {q.shape=} {k.shape=}.")
  if variant.probe == "nocap":
    logits_soft_cap = None
  dtype = q.dtype
  num_q_blocks = seq_q // block_q
  shared = variant.shared_dq
  dq_cols = head_dim // wgs if shared else head_dim

  def kernel(
      q_gmem, k_gmem, v_gmem, dout_gmem, lse_gmem, delta_gmem,
      dq_gmem, dk_gmem, dv_gmem,
      k_smems, v_smems, ds_smems, dq_smems, p_smems, barriers, ds_ready,
  ):  # pyformat: disable
    bi = lax.axis_index("batch")
    hk = lax.axis_index("heads")
    ki = lax.axis_index("kv_tiles")
    wg = lax.axis_index("wg")
    kv_base = ki * tile_kv + wg * block_kv
    ks = pl.ds(kv_base, block_kv)
    lb = lax.div(ki * tile_kv, block_q) if is_causal else 0
    ub = num_q_blocks
    if window_size is not None:  # The last query the tile's keys reach.
      last_q = ki * tile_kv + tile_kv - 2 + window_size
      ub = jnp.minimum(num_q_blocks, lax.div(last_q, block_q) + 1)
    k_smem, v_smem = k_smems.at[wg], v_smems.at[wg]
    dq_smem = dq_smems.at[wg]
    p_smem = None if p_smems is None else p_smems.at[wg]
    barrier = barriers.at[wg]
    # Mosaic GPU's interpreter has no reducing TMA store: there, each key
    # block writes its own dq part, summed after the kernel.
    if interpret:
      dq_b = dq_gmem.at[bi, ki] if shared else dq_gmem.at[bi, ki * wgs + wg]
    else:
      dq_b = dq_gmem.at[bi]
    reduction = None if interpret else "add"

    def compute_thread(pipeline_callback):
      plgpu.copy_gmem_to_smem(k_gmem.at[bi, ks, hk], k_smem, barrier)
      plgpu.copy_gmem_to_smem(v_gmem.at[bi, ks, hk], v_smem, barrier)
      plgpu.barrier_wait(barrier)

      def compute_dk_dv(dk_acc, dv_acc):
        _ = pipeline_callback((dk_acc, dv_acc))
        return dk_acc[...], dv_acc[...]

      acc = plgpu.ACC((block_kv, head_dim), jnp.float32)
      dk, dv = pl.run_scoped(compute_dk_dv, acc, acc)
      plgpu.wait_smem_to_gmem(0, wait_read_only=True)
      k_smem[...] = (dk * logits_scale).astype(dtype)
      v_smem[...] = dv.astype(dtype)
      plgpu.commit_smem()
      plgpu.copy_smem_to_gmem(k_smem, dk_gmem.at[bi, ks, hk], commit_group=False)
      plgpu.copy_smem_to_gmem(v_smem, dv_gmem.at[bi, ks, hk], commit_group=False)
      plgpu.commit_smem_to_gmem_group()
      plgpu.wait_smem_to_gmem(0)

    def step(
        index, q_smem, dout_smem, lse_smem, delta_smem,
        q_consumed, dout_consumed, lse_consumed, delta_consumed, carry,
    ):  # pyformat: disable
      i, j = index
      q_base = (lb + i) * block_q
      slot = lax.rem(i * group + j, 2) if shared else 0
      ds_smem = ds_smems.at[slot, wg]
      hi = hk * group + j
      dk_acc, dv_acc = carry

      def compute_s(acc):
        plgpu.wgmma(acc, k_smem, q_smem.T)
        lse = plgpu.load(lse_smem, layout=_WGMMA_COL)
        delta = plgpu.load(delta_smem, layout=_WGMMA_COL)
        plgpu.barrier_arrive(lse_consumed)
        plgpu.barrier_arrive(delta_consumed)
        return acc[...], lse, delta

      tile = plgpu.ACC((block_kv, block_q), jnp.float32)
      s, lse, delta = pl.run_scoped(compute_s, tile)
      bcast = lambda x: lax.broadcast_in_dim(x, s.shape, [1])
      if logits_soft_cap is None:
        x = s * (logits_scale * _LOG2E)
      else:
        t = jnp.tanh(s * (logits_scale / logits_soft_cap))
        x = t * (logits_soft_cap * _LOG2E)

      if is_causal:

        def apply_causal_mask():
          iota = lambda d: plgpu.broadcasted_iota(
              jnp.int32, s.shape, d, layout=_WGMMA
          )
          k_pos, q_pos = kv_base + iota(0), q_base + iota(1)
          keep = k_pos <= q_pos
          if window_size is not None:
            keep &= k_pos > q_pos - window_size
          return jnp.where(keep, x, -jnp.inf)

        straddles = kv_base + block_kv > q_base
        if window_size is not None:
          straddles |= q_base + block_q - 1 - kv_base >= window_size
        x = lax.cond(straddles, apply_causal_mask, lambda: x)
      p = jnp.exp2(x - bcast(lse))
      p16 = p.astype(dtype)
      if p_smem is not None:
        p_smem[...] = p16
        plgpu.commit_smem()
        p16 = p_smem
      if logits_soft_cap is not None and variant.fold_cap:
        p = p * (1.0 - t * t)

      def compute_dp(acc):
        plgpu.wgmma(acc, v_smem, dout_smem.T)
        plgpu.wgmma(dv_acc, p16, dout_smem)
        return plgpu.wgmma_accumulator_load(acc, wait_n=1)

      dp = pl.run_scoped(compute_dp, tile)
      ds = p * (dp - bcast(delta))
      if logits_soft_cap is not None and not variant.fold_cap:
        ds = ds * (1.0 - t * t)
      ds16 = ds.astype(dtype)
      if variant.probe != "nodq" or p_smem is not None:
        ds_smem[...] = ds16
        plgpu.commit_smem()
      if shared and variant.probe != "nodq":
        plgpu.barrier_arrive(ds_ready)  # Every warpgroup's dS^T is stored.
        plgpu.barrier_wait(ds_ready)
      plgpu.wgmma(dk_acc, ds16 if p_smem is None else ds_smem, q_smem)
      if variant.probe != "nodq":

        def compute_dq(acc):
          if shared:
            cols = pl.ds(wg * dq_cols, dq_cols)
            for u in range(wgs):
              plgpu.wgmma(acc, ds_smems.at[slot, u].T, k_smems.at[u, :, cols])
          else:
            plgpu.wgmma(acc, ds_smem.T, k_smem)
          plgpu.wgmma_wait(1)  # The dk dot and those before it are done.
          plgpu.barrier_arrive(dout_consumed)
          plgpu.barrier_arrive(q_consumed)
          return acc[...]

        dq = pl.run_scoped(
            compute_dq, plgpu.ACC((block_q, dq_cols), jnp.float32)
        )
        plgpu.wait_smem_to_gmem(0, wait_read_only=True)
        dq_smem[...] = dq * logits_scale
        plgpu.commit_smem()
        dq_dst = dq_b.at[pl.ds(q_base, block_q), hi]
        if shared:
          dq_dst = dq_dst.at[:, pl.ds(wg * dq_cols, dq_cols)]
        if variant.probe != "nodqadd":
          plgpu.copy_smem_to_gmem(dq_smem, dq_dst, reduction_op=reduction)
      else:
        plgpu.wgmma_wait(0)
        plgpu.barrier_arrive(dout_consumed)
        plgpu.barrier_arrive(q_consumed)
      return dk_acc, dv_acc

    def index_map(index_fn):
      return lambda i, j: index_fn(lb + i, hk * group + j)

    def tiled(shape, what, index_fn):
      return mgpu_lib.tiled_swizzled_block_spec(
          shape, dtype, index_map(index_fn), what
      )

    q_spec = tiled((block_q, None, head_dim), "q", lambda i, h: (i, h, 0))
    dout_spec = tiled((block_q, None, head_dim), "dout", lambda i, h: (i, h, 0))
    row_spec = plgpu.BlockSpec((None, block_q), index_map(lambda i, h: (h, i)))
    plgpu.emit_pipeline_warp_specialized(
        step,
        grid=(ub - lb, group),
        max_concurrent_steps=min(variant.num_stages, num_q_blocks),
        num_compute_wgs=wgs,
        memory_registers=variant.memory_registers,
        wg_axis="wg",
        manual_consumed_barriers=True,
        compute_context=compute_thread,
        in_specs=[q_spec, dout_spec, row_spec, row_spec],
    )(q_gmem.at[bi], dout_gmem.at[bi], lse_gmem.at[bi], delta_gmem.at[bi])

  def smem(shape, dt, what):
    return mgpu_lib.tiled_swizzled_smem((wgs, *shape), dt, what)

  num_parts = seq_kv // (tile_kv if shared else block_kv)
  dq_shape = q.shape if not interpret else (batch, num_parts, *q.shape[1:])
  dq_ref = jax.new_ref(jnp.zeros(dq_shape, jnp.float32))

  def kernel_with_dq(*refs):
    ins, outs = refs[:6], refs[6:]
    kernel(*ins, dq_ref, *outs)

  dk, dv = plgpu.kernel(
      kernel_with_dq,
      out_type=(
          jax.ShapeDtypeStruct(k.shape, dtype),
          jax.ShapeDtypeStruct(v.shape, dtype),
      ),
      scratch_types=[
          smem((block_kv, head_dim), dtype, "k"),
          smem((block_kv, head_dim), dtype, "v"),
          mgpu_lib.tiled_swizzled_smem(
              (2 if shared else 1, wgs, block_kv, block_q), dtype, "ds"
          ),
          smem((block_q, dq_cols), jnp.float32, "dq"),
          smem((block_kv, block_q), dtype, "p") if variant.a_from_smem else None,
          plgpu.Barrier(num_barriers=wgs, num_arrivals=2),
          plgpu.Barrier(num_arrivals=wgs) if shared else None,
      ],
      compiler_params=plgpu.CompilerParams(approx_math=True),
      grid=(batch, num_kv_heads, seq_kv // tile_kv),
      grid_names=("batch", "heads", "kv_tiles"),
      num_threads=wgs + 1,
      thread_name="wg",
      kernel_name="one_pass_vjp_" + re.sub(r"\W", "_", variant.name()),
      interpret=plgpu.InterpretGPUParams() if interpret else None,
  )(q, k, v, dout, lse2, delta)
  dq = dq_ref[...] if not interpret else dq_ref[...].sum(1)
  return dq.astype(dtype), dk, dv


def residuals_to_lse2(m: jax.Array, l: jax.Array) -> jax.Array:
  """Returns the rows' base-2 log-sum-exp from tokamax's `(m, l)` residuals.

  Rows with no key (`l = 0`) get `+inf`, so their weights are 0.
  """
  lse2 = m * _LOG2E + jnp.log2(l)
  return jnp.where(l > 0, lse2, jnp.inf)


@dataclasses.dataclass(frozen=True)
class OnePassVjp:
  """A VJP for tokamax's attention ops' `vjp` field: the one-pass kernel.

  `PallasMosaicGpuFlashAttention(vjp=OnePassVjp())` runs Mosaic GPU's
  forward and this VJP; its residuals `(m, l)` are per query row, `m` in
  natural-log units, `l = sum(exp(s - m))`.
  """

  variant: Variant = Variant()

  def __call__(self, residuals, out, dout, q, k, v, *, logits_scale, bias,
               logits_soft_cap, mask, q_indices, k_indices, **unused):  # pyformat: disable
    del unused
    window_size = None
    causal = mask.causal_mask
    others = (mask.bool_mask, mask.q_start, mask.q_end, mask.k_start, mask.k_end)
    if (causal is not None and causal.window_size is not None
        and q_indices is None and all(x is None for x in others)):  # pyformat: disable
      # A causal window, kept static (`decompose_mask` makes it key ranges).
      if not isinstance(causal.offset, int) or causal.offset:
        raise NotImplementedError("The spike takes no causal offset.")
      window_size = causal.window_size
      mask, is_causal, k_start, k_end = None, True, None, None
    else:
      mask, is_causal, k_start, k_end = common.decompose_mask(
          mask, q, k, q_indices, k_indices
      )
    if any(x is not None for x in (bias, mask, k_start, k_end)):
      raise NotImplementedError("The spike takes a causal or no mask, no bias.")
    m, l = residuals
    delta = jnp.einsum(
        "bqhd,bqhd->bhq", out, dout, preferred_element_type=jnp.float32
    )
    dq, dk, dv = one_pass_vjp(
        q, k, v, residuals_to_lse2(m, l), delta, dout.astype(q.dtype),
        logits_scale=logits_scale, logits_soft_cap=logits_soft_cap,
        is_causal=is_causal, window_size=window_size, variant=self.variant,
    )  # pyformat: disable
    return base.DotProductAttentionGrads(q=dq, k=dk, v=dv, bias=None)
