"""What `conftest.py` sets up: CPU devices, GPU memory, compilation caches."""

import json
import os
import pathlib
import subprocess
import sys

_TESTS = pathlib.Path(__file__).parent
# What a process that imports `conftest.py` has; on the CPU backend alone,
# whatever the machine, so that no GPU is needed.
_PROBE = """
import json
import os
import conftest
import jax
print(json.dumps(dict(
    devices=jax.device_count(),
    cache=jax.config.jax_compilation_cache_dir,
    preallocate=os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"],
)))
"""
# The variables `conftest.py` reads, which a probe sets itself or leaves
# unset.
_SETTINGS = (
    "JAX_COMPILATION_CACHE_DIR",
    "JAX_NUM_CPU_DEVICES",
    "PYTEST_XDIST_WORKER",
    "XLA_FLAGS",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
)


def test_conftest_gives_each_worker_its_own_cache():
  cases = {
      "main": {},
      "gw0": {"PYTEST_XDIST_WORKER": "gw0"},
      "gw1": {
          "PYTEST_XDIST_WORKER": "gw1",
          "XLA_PYTHON_CLIENT_PREALLOCATE": "true",
      },
  }
  environ = {k: v for k, v in os.environ.items() if k not in _SETTINGS}
  probes = {
      name: subprocess.Popen(
          [sys.executable, "-c", _PROBE],
          cwd=_TESTS,
          env=environ | {"JAX_PLATFORMS": "cpu"} | env,
          stdout=subprocess.PIPE,
          text=True,
      )
      for name, env in cases.items()
  }
  found = {}
  for name, probe in probes.items():
    stdout, _ = probe.communicate()
    assert probe.returncode == 0, name
    found[name] = json.loads(stdout)
  cache = _TESTS.parent / ".jax_cache"
  assert {n: f["cache"] for n, f in found.items()} == {
      n: str(cache / n) for n in cases
  }
  assert {f["devices"] for f in found.values()} == {4}
  # Unless set already, GPU memory is allocated as the tests use it.
  assert {n: f["preallocate"] for n, f in found.items()} == {
      "main": "false",
      "gw0": "false",
      "gw1": "true",
  }
