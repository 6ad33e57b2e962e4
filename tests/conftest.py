import os

# Without a GPU, four CPU devices for the sharding tests (`test_sharding.py`).
# Set before JAX is imported; it does not change a GPU backend's devices.
_FLAG = "--xla_force_host_platform_device_count"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_FLAG}=4"

pytest_plugins = ("tokamax_softcap.pytest_plugin",)
