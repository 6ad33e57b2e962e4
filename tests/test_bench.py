"""`bench`'s plumbing (its numbers need a GPU: README, "Benchmarks")."""

import json

import pytest
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
  assert "ours / ours-nocap" in (tmp_path / "bench.md").read_text()
  assert (tmp_path / "bench.csv").read_text().count("\n") == len(results) + 1
  assert (tmp_path / "bench.png").read_bytes()[:4] == b"\x89PNG"


def test_refuses_to_time_without_gpu(tmp_path):
  if not interpret.is_needed():
    pytest.skip("The refusal applies without a GPU.")
  assert cli.main(["bench", "--out", str(tmp_path)]) == 2


def test_full_sweep_and_io_bytes():
  shapes = bench.sweep()
  assert len(shapes) == 6 * 3 * 2 * 2
  assert {s.batch_size * s.seq_len for s in shapes} == {
      bench.TOKENS_PER_CALL,
      32768,
  }
  shape = bench.Shape(
      seq_len=1024, head_dim=64, heads="gqa", causal=True, batch=1
  )
  # q, out, dout, dq: 8 heads; k, v, dk, dv: 4 heads; bf16.
  assert shape.io_bytes() == 1024 * 64 * (4 * 8 + 4 * 4) * 2
