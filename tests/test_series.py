"""The patch series as an upstream pull request: applies, passes, equals us.

In a temporary git repository holding the installed tokamax wheel's files at
their upstream paths (`upstream_tree.build`), the series is applied with
`git am`; upstream's own VJP tests for what the series changes run against the
patched upstream classes; and the package is shown to compute bit for bit
what the patched upstream modules compute.
"""

import re
import subprocess

import chex
import jax
import jax.numpy as jnp
import pytest
from tokamax._src.ops.attention import base
import tokamax_softcap
from tokamax_softcap import cli
from tokamax_softcap import harness
from tokamax_softcap import patched
from tokamax_softcap import upstream_tree
import configs  # pylint: disable=g-bad-import-order

CAP = configs.CAP
CONFIG = configs.GQA_64
CONFIG_MHA_128 = configs.MHA_128_RAGGED
# Upstream's tests of the series (`upstream_tree.SERIES_TESTS`) in groups, one
# subprocess each, which pytest-xdist's workers share out: a `-k` expression
# and the number of tests it selects. Each group takes the series' tests that
# its expression selects and no earlier group's; the last, `rest`, takes the
# others, so every test of the series runs once. On an H200 the groups that
# compile kernels took 7 to 34 s a test, and 27 tests in one did not finish
# in 534 s (`results/h200-2026-12-04-default-chain/`): no group is long.
SERIES_TEST_GROUPS = {
    "tanh_clipping": 10,
    "not_multiple_of_block": 7,
    "fully_masked": 9,
    "head_dim": 13,
    "key_ranges or query_positions": 10,
    "wide_heads or query_ranges": 10,
    "shared_memory": 97,
    "vjp_autotuning_configs or dv_kernel_of_its_own": 8,
    "skipped_query_blocks or causal_mirrored_blocks or use_base2": 8,
    "rest": 11,
}


def _series_test_group(name: str) -> str:
  """Returns the `-k` expression of the group `name` of `SERIES_TEST_GROUPS`."""
  names = list(SERIES_TEST_GROUPS)
  index = names.index(name)
  expression = f"({upstream_tree.SERIES_TESTS})"
  if index < len(names) - 1:
    expression += f" and ({name})"
  if index:
    expression += f" and not ({' or '.join(names[:index])})"
  return expression


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
  return upstream_tree.build(tmp_path_factory.mktemp("upstream") / "tokamax")


@pytest.fixture
def cache_in_subprocesses(monkeypatch):
  """Upstream's tests, in a subprocess, cache compilations as this process does.

  In this process's directory (`conftest.py`), which is safe: it waits for
  the subprocess. Their harness compiles each kernel anew for each run of it,
  and the cache takes 13% off their CPU time (7 of them, CPU, cold cache).
  """
  if jax.config.jax_compilation_cache_dir:
    monkeypatch.setenv(
        "JAX_COMPILATION_CACHE_DIR", jax.config.jax_compilation_cache_dir
    )
    monkeypatch.setenv(
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
        str(jax.config.jax_persistent_cache_min_compile_time_secs),
    )


@pytest.fixture(scope="module")
def patched_upstream(tree):
  """tokamax's ops, from the `git am` result (not from this package)."""
  modules = upstream_tree.load(tree)
  fwd, vjp = modules["pallas_triton"], modules["pallas_triton_vjp"]
  # Their classes are not ours or tokamax's, which `interpret` enables on the
  # CPU: bypass the device check explicitly.
  vjp_op = vjp.PallasTritonFlashAttentionVjp(bypass_device_check=True)
  return fwd.PallasTritonFlashAttention(vjp=vjp_op, bypass_device_check=True)


def test_check_applies_series_and_matches_package(tree):
  report = upstream_tree.check(tree)
  assert (
      report[0]
      == f"git am: {len(patched.series())} patches applied to the wheel's files:"
  )
  assert sum(
      "identical to what tokamax_softcap.patched runs" in r for r in report
  ) == len(patched.MODULES)
  assert any(r.endswith("as each patch leaves them, compile.") for r in report)


def test_check_rejects_a_patch_whose_python_does_not_compile(tree, tmp_path):
  # A decorator before an assignment, as patch 0025 once left upstream's test
  # module: `run_upstream_test` removes that skip mark before it runs, which
  # hid the error from upstream's tests.
  clone = tmp_path / "tokamax"
  subprocess.run(["git", "clone", "-q", str(tree), str(clone)], check=True)
  test = clone / upstream_tree.UPSTREAM_TEST
  test.write_text(test.read_text() + "\n\n@pytest.mark.skip\nX = 1\n")
  upstream_tree._git(  # pylint: disable=protected-access
      clone, "commit", "-q", "-a", "-m", "Break the test module"
  )
  number = len(patched.series()) + 1
  with pytest.raises(
      AssertionError,
      match=f"pallas_triton_test.py does not compile after patch {number:04d}",
  ):
    upstream_tree.check(clone)


def test_check_through_a_patch_applies_and_checks_the_series_up_to_it(
    tree, monkeypatch, capsys
):
  # `patch check --through 0016`: a tree with patches 0001-0016 alone (the
  # full tree's first 16 commits, with the same ids), compared with the
  # package's source through patch 0016; upstream's tests run there (here
  # only recorded: `test_upstream_tests_pass_on_patched_tree` runs them).
  runs = []

  def run_upstream_test(prefix_tree, *pytest_args):
    commits = upstream_tree._git(  # pylint: disable=protected-access
        prefix_tree, "rev-list", "--reverse", f"{upstream_tree.BASE_TAG}..HEAD"
    ).split()
    vjp = prefix_tree / patched.upstream_path("pallas_triton_vjp")
    runs.append((commits, vjp.read_text(), pytest_args))
    return subprocess.CompletedProcess(pytest_args, 0, "1 passed\n", "")

  monkeypatch.setattr(upstream_tree, "run_upstream_test", run_upstream_test)
  assert cli.main(["patch", "check", "--through", "0016", "--", "-x"]) == 0
  [(commits, vjp, pytest_args)] = runs
  full = upstream_tree._git(  # pylint: disable=protected-access
      tree, "rev-list", "--reverse", f"{upstream_tree.BASE_TAG}..HEAD"
  ).split()
  assert len(full) == len(patched.series()) > 16
  assert commits == full[:16]
  # Patch 0017 moves the cap's derivative in `_bwd_dkdv` ahead of the dots.
  assert vjp == patched.patched_source("pallas_triton_vjp", 16)
  assert "      dsT *= (1.0 - tT) * (1.0 + tT)\n" in vjp
  assert pytest_args == ("-q", "-k", upstream_tree.SERIES_TESTS, "-x")
  out = capsys.readouterr().out
  assert "git am: 16 patches applied to the wheel's files:" in out
  assert out.count("through patch 0016.") == len(patched.MODULES)


def test_check_through_a_patch_runs_upstreams_tests_on_that_tree(capsys):
  # Unlike the test above, upstream's tests really run: on the tree of patch
  # 0001 alone, in two pytest-xdist workers. Importing this package there
  # would apply the whole series to that tree's tokamax and fail (it did);
  # the plugin comes in without it, and on the CPU only its interpret mode
  # lets the Pallas-Triton tests run. Patch 0001's tests of the cap's
  # gradient (`tanh_clipping`, cap active): 6.
  code = cli.main(
      [
          "patch",
          "check",
          "--through",
          "0001",
          "--",
          "-n",
          "2",
          "-k",
          "tanh_clipping",
      ]
  )
  out = capsys.readouterr().out
  assert code == 0, out
  assert re.search(r"\b6 passed\b", out), out
  assert "failed" not in out and "error" not in out.lower(), out


def test_check_through_rejects_what_names_no_patch(tmp_path, capsys):
  last = len(patched.series())
  for value in ("0", f"{last + 1:04d}", "x"):
    with pytest.raises(SystemExit):
      cli.main(["patch", "check", "--through", value])
    assert (
        f"argument --through: {value!r} is not the number of a patch of the"
        f" series (0001-{last:04d})"
    ) in capsys.readouterr().err
  with pytest.raises(ValueError, match=f"`through`: no patch {last + 1} in"):
    upstream_tree.build(tmp_path / "tokamax", through=last + 1)
  assert not (tmp_path / "tokamax").exists()


@pytest.mark.parametrize("through", [0, 16])
def test_source_through_a_patch_is_the_same_from_either_end(
    monkeypatch, through
):
  # `through` applies the series to upstream's source up to a patch, and
  # undoes the later patches from a source that holds the whole series (as in
  # a tree made by `upstream_tree.build`).
  name = "pallas_triton_vjp"
  forward = patched.patched_source(name, through)
  full = patched.patched_source(name)
  assert forward != full
  monkeypatch.setattr(patched.inspect, "getsource", lambda _: full)
  assert patched.patched_source(name, through) == forward
  assert patched.patched_source(name) == full


def test_series_changes_only_upstream_attention_files(tree):
  changed = upstream_tree._git(  # pylint: disable=protected-access
      tree, "diff", "--name-only", upstream_tree.BASE_TAG, "HEAD"
  ).split()
  assert set(changed) == {
      f"tokamax/_src/ops/attention/{name}.py"
      for name in (
          "pallas_triton",
          "pallas_triton_vjp",
          "pallas_triton_test",
          "pallas_mosaic_gpu_kernel_sm90",
          "pallas_mosaic_gpu_kernel_sm100",
          "pallas_mosaic_gpu_vjp_kernel_sm90",
          "pallas_mosaic_gpu_vjp",
          "pallas_mosaic_gpu_test",
      )
  }


def test_series_keeps_upstreams_skip_of_its_vjp_test_class(tree):
  # `run_upstream_test` takes the mark off only while upstream's tests run.
  mark = upstream_tree._VJP_TEST_SKIP  # pylint: disable=protected-access
  head = upstream_tree._git(  # pylint: disable=protected-access
      tree, "show", f"HEAD:{upstream_tree.UPSTREAM_TEST}"
  )
  assert mark in head
  upstream_tree.run_upstream_test(tree, "-q", "--collect-only")
  assert mark in (tree / upstream_tree.UPSTREAM_TEST).read_text()


@pytest.mark.parametrize("group", SERIES_TEST_GROUPS)
@pytest.mark.usefixtures("cache_in_subprocesses")
def test_upstream_tests_pass_on_patched_tree(tree, group):
  assert sum(SERIES_TEST_GROUPS.values()) == upstream_tree.NUM_SERIES_TESTS
  result = upstream_tree.run_upstream_test(
      tree, "-q", "-k", _series_test_group(group)
  )
  output = result.stdout + result.stderr
  assert result.returncode == 0, output
  count = SERIES_TEST_GROUPS[group]
  assert re.search(rf"\b{count} passed\b", output), output


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(
    "config, variant",
    [(CONFIG, v) for v in ("causal", "packed-k-start", "packed-dense", "bias")]
    + [(CONFIG_MHA_128, v) for v in ("causal", "packed-k-start")],
    ids=lambda x: getattr(x, "name", x),
)
def test_package_equals_patched_upstream_bitwise(
    patched_upstream, config, variant, dtype
):
  # Compared with each other: no reference needed.
  ours = harness.gradients(
      config, variant, dtype, 2 * CAP, with_reference=False
  )
  theirs = harness.gradients(
      config,
      variant,
      dtype,
      2 * CAP,
      op=patched_upstream,
      with_reference=False,
  )
  assert ours.max_logit >= 5 * CAP
  chex.assert_tree_all_finite(ours.actual)
  chex.assert_trees_all_equal(ours.actual, theirs.actual)


def test_forward_and_residuals_equal_patched_upstream_bitwise(patched_upstream):
  q, k, v, bias, _ = harness.make_inputs(CONFIG, jnp.bfloat16, 2 * CAP, True)
  kwargs = dict(
      bias=bias,
      mask=base.Mask(is_causal=True),
      logits_soft_cap=CAP,
      return_residuals=True,
  )
  ours = tokamax_softcap.PallasTritonFlashAttention()(q, k, v, **kwargs)
  theirs = patched_upstream(q, k, v, **kwargs)
  chex.assert_tree_all_finite(ours)
  chex.assert_trees_all_equal(ours, theirs)


def test_unchanged_tree_exports_the_series_byte_for_byte(tree, tmp_path):
  exported = upstream_tree.export(tree, tmp_path / "series")
  series = patched.series()
  assert [p.name for p in exported] == [p.name for p in series]
  for new, old in zip(exported, series):
    assert new.read_bytes() == old.read_bytes(), new.name
