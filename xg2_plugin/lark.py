"""Telling Lark grammar text from EBNF (GBNF) text, for serving requests that carry either
in one ``grammar`` field (vLLM's ``structured_outputs.grammar``, SGLang's ``ebnf``)."""

from __future__ import annotations

import re

__all__ = ["looks_like_lark"]

_COMMENT = re.compile(r"(#|//).*$")


def looks_like_lark(text: str) -> bool:
    """True when no line of ``text`` (comments removed) defines a rule with ``::=``: the test
    vLLM applies before handing a grammar to xgrammar's Lark compiler, so a request reaches
    the same compiler (``GrammarCompiler.compile_lark``) as it would there."""
    if not isinstance(text, str) or not text.strip():
        return False
    return all("::=" not in _COMMENT.sub("", line) for line in text.split("\n"))
