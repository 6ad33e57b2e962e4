"""`bench`'s plumbing (its numbers need a GPU: docs/gpu.md, "`bench`")."""

import csv
import dataclasses
import json
import re
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tokamax._src.ops.attention import base
from tokamax_softcap import bench
from tokamax_softcap import cli
from tokamax_softcap import interpret


def _result(shape: bench.Shape, **fields) -> bench.Result:
  """Returns a `bench.Result` at `shape`, its fields from `shape` and `fields`."""
  return bench.Result(
      shape=str(shape),
      seq_len=shape.seq_len,
      head_dim=shape.head_dim,
      heads=shape.heads,
      mask=shape.mask,
      fwd_flop=shape.fwd_flop(),
      shards=shape.shards,
      shard=shape.shard,
      layout=shape.layout,
      **fields,
  )


@pytest.fixture
def compiled_anew():
  """No persistent compilation cache: XLA's memory analysis reads 0 on a load."""
  enabled = jax.config.jax_enable_compilation_cache
  jax.config.update("jax_enable_compilation_cache", False)
  yield
  jax.config.update("jax_enable_compilation_cache", enabled)


@pytest.mark.usefixtures("compiled_anew")
def test_dry_run_writes_every_output(tmp_path, capsys):
  # The sweep's options do not apply to the dry run's tiny shapes: it says so.
  argv = ["bench", "--dry-run", "--input-sets", "2", "--out", str(tmp_path)]
  assert cli.main(argv + ["--seq-lens", "2048", "--heads", "mha"]) == 0
  err = capsys.readouterr().err
  assert "--seq-lens, --heads ignored" in err
  assert bench.DRY_RUN_NOTE in err
  report = json.loads((tmp_path / "bench.json").read_text())
  assert report["environment"]["timing"] == (
      "wallclock" if interpret.is_needed() else "cupti"
  )
  results = report["results"]
  assert {r["implementation"] for r in results} == set(
      bench.IMPLEMENTATIONS
  ) - set(bench.GPU_ONLY_IMPLEMENTATIONS)
  for r in results:
    assert r["error"] is None, r
    assert r["fwd_ms"] > 0 and r["fwd_bwd_ms"] > 0 and r["peak_memory_mb"] > 0
  assert {r["mask"] for r in results} == {"causal", "docs-4"}
  markdown = (tmp_path / "bench.md").read_text()
  assert markdown.startswith(bench.DRY_RUN_NOTE)
  assert "ours / ours-nocap" in markdown and "TFLOP/s |" not in markdown
  assert (tmp_path / "bench.csv").read_text().count("\n") == len(results) + 1
  assert (tmp_path / "bench.png").read_bytes()[:4] == b"\x89PNG"


def test_write_report_writes_every_format(tmp_path):
  shape = bench.Shape(seq_len=1024, head_dim=64, heads="gqa", mask="causal")
  results = [
      _result(
          shape,
          implementation=name,
          fwd_ms=1.0,
          fwd_bwd_ms=ms,
          peak_memory_mb=10.0,
          memory_ratio=ratio,
      )
      for name, ms, ratio in (("ours", 3.0, 2.0), ("ours-nocap", 2.0, 1.8))
  ]
  results.append(
      _result(
          shape,
          implementation="xla",
          fwd_ms=None,
          fwd_bwd_ms=None,
          peak_memory_mb=None,
          memory_ratio=None,
          error="out of memory",
      )
  )
  environment = dict(date="2026-12-01", device="NVIDIA H200")
  out = tmp_path / "new"  # Created.
  paths = bench.write_report(out, environment, results)
  names = ["bench.json", "bench.csv", "bench.md", "bench.png"]
  assert paths == [out / name for name in names]
  assert json.loads(paths[0].read_text()) == dict(
      environment=environment,
      results=[dataclasses.asdict(r) for r in results],
  )
  with open(paths[1], newline="") as f:
    rows = list(csv.DictReader(f))
  assert [r["implementation"] for r in rows] == ["ours", "ours-nocap", "xla"]
  assert rows[2]["error"] == "out of memory" and rows[2]["fwd_bwd_ms"] == ""
  table = paths[2].read_text().splitlines()
  assert table[0] == "date 2026-12-01, device NVIDIA H200"
  assert table[2].startswith(
      "| shape | ours fwd+bwd (ms) | ours-nocap fwd+bwd (ms) |"
      " xla fwd+bwd (ms) |"
  )
  # ours / ours-nocap 1.5x; no ours-stable, ours-highest, mosaic, default
  # or cudnn-nocap; xla failed; ours' memory ratio.
  assert table[4] == (
      f"| {shape} | 3.00 | 2.00 | — | 1.50x | — | — | — | — | — | — | 2.00 |"
  )
  # Throughput: B16 T1024 H8/4 D64 causal, 1024 * 1025 / 2 attended pairs,
  # 4 * 16 * 8 * 524800 * 64 = 1.72e10 FLOP forward in 1 ms, 2.5x that
  # backward in 3 - 1 ms (ours) or 2 - 1 ms (ours-nocap); xla has no times.
  assert table[6:] == [
      "| shape | implementation | fwd (ms) | bwd (ms) | fwd TFLOP/s |"
      " bwd TFLOP/s |",
      "|---|---|---|---|---|---|",
      f"| {shape} | ours | 1.00 | 2.00 | 17.2 | 21.5 |",
      f"| {shape} | ours-nocap | 1.00 | 1.00 | 17.2 | 43.0 |",
  ]
  assert paths[3].read_bytes()[:4] == b"\x89PNG"
  with pytest.raises(ValueError, match="No results"):
    bench.write_report(tmp_path, environment, [])


def _timed(
    shape: bench.Shape, fwd_bwd_ms: dict[str, float], **fields
) -> list[bench.Result]:
  """Returns a result per implementation: forward 1 ms, `fwd_bwd_ms` its."""
  return [
      _result(shape, implementation=name, fwd_ms=1.0, fwd_bwd_ms=ms, **fields)
      for name, ms in fwd_bwd_ms.items()
  ]


def test_table_ratios_within_a_shape():
  shape = bench.Shape(seq_len=2048, head_dim=128, heads="mha", mask="full")
  results = _timed(
      shape,
      {"ours": 3.0, "ours-nocap": 2.5, "mosaic": 2.0, "xla": 12.0},
      peak_memory_mb=10.0,
      memory_ratio=0.5,
  )
  lines = bench.table(results).splitlines()
  assert lines[0].endswith(
      "| ours / ours-nocap | ours-stable / ours-nocap | ours-highest / ours |"
      " ours / mosaic | xla / ours | default / fastest of ours, mosaic,"
      " mosaic-ours, mosaic-fused | default / cudnn-nocap |"
      " ours peak mem / io |"
  )
  assert lines[1] == "|---" * 13 + "|"
  assert lines[2] == (
      f"| {shape} | 3.00 | 2.50 | 2.00 | 12.00 | 1.20x | — | — | 1.50x |"
      " 4.00x | — | — | 0.50 |"
  )


def test_default_ratio_takes_the_fastest_composition():
  shape = bench.Shape(seq_len=2048, head_dim=256, heads="gqa", mask="causal")
  results = _timed(
      shape,
      {
          "ours": 3.0,
          "mosaic": 6.0,
          "mosaic-ours": 2.5,
          "default": 2.75,
          "cudnn-nocap": 2.2,
      },
      peak_memory_mb=None,
      memory_ratio=None,
  )
  row = bench.table(results).splitlines()[2]
  # ours / mosaic 0.5x; default / min(3.0, 6.0, 2.5) 1.1x; default / cuDNN
  # 1.25x; no memory ratio.
  assert row == (
      f"| {shape} | 3.00 | 6.00 | 2.50 | 2.75 | 2.20 | — | — | — | 0.50x |"
      " — | 1.10x | 1.25x | — |"
  )


def test_plot_wraps_groups_into_rows(tmp_path):
  # 5 (head_dim, heads, mask) groups: a row of 4 panel pairs and one of 1.
  import matplotlib.image  # pylint: disable=g-import-not-at-top

  results = []
  for d in (16, 32, 64, 128, 256):
    for name, ms in (("ours", 2.0), ("ours-nocap", 1.0)):
      shape = bench.Shape(seq_len=1024, head_dim=d, heads="gqa", mask="full")
      results.append(
          _result(
              shape,
              implementation=name,
              fwd_ms=ms / 3,
              fwd_bwd_ms=ms,
              peak_memory_mb=1.0,
              memory_ratio=1.0,
          )
      )
  bench.plot(results, str(tmp_path / "plot.png"))
  height, width, _ = matplotlib.image.imread(tmp_path / "plot.png").shape
  assert (width, height) == (4 * bench.PLOT_COLUMNS * 100, 2 * 7 * 100)


def test_interrupted_sweep_writes_what_it_timed(tmp_path, monkeypatch):
  # `timeout -s INT` on a long sweep: the results before it are kept.
  shape = bench.Shape(seq_len=1024, head_dim=64, heads="gqa", mask="causal")
  result = _result(
      shape,
      implementation="ours",
      fwd_ms=1.0,
      fwd_bwd_ms=3.0,
      peak_memory_mb=10.0,
      memory_ratio=1.0,
  )

  def run(*args, **kwargs):
    del args, kwargs
    yield result
    raise KeyboardInterrupt

  monkeypatch.setattr(bench, "run", run)
  code = bench.benchmark(
      [shape, shape],
      ["ours"],
      reps=20,
      input_sets=1,
      out=tmp_path,
      environment=dict(device="NVIDIA H200"),
  )
  assert code == 130
  report = json.loads((tmp_path / "bench.json").read_text())
  assert report["environment"]["interrupted"] == "results: 1"
  assert [r["fwd_bwd_ms"] for r in report["results"]] == [3.0]


def test_sweep_interrupted_before_any_result(tmp_path, monkeypatch, capsys):
  def run(*args, **kwargs):
    del args, kwargs
    raise KeyboardInterrupt
    yield  # pylint: disable=unreachable

  monkeypatch.setattr(bench, "run", run)
  shape = bench.Shape(seq_len=1024, head_dim=64, heads="gqa", mask="causal")
  code = bench.benchmark(
      [shape],
      ["ours"],
      reps=20,
      input_sets=1,
      out=tmp_path / "out",
      environment=dict(device="NVIDIA H200"),
  )
  assert code == 130
  assert "interrupted before any result" in capsys.readouterr().err
  assert not (tmp_path / "out").exists()


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
  # q @ k.T and p @ v, 2 FLOP a multiply-add, over 1024 * 1025 / 2 pairs.
  assert shape.fwd_flop() == 4 * 8 * 1024 * 1025 // 2 * 64


@pytest.mark.parametrize("t", [1002, 8192])  # 1002: no whole windows, docs.
@pytest.mark.parametrize("name", bench.MASKS)
def test_mask_is_the_one_named(name, t):
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
      "docs-4": (q >= k) & (q // (t // 4) == k // (t // 4)),
  }[name]
  actual = mask.as_array(t, t)
  if expected is None:
    assert actual is None
    assert shape.attended_pairs() == t * t
  else:
    assert jnp.array_equal(actual[0], expected)
    assert shape.attended_pairs() == int(jnp.sum(expected))


@pytest.mark.parametrize("layout", bench.LAYOUTS)
def test_shards_split_the_queries_and_their_work(layout):
  whole = bench.Shape(seq_len=1024, head_dim=64, heads="gqa", mask="causal")
  shards = [
      dataclasses.replace(whole, shards=4, shard=i, layout=layout)
      for i in range(4)
  ]
  positions = [s.positions() for s in shards]
  assert sorted(np.concatenate(positions).tolist()) == list(range(1024))
  pairs = [s.attended_pairs() for s in shards]
  assert sum(pairs) == whole.attended_pairs() == 1024 * 1025 // 2
  if layout == "zigzag":  # Chunks i and 7 - i of 128: equal causal work.
    assert positions[1][:2].tolist() == [128, 129]
    assert positions[1][128:130].tolist() == [768, 769]
    assert len(set(pairs)) == 1
  else:  # Shard i's queries see 256 * i + 1 to 256 * (i + 1) keys.
    assert positions[1][[0, -1]].tolist() == [256, 511]
    assert pairs == [256 * (512 * i + 257) // 2 for i in range(4)]
  # q, out, dout, dq: 256 of the 1024 rows, 8 heads; k, v, dk, dv: 4 heads;
  # 16 batch elements (16384 tokens), bf16.
  assert shards[0].io_bytes() == 16 * 64 * (4 * 8 * 256 + 4 * 4 * 1024) * 2
  assert str(shards[3]).endswith(f" causal shard 3/4 {layout}")


@pytest.mark.parametrize("layout", bench.LAYOUTS)
@pytest.mark.parametrize("name", bench.MASKS)
def test_shard_mask_is_the_whole_masks_rows(name, layout):
  t = 1024
  whole = bench.Shape(seq_len=t, head_dim=64, heads="gqa", mask=name)
  shard = dataclasses.replace(whole, shards=4, shard=1, layout=layout)
  kwargs = shard.mask_kwargs()
  rows = shard.positions()
  assert jnp.array_equal(kwargs.pop("q_indices"), rows[None])
  mask = kwargs.get("mask", base.Mask())
  if isinstance(mask, base.CausalMask):
    mask = base.Mask(causal_mask=mask)
  if kwargs.get("is_causal"):
    mask &= base.CausalMask()
  whole_mask = whole.mask_kwargs().get("mask", base.Mask())
  if isinstance(whole_mask, base.CausalMask):
    whole_mask = base.Mask(causal_mask=whole_mask)
  if whole.mask_kwargs().get("is_causal"):
    whole_mask &= base.CausalMask()
  actual = mask.as_array(jnp.asarray(rows), t)
  if name == "full":
    assert actual is None
    assert shard.attended_pairs() == len(rows) * t
  else:
    expected = whole_mask.as_array(t, t)[0][rows]
    assert jnp.array_equal(actual[0], expected)
    assert shard.attended_pairs() == int(jnp.sum(expected))


def test_shards_table_takes_the_slowest_shard():
  def result(ms, mem, shard=None, layout="natural"):
    shape = bench.Shape(
        seq_len=8192,
        head_dim=256,
        heads="gqa",
        mask="causal",
        shards=2,
        shard=shard,
        layout=layout,
    )
    return _result(
        shape,
        implementation="ours",
        fwd_ms=1.0,
        fwd_bwd_ms=ms,
        peak_memory_mb=1.0,
        memory_ratio=mem,
    )

  results = [
      result(10.0, 1.1),
      result(3.0, 1.2, 0),
      result(7.5, 1.3, 1),
      result(5.5, 1.25, 0, "zigzag"),
      result(5.0, 1.2, 1, "zigzag"),
  ]
  lines = bench.shards_table(results).splitlines()
  assert lines[2:] == [
      "| B2 T8192 H8/4 D256 causal | ours | natural | 10.00 | 3.00 / 7.50 |"
      " 0.750 | 1.30 |",
      "| B2 T8192 H8/4 D256 causal | ours | zigzag | 10.00 | 5.50 / 5.00 |"
      " 0.550 | 1.25 |",
  ]
  # The whole sequence's table leaves the shards out.
  assert len(bench.table(results).splitlines()) == 3
  assert bench.shards_table(results[:1]) == ""


@pytest.mark.usefixtures("compiled_anew")
def test_dry_run_times_each_shard(tmp_path):
  argv = ["bench", "--dry-run", "--input-sets", "1", "--impls", "ours"]
  argv += ["--shards", "2", "--layouts", "zigzag", "--out", str(tmp_path)]
  assert cli.main(argv) == 0
  results = json.loads((tmp_path / "bench.json").read_text())["results"]
  assert [(r["mask"], r["shard"], r["layout"]) for r in results] == [
      (mask, shard, layout)
      for mask in ("causal", "docs-4")
      for shard, layout in ((None, "natural"), (0, "zigzag"), (1, "zigzag"))
  ]
  for r in results:
    assert r["error"] is None, r
    assert r["fwd_bwd_ms"] > 0 and r["memory_ratio"] > 0
  assert "| slowest shard / whole |" in (tmp_path / "bench.md").read_text()


@pytest.mark.parametrize(
    "shards, layouts, message",
    [
        ("0", "natural", "--shards must be positive; got 0"),
        ("3", "natural", "`seq_len` \\d+ is not a multiple of `shards` 3"),
        ("3", "zigzag", "multiple of 2 \\* `num_shards` = 6; got \\d+"),
    ],
)
def test_refuses_shards_that_do_not_cut_the_sequence(
    tmp_path, capsys, shards, layouts, message
):
  argv = ["bench", "--shards", shards, "--layouts", layouts]
  argv += ["--seq-lens", "8192", "--out", str(tmp_path)]
  if interpret.is_needed():
    argv.append("--dry-run")  # Its shapes are T128, which 3 do not cut.
  assert cli.main(argv) == 2
  assert re.search(f"^bench: .*{message}", capsys.readouterr().err, re.M)


def test_no_peak_memory_where_the_analysis_reads_zero(monkeypatch):
  # As for a program loaded from JAX's persistent compilation cache.
  analysis = jax.stages.Compiled.memory_analysis

  def zero_peak(self):
    real = analysis(self)
    return types.SimpleNamespace(
        **{n: getattr(real, n) for n in dir(real) if n.endswith("_in_bytes")}
        | {"peak_memory_in_bytes": 0}
    )

  monkeypatch.setattr(jax.stages.Compiled, "memory_analysis", zero_peak)
  shape = bench.dry_run_shapes()[0]
  with interpret.if_needed():
    (result,) = bench.run([shape], ["ours"], reps=1, input_sets=1)
  assert result.error is None and result.fwd_bwd_ms > 0, result
  assert result.peak_memory_mb is None and result.memory_ratio is None
  assert bench.table([result]).splitlines()[2].endswith("| — |")


@pytest.mark.parametrize("mask", ["causal", "docs-4"])
def test_a_shards_call_gives_those_rows_of_the_whole_call(mask):
  whole = bench.Shape(
      seq_len=128, head_dim=32, heads="gqa", mask=mask, batch=1, shards=2
  )
  op, kwargs = bench._implementation("ours")  # pylint: disable=protected-access
  (sets,) = [bench._inputs(whole, jnp.float32, 1)]  # pylint: disable=protected-access
  with interpret.if_needed():
    expected = op(*sets[0], **kwargs, **whole.mask_kwargs())
    for shard in range(2):
      shape = dataclasses.replace(whole, shard=shard, layout="zigzag")
      (inputs,) = bench._shard_inputs(shape, sets)  # pylint: disable=protected-access
      out = op(*inputs, **kwargs, **shape.mask_kwargs())
      rows = expected[:, shape.positions()]
      assert jnp.max(jnp.abs(out - rows)) <= 1e-6 * jnp.max(jnp.abs(rows))


def test_layouts_without_shards_are_ignored_with_a_message(tmp_path, capsys):
  argv = ["bench", "--dry-run", "--impls", "ours", "--input-sets", "1"]
  argv += ["--layouts", "zigzag", "--out", str(tmp_path)]
  assert cli.main(argv) == 0
  assert "--layouts applies with --shards > 1; ignored." in (
      capsys.readouterr().err
  )


@pytest.mark.parametrize("mask", ["causal", "full", "window-32"])
def test_cudnn_baseline_attends_what_the_mask_does(monkeypatch, mask):
  # cuDNN needs a GPU: its call is run by XLA's implementation here, and
  # checked against tokamax's XLA op with the same mask arguments.
  calls = []
  attention = jax.nn.dot_product_attention

  def xla_instead(*args, implementation, **kwargs):
    calls.append(implementation)
    return attention(*args, implementation="xla", **kwargs)

  shape = bench.Shape(seq_len=128, head_dim=32, heads="gqa", mask="causal")
  shape = dataclasses.replace(shape, mask=mask, batch=1)
  ((q, k, v),) = bench._inputs(shape, jnp.float32, 1)  # pylint: disable=protected-access
  kwargs = shape.mask_kwargs()
  expected = base.DotProductAttention()(q, k, v, **kwargs)
  monkeypatch.setattr(bench.jax.nn, "dot_product_attention", xla_instead)
  actual = bench.CudnnNoCap()(q, k, v, **kwargs)
  assert calls == ["cudnn"]
  np.testing.assert_allclose(actual, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mask", ["docs-4", "offset", "shard"])
def test_cudnn_baseline_rejects_what_it_lacks(mask):
  q = k = v = jnp.zeros((1, 128, 2, 32), jnp.bfloat16)
  kwargs = dict(mask=base.CausalMask(offset=1))
  if mask == "docs-4":
    shape = bench.Shape(seq_len=128, head_dim=32, heads="gqa", mask=mask)
    kwargs = shape.mask_kwargs()
  elif mask == "shard":
    shape = bench.Shape(
        seq_len=128, head_dim=32, heads="gqa", mask="causal", shards=2, shard=1
    )
    kwargs = shape.mask_kwargs()
  with pytest.raises(NotImplementedError, match="CudnnNoCap"):
    bench.CudnnNoCap()(q, k, v, **kwargs)
