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


SUPPORTED_SGLANG_INTERNALS = (
    "sglang.srt.constrained.base_grammar_backend: register_grammar_backend, BaseGrammarBackend, "
    "BaseGrammarObject, GrammarRow, GrammarStats, InvalidGrammarObject; "
    "sglang.srt.server_args: GRAMMAR_BACKEND_CHOICES, add_grammar_backend_choices, ServerArgs; "
    "optionally sglang.srt.speculative.spec_utils: traverse_tree (draft-tree masks, adapters/sglang/speculative.py)"
)
"""What the adapter needs from SGLang (present in the SGLang release the project tests)."""


def register() -> None:
    """Adds ``xg2`` to SGLang's ``--grammar-backend`` choices and registers its factory.

    Idempotent; called with no arguments by ``sglang.srt.plugins.load_plugins()`` in every
    SGLang process, whether or not the user selected ``xg2``, so it never raises: on an SGLang
    that lacks the grammar-backend registry the adapter hooks, it registers nothing and logs
    one warning, and SGLang starts as if the plugin were absent.
    """
    import logging

    try:
        from sglang.srt.constrained.base_grammar_backend import register_grammar_backend
        from sglang.srt.server_args import GRAMMAR_BACKEND_CHOICES, add_grammar_backend_choices

        from .backend import create_xg2_backend
    except (ImportError, AttributeError) as error:
        logging.getLogger("xg2_plugin.adapters.sglang").warning(
            "the xg2 grammar backend is not registered: this SGLang lacks what the adapter needs "
            "(%s: %s; it needs %s)", type(error).__name__, error, SUPPORTED_SGLANG_INTERNALS,
        )
        return
    if BACKEND_NAME not in GRAMMAR_BACKEND_CHOICES:
        add_grammar_backend_choices([BACKEND_NAME])
    register_grammar_backend(BACKEND_NAME, create_xg2_backend)
    from .speculative import install as install_native_draft_trees

    install_native_draft_trees()
