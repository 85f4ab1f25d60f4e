"""SGLang grammar backend ``xg2`` (installed as ``xg2_plugin.adapters.sglang``).

SGLang discovers it through the ``sglang.srt.plugins`` entry point, which calls
:func:`register` in every SGLang process (server, engine and spawned schedulers). After that,
``sglang serve --model-path MODEL --grammar-backend xg2`` (or
``sgl.Engine(..., grammar_backend="xg2")``) compiles and matches grammars with this engine.

Nothing here imports SGLang until :func:`register` runs, so the engine itself works without
SGLang installed.
"""

from __future__ import annotations

__all__ = ["BACKEND_NAME", "register"]

BACKEND_NAME = "xg2"


def register() -> None:
    """Adds ``xg2`` to SGLang's ``--grammar-backend`` choices and registers its factory.

    Idempotent; called with no arguments by ``sglang.srt.plugins.load_plugins()``.
    """
    from sglang.srt.constrained.base_grammar_backend import register_grammar_backend
    from sglang.srt.server_args import GRAMMAR_BACKEND_CHOICES, add_grammar_backend_choices

    from .backend import create_xg2_backend

    if BACKEND_NAME not in GRAMMAR_BACKEND_CHOICES:
        add_grammar_backend_choices([BACKEND_NAME])
    register_grammar_backend(BACKEND_NAME, create_xg2_backend)
