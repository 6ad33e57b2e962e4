"""Patch 0025's bound for every config XLA compiled on the H200, on a CPU.

Usage: python -P bounds.py > ../bounds.txt
The configs of this record's `run/sweep.jsonl` (bf16 forwards at head_dim
512, B2 T8192 H8/4, causal; the last element of a config is `block_d`, and
`block_d_out` the same) and of the earlier H200 compile grids (B1 T2048
H8/4, bf16 and f32 with TF32 dots, causal unless a row says not), each
traced with the device taken for an sm90 GPU, the bound recorded where the
op calls `check_shared_memory` (none: not checked), beside the H200's
outcome. A config the bound rejects must have failed, asking for at least the
bound ("dv kernel" where XLA named the smaller dv kernel of patch 0026);
"missed" marks a failure the bound lets through.
"""
import importlib.util, json, pathlib, re
from unittest import mock
import jax, jax.numpy as jnp

_RESULTS = pathlib.Path(__file__).parents[2]
_SPEC = importlib.util.spec_from_file_location(
    "grid", _RESULTS / "h200-2026-12-02-smem-bound/scripts/compile_grid.py")
grid = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(grid)  # Replaces the check with its recorder.
import tokamax_softcap  # pylint: disable=g-import-not-at-top

H200 = 232_448
PRECISION = {"bfloat16": jax.lax.Precision.DEFAULT,
             "float32": jax.lax.DotAlgorithmPreset.TF32_TF32_F32}
GRIDS = ("h200-2026-12-02-smem-bound/compile-grid.jsonl",
         "h200-2026-12-03-smem-vjp/compile-grid.jsonl",
         "h200-2026-12-03-tf32-mma/run1/compile-grid.jsonl",
         "h200-2026-12-03-tf32-mma/run3/compile-grid.jsonl")


def bound_of(kind, dtype, head_dim, blocks, seq_len, causal):
  """The bound traced for `kind`'s kernel, or None where none is checked."""
  if kind == "forward" and len(blocks) == 5:
    *blocks, block_d = blocks
    op = tokamax_softcap.PallasTritonFlashAttention(config=tokamax_softcap.Config(
        block_q=blocks[0], block_k=blocks[1], num_warps=blocks[2],
        num_stages=blocks[3], block_d=block_d, block_d_out=block_d))
  else:
    op = grid.op_for(kind, tuple(blocks))
  q = jax.ShapeDtypeStruct((1, seq_len, 8, head_dim), jnp.dtype(dtype))
  k = jax.ShapeDtypeStruct((1, seq_len, 4, head_dim), jnp.dtype(dtype))
  loss = lambda q, k, v: op(q, k, v, is_causal=causal, logits_soft_cap=50.0,
                            precision=PRECISION[dtype]).astype(
                                jnp.float32).sum()
  device = mock.Mock(platform="gpu", compute_capability="9.0",
                     device_kind="9.0")
  del grid.NEEDED[:]
  with mock.patch.object(grid.V.backend, "get_default_device",
                         return_value=device):
    jax.eval_shape(jax.grad(loss, argnums=(0, 1, 2)), q, k, k)
  bounds = [n for c, n in grid.NEEDED
            if hasattr(c, "block_m1") == (kind == "vjp")]
  return bounds[0] if bounds else None


def rows():
  for line in open(_RESULTS / "h200-2026-12-03-d512-fwd/run/sweep.jsonl"):
    r = json.loads(line)
    if "fwd" not in r or r["fwd"] is None or r["mask"] != "causal":
      continue
    m = re.search(r"requested (\d+)", r.get("error", ""))
    yield dict(kernel="forward", dtype="bfloat16", head_dim=512,
               config=r["fwd"], seq_len=8192, causal=True,
               compiled="ms" in r, requested=int(m[1]) if m else None,
               value_error="needs at least" in r.get("error", ""))
  for g in GRIDS:
    for line in open(_RESULTS / g):
      r = json.loads(line)
      yield dict(r, seq_len=2048, causal=r.get("causal", True))


def main():
  counts = {}
  for r in rows():
    bound = bound_of(r["kernel"], r["dtype"], r["head_dim"], r["config"],
                     r["seq_len"], r["causal"])
    requested = r.get("requested")
    if r["compiled"]:
      verdict = "OK" if (bound or 0) <= H200 else "WRONG: rejects it"
    elif bound is None or bound <= H200:
      verdict = "missed"
    elif requested is None:
      verdict = "OK"  # The earlier form raised ValueError on the H200.
    else:
      verdict = "OK" if requested >= bound else "dv kernel"
    counts[verdict] = counts.get(verdict, 0) + 1
    print(f"{r['kernel']:7} {r['dtype']:8} {r['head_dim']} T{r['seq_len']}"
          f" {'causal' if r['causal'] else 'full  '} {str(r['config']):28}"
          f" bound {bound} compiled {str(r['compiled']):5} requested"
          f" {requested}: {verdict}")
  print(counts)


if __name__ == "__main__":
  main()
