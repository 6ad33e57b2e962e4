import os
import pathlib

import jax

# Without a GPU, four CPU devices for the sharding tests (`test_sharding.py`),
# unless a count is set already (`JAX_NUM_CPU_DEVICES`, or XLA's flag). Set
# before JAX creates its backends; a GPU backend's devices are unchanged.
if jax.config.jax_num_cpu_devices < 0 and (
    "--xla_force_host_platform_device_count"
    not in os.environ.get("XLA_FLAGS", "")
):
  jax.config.update("jax_num_cpu_devices", 4)

# XLA's CPU client runs computations on a pool of as many threads as the
# machine has cores, unless `NPROC` says otherwise (read once, when JAX
# creates the backend). Mosaic GPU's interpreter
# (`test_mosaic_vjp_interpret.py`) runs each warpgroup of a CTA as a
# computation of its own, and they wait on each other's barriers: with 2
# cores, patch 0033's kernel (three warpgroups, two of which meet at a
# barrier every step) hung with two of them holding both threads (jax
# 0.12.0.1). 8 threads for the whole session (its subprocesses inherit
# them), unless set already.
os.environ.setdefault("NPROC", "8")

# On a GPU, JAX's client takes 75% of the GPU's memory when JAX creates its
# backend, and each pytest-xdist worker (`-n`) is a client of its own: the
# second worker's allocations fail. Each worker takes only what it uses,
# unless the variable is set already. JAX reads it when it creates its
# backends (`xla_client.generate_pjrt_gpu_plugin_options`, called at their
# first use, not at `import jax`); the subprocesses of `test_series.py`
# inherit it.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# Compiled programs are cached on disk (`.jax_cache/` in the repository;
# delete it to reclaim the space), unless a cache is configured already: cases
# that compile the same kernels reuse them, and a second run skips most of the
# compilation (on the CPU, `test_soft_cap.py -k f32_gradients` took 89 s cold
# and 30 s warm). Every compilation is cached, however short: in the Pallas
# interpreter most take about 0.1 s, and tokamax's test harness traces and
# compiles each kernel anew each time it runs it (for the values, then again
# to check they are deterministic): with a cold cache, a run took 9-18% less
# CPU time than when only compilations of 0.5 s or more were cached (11 of
# upstream's cases, 12 sharded ones, 7 of upstream's tests of the series; CPU,
# 2026-12-04). Each pytest-xdist worker has a directory of its own
# (`.jax_cache/gw0`, ...; without xdist, `.jax_cache/main`): JAX writes an
# entry in place (`jax/_src/lru_cache.py`, `LRUCache.put`: no temporary file
# and rename, and no lock without a size limit), so a worker that read an
# entry another was still writing got a truncated executable, a warning
# ("Error reading persistent compilation cache entry") and compiled anew.
# On a GPU there is no cache: with jax 0.11.2 on an H200 some entries could
# not be read back whoever wrote them ("RET_CHECK failure (hlo_module.cc:947)
# ... Invalid metadata payload", the same warning; 6 of about 80 programs in
# each `bench` run of results/h200-2026-12-04-default-chain/README.md).
if not jax.config.jax_compilation_cache_dir and jax.default_backend() == "cpu":
  _CACHE = pathlib.Path(__file__).parent.parent / ".jax_cache"
  _WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
  jax.config.update("jax_compilation_cache_dir", str(_CACHE / _WORKER))
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)

pytest_plugins = ("tokamax_softcap.pytest_plugin",)
