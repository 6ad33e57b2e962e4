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

# Compiled programs are cached on disk (`.jax_cache/` in the repository, shared
# by the pytest workers; delete it to reclaim the space), unless a cache is
# configured already: cases that compile the same kernels reuse them, and a
# second run skips most of the compilation (on the CPU, `test_soft_cap.py -k
# f32_gradients` took 89 s cold and 30 s warm). A worker that reads an entry
# another is still writing gets a warning from JAX and compiles anew.
if not jax.config.jax_compilation_cache_dir:
  _CACHE = pathlib.Path(__file__).parent.parent / ".jax_cache"
  jax.config.update("jax_compilation_cache_dir", str(_CACHE))
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)

pytest_plugins = ("tokamax_softcap.pytest_plugin",)
