"""The ``xg2`` grammar backend for SGLang: per-request grammar objects and the backend.

SGLang drives a backend through ``BaseGrammarBackend`` (compile a request's grammar on its
executor, cache it, hand out copies) and ``BaseGrammarObject`` (one per request: token
masks, token acceptance, rollback). This module maps those calls onto the engine's
:class:`~xg2_plugin.GrammarCompiler` and :class:`~xg2_plugin.GrammarMatcher`; mask
application reuses SGLang's own kernels on accelerators and the engine's torch path on CPU.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from typing import Any, Callable, Iterable, List, Optional, Sequence

import torch
from sglang.srt.constrained.base_grammar_backend import (
    BaseGrammarBackend,
    BaseGrammarObject,
    GrammarRow,
    GrammarStats,
    InvalidGrammarObject,
)
from sglang.srt.server_args import ServerArgs

import xg2_plugin
from xg2_plugin import (
    CompiledGrammar,
    CompileLimits,
    GrammarCompiler,
    GrammarMatcher,
    TokenizerInfo,
    VocabType,
    XG2Error,
)
from xg2_plugin.lark import looks_like_lark
from xg2_plugin.stats import GRAMMAR_STATS

from ..lenient import LenientSchemas
from ..options import AdapterSettings, JsonLayout, cap_tag_whitespace, whitespace_from_pattern

__all__ = ["XG2Grammar", "XG2GrammarBackend", "create_xg2_backend"]

logger = logging.getLogger(__name__)

# SGLang's key for "any JSON value" (response_format json_object without a schema).
_ANY_JSON_KEY = "$$ANY$$"
# Errors that mean "this request's grammar is bad" rather than a bug: the engine's typed
# errors, and ValueError for malformed JSON / structural-tag validation.
_GRAMMAR_ERRORS = (XG2Error, ValueError)


class _GrammarStats(GrammarStats):
    """SGLang's per-request grammar statistics, with ``ebnf_size`` measured when SGLang's
    metrics read it: a compiled grammar prints its EBNF on first use (about the cost of
    converting it again), which a compile does not pay when metrics are off."""

    def __init__(self, compiled: CompiledGrammar, **fields: Any) -> None:
        self._compiled = compiled
        super().__init__(**fields)

    @property
    def ebnf_size(self) -> int:
        return len(self._compiled.ebnf)

    @ebnf_size.setter
    def ebnf_size(self, value: Optional[int]) -> None:
        """The dataclass's __init__ sets the field; the size always comes from the grammar."""

    def for_cache_hit(self) -> "_GrammarStats":
        """A copy for a request served from the cache (SGLang's copy() of a grammar)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.init and f.name != "ebnf_size"}
        fields.update(is_cache_hit=True, tree_traversal_time=[])
        return _GrammarStats(self._compiled, **fields)


class XG2Grammar(BaseGrammarObject):
    """One request's grammar state: a matcher over a shared compiled grammar.

    Args:
        compiled: the compiled grammar (shared by every copy); its tokenizer's stop ids are
            the model's EOS ids, allowed only where the grammar can end.
        key_string: the request's grammar text, kept for error messages.
        grammar_stats: SGLang's per-request grammar metrics.
        stats_log_interval_s: seconds between statistics log lines (None: none).

    Attributes:
        mask_fills: vocabulary-mask rows this request's grammar filled.
        mask_seconds: the time those fills took (a batched fill's time is shared evenly).
    """

    def __init__(
        self,
        compiled: CompiledGrammar,
        key_string: str,
        grammar_stats: Optional[GrammarStats] = None,
        stats_log_interval_s: Optional[float] = None,
    ) -> None:
        super().__init__()
        self.compiled = compiled
        self.key_string = key_string
        self.grammar_stats = grammar_stats
        self.matcher = GrammarMatcher(compiled)
        self.mask_fills = 0
        self.mask_seconds = 0.0
        self._stats_log_interval_s = stats_log_interval_s

    def _record_fill(self, seconds: float) -> None:
        self.mask_fills += 1
        self.mask_seconds += seconds

    def accept_token(self, token: int) -> None:
        """Consumes ``token``; a token the grammar rejects raises ``ValueError``.

        Tokens after termination are ignored (SGLang may report one more token for a
        request that is finishing).
        """
        if self.matcher.is_terminated():
            return
        self.current_token = token
        if not self.matcher.accept_token(token):
            raise ValueError(
                f"xg2: token {token} is not allowed by the grammar "
                f"(after {self.matcher.num_accepted_steps} accepted tokens); grammar: {self.key_string!r}"
            )

    def rollback(self, k: int) -> None:
        """Undoes the last ``k`` accepted tokens."""
        self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        """True once a stop token was accepted."""
        return self.matcher.is_terminated()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device: Any) -> torch.Tensor:
        """An all-allowed CPU bitmask of ``batch_size`` rows (filled on the CPU, then moved)."""
        return XG2GrammarBackend.allocate_vocab_mask(vocab_size, batch_size, device)

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        """Writes this request's allowed tokens into row ``idx`` of ``vocab_mask``."""
        start = time.perf_counter()
        self.matcher.fill_next_token_bitmask(vocab_mask, idx)
        seconds = time.perf_counter() - start
        self._record_fill(seconds)
        GRAMMAR_STATS.record_fills(1, seconds)
        GRAMMAR_STATS.maybe_log(logger, self._stats_log_interval_s)

    def traverse_draft_tree(
        self,
        retrieve_next_token: torch.Tensor,
        retrieve_next_sibling: torch.Tensor,
        draft_tokens: torch.Tensor,
        vocab_mask: torch.Tensor,
        time_threshold: float = -1.0,
        *,
        clear_skipped_rows: bool = True,
    ) -> bool:
        """Masks a whole speculative draft tree in one native call (xgrammar's name and
        arguments; see ``GrammarMatcher.traverse_draft_tree``). SGLang's own
        ``spec_utils.traverse_tree`` reaches it through adapters/sglang/speculative.py."""
        return self.matcher.traverse_draft_tree(
            retrieve_next_token, retrieve_next_sibling, draft_tokens, vocab_mask, time_threshold,
            clear_skipped_rows=clear_skipped_rows)

    @staticmethod
    def fill_vocab_mask_batched(entries: List[GrammarRow], vocab_mask: torch.Tensor) -> None:
        """Fills every listed row in parallel, without the GIL; unlisted rows stay untouched."""
        ours = [entry for entry in entries if isinstance(entry.grammar, XG2Grammar)]
        if ours:
            start = time.perf_counter()
            xg2_plugin.batch_fill_next_token_bitmask(
                [entry.grammar.matcher for entry in ours], vocab_mask, indices=[entry.row for entry in ours]
            )
            seconds = time.perf_counter() - start
            for entry in ours:
                entry.grammar._record_fill(seconds / len(ours))
            GRAMMAR_STATS.record_fills(len(ours), seconds)
            GRAMMAR_STATS.maybe_log(logger, ours[0].grammar._stats_log_interval_s)
        for entry in entries:
            if not isinstance(entry.grammar, XG2Grammar):
                entry.grammar.fill_vocab_mask(vocab_mask, entry.row)

    @staticmethod
    def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
        """Restores every row to all-allowed."""
        vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask: torch.Tensor, device: Any) -> torch.Tensor:
        """Copies the filled mask to the logits' device."""
        return XG2GrammarBackend.move_vocab_mask(vocab_mask, device)

    @staticmethod
    def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
        """Sets the logits of disallowed tokens to ``-inf`` in place."""
        XG2GrammarBackend.apply_vocab_mask(logits, vocab_mask)

    def copy(self) -> "XG2Grammar":
        """A fresh matcher (initial state) over the same compiled grammar."""
        stats = self.grammar_stats
        if isinstance(stats, _GrammarStats):
            stats = stats.for_cache_hit()
        elif stats is not None:
            stats = dataclasses.replace(stats, is_cache_hit=True, tree_traversal_time=[])
        GRAMMAR_STATS.record_request()
        return XG2Grammar(self.compiled, self.key_string, stats, self._stats_log_interval_s)

    def try_jump_forward(self, tokenizer: Any) -> None:
        """Jump-forward decoding is not used by SGLang 0.5.23; never offers a jump."""
        return None

    def __repr__(self) -> str:
        return f"XG2Grammar(key_string={self.key_string!r}, accepted={self.matcher.num_accepted_steps})"


class XG2GrammarBackend(BaseGrammarBackend):
    """Compiles SGLang's grammar requests with the engine (on SGLang's executor).

    Args:
        tokenizer: the model's Hugging Face tokenizer.
        vocab_size: the model's (possibly padded) vocabulary size; masks cover all of it and
            padding ids are never allowed.
        eos_token_ids: the model's EOS ids (several for some models); None uses the
            tokenizer's.
        any_whitespace: JSON output may use any whitespace between tokens (else compact).
        max_whitespace: cap on consecutive JSON whitespace characters, None for no cap; it
            also bounds the JSON formats of structural tags.
        settings: the operator's ``XG2_*`` settings (compile timeout, leniency, statistics
            log interval); None reads them from the environment.

    Compiled grammars persist across restarts and data-parallel workers when ``XG2_CACHE_DIR``
    names a directory (xg2_plugin/disk_cache.py): SGLang has no persistent grammar cache of its
    own, so every compiler of this backend reads and writes that directory.
    """

    def __init__(
        self,
        tokenizer: Any,
        vocab_size: int,
        eos_token_ids: Optional[Iterable[int]] = None,
        *,
        any_whitespace: bool = True,
        max_whitespace: Optional[int] = None,
        settings: Optional[AdapterSettings] = None,
    ) -> None:
        super().__init__()
        self.tokenizer_info = TokenizerInfo.from_huggingface(
            tokenizer, vocab_size=vocab_size, stop_token_ids=sorted(eos_token_ids) if eos_token_ids else None
        )
        self.vocab_size = vocab_size
        self.any_whitespace = any_whitespace
        self.max_whitespace = max_whitespace
        self.layout = JsonLayout(any_whitespace, max_whitespace if any_whitespace else None)
        self.settings = AdapterSettings.from_env() if settings is None else settings
        self._limits = CompileLimits(timeout_s=self.settings.compile_timeout_s)
        self._schemas = LenientSchemas(self.settings.lenient, logger)
        self.compiler = GrammarCompiler(self.tokenizer_info, limits=self._limits)
        GRAMMAR_STATS.watch_compiler(self.compiler)
        # Framed grammars (reserve_framing_tokens / compile_framed_grammar) compile for a table
        # in which the frame's control tokens are special: never grammar text, matched by id.
        self._framing_compiler = self.compiler

    def _compile(
        self, kind: str, key_string: str, compile_fn: Callable[[], CompiledGrammar]
    ) -> BaseGrammarObject:
        start = time.perf_counter()
        try:
            compiled = compile_fn()
        except _GRAMMAR_ERRORS as error:
            GRAMMAR_STATS.record_compile(time.perf_counter() - start, False)
            logger.warning("xg2: invalid %s grammar %r: %s", kind, key_string, error)
            return InvalidGrammarObject(f"{type(error).__name__}: {error}")
        GRAMMAR_STATS.record_compile(time.perf_counter() - start, True)
        GRAMMAR_STATS.maybe_log(logger, self.settings.stats_log_interval_s)
        stats = _GrammarStats(compiled, dispatch_type=kind)
        return XG2Grammar(compiled, key_string, stats, self.settings.stats_log_interval_s)

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        """A JSON Schema request (``$$ANY$$`` means any JSON value)."""
        if key_string == _ANY_JSON_KEY:
            return self._compile("json", key_string, self.compiler.compile_builtin_json_grammar)
        return self._compile(
            "json", key_string, lambda: self._schemas.compile(self.compiler, key_string, self.layout)
        )

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        """A regex request; the whole output must match."""
        return self._compile("regex", key_string, lambda: self.compiler.compile_regex(key_string))

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        """An EBNF request (also SGLang's ``full_assistant_ebnf``), root rule ``root``."""
        if looks_like_lark(key_string):  # Lark text in the EBNF field, as vLLM routes it
            return self._compile("ebnf", key_string, lambda: self.compiler.compile_lark(key_string))
        return self._compile("ebnf", key_string, lambda: self.compiler.compile_grammar(key_string))

    def dispatch_structural_tag(self, key_string: str) -> BaseGrammarObject:
        """A structural tag, in xgrammar's format or the legacy ``structures``/``triggers`` one."""
        def compile_tag() -> CompiledGrammar:
            tag = json.loads(key_string)
            _fill_missing_schemas(tag)
            tag = cap_tag_whitespace(_from_legacy(tag), self.layout.max_whitespace)
            return self.compiler.compile_structural_tag(tag, any_whitespace=self.any_whitespace)

        return self._compile("structural_tag", key_string, compile_tag)

    def reset(self) -> None:
        """Drops SGLang's cache and the engine's compiled-grammar caches."""
        super().reset()
        self.compiler.clear_cache()
        self._framing_compiler.clear_cache()

    # Response-template framing: SGLang's reasoning wrapper calls these for reasoning formats
    # whose answer is a native message (an ``AnswerFrame``), so the whole turn is one grammar.

    def reserve_framing_tokens(self, token_ids: Sequence[int]) -> None:
        """Lets ``token_ids`` match only as frame tokens (by id), never as grammar text.

        The engine never lets special tokens spell grammar text, so the frame's control tokens
        become special ids of the table framed grammars are compiled for.
        """
        info = self.tokenizer_info
        reserved = sorted(set(info.special_token_ids).union(token_ids))
        framing_info = TokenizerInfo(
            info.decoded_vocab,
            VocabType.RAW,
            vocab_size=info.vocab_size,
            stop_token_ids=info.stop_token_ids,
            add_prefix_space=info.add_prefix_space,
            special_token_ids=reserved,
        )
        self._framing_compiler = GrammarCompiler(framing_info, limits=self._limits)
        GRAMMAR_STATS.watch_compiler(self._framing_compiler)

    def compile_framed_grammar(
        self, grammar: BaseGrammarObject, frame: Callable[[dict], dict]
    ) -> Optional[BaseGrammarObject]:
        """Compiles ``frame(content)``, a structural tag that embeds ``grammar`` as its content.

        Returns:
            The framed grammar; None (SGLang then keeps its unframed wrapper) for a grammar
            object that is not this backend's; an invalid-grammar object, failing the request
            with the engine's message, when the frame uses a form the engine cannot enforce
            exactly (e.g. ``any_tokens`` for a thinking message).
        """
        if not isinstance(grammar, XG2Grammar):
            return None
        tag = cap_tag_whitespace(frame({"type": "grammar", "grammar": grammar.compiled.ebnf}), self.layout.max_whitespace)
        key_string = json.dumps(tag)
        return self._compile(
            "structural_tag",
            key_string,
            lambda: self._framing_compiler.compile_structural_tag(tag, any_whitespace=self.any_whitespace),
        )

    # Mask handling, also used by SGLang's reasoning wrapper for requests without a grammar.

    @staticmethod
    def allocate_vocab_mask(vocab_size: int, batch_size: int, device: Any) -> torch.Tensor:
        """An all-allowed int32 CPU bitmask ``[batch_size, ceil(vocab_size / 32)]``."""
        from sglang.srt.utils.common import is_pin_memory_available

        return torch.full(
            xg2_plugin.get_bitmask_shape(batch_size, vocab_size),
            -1,
            dtype=torch.int32,
            pin_memory=is_pin_memory_available(),
        )

    @staticmethod
    def move_vocab_mask(vocab_mask: torch.Tensor, device: Any) -> torch.Tensor:
        """Copies the mask to ``device`` (asynchronously where the source is pinned)."""
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
        """Masks ``logits`` in place with SGLang's kernel for the device (torch on CPU)."""
        device_type = logits.device.type
        if device_type == "cpu":
            xg2_plugin.apply_token_bitmask_inplace(logits, vocab_mask)
        elif device_type in ("cuda", "xpu", "musa"):
            if torch.version.hip is not None:
                from sgl_kernel import apply_token_bitmask_inplace_cuda

                apply_token_bitmask_inplace_cuda(logits, vocab_mask)
            else:
                from sglang.kernels.ops.grammar.bitmask_ops import apply_token_bitmask_inplace_triton

                apply_token_bitmask_inplace_triton(logits, vocab_mask)
        elif device_type == "npu":
            import sgl_kernel_npu  # noqa: F401  (registers torch.ops.npu.apply_token_bitmask)

            torch.ops.npu.apply_token_bitmask(logits, vocab_mask)
        else:
            raise RuntimeError(f"xg2: no token-bitmask kernel for device {device_type!r}")

    # Token filtering (strict thinking under SGLang's reasoning wrapper).

    @property
    def is_support_token_filter(self) -> bool:
        """The mask layout is SGLang's, so its token-filter kernels apply."""
        return True

    @staticmethod
    def set_token_filter(
        vocab_mask: torch.Tensor,
        token_ids: List[int],
        batch_idx: int,
        is_allowed: bool = True,
        reset_vocab_mask: bool = True,
    ) -> None:
        """Allows (or forbids) exactly ``token_ids`` in row ``batch_idx``, via SGLang's kernels."""
        if vocab_mask.device.type == "cuda" and torch.version.hip is None:
            from sglang.kernels.ops.grammar.token_filter_ops import set_token_filter_triton as set_filter
        else:
            from sglang.srt.constrained.torch_ops.token_filter_torch_ops import (
                set_token_filter_torch as set_filter,
            )
        set_filter(vocab_mask, token_ids, batch_idx, is_allowed=is_allowed, reset_vocab_mask=reset_vocab_mask)


def _fill_missing_schemas(node: Any) -> None:
    """Replaces absent tool schemas with ``{}`` (SGLang sends ``None`` for tools without parameters)."""
    if isinstance(node, dict):
        if node.get("type") in ("json_schema", "qwen_xml_parameter") and node.get("json_schema") is None:
            node["json_schema"] = {}
        if "begin" in node and "end" in node and "schema" in node and node["schema"] is None:
            node["schema"] = {}
        for value in node.values():
            _fill_missing_schemas(value)
    elif isinstance(node, list):
        for value in node:
            _fill_missing_schemas(value)


def _from_legacy(tag: Any) -> Any:
    """SGLang's legacy tag as the equivalent ``triggered_tags`` format; other tags unchanged.

    SGLang serialises its legacy response format with ``type`` and, for tool_choice required
    or a named function, ``at_least_one`` (the output starts with a tool call): fields of
    xgrammar's ``triggered_tags`` rather than of the legacy ``structures``/``triggers`` form.
    SGLang's built-in backend makes the same conversion.
    """
    if not (isinstance(tag, dict) and "structures" in tag and "format" not in tag):
        return tag
    structures = tag["structures"]
    if not (isinstance(structures, list) and all(isinstance(item, dict) for item in structures)):
        return tag  # malformed: the engine's validation names what is wrong
    tags = []
    for item in structures:
        schema = item.get("schema")
        if isinstance(schema, str):
            schema = json.loads(schema)
        content = {"type": "json_schema", "json_schema": schema}
        tags.append({"type": "tag", "begin": item.get("begin"), "content": content, "end": item.get("end")})
    triggered = {
        "type": "triggered_tags",
        "triggers": tag.get("triggers"),
        "tags": tags,
        "at_least_one": bool(tag.get("at_least_one", False)),
    }
    return {"type": "structural_tag", "format": triggered}


def server_json_layout(server_args: ServerArgs, settings: AdapterSettings) -> JsonLayout:
    """The whitespace JSON output may contain under SGLang's server flags.

    ``--constrained-json-whitespace-pattern``, when set, says it exactly (and takes precedence
    over ``--constrained-json-disable-any-whitespace``, as in SGLang's llguidance backend);
    ``--constrained-json-max-whitespace-cnt`` (else ``XG2_MAX_WHITESPACE``) caps every gap.
    """
    pattern = server_args.constrained_json_whitespace_pattern
    if pattern is not None:
        layout = whitespace_from_pattern(pattern, "--constrained-json-whitespace-pattern")
    else:
        layout = JsonLayout(any_whitespace=not server_args.constrained_json_disable_any_whitespace)
    cap = server_args.constrained_json_max_whitespace_cnt
    return layout.capped(settings.max_whitespace if cap is None else cap)


def create_xg2_backend(
    server_args: ServerArgs,
    tokenizer: Any,
    vocab_size: int,
    eos_token_ids: Optional[Iterable[int]] = None,
) -> BaseGrammarBackend:
    """SGLang's factory hook for ``--grammar-backend xg2``.

    Called as ``init_func(server_args, tokenizer, vocab_size, eos_token_ids)``. With
    ``--reasoning-parser``, the backend is wrapped in SGLang's ``ReasonerGrammarBackend`` (as
    SGLang does for its built-in backends), so the grammar applies after the reasoning block
    and ``--enable-strict-thinking`` filters tokens while thinking.

    Raises:
        ValueError: ``--constrained-json-whitespace-pattern`` is a pattern the engine cannot
            enforce exactly, or an ``XG2_*`` variable has a value it does not take (the server
            then fails to start with the message).
    """
    settings = AdapterSettings.from_env()
    layout = server_json_layout(server_args, settings)
    backend: BaseGrammarBackend = XG2GrammarBackend(
        tokenizer,
        vocab_size,
        eos_token_ids,
        any_whitespace=layout.any_whitespace,
        max_whitespace=layout.max_whitespace,
        settings=settings,
    )
    if server_args.reasoning_parser:
        from sglang.srt.constrained.reasoner_grammar_backend import ReasonerGrammarBackend
        from sglang.srt.parser.reasoning_parser import ReasoningParser

        parser = ReasoningParser(model_type=server_args.reasoning_parser, stream_reasoning=False, tokenizer=tokenizer)
        backend = ReasonerGrammarBackend(
            backend, parser, tokenizer, enable_strict_thinking=server_args.enable_strict_thinking
        )
    return backend
