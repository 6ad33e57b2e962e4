"""The command line: its options, `verify`, `patch` (`bench`: test_bench.py)."""

import argparse
import dataclasses
import functools
import inspect
import json
import math
import pathlib

import jax.numpy as jnp
import pytest
from tokamax._src.ops.attention import pallas_triton_vjp as upstream_vjp
from tokamax_softcap import cli
from tokamax_softcap import harness
from tokamax_softcap import interpret
from tokamax_softcap import patched
from tokamax_softcap import upstream_tree
from tokamax_softcap import verify


def test_verify_reports_rows_judged_by_its_criteria(tmp_path, capsys):
  path = tmp_path / "verify.json"
  argv = ["verify", "--config", "pr-check", "--variants", "causal"]
  argv += ["--size", "cpu", "--seq-len", "128", "--json", str(path)]
  code = cli.main(argv)
  report = json.loads(path.read_text())
  assert report["criteria"] == verify.CRITERIA
  bf16, bf16_default, f32 = report["rows"]
  assert [(r["dtype"], r["precision"]) for r in report["rows"]] == [
      ("bfloat16", "highest"),
      ("bfloat16", "default"),
      ("float32", "highest"),
  ]
  # f32: the fixed bound, no XLA run.
  assert f32["xla_errors"] == {} and f32["passed"]
  assert f32["bounds"] == {n: verify.F32_BOUND for n in ("dq", "dk", "dv")}
  # bf16 at HIGHEST: 1.25x XLA's error on the same inputs, capped by the
  # PR's bounds.
  pr_bounds = verify.PR_BOUNDS["pr-check"]
  for name, error in bf16["errors"].items():
    xla = bf16["xla_errors"][name]
    assert 0 < xla < 1e-2 and 0 < error < 1e-1
    bound = min(verify.XLA_FACTOR * xla, pr_bounds.get(name, math.inf))
    assert bf16["bounds"][name] == bound
  assert bf16["passed"] == all(
      bf16["errors"][n] <= bf16["bounds"][n] for n in bf16["errors"]
  )
  # bf16 at the default precision: reported beside XLA's errors, not judged.
  assert bf16_default["passed"] is None
  assert bf16_default["xla_errors"] == bf16["xla_errors"]
  assert bf16_default["errors"] != bf16["errors"]
  assert code == (0 if bf16["passed"] else 1)
  out, err = capsys.readouterr()
  # The device, named once: ahead of the runs, on a line of its own.
  device = harness.device_name(interpreted=interpret.is_needed(), reduced=True)
  if interpret.is_needed():
    assert device == "CPU (Pallas interpreter, reduced sizes)"
  assert out.startswith(f"device: {device}\ndate ")
  assert (out + err).count(device) == 1
  assert report["environment"]["device"] == device
  assert "| pr-check | B1 T128 H4/2 D128 | causal | bfloat16 | highest |" in out
  assert "| bfloat16 | default |" in out and "| reported |" in out
  assert verify.CRITERIA in out


def test_verify_reports_default_precision_rows_unjudged(monkeypatch):
  # One function fakes ours and XLA's gradients, so their errors are equal
  # (1.0) and only pr-check's PR bounds on dq and dk fail the row: judged at
  # HIGHEST, reported at the default precision.
  def gradients(*unused_args, **unused_kwargs):
    return harness.Gradients(
        actual=(*(jnp.full((2,), 2.0) for _ in range(3)), None),
        expected=(jnp.ones(2), jnp.ones(2), jnp.ones(2), None),
        max_logit=1e3,
    )

  monkeypatch.setattr(harness, "gradients", gradients)
  config = harness.cpu_sized(harness.PR_CHECK)
  assert verify.verify_one(config, "causal", "bfloat16").passed is False
  row = verify.verify_one(config, "causal", "bfloat16", None, "default")
  assert row.passed is None and row.precision == "default"
  assert "| reported |" in verify.table_row(row)
  # With nothing judged, verify says so and exits 2.
  assert (
      cli.main(
          [
              "verify",
              "--dtype",
              "bfloat16",
              "--precision",
              "default",
              "--config",
              "pr-check",
              "--variants",
              "causal",
          ]
      )
      == 2
  )


def test_verify_fails_non_finite_errors(monkeypatch):
  # NaN gradients from the op and from XLA: their errors are inf, and so is
  # a bound of 1.25x XLA's; the row must still fail.
  def gradients(*unused_args, **unused_kwargs):
    nan = jnp.full((2,), jnp.nan)
    return harness.Gradients(
        actual=(nan, nan, nan, None),
        expected=(jnp.ones(2), jnp.ones(2), jnp.ones(2), None),
        max_logit=1e3,
    )

  monkeypatch.setattr(harness, "gradients", gradients)
  config = harness.cpu_sized(harness.GEMMA2_2B)
  row = verify.verify_one(config, "causal", "bfloat16")
  assert row.errors == {n: math.inf for n in ("dq", "dk", "dv")}
  assert row.bounds == row.errors
  assert not row.passed


def test_patch_show_prints_the_source_that_runs(capsys):
  assert cli.main(["patch", "show", "pallas_triton_vjp"]) == 0
  source = capsys.readouterr().out
  assert source == patched.patched_source("pallas_triton_vjp")
  assert "logits_soft_cap" in source and "def _bwd_dkdv(" in source


def test_patch_show_through_a_patch(capsys):
  # Patch 0017 moves the cap's derivative in `_bwd_dkdv` ahead of the dots.
  derivative_last = "      dsT *= (1.0 - tT) * (1.0 + tT)\n"
  assert (
      cli.main(["patch", "show", "pallas_triton_vjp", "--through", "16"]) == 0
  )
  through_16 = capsys.readouterr().out
  assert through_16 == patched.patched_source("pallas_triton_vjp", 16)
  assert derivative_last in through_16
  assert derivative_last not in patched.patched_source("pallas_triton_vjp")
  upstream = inspect.getsource(upstream_vjp).splitlines()
  assert patched.patched_source("pallas_triton_vjp", 0).splitlines() == upstream


def _parsers(parser):
  """Yields `parser` and its subcommands' parsers, depth first."""
  yield parser
  for action in parser._actions:  # pylint: disable=protected-access
    if isinstance(action, argparse._SubParsersAction):  # pylint: disable=protected-access
      for subparser in action.choices.values():
        yield from _parsers(subparser)


def test_every_command_and_option_is_described(monkeypatch):
  monkeypatch.setenv("COLUMNS", "1000")  # One line per option.
  for parser in _parsers(cli.parser()):
    assert parser.description, parser.prog
    text = parser.format_help()
    for action in parser._actions:  # pylint: disable=protected-access
      if isinstance(action, argparse._SubParsersAction):  # pylint: disable=protected-access
        for choice in action._choices_actions:  # pylint: disable=protected-access
          assert choice.help, (parser.prog, choice.dest)
        continue
      assert action.help, (parser.prog, action.dest)
      if action.default not in (None, False, argparse.SUPPRESS):
        assert f"(default: {action.default})" in text, action.dest


@pytest.mark.parametrize(
    "argv",
    [
        ["verify"],
        ["bench"],
        ["patch", "check", "--", "-x"],
        ["patch", "tree", "dir"],
        ["patch", "export", "tree", "--out", "dir"],
        ["patch", "show", "pallas_triton"],
    ],
)
def test_options_are_the_arguments_of_the_main_they_run(argv):
  args = vars(cli.parser().parse_args(argv))
  del args["command"]
  main = args.pop("main")
  parameters = inspect.signature(main).parameters
  assert set(args) <= set(parameters) | {
      f.name for f in dataclasses.fields(harness.Config)  # verify's overrides
  }
  inspect.signature(main).bind(**args)


def test_verify_runs_wide_512_only_when_named(monkeypatch):
  calls = []
  monkeypatch.setattr(verify, "verify_all", lambda *a, **kw: calls.append(a))
  cli.main(["verify", "--size", "full"])
  assert [c.name for c in calls[-1][0]] == ["gemma2-2b", "pr-check"]
  cli.main(["verify", "--size", "full", "--config", "wide-512"])
  assert calls[-1][0] == [harness.WIDE_512]
  assert harness.WIDE_512.head_dim == 512


def test_verify_sizes_then_overrides_the_configurations(monkeypatch):
  calls = []
  monkeypatch.setattr(verify, "verify_all", lambda *a, **kw: calls.append(a))
  argv = ["verify", "--config", "pr-check", "--dtype", "float32"]
  argv += ["--batch", "3", "--seq-len", "256", "--heads", "6", "--kv-heads"]
  argv += ["3", "--head-dim", "64", "--window", "32", "--cap", "20.5"]
  for size, sized in (
      ("full", harness.PR_CHECK),
      ("cpu", harness.cpu_sized(harness.PR_CHECK)),
  ):
    cli.main(argv + ["--size", size])
    ((configs, variants, dtypes, logit_std),) = calls[-1:]
    assert configs == [
        dataclasses.replace(
            sized,
            batch=3,
            seq_len=256,
            num_heads=6,
            num_kv_heads=3,
            head_dim=64,
            window=32,
            logits_soft_cap=20.5,
        )
    ]
    assert variants == list(harness.VARIANTS) and dtypes == ["float32"]
    assert logit_std is None
  # Without overrides, `auto` sizes for the device.
  cli.main(["verify", "--config", "gemma2-2b,pr-check"])
  size = "cpu" if interpret.is_needed() else "full"
  assert calls[-1][0] == verify.sized_configs(["gemma2-2b", "pr-check"], size)


def _series_dir(root, monkeypatch):
  """Makes `root/tokamax_softcap/patches`, holding one patch, the series'."""
  series = root / "tokamax_softcap" / "patches"
  series.mkdir(parents=True)
  (series / "0001-Old.patch").write_text("old\n")
  monkeypatch.setattr(patched, "SERIES_DIR", series)
  return series


@pytest.fixture
def small_tree(tmp_path):
  """A git tree as `upstream_tree.build` makes, with one file and one patch."""
  tree = tmp_path / "tree"
  tree.mkdir()
  git = functools.partial(upstream_tree._git, tree)  # pylint: disable=protected-access
  git("init", "-q")
  (tree / "a.py").write_text("a = 1\n")
  git("add", "-A")
  git("commit", "-q", "-m", "Wheel's files")
  git("tag", upstream_tree.BASE_TAG)
  (tree / "a.py").write_text("a = 2\n")
  git("commit", "-q", "-a", "-m", "Change a")
  return tree


def test_patch_export_replaces_the_checkouts_series(
    small_tree, tmp_path, monkeypatch, capsys
):
  series = _series_dir(tmp_path / "repo", monkeypatch)
  (tmp_path / "repo" / "patches").symlink_to("tokamax_softcap/patches")
  assert upstream_tree.checkout_series_dir() == tmp_path / "repo" / "patches"
  assert cli.main(["patch", "export", str(small_tree)]) == 0
  new = tmp_path / "repo" / "patches" / "0001-Change-a.patch"
  assert capsys.readouterr().out.split() == [str(new)]
  assert [p.name for p in series.iterdir()] == [new.name]  # The old is gone.
  assert "+a = 2" in new.read_text()


def test_patch_export_never_writes_into_an_installed_package(
    small_tree, tmp_path, monkeypatch, capsys
):
  series = _series_dir(tmp_path / "site-packages", monkeypatch)
  assert upstream_tree.checkout_series_dir() is None
  assert cli.main(["patch", "export", str(small_tree)]) == 2
  assert "`--out DIR`" in capsys.readouterr().err
  with pytest.raises(ValueError, match="not run from a source checkout"):
    upstream_tree.export(small_tree)
  out = tmp_path / "series"
  argv = ["patch", "export", str(small_tree), "--out", str(out)]
  assert cli.main(argv) == 0
  assert capsys.readouterr().out.split() == [str(out / "0001-Change-a.patch")]
  assert "+a = 2" in (out / "0001-Change-a.patch").read_text()
  assert [p.read_text() for p in series.iterdir()] == ["old\n"]


def test_this_checkout_is_one():
  root = pathlib.Path(__file__).resolve().parents[1]
  if pathlib.Path(patched.__file__).resolve().parents[1] != root:
    pytest.skip("tokamax_softcap is installed, not run from this checkout.")
  found = upstream_tree.checkout_series_dir()
  assert found is not None and found.resolve() == (root / "patches").resolve()


def test_verify_default_chain(monkeypatch):
  # Without a GPU, tokamax's default chain falls through Mosaic to our op:
  # the same kernels as `--impl triton`, hence the same errors. On Hopper
  # `--impl default` runs Mosaic GPU's forward for bf16.
  config = dataclasses.replace(harness.cpu_sized(harness.PR_CHECK), seq_len=128)
  if not interpret.is_needed():
    pytest.skip("On a GPU the default chain runs other kernels.")
  with interpret.interpret():
    rows = [
        verify.verify_one(config, "causal", "float32", impl=impl)
        for impl in verify.IMPLEMENTATIONS
    ]
  assert rows[0].errors == rows[1].errors and rows[1].passed
  with pytest.raises(ValueError, match="sharded"):
    verify.verify_one(config, "sharded", "float32", impl="default")
  with pytest.raises(ValueError, match="impl"):
    verify.verify_one(config, "causal", "float32", impl="mosaic")
  runs = verify.runs([config], harness.VARIANTS, ["float32"], impl="default")
  assert "sharded" not in {variant for _, variant, _, _ in runs}
  calls = []
  monkeypatch.setattr(verify, "verify_all", lambda *a, **kw: calls.append(kw))
  cli.main(["verify", "--impl", "default"])
  assert calls[-1]["impl"] == "default"
  assert calls[-1]["environment"]["implementation"] == "default"
