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

    vLLM calls this in every process that loads plugins (frontend, engine core, workers).

    Raises:
        RuntimeError: the installed vLLM version is not one this adapter supports.
    """
    from ._patch import install

    install(BACKEND_NAME)
