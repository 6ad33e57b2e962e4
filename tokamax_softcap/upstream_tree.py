"""A git tree of the installed tokamax with the patch series applied.

The series (`patches/`) is the source of this package's kernels, and this is
how it is edited and checked as the upstream pull request it is
(`python -m tokamax_softcap patch ACTION`, or the functions named):

- `tree DIR` (`build`): a git repository holding the installed tokamax
  wheel's files at their upstream paths (commit "tokamax <version>"), with
  the series applied by `git am`, one commit per patch.
- edit, test and commit in that tree (amend, `git rebase -i`, new commits);
- `export TREE [--out DIR]` (`export`): `git format-patch` the tree's
  commits back into the series: into `DIR`, by default into the repository's
  `patches/` when the package runs from a source checkout (an editable
  install). An installed package's folder is never written to: there,
  `--out` is required.
- `check [--through N]` (`check`, `run_upstream_test`): builds a tree in a
  temporary directory, confirms that `git am` applies the whole series (or
  patches 0001 to N only) and that the result is, file for file, the source
  that `tokamax_softcap.patched` executes (through patch N), and runs
  upstream's own tests of the series there. With `--through`, a first part
  of the series is checked on its own, e.g. one of the pull requests that
  submit it by theme.
- `show MODULE [--through N]` (`patched.patched_source`): prints the patched
  source of a module, as it runs (or with the series through patch N only).
"""

import argparse
from collections.abc import Sequence
import importlib.metadata
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import types

from tokamax_softcap import patched

# Fixed identity and dates: the same series gives the same commits.
_GIT_ENV = dict(
    GIT_AUTHOR_NAME="tokamax wheel",
    GIT_AUTHOR_EMAIL="tokamax@wheel.invalid",
    GIT_AUTHOR_DATE="2026-10-01T00:00:00Z",
    GIT_COMMITTER_NAME="tokamax-softcap",
    GIT_COMMITTER_EMAIL="tokamax-softcap@wheel.invalid",
    GIT_COMMITTER_DATE="2026-10-01T00:00:00Z",
)
BASE_TAG = "tokamax-wheel"


def _git(tree: pathlib.Path, *args: str, env: dict[str, str] | None = None):
  env = {**os.environ, **_GIT_ENV, **(env or {})}
  return subprocess.run(
      ["git", "-C", str(tree), *args],
      check=True,
      capture_output=True,
      text=True,
      env=env,
  ).stdout


def series_through(through: int | None = None) -> list[pathlib.Path]:
  """Returns the patch files of the series through one, in `git am` order.

  Args:
    through: The number of the last patch (e.g. `16` for `0001`-`0016`);
      `None` for the whole series.

  Raises:
    ValueError: if no patch of the series has the number `through`.
  """
  series = patched.series()
  if through is None:
    return series
  numbers = [int(patch.name[:4]) for patch in series]
  if through not in numbers:
    raise ValueError(
        f"`through`: no patch {through} in the series, whose patches are"
        f" {series[0].name[:4]}-{series[-1].name[:4]}."
    )
  return series[: numbers.index(through) + 1]


def build(
    tree: pathlib.Path | str, *, apply: bool = True, through: int | None = None
) -> pathlib.Path:
  """Builds the tree in `tree` (which must not exist).

  Args:
    tree: The directory to create.
    apply: Whether to `git am` the series on top of the wheel's files.
    through: The number of the last patch to apply; `None` for the whole
      series.

  Returns:
    The tree's path.

  Raises:
    FileExistsError: if `tree` exists.
    ValueError: if no patch of the series has the number `through` (then
      nothing is created).
    subprocess.CalledProcessError: if `git am` fails (its stderr says where).
  """
  patches = series_through(through)
  tree = pathlib.Path(tree)
  tree.mkdir(parents=True)
  dist = importlib.metadata.distribution("tokamax")
  for file in dist.files:
    if file.parts[0] != "tokamax" or file.suffix == ".pyc":
      continue
    dest = tree / file
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(file.locate(), dest)
  _git(tree, "init", "-q")
  _git(tree, "add", "-A")
  _git(tree, "commit", "-q", "-m", f"tokamax {dist.version}")
  _git(tree, "tag", BASE_TAG)
  if apply:
    _git(
        tree,
        "am",
        "-q",
        "--committer-date-is-author-date",
        *map(str, patches),
    )
  return tree


def checkout_series_dir() -> pathlib.Path | None:
  """Returns the source checkout's `patches/`, if the package runs from one.

  A checkout (and an editable install, which runs from it) has a `patches`
  link next to the package that leads to the series the package reads; an
  installed package has none.
  """
  link = patched.SERIES_DIR.parent.parent / "patches"
  if link.resolve() == patched.SERIES_DIR.resolve():
    return link
  return None


def export(
    tree: pathlib.Path | str, out: pathlib.Path | str | None = None
) -> list[pathlib.Path]:
  """Writes the tree's commits since the wheel's files as the series.

  The `*.patch` files already in the output directory are replaced, so a
  patch dropped from the tree disappears from the series.

  Args:
    tree: A tree made by `build`.
    out: The output directory (created if missing); by default the source
      checkout's `patches/` (see `checkout_series_dir`).

  Returns:
    The new patch files, in `git am` order.

  Raises:
    ValueError: if `out` is `None` and the package does not run from a
      source checkout (an installed package's folder is not written to).
    subprocess.CalledProcessError: if `git format-patch` fails (then the
      output directory is left as it was).
  """
  if out is None:
    out = checkout_series_dir()
    if out is None:
      raise ValueError(
          f"tokamax_softcap is installed in {patched.SERIES_DIR.parent}, not"
          " run from a source checkout (no `patches` link beside it), and an"
          " installed package's folder is not written to: name the directory"
          " for the series with `--out DIR` (`out=` from Python)."
      )
  out = pathlib.Path(out)
  with tempfile.TemporaryDirectory() as tmp:
    _git(
        pathlib.Path(tree),
        "format-patch",
        "--zero-commit",
        "--no-signature",
        "--filename-max-length=100",
        "-o",
        tmp,
        f"{BASE_TAG}..HEAD",
    )
    # Only once `format-patch` has succeeded, replace the old series.
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.patch"):
      old.unlink()
    for new in pathlib.Path(tmp).glob("*.patch"):
      shutil.move(new, out / new.name)
  return sorted(out.glob("*.patch"))


def load(tree: pathlib.Path | str) -> dict[str, types.ModuleType]:
  """Imports the tree's `patched.MODULES`, e.g. to compare them with ours.

  They are named `tokamax_softcap.upstream_tree.<module_name>` and loaded as
  `patched` loads its own (`patched.load_modules`); their other imports of
  tokamax resolve to the installed tokamax.

  Args:
    tree: A tree made by `build`.

  Returns:
    The modules, by name.
  """

  def source(module_name):
    path = pathlib.Path(tree) / patched.upstream_path(module_name)
    return path.read_text(), str(path)

  return patched.load_modules(__name__, source)


UPSTREAM_TEST = "tokamax/_src/ops/attention/pallas_triton_test.py"
# Upstream's tests of what the series changes: in its Pallas-Triton VJP
# class, soft capping (8 cases, 2 of them f16 weights in range), skipped
# query blocks (3), `use_base2` (2), sequence lengths that are not a multiple
# of the block (7), fully masked rows (7), head_dim 128 in bf16 and 256 in
# f32 (3, one with TF32 dots), causal block configs (2), a forced softmax out
# of range (2), the logits scale in f32 (1), windows and documents as key
# ranges (4), bf16 at head_dim 256 (1), head_dim 320-512 (4), query ranges
# (3), bf16 at `precision=HIGHEST` (2), the autotuning space (6) and its
# mirrored causal blocks (2), the heuristic configs in 99 KiB of shared
# memory (7), at head_dim 256 by precision (2) and at head_dim 64 and 128 by
# GPU and dtype (7), the forward's past head_dim 256 (3), configs given by
# hand that exceed shared memory (19) or fit it (11) and the heuristic
# configs within it on five GPU generations (60), dv in a kernel of its own
# and not (2), a shard's queries' positions as key ranges (4); in its
# forward class,
# `split_k` with `use_base2` (1), with fully masked rows (2) and with key
# ranges (2), soft capping
# with 16-bit `logits_dtype` (2), malformed head counts and `k_start` (3),
# and the fast exponential and soft cap (1).
SERIES_TESTS = (
    "(PallasTritonFlashAttentionWithPallasTritonVjpTest and (tanh_clipping or"
    " skipped_query_blocks or use_base2 or not_multiple_of_block or"
    " fully_masked or bf16_head_dim_128 or f32_head_dim_256 or untileable or"
    " unstable_softmax_out_of_range or logits_scale_in_f32 or key_ranges or"
    " bf16_head_dim_256 or wide_heads or query_ranges or"
    " vjp_autotuning_configs or causal_mirrored_blocks or"
    " shared_memory or"
    " vjp_heuristics_head_dim_256_precision or heuristics_head_dim_64_128 or"
    " dv_kernel_of_its_own or query_positions))"
    " or split_k_use_base2 or split_k_fully_masked_rows or split_k_key_ranges"
    " or tanh_clipping_logits_dtype or malformed or fast_exp"
    " or bf16_highest_precision"
)
NUM_SERIES_TESTS = 183
_VJP_TEST_SKIP = (
    '@pytest.mark.skip(reason="Too slow for OSS regression tests.")'
)


def run_upstream_test(
    tree: pathlib.Path | str, *pytest_args: str
) -> subprocess.CompletedProcess[str]:
  """Runs upstream's `pallas_triton_test.py` of the tree, with the tree as tokamax.

  Upstream skips its Pallas-Triton VJP test class in open source ("too slow");
  this removes that mark from the tree's working copy (not from the series)
  while the tests run, and puts it back after. Without a GPU, the tests run
  in interpret mode (`tokamax_softcap/pytest_plugin.py`, loaded without this
  package: see its docstring).

  Args:
    tree: A tree made by `build`.
    *pytest_args: More pytest arguments, e.g. `-k`, `-n`.

  Returns:
    The finished pytest process (its output captured).
  """
  tree = pathlib.Path(tree)
  test = tree / UPSTREAM_TEST
  source = test.read_text()
  # The tree is tokamax, then the environment's path; this package's
  # directory comes last, for the plugin and its `interpret` alone.
  path = [str(tree)]
  path += filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))
  path.append(str(pathlib.Path(__file__).parent))
  env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
  command = [sys.executable, "-m", "pytest", "-p", "pytest_plugin"]
  # Upstream's `long` marker is registered in its own (unshipped) config.
  quiet = [
      "-p",
      "no:cacheprovider",
      "-W",
      "ignore::pytest.PytestUnknownMarkWarning",
  ]
  test.write_text(source.replace(_VJP_TEST_SKIP + "\n", ""))
  try:
    return subprocess.run(
        [*command, *quiet, str(test), *pytest_args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
  finally:
    # Restored, so that a commit in the tree cannot take the change along.
    test.write_text(source)


def _compile_patched_python(tree: pathlib.Path) -> int:
  """Compiles each Python file each patch of the tree changes, as it leaves it.

  Returns:
    How many (file, patch) pairs compiled.

  Raises:
    AssertionError: naming the file and the patch, if one does not compile.
  """
  commits = _git(tree, "rev-list", "--reverse", f"{BASE_TAG}..HEAD").split()
  compiled = 0
  for number, commit in enumerate(commits, 1):
    changed = _git(
        tree,
        "diff-tree",
        "-z",
        "--no-commit-id",
        "--name-only",
        "-r",
        "--diff-filter=AMT",
        commit,
        "--",
        "*.py",
    ).split("\0")
    for path in filter(None, changed):
      try:
        compile(_git(tree, "show", f"{commit}:{path}"), path, "exec")
      except (SyntaxError, ValueError) as e:  # ValueError: a NUL byte.
        raise AssertionError(
            f"{path} does not compile after patch {number:04d}: {e}"
        ) from e
      compiled += 1
  return compiled


def check(tree: pathlib.Path | str, through: int | None = None) -> list[str]:
  """Checks that a tree's series matches the package, file for file.

  Args:
    tree: A tree made by `build` (which `git am`s the series, raising
      `subprocess.CalledProcessError` if a patch does not apply).
    through: The number of the last patch the tree holds, as given to
      `build`; `None` for the whole series.

  Returns:
    What was checked, one line each.

  Raises:
    AssertionError: if a file of the `git am` result differs from the source
      `tokamax_softcap.patched` executes (through patch `through`: see
      `patched.patched_source`), or a Python file that a patch
      changes does not compile as that patch leaves it (e.g. upstream's test
      module, which `run_upstream_test` edits before it runs).
  """
  tree = pathlib.Path(tree)
  if through is None:
    ours = "what tokamax_softcap.patched runs"
  else:
    ours = f"tokamax_softcap.patched's source through patch {through:04d}"
  log = _git(tree, "log", "--format=%s", f"{BASE_TAG}..HEAD").splitlines()
  report = [f"git am: {len(log)} patches applied to the wheel's files:"]
  report.extend(f"  {subject}" for subject in reversed(log))
  report.append(
      f"{_compile_patched_python(tree)} Python files, as each patch leaves"
      " them, compile."
  )
  for name in patched.MODULES:
    path = patched.upstream_path(name)
    if (tree / path).read_text() != patched.patched_source(name, through):
      raise AssertionError(f"{path}: `git am` gives other text than {ours}.")
    report.append(f"{path}: identical to {ours}.")
  return report


def _patch_number(value: str) -> int:
  """Parses `check --through`: the number of a patch of the series.

  Args:
    value: The option's text, e.g. `"0016"` or `"16"`.

  Returns:
    The number.

  Raises:
    argparse.ArgumentTypeError: if no patch of the series has that number.
  """
  try:
    through = int(value)
    series_through(through)
  except ValueError as e:
    series = patched.series()
    raise argparse.ArgumentTypeError(
        f"{value!r} is not the number of a patch of the series"
        f" ({series[0].name[:4]}-{series[-1].name[:4]})"
    ) from e
  return through


def add_arguments(parser: argparse.ArgumentParser):
  """Declares `main`'s arguments as the command line's actions and options."""
  actions = parser.add_subparsers(dest="action", required=True, title="actions")

  def add(name, summary):
    return actions.add_parser(name, help=summary, description=summary)

  check_parser = add(
      "check",
      "git am the series in a temporary tree, compare the result with the"
      " package, run upstream's tests of the series",
  )
  check_parser.add_argument(
      "--through",
      metavar="N",
      type=_patch_number,
      help="apply and check the series through patch N only (e.g. 0016 or"
      " 16), as a pull request of its first patches (default: the whole"
      " series)",
  )
  check_parser.add_argument(
      "pytest_args", nargs="*", help="more pytest arguments (after --)"
  )
  add("tree", "build a tree with the series applied, to edit").add_argument(
      "tree", metavar="DIR", type=pathlib.Path, help="directory to create"
  )
  export_parser = add(
      "export", "git format-patch a tree's commits into the series"
  )
  export_parser.add_argument(
      "tree",
      metavar="TREE",
      type=pathlib.Path,
      help="a tree made by `patch tree`",
  )
  export_parser.add_argument(
      "--out",
      metavar="DIR",
      type=pathlib.Path,
      help="directory to write the series to, replacing the *.patch files"
      " there (default: the source checkout's patches/; required where the"
      " package is installed, not run from a checkout)",
  )
  show_parser = add("show", "print the patched source of a module, as it runs")
  show_parser.add_argument(
      "module",
      metavar="MODULE",
      choices=patched.MODULES,
      help=", ".join(patched.MODULES),
  )
  show_parser.add_argument(
      "--through",
      metavar="N",
      type=int,
      help="apply the series through patch N only, e.g. to bisect it"
      " (default: the whole series)",
  )


def main(
    action: str,
    *,
    tree: pathlib.Path | str | None = None,
    out: pathlib.Path | str | None = None,
    module: str | None = None,
    through: int | None = None,
    pytest_args: Sequence[str] = (),
) -> int:
  """Runs `python -m tokamax_softcap patch ACTION` (see the module docstring).

  Args:
    action: `"tree"`, `"export"`, `"check"` or `"show"`.
    tree: The tree's directory (`tree`, `export`).
    out: Where `export` writes the series (see `export`).
    module: The module `show` prints, one of `patched.MODULES`.
    through: For `show` and `check`, the number of the last patch to apply
      (`None`: all).
    pytest_args: More arguments for upstream's tests (`check`).

  Returns:
    The exit code: 0; 2 if `export` has nowhere to write (it says why on
    stderr); for `check`, pytest's.

  Raises:
    ValueError: for another `action`; for `check`, if no patch of the series
      has the number `through`.
  """
  if action not in ("tree", "export", "check", "show"):
    raise ValueError(f"Unknown action {action!r}.")
  if action == "tree":
    tree = build(tree)
    print(f"{tree}: the tokamax wheel's files (tag {BASE_TAG}), with the")
    print("series applied by `git am`. Edit and commit there, then")
    hint = "" if checkout_series_dir() else " --out DIR"
    print(f"`python -m tokamax_softcap patch export {tree}{hint}`.")
    return 0
  if action == "export":
    try:
      paths = export(tree, out)
    except ValueError as e:
      print(f"patch export: {e}", file=sys.stderr)
      return 2
    for path in paths:
      print(path)
    return 0
  if action == "show":
    print(patched.patched_source(module, through), end="")
    return 0
  with tempfile.TemporaryDirectory() as tmp:
    tree = build(pathlib.Path(tmp) / "tokamax", through=through)
    print("\n".join(check(tree, through)))
    print(f"upstream's own tests of the series (-k '{SERIES_TESTS}'):")
    result = run_upstream_test(tree, "-q", "-k", SERIES_TESTS, *pytest_args)
  print(result.stdout[-2000:] + result.stderr[-2000:])
  return result.returncode
