"""vLLM plugin: the ``xg2`` structured-output backend.

Installed with xg2_plugin and discovered through the ``vllm.general_plugins`` entry point,
so after ``pip install xg2-plugin``::

    vllm serve MODEL --structured-outputs-config.backend xg2

Offline, vLLM checks the config before it loads plugins, so load them first::

    import vllm.plugins
    vllm.plugins.load_general_plugins()
    llm = vllm.LLM(MODEL, structured_outputs_config={"backend": "xg2"})

Nothing here imports vLLM until :func:`register` runs.
"""

from __future__ import annotations

BACKEND_NAME = "xg2"
"""The value of ``structured_outputs_config.backend`` that selects this engine."""

__all__ = ["BACKEND_NAME", "register"]


def register() -> None:
    """Makes ``xg2`` a valid vLLM structured-output backend (idempotent).

    vLLM calls this in every process that loads plugins (frontend, engine core, workers), for
    every installed plugin, whether or not the user selected ``xg2``; so it never raises. On a
    vLLM whose internals the adapter cannot hook, it registers nothing and logs one warning
    that names the supported versions; vLLM then starts as if the plugin were absent, and
    selecting ``xg2`` fails there as an unknown backend.
    """
    import logging

    from ._patch import UnsupportedVLLMError, install

    try:
        install(BACKEND_NAME)
    except UnsupportedVLLMError as error:
        logging.getLogger("xg2_plugin.adapters.vllm").warning("%s; the xg2 backend is not registered", error)
