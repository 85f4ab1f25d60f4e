"""``Grammar``: a grammar before it is compiled for a vocabulary (xgrammar's ``Grammar``).

A ``Grammar`` remembers where it came from (its source and options) and prints as EBNF.
``GrammarCompiler.compile_grammar(grammar)`` compiles it from that source with the matching
``compile_*`` call, so a ``Grammar.from_json_schema(schema)`` compiles to the same grammar,
cache entry and masks as ``compile_json_schema(schema)``. Only ``union`` and ``concat``,
which have no frontend of their own, compile from their printed EBNF.

Building a ``Grammar`` runs the frontend once (no vocabulary needed), so bad input raises
here, with the same typed errors as the ``compile_*`` calls.
"""

from __future__ import annotations

import json
import warnings
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Union

from . import _native

if TYPE_CHECKING:
    from concurrent.futures import Future

    from .compiler import CompiledGrammar, GrammarCompiler
    from .structural_tag import StructuralTag
    from .tokenizer_info import TokenizerInfo

_SERIAL_FORMAT = "xg2_plugin.Grammar"
_SERIAL_VERSION = 1

# The keyword arguments each source kind passes to its compile_*_async call, by name; a
# deserialized grammar may carry only these (anything else is a DeserializationError).
_OPTIONS = {
    "ebnf": ("root_rule_name",),
    "json_schema": ("any_whitespace", "indent", "separators", "strict_mode", "max_whitespace", "lenient",
                    "any_order", "any_key_spelling"),
    "regex": (),
    "structural_tag": (),
    "lark": (),
    "builtin_json": (),
    "composite": (),
}


class Grammar:
    """A grammar not yet compiled for a vocabulary. Build one with the ``from_*`` class
    methods, ``builtin_json_grammar``, ``union`` or ``concat``; ``str(grammar)`` is its EBNF
    (root rule ``root``); ``GrammarCompiler.compile_grammar(grammar)`` compiles it."""

    __slots__ = ("_kind", "_source", "_options", "_ebnf")

    def __init__(self, kind: str, source: str, options: Dict[str, Any], ebnf: str) -> None:
        # Private: the from_* methods check their input and print the EBNF.
        self._kind = kind
        self._source = source
        self._options = options
        self._ebnf = ebnf

    def __str__(self) -> str:
        return self._ebnf

    def to_string(self) -> str:
        """The grammar as EBNF text (root rule ``root``)."""
        return self._ebnf

    def __repr__(self) -> str:
        return f"Grammar(kind={self._kind!r}, ebnf_bytes={len(self._ebnf.encode('utf-8'))})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Grammar):
            return NotImplemented
        return (self._kind, self._source, self._options) == (other._kind, other._source, other._options)

    def __hash__(self) -> int:
        return hash((self._kind, self._source, json.dumps(self._options, sort_keys=True)))

    # ---- constructors ------------------------------------------------------------------

    @staticmethod
    def from_ebnf(ebnf_string: str, *, root_rule_name: str = "root") -> "Grammar":
        """A grammar from EBNF text (GBNF / xgrammar dialect, see docs/ebnf.md)."""
        _check_str(ebnf_string, "ebnf_string")
        _check_str(root_rule_name, "root_rule_name")
        printed = _native._ebnf_roundtrip(ebnf_string, root_rule_name)
        if root_rule_name != "root":  # printed rooted at ``root``: rules renamed ``r_<name>`` so none clashes
            printed = _rooted(_native._ebnf_prefix_rules(ebnf_string, root_rule_name, "r_"), "r_" + root_rule_name)
        return Grammar("ebnf", ebnf_string, {"root_rule_name": root_rule_name}, printed)

    @staticmethod
    def from_json_schema(
        schema: Any,
        *,
        any_whitespace: bool = True,
        indent: Optional[int] = None,
        separators: Optional[Tuple[str, str]] = None,
        strict_mode: bool = True,
        max_whitespace_cnt: Optional[int] = None,
        print_converted_ebnf: bool = False,
        any_order: bool = False,
        lenient: bool = False,
        any_key_spelling: bool = False,
    ) -> "Grammar":
        """A grammar from a JSON Schema (JSON text, dict, or pydantic model class); options as
        in ``GrammarCompiler.compile_json_schema`` (``max_whitespace_cnt`` is its
        ``max_whitespace``). ``print_converted_ebnf`` prints the EBNF to stdout."""
        from .compiler import _schema_to_text, _separators_pair

        text = _schema_to_text(schema)
        options = {
            "any_whitespace": bool(any_whitespace), "indent": indent,
            "separators": None if separators is None else list(_separators_pair(separators)),
            "strict_mode": bool(strict_mode), "max_whitespace": max_whitespace_cnt, "lenient": bool(lenient),
            "any_order": bool(any_order), "any_key_spelling": bool(any_key_spelling),
        }
        ebnf, dropped = _native._json_schema_to_ebnf(text, **_native_json_schema_options(options))
        for message in dropped:
            warnings.warn(message, UserWarning, stacklevel=2)
        return _printed(Grammar("json_schema", text, options, ebnf), print_converted_ebnf)

    @staticmethod
    def from_regex(regex_string: str, *, print_converted_ebnf: bool = False) -> "Grammar":
        """A grammar whose sentences are the strings that match ``regex_string`` whole."""
        _check_str(regex_string, "regex_string")
        ebnf = "root ::= " + _native._regex_to_ebnf(regex_string) + "\n"
        return _printed(Grammar("regex", regex_string, {}, ebnf), print_converted_ebnf)

    @staticmethod
    def from_structural_tag(structural_tag: Union[str, bytes, Dict[str, Any], "StructuralTag"]) -> "Grammar":
        """A grammar from a structural tag (the formats of ``compile_structural_tag``).
        Special-token text stays text in the printed EBNF; the compile reads it against
        the compiler's vocabulary, as ``compile_structural_tag`` does."""
        from .structural_tag import structural_tag_json

        text = structural_tag_json(structural_tag)
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as error:
                raise _native.InvalidArgumentError(f"structural tag is not valid UTF-8: {error}") from None
        return Grammar("structural_tag", text, {}, _native._structural_tag_to_ebnf(text))

    @staticmethod
    def from_lark(lark_string: str, *, tokenizer_info: Optional["TokenizerInfo"] = None,
                  named_grammars: Optional[Dict[str, Any]] = None) -> "Grammar":
        """A grammar from a Lark grammar (see ``compile_lark``). ``tokenizer_info`` is
        accepted for xgrammar's signature and only used to print special tokens;
        ``named_grammars`` is not supported (None or an empty dict)."""
        _check_str(lark_string, "lark_string")
        if named_grammars:
            raise _native.InvalidArgumentError("named_grammars (@name references) are not supported by from_lark")
        native_info = getattr(tokenizer_info, "_handle", tokenizer_info)
        return Grammar("lark", lark_string, {}, _native._lark_to_ebnf(lark_string, native_info))

    @staticmethod
    def builtin_json_grammar() -> "Grammar":
        """The grammar of any JSON value (``compile_builtin_json_grammar``)."""
        return Grammar("builtin_json", "", {}, _native._builtin_json_ebnf())

    @staticmethod
    def union(*grammars: "Grammar") -> "Grammar":
        """A sentence of any one of ``grammars``."""
        return _combined(grammars, " | ", "union")

    @staticmethod
    def concat(*grammars: "Grammar") -> "Grammar":
        """A sentence of each of ``grammars``, in order."""
        return _combined(grammars, " ", "concat")

    # ---- serialization -----------------------------------------------------------------

    def serialize_json(self) -> str:
        """JSON text that ``Grammar.deserialize_json`` reads back to an equal grammar."""
        return json.dumps({"format": _SERIAL_FORMAT, "version": _SERIAL_VERSION, "kind": self._kind,
                           "source": self._source, "options": self._options})

    @staticmethod
    def deserialize_json(json_string: str) -> "Grammar":
        """Reads ``serialize_json``'s text; the source runs through its frontend again.
        Anything else raises ``DeserializationError``."""
        try:
            data = json.loads(json_string)
        except (TypeError, ValueError) as error:
            raise _native.DeserializationError(f"serialized Grammar is not JSON: {error}") from None
        if not isinstance(data, dict) or data.get("format") != _SERIAL_FORMAT:
            raise _native.DeserializationError(f"not a serialized Grammar (expected format {_SERIAL_FORMAT!r})")
        if data.get("version") != _SERIAL_VERSION:
            raise _native.DeserializationError(
                f"serialized Grammar version {data.get('version')!r}; this engine reads {_SERIAL_VERSION}")
        kind, source, options = data.get("kind"), data.get("source"), data.get("options")
        if kind not in _OPTIONS or not isinstance(source, str) or not isinstance(options, dict) \
                or not set(options) <= set(_OPTIONS[kind]):
            raise _native.DeserializationError("serialized Grammar has an unknown kind, source or option")
        if kind == "json_schema":
            options = dict(options)
            separators = options.pop("separators", None)
            return Grammar.from_json_schema(source, separators=None if separators is None else tuple(separators),
                                            max_whitespace_cnt=options.pop("max_whitespace", None), **options)
        if kind == "ebnf":
            return Grammar.from_ebnf(source, **options)
        if kind == "regex":
            return Grammar.from_regex(source)
        if kind == "structural_tag":
            return Grammar.from_structural_tag(source)
        if kind == "lark":
            return Grammar.from_lark(source)
        if kind == "builtin_json":
            return Grammar.builtin_json_grammar()
        grammar = Grammar.from_ebnf(source)
        return Grammar("composite", source, {}, grammar._ebnf)

    # ---- compiling -----------------------------------------------------------------------

    def _compile(self, compiler: "GrammarCompiler", timeout: Optional[float],
                 asynchronous: bool) -> Union["CompiledGrammar", "Future[CompiledGrammar]"]:
        """This grammar's source through the matching ``compile_*`` call of ``compiler``
        (its ``_async`` form when ``asynchronous``): GrammarCompiler.compile_grammar."""
        args: Tuple[Any, ...] = (self._source,)
        options: Dict[str, Any] = {"timeout": timeout}
        if self._kind == "json_schema":
            method = "compile_json_schema"
            options.update(_native_json_schema_options(self._options))
        elif self._kind == "ebnf":
            method, args = "compile_grammar", (self._source, self._options["root_rule_name"])
        elif self._kind == "composite":
            method, args = "compile_grammar", (self._ebnf, "root")
        elif self._kind == "builtin_json":
            method, args = "compile_builtin_json_grammar", ()
        else:
            method = "compile_" + self._kind
        return getattr(compiler, method + ("_async" if asynchronous else ""))(*args, **options)


def _check_str(value: Any, what: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")


def _native_json_schema_options(options: Dict[str, Any]) -> Dict[str, Any]:
    native = dict(options)
    if native["separators"] is not None:
        native["separators"] = tuple(native["separators"])
    return native


def _printed(grammar: Grammar, print_ebnf: bool) -> Grammar:
    if print_ebnf:
        print(grammar._ebnf)
    return grammar


def _rooted(rules: str, root: str) -> str:
    """``rules`` with a rule ``root ::= <root>`` first (none of ``rules`` is named ``root``)."""
    return f"root ::= {root}\n{rules}"


def _combined(grammars: Tuple[Any, ...], separator: str, what: str) -> Grammar:
    """``grammars``' rules, each grammar's renamed under its own prefix (``g0_``, ``g1_``, ...:
    no two parts share a rule name, and none is ``root``), under a new root joining the
    parts' roots with ``separator``."""
    if not grammars:
        raise _native.InvalidArgumentError(f"Grammar.{what} needs at least one grammar")
    for index, grammar in enumerate(grammars):
        if not isinstance(grammar, Grammar):
            raise TypeError(f"Grammar.{what}: argument {index} is a {type(grammar).__name__}, not a Grammar")
    parts = [_native._ebnf_prefix_rules(grammar._ebnf, "root", f"g{index}_")
             for index, grammar in enumerate(grammars)]
    root = separator.join(f"g{index}_root" for index in range(len(grammars)))
    ebnf = _rooted("".join(parts), f"({root})")
    return Grammar("composite", ebnf, {}, _native._ebnf_roundtrip(ebnf, "root"))
