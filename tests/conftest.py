pytest_plugins = ("tokamax_softcap.pytest_plugin",)
