"""What `conftest.py` sets up: CPU devices, GPU memory, compilation caches."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

_TESTS = pathlib.Path(__file__).parent
# What a process that imports `conftest.py` has, as JSON.
_SETUP = """
import json
import os
import jax
setup = json.dumps(dict(
    devices=jax.device_count(),
    cache=jax.config.jax_compilation_cache_dir,
    min_compile_time=jax.config.jax_persistent_cache_min_compile_time_secs,
    preallocate=os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"],
))
"""
# A test that writes its process's setup to `$SETUP_OUT/<worker>.json`.
_WRITE_SETUP = _SETUP + """
def test_setup():
  out = os.environ["SETUP_OUT"]
  worker = os.environ["PYTEST_XDIST_WORKER"]
  with open(os.path.join(out, f"{worker}.json"), "w") as f:
    f.write(setup)
"""
# The variables `conftest.py` reads, which a test sets itself or leaves unset.
_SETTINGS = (
    "JAX_COMPILATION_CACHE_DIR",
    "JAX_NUM_CPU_DEVICES",
    "PYTEST_XDIST_WORKER",
    "XLA_FLAGS",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
)


def _environ(**settings):
  """Returns this process's environment without `_SETTINGS`, with `settings`.

  JAX takes the CPU alone, whatever the machine, so that no GPU is needed.
  """
  environ = {k: v for k, v in os.environ.items() if k not in _SETTINGS}
  return environ | {"JAX_PLATFORMS": "cpu"} | settings


def test_xdist_workers_cache_in_directories_of_their_own(tmp_path):
  tests = tmp_path / "tests"
  tests.mkdir()
  shutil.copy(_TESTS / "conftest.py", tests)
  (tests / "test_setup.py").write_text(_WRITE_SETUP)
  out = tmp_path / "out"
  out.mkdir()
  result = subprocess.run(
      [
          sys.executable,
          "-m",
          "pytest",
          "-q",
          "-n",
          "2",
          "-p",
          "no:cacheprovider",
      ]
      + ["--dist", "each", str(tests)],
      cwd=tmp_path,
      env=_environ(SETUP_OUT=str(out)),
      capture_output=True,
      text=True,
  )
  assert result.returncode == 0, result.stdout + result.stderr
  cache = tmp_path / ".jax_cache"
  assert {p.stem: json.loads(p.read_text()) for p in out.iterdir()} == {
      worker: dict(
          devices=4,  # For the sharding tests.
          cache=str(cache / worker),
          min_compile_time=0,
          preallocate="false",  # GPU memory as the tests use it.
      )
      for worker in ("gw0", "gw1")
  }


def test_conftest_keeps_what_is_set_already():
  # Without xdist, `.jax_cache/main`; a preallocation setting is kept.
  probe = subprocess.run(
      [sys.executable, "-c", f"import conftest\n{_SETUP}\nprint(setup)"],
      cwd=_TESTS,
      env=_environ(XLA_PYTHON_CLIENT_PREALLOCATE="true"),
      capture_output=True,
      text=True,
  )
  assert probe.returncode == 0, probe.stderr
  setup = json.loads(probe.stdout)
  assert setup["cache"] == str(_TESTS.parent / ".jax_cache" / "main")
  assert setup["preallocate"] == "true"
