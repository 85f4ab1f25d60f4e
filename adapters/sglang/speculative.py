"""Draft-tree masks for SGLang's speculative decoding in one native call.

SGLang (EAGLE and n-gram speculation) masks a draft tree with
``sglang.srt.speculative.spec_utils.traverse_tree``, a Python depth-first walk that calls
the grammar's ``accept_token`` / ``fill_vocab_mask`` / ``rollback`` once per node, whatever
the backend. :func:`install` wraps that function: for an xg2 grammar the whole walk runs in
native code (``GrammarMatcher.traverse_draft_tree``); any other grammar object (another
backend's, or SGLang's reasoning wrapper) goes to SGLang's own walk unchanged.

The rows are SGLang's: a node whose token the parent's mask forbids, or after which the
grammar is terminated, keeps its row as allocated (all tokens allowed), as in SGLang's walk;
xgrammar's own traversal would zero it, and a row that forbids every token can turn into
NaN probabilities in the sampler.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Callable

__all__ = ["install"]

logger = logging.getLogger("xg2_plugin.adapters.sglang")


def _native_traverse_tree(original: Callable[..., Any]) -> Callable[..., Any]:
    from .backend import XG2Grammar

    @functools.wraps(original)
    def traverse_tree(retrieve_next_token: Any, retrieve_next_sibling: Any, draft_tokens: Any,
                      grammar: Any, allocate_token_bitmask: Any, *args: Any, **kwargs: Any) -> Any:
        if type(grammar) is not XG2Grammar:
            return original(retrieve_next_token, retrieve_next_sibling, draft_tokens, grammar,
                            allocate_token_bitmask, *args, **kwargs)
        grammar.traverse_draft_tree(retrieve_next_token, retrieve_next_sibling, draft_tokens,
                                    allocate_token_bitmask, clear_skipped_rows=False)
        return None

    traverse_tree.xg2_native = True  # type: ignore[attr-defined]
    return traverse_tree


def install() -> None:
    """Wraps ``spec_utils.traverse_tree`` (idempotent). An SGLang without that function keeps
    its own path: the per-node calls reach the engine directly, only slower."""
    try:
        from sglang.srt.speculative import spec_utils
    except ImportError as error:
        logger.debug("speculative tree masks stay per node: %s", error)
        return
    original = getattr(spec_utils, "traverse_tree", None)
    if original is None or getattr(original, "xg2_native", False):
        return
    spec_utils.traverse_tree = _native_traverse_tree(original)
