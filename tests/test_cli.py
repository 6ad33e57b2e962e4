"""The command line's `verify` report and `patch show` (`bench`: test_bench.py)."""

import json
import math

import jax.numpy as jnp
from tokamax_softcap import cli
from tokamax_softcap import harness
from tokamax_softcap import patched
from tokamax_softcap import verify


def test_verify_reports_rows_judged_by_its_criteria(tmp_path, capsys):
  path = tmp_path / "verify.json"
  argv = ["verify", "--config", "pr-check", "--variants", "causal"]
  argv += ["--size", "cpu", "--seq-len", "128", "--json", str(path)]
  code = cli.main(argv)
  report = json.loads(path.read_text())
  assert report["criteria"] == verify.CRITERIA
  bf16, f32 = report["rows"]
  assert (bf16["dtype"], f32["dtype"]) == ("bfloat16", "float32")
  # f32: the fixed bound, no XLA run.
  assert f32["xla_errors"] == {} and f32["passed"]
  assert f32["bounds"] == {n: verify.F32_BOUND for n in ("dq", "dk", "dv")}
  # bf16: 1.25x XLA's error on the same inputs, capped by the PR's bounds.
  pr_bounds = verify.PR_BOUNDS["pr-check"]
  for name, error in bf16["errors"].items():
    xla = bf16["xla_errors"][name]
    assert 0 < xla < 1e-2 and 0 < error < 1e-1
    bound = min(verify.XLA_FACTOR * xla, pr_bounds.get(name, math.inf))
    assert bf16["bounds"][name] == bound
  assert bf16["passed"] == all(
      bf16["errors"][n] <= bf16["bounds"][n] for n in bf16["errors"]
  )
  assert code == (0 if bf16["passed"] else 1)
  out = capsys.readouterr().out
  assert "| pr-check | B1 T128 H4/2 D128 | causal | bfloat16 |" in out
  assert verify.CRITERIA in out


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
