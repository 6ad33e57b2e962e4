"""`bench`'s plumbing (its numbers need a GPU: README, "Benchmarks")."""

import json

import jax.numpy as jnp
import pytest
from tokamax._src.ops.attention import base
from tokamax_softcap import bench
from tokamax_softcap import cli
from tokamax_softcap import interpret


def test_dry_run_writes_every_output(tmp_path):
  assert (
      cli.main(
          ["bench", "--dry-run", "--input-sets", "2", "--out", str(tmp_path)]
      )
      == 0
  )
  report = json.loads((tmp_path / "bench.json").read_text())
  results = report["results"]
  assert {r["implementation"] for r in results} == set(
      bench.IMPLEMENTATIONS
  ) - {"mosaic"}
  for r in results:
    assert r["error"] is None, r
    assert r["fwd_ms"] > 0 and r["fwd_bwd_ms"] > 0 and r["peak_memory_mb"] > 0
  assert {r["mask"] for r in results} == {"causal", "docs-4"}
  assert "ours / ours-nocap" in (tmp_path / "bench.md").read_text()
  assert (tmp_path / "bench.csv").read_text().count("\n") == len(results) + 1
  assert (tmp_path / "bench.png").read_bytes()[:4] == b"\x89PNG"


def test_refuses_to_time_without_gpu(tmp_path):
  if not interpret.is_needed():
    pytest.skip("The refusal applies without a GPU.")
  assert cli.main(["bench", "--out", str(tmp_path)]) == 2


def test_full_sweep_and_io_bytes():
  shapes = bench.sweep()
  assert len(shapes) == 6 * 3 * 2 * 2  # Causal and full by default.
  assert {s.batch_size * s.seq_len for s in shapes} == {
      bench.TOKENS_PER_CALL,
      32768,
  }
  shape = bench.Shape(
      seq_len=1024, head_dim=64, heads="gqa", mask="causal", batch=1
  )
  # q, out, dout, dq: 8 heads; k, v, dk, dv: 4 heads; bf16.
  assert shape.io_bytes() == 1024 * 64 * (4 * 8 + 4 * 4) * 2


@pytest.mark.parametrize("name", bench.MASKS)
def test_mask_is_the_one_named(name):
  t = 8192
  shape = bench.Shape(seq_len=t, head_dim=64, heads="gqa", mask=name)
  kwargs = shape.mask_kwargs()
  mask = kwargs.get("mask", base.Mask())
  if isinstance(mask, base.CausalMask):
    mask = base.Mask(causal_mask=mask)
  if kwargs.get("is_causal"):
    mask &= base.CausalMask()
  q, k = jnp.arange(t)[:, None], jnp.arange(t)[None, :]
  expected = {
      "full": None,
      "causal": q >= k,
      "window-1024": (q >= k) & (q - k < 1024),
      "window-4096": (q >= k) & (q - k < 4096),
      "docs-4": (q >= k) & (q // 2048 == k // 2048),
  }[name]
  actual = mask.as_array(t, t)
  if expected is None:
    assert actual is None
  else:
    assert jnp.array_equal(actual[0], expected)
