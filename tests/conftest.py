import jax

# Without a GPU, four CPU devices for the sharding tests (`test_sharding.py`).
# Set before JAX creates its backends; a GPU backend's devices are unchanged.
jax.config.update("jax_num_cpu_devices", 4)

pytest_plugins = ("tokamax_softcap.pytest_plugin",)
