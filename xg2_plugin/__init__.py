"""xg2_plugin: exact token masks for LLM constrained decoding.

Grammars (JSON Schema, EBNF, regex, choice lists) are compiled into per-rule finite-state
machines and matched by an Earley parser; every mask is exact. The API follows xgrammar's
shape so serving engines can switch with little friction:

>>> info = TokenizerInfo.from_huggingface(tokenizer)
>>> compiler = GrammarCompiler(info)
>>> matcher = GrammarMatcher(compiler.compile_json_schema(schema))
>>> bitmask = allocate_token_bitmask(1, info.vocab_size)
>>> matcher.fill_next_token_bitmask(bitmask)
"""

from .bitmask import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    get_bitmask_shape,
    reset_token_bitmask,
)
from .compiler import CompiledGrammar, CompileLimits, GrammarCompiler, shared_rule_dfa_stats
from .exceptions import (
    CompilationCancelledError,
    CompilationTimeoutError,
    ConcurrentUseError,
    DeserializationError,
    GrammarSyntaxError,
    InvalidArgumentError,
    RegexError,
    ResourceLimitError,
    SchemaError,
    StructuralTagError,
    UnsupportedSchemaError,
    XG2Error,
)
from .grammar import Grammar
from .matcher import GrammarMatcher, batch_fill_next_token_bitmask
from .batch_matcher import BatchGrammarMatcher
from .tokenizer_info import TokenizerInfo, VocabType

__version__ = "0.1.0"

# xgrammar's top-level names for structural tags and model presets, imported on first use
# (they load pydantic models that a JSON-only user never needs).
_LAZY = {
    "StructuralTag": ("structural_tag", "StructuralTag"),
    "StructuralTagItem": ("structural_tag", "StructuralTagItem"),
    "get_model_structural_tag": ("presets", "get_model_structural_tag"),
    "get_builtin_structural_tag": ("presets", "get_model_structural_tag"),
    "register_model_structural_tag": ("presets", "register_model_structural_tag"),
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'xg2_plugin' has no attribute {name!r}")
    import importlib

    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(f".{module}", __name__), attribute)
    globals()[name] = value
    return value

__all__ = [
    "TokenizerInfo",
    "VocabType",
    "Grammar",
    "GrammarCompiler",
    "CompiledGrammar",
    "CompileLimits",
    "shared_rule_dfa_stats",
    "GrammarMatcher",
    "batch_fill_next_token_bitmask",
    "BatchGrammarMatcher",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "get_bitmask_shape",
    "reset_token_bitmask",
    "XG2Error",
    "GrammarSyntaxError",
    "RegexError",
    "SchemaError",
    "UnsupportedSchemaError",
    "StructuralTagError",
    "ResourceLimitError",
    "InvalidArgumentError",
    "ConcurrentUseError",
    "CompilationCancelledError",
    "CompilationTimeoutError",
    "DeserializationError",
    *_LAZY,
]
