r"""Structural tags: the JSON format vLLM's tool parsers and SGLang send to grammar backends.

``{"type": "structural_tag", "format": {...}}`` describes an output as a tree of formats
(constant strings, JSON Schema, regex, EBNF, free text, sequences, alternatives, tags, triggered
tags, dispatch...). :func:`parse_structural_tag` validates it with pydantic models (errors name
the JSON path of the problem); :func:`structural_tag_to_ebnf` lowers it to one EBNF grammar whose
free-text regions are ``TagDispatch`` rules (docs/ebnf.md).

Special tokens. A string in the format that contains the text of one of the tokenizer's special
tokens (``<|channel|>``, ``<|call|>``...) matches that token there, and only that token (it
becomes ``Token(id)``); free text never contains special tokens. xgrammar 0.2.8 also lets
ordinary tokens spell such text; serving parsers read the special token, so xg2 does not.

What xg2 cannot express exactly raises ``UnsupportedSchemaError`` instead of approximating:
the token-level forms that constrain ordinary tokens or count tokens (``exclude_token``,
``any_tokens``, ``token_triggered_tags``, ``token_dispatch``, ``any_text.max_tokens``,
``token`` naming an ordinary text token), JSON-schema styles other than ``json``, ``qwen_xml``
and ``glm_xml``, and ``any_text`` with both ``excludes`` and ``max_chars``.

XML-style arguments. ``json_schema`` with ``style="qwen_xml"`` (Qwen3-Coder) spells an object's
members as ``<parameter=NAME>\nVALUE\n</parameter>\n``, ``style="glm_xml"`` (GLM 4.5-4.7) as
``<arg_key>NAME</arg_key>\n<arg_value>VALUE</arg_value>\n`` (both line breaks optional: GLM 4.7
writes none), as the chat templates render them:
members in schema order (optional ones may be left out), a string member's value is its raw
text (no quotes or escapes; ``enum``/``const``/``pattern`` apply to that text), any other
member's value is JSON valid under the member's schema. The schema must be an object schema;
an object without declared properties takes any members with raw-text values.

Whitespace. ``any_whitespace=False`` (vLLM's ``disable_any_whitespace``) makes the JSON of
every ``json_schema`` format use fixed separators and no other whitespace, as
``compile_json_schema(any_whitespace=False)`` does.
"""

from __future__ import annotations

import json
import weakref
from typing import Annotated, Any, Dict, List, Literal, Optional, Tuple, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import _native
from .compiler import ebnf_string_literal
from .exceptions import SchemaError, UnsupportedSchemaError

__all__ = [
    "StructuralTagError",
    "StructuralTag",
    "Format",
    "ConstStringFormat",
    "JSONSchemaFormat",
    "GrammarFormat",
    "RegexFormat",
    "AnyTextFormat",
    "SequenceFormat",
    "OrFormat",
    "OptionalFormat",
    "PlusFormat",
    "StarFormat",
    "RepeatFormat",
    "TagFormat",
    "TriggeredTagsFormat",
    "TagsWithSeparatorFormat",
    "DispatchFormat",
    "TokenFormat",
    "ExcludeTokenFormat",
    "AnyTokensFormat",
    "TokenTriggeredTagsFormat",
    "TokenDispatchFormat",
    "parse_structural_tag",
    "structural_tag_to_ebnf",
]


class StructuralTagError(SchemaError):
    """A structural tag that does not follow the format (the message names the JSON path)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


TokenRef = Union[int, str]


class ConstStringFormat(_Model):
    """Exactly ``value``."""

    type: Literal["const_string"] = "const_string"
    value: str


JsonSchemaStyle = Literal[
    "json", "qwen_xml", "minimax_xml", "minimax_m3_xml", "deepseek_xml", "glm_xml",
    "cohere_xml", "kimi_k3_xml", "deepseek_v4_1_xml",
]


class JSONSchemaFormat(_Model):
    """A JSON value (``style="json"``) valid under ``json_schema``."""

    type: Literal["json_schema"] = "json_schema"
    json_schema: Union[bool, Dict[str, Any]]
    style: JsonSchemaStyle = "json"
    any_order: bool = False
    max_whitespace_cnt: Optional[int] = Field(default=None, ge=0)
    excludes: List[str] = []


class QwenXMLParameterFormat(_Model):
    """Deprecated spelling of ``JSONSchemaFormat(style="qwen_xml")``."""

    type: Literal["qwen_xml_parameter"] = "qwen_xml_parameter"
    json_schema: Union[bool, Dict[str, Any]]


class GrammarFormat(_Model):
    """Text of an EBNF grammar whose root rule is ``root``."""

    type: Literal["grammar"] = "grammar"
    grammar: str


class RegexFormat(_Model):
    """Text matching ``pattern`` as a whole."""

    type: Literal["regex"] = "regex"
    pattern: str


class AnyTextFormat(_Model):
    """Free text (any UTF-8, no special tokens) without the ``excludes`` substrings."""

    type: Literal["any_text"] = "any_text"
    excludes: List[str] = []
    max_tokens: Optional[int] = Field(default=None, ge=0, le=2_147_483_647)
    max_chars: Optional[int] = Field(default=None, ge=0, le=2_147_483_647)


class TokenFormat(_Model):
    """Exactly one token, by id or by its text."""

    type: Literal["token"] = "token"
    token: TokenRef


class ExcludeTokenFormat(_Model):
    """One token not in ``exclude_tokens`` (token-level; unsupported)."""

    type: Literal["exclude_token"] = "exclude_token"
    exclude_tokens: List[TokenRef] = []


class AnyTokensFormat(_Model):
    """Any tokens except ``exclude_tokens`` (token-level; unsupported)."""

    type: Literal["any_tokens"] = "any_tokens"
    exclude_tokens: List[TokenRef] = []
    max_tokens: Optional[int] = Field(default=None, ge=0, le=2_147_483_647)


class SequenceFormat(_Model):
    """The elements one after another."""

    type: Literal["sequence"] = "sequence"
    elements: List["Format"]


class OrFormat(_Model):
    """Any one of the elements."""

    type: Literal["or"] = "or"
    elements: List["Format"]


class OptionalFormat(_Model):
    type: Literal["optional"] = "optional"
    content: "Format"


class PlusFormat(_Model):
    type: Literal["plus"] = "plus"
    content: "Format"


class StarFormat(_Model):
    type: Literal["star"] = "star"
    content: "Format"


class RepeatFormat(_Model):
    """``content`` repeated ``min`` to ``max`` times (``max=-1``: unbounded)."""

    type: Literal["repeat"] = "repeat"
    min: int = Field(ge=0)
    max: int = Field(ge=-1)
    content: "Format"


class TagFormat(_Model):
    """``begin``, then ``content``, then ``end`` (or any one of several ends).

    When the content is ``any_text``, the end strings cannot occur inside it.
    """

    type: Literal["tag"] = "tag"
    begin: Union[str, TokenFormat]
    content: "Format"
    end: Union[str, List[str], TokenFormat]


class TriggeredTagsFormat(_Model):
    """Free text in which a trigger (a prefix of some tags' ``begin``) starts one of those tags.

    ``at_least_one``: the output starts with a tag. ``stop_after_first``: the output ends after
    the first tag. ``excludes``: strings that never occur in the free text.
    """

    type: Literal["triggered_tags"] = "triggered_tags"
    triggers: List[str]
    tags: List[TagFormat]
    at_least_one: bool = False
    stop_after_first: bool = False
    excludes: List[str] = []


class TokenTriggeredTagsFormat(_Model):
    type: Literal["token_triggered_tags"] = "token_triggered_tags"
    trigger_tokens: List[TokenRef]
    tags: List[TagFormat]
    exclude_tokens: List[TokenRef] = []
    at_least_one: bool = False
    stop_after_first: bool = False


class TagsWithSeparatorFormat(_Model):
    """Tags separated by ``separator`` and nothing else (zero or more, or per the flags)."""

    type: Literal["tags_with_separator"] = "tags_with_separator"
    tags: List[TagFormat]
    separator: str
    at_least_one: bool = False
    stop_after_first: bool = False


class DispatchFormat(_Model):
    """Free text in which each ``(pattern, format)`` rule's pattern hands over to its format."""

    type: Literal["dispatch"] = "dispatch"
    rules: List[Tuple[str, "Format"]]
    loop: bool = True
    excludes: List[str] = []


class TokenDispatchFormat(_Model):
    type: Literal["token_dispatch"] = "token_dispatch"
    rules: List[Tuple[TokenRef, "Format"]]
    loop: bool = True
    exclude_tokens: List[TokenRef] = []


# Discriminated by "type", so a validation error names the one format it is about.
Format = Annotated[
    Union[
        ConstStringFormat, JSONSchemaFormat, QwenXMLParameterFormat, GrammarFormat, RegexFormat,
        AnyTextFormat, TokenFormat, ExcludeTokenFormat, AnyTokensFormat, SequenceFormat, OrFormat,
        OptionalFormat, PlusFormat, StarFormat, RepeatFormat, TagFormat, TriggeredTagsFormat,
        TokenTriggeredTagsFormat, TagsWithSeparatorFormat, DispatchFormat, TokenDispatchFormat,
    ],
    Field(discriminator="type"),
]

for _model in (SequenceFormat, OrFormat, OptionalFormat, PlusFormat, StarFormat, RepeatFormat,
               TagFormat, TriggeredTagsFormat, TokenTriggeredTagsFormat, TagsWithSeparatorFormat,
               DispatchFormat, TokenDispatchFormat):
    _model.model_rebuild()


class StructuralTag(_Model):
    """The top level: ``{"type": "structural_tag", "format": {...}}``."""

    type: Literal["structural_tag"] = "structural_tag"
    format: Format


class _LegacyStructure(_Model):
    begin: str
    schema_: Union[Dict[str, Any], bool, str] = Field(alias="schema")
    end: str


class _LegacyStructuralTag(_Model):
    structures: List[_LegacyStructure]
    triggers: List[str]


def _legacy_to_format(legacy: _LegacyStructuralTag) -> TriggeredTagsFormat:
    tags = []
    for item in legacy.structures:
        schema = json.loads(item.schema_) if isinstance(item.schema_, str) else item.schema_
        tags.append(TagFormat(begin=item.begin, content=JSONSchemaFormat(json_schema=schema), end=item.end))
    return TriggeredTagsFormat(triggers=legacy.triggers, tags=tags)


def parse_structural_tag(value: Union[str, bytes, Dict[str, Any], StructuralTag]) -> StructuralTag:
    """Validates a structural tag (JSON text, dict or model), including the legacy
    ``{"structures": [...], "triggers": [...]}`` form; raises ``StructuralTagError``."""
    if isinstance(value, StructuralTag):
        return value
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise StructuralTagError(f"structural tag is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise StructuralTagError(f"structural tag must be a JSON object, got {type(value).__name__}")
    try:
        if "structures" in value and "format" not in value:
            return StructuralTag(format=_legacy_to_format(_LegacyStructuralTag.model_validate(value)))
        return StructuralTag.model_validate(value)
    except ValidationError as error:
        raise StructuralTagError(f"invalid structural tag: {_describe(error)}") from None


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:5]:
        path = "/".join(str(p) for p in item["loc"])
        parts.append(f"at /{path}: {item['msg']}")
    more = len(error.errors()) - 5
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


# ---- lowering to EBNF --------------------------------------------------------------------


_literal = ebnf_string_literal

# XML-style argument formats of json_schema: (before the name, between name and value, the
# string that ends a value, optional text after it). Each line break of a GLM member is
# optional: GLM 4.5/4.6 templates write them, GLM 4.7 does not.
_XML_STYLES: Dict[str, Tuple[str, Tuple[str, ...], str, str]] = {
    "qwen_xml": ("<parameter=", (">\n",), "\n</parameter>\n", ""),
    "glm_xml": ("<arg_key>", ("</arg_key>", "\n?", "<arg_value>"), "</arg_value>", "\n"),
}


class _SpecialTokens:
    """Special tokens of a vocabulary whose text names exactly one id."""

    def __init__(self, tokenizer_info: Any) -> None:
        self.by_text: Dict[str, int] = {}
        self.by_id: Dict[int, str] = {}
        self._lengths = {}
        if tokenizer_info is None:
            return
        vocab = tokenizer_info.decoded_vocab
        counts: Dict[str, int] = {}
        for tid in tokenizer_info.special_token_ids:
            if 0 <= tid < len(vocab) and vocab[tid]:
                text = vocab[tid].decode("utf-8", errors="replace")
                counts[text] = counts.get(text, 0) + 1
                self.by_text[text] = tid
        self.by_text = {t: i for t, i in self.by_text.items() if counts[t] == 1}
        self.by_id = {i: t for t, i in self.by_text.items()}
        # Lengths to try, longest first (a special token containing another wins), per first
        # character: a few dict probes per position instead of one per special token.
        self._lengths: Dict[str, List[int]] = {}
        for text in self.by_text:
            self._lengths.setdefault(text[0], []).append(len(text))
        self._lengths = {c: sorted(set(ls), reverse=True) for c, ls in self._lengths.items()}

    _cache: "weakref.WeakKeyDictionary[Any, _SpecialTokens]" = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, tokenizer_info: Any) -> "_SpecialTokens":
        """Built once per tokenizer (reading the vocabulary is the expensive part)."""
        if tokenizer_info is None:
            return cls(None)
        found = cls._cache.get(tokenizer_info)
        if found is None:
            found = cls._cache[tokenizer_info] = cls(tokenizer_info)
        return found

    def split(self, text: str) -> List[Union[str, int]]:
        """`text` as pieces: plain strings and special-token ids, in order."""
        pieces: List[Union[str, int]] = []
        start = i = 0
        while i < len(text):
            hit = next((text[i:i + n] for n in self._lengths.get(text[i], ()) if text[i:i + n] in self.by_text), None)
            if hit is None:
                i += 1
                continue
            if i > start:
                pieces.append(text[start:i])
            pieces.append(self.by_text[hit])
            i += len(hit)
            start = i
        if start < len(text):
            pieces.append(text[start:])
        return pieces

    def resolve(self, token: TokenRef, tokenizer_info: Any, where: str) -> int:
        """The special token `token` names; ordinary tokens are token-level constraints."""
        if isinstance(token, str):
            if token in self.by_text:
                return self.by_text[token]
            raise UnsupportedSchemaError(
                f"{where}: {token!r} is not the text of a special token of this tokenizer; "
                "token-level constraints on ordinary tokens are not supported by the byte-level "
                "matcher"
            )
        if token in self.by_id:
            return token
        if tokenizer_info is None or not 0 <= token < tokenizer_info.vocab_size:
            raise StructuralTagError(f"{where}: token id {token} is outside the vocabulary")
        raise UnsupportedSchemaError(
            f"{where}: token {token} is an ordinary text token; token-level constraints on "
            "ordinary tokens are not supported by the byte-level matcher"
        )


class _Lowering:
    def __init__(self, tokenizer_info: Any, any_whitespace: bool = True) -> None:
        self._info = tokenizer_info
        self._any_whitespace = any_whitespace
        self._specials = _SpecialTokens.of(tokenizer_info)
        self._rules: List[str] = []
        self._counter = 0
        # Identical JSON schemas (one tool under several tag spellings, as Harmony has) share
        # one embedded grammar: keyed by the schema text and the whitespace bound.
        self._json_rules: Dict[Tuple[str, Optional[int]], str] = {}

    def grammar(self, tag: StructuralTag) -> str:
        root = self.lower(tag.format, "format")
        return "\n".join([f"root ::= {root}"] + self._rules) + "\n"

    def _rule(self, body: str, hint: str) -> str:
        self._counter += 1
        name = f"st_{hint}_{self._counter}"
        self._rules.append(f"{name} ::= {body}")
        return name

    def pieces(self, value: str) -> str:
        """`value` as juxtaposed literals and Token(id) terms (special-token text becomes the
        token), the form TagDispatch strings take."""
        if value == "":
            return '""'
        return " ".join(f"Token({p})" if isinstance(p, int) else _literal(p) for p in self._specials.split(value))

    def text(self, value: str) -> str:
        """EBNF expression for the text `value` (one unit: parenthesised when several pieces)."""
        pieces = self.pieces(value)
        return pieces if len(self._specials.split(value)) <= 1 else f"({pieces})"

    def _string_tuple(self, values: List[str], where: str) -> str:
        for v in values:
            if v == "":
                raise StructuralTagError(f"{where}: strings must not be empty")
        inner = ", ".join(self.pieces(v) for v in values)
        return "(" + inner + ("," if len(values) == 1 else "") + ")"

    def _token_text(self, token: TokenFormat, where: str) -> str:
        return f"Token({self._specials.resolve(token.token, self._info, where)})"

    def _begin_end_text(self, value: Union[str, TokenFormat], where: str) -> str:
        return self._token_text(value, where) if isinstance(value, TokenFormat) else self.text(value)

    def lower(self, fmt: Any, where: str) -> str:
        method = getattr(self, "_lower_" + fmt.type)
        return method(fmt, where)

    # -- leaves

    def _lower_const_string(self, fmt: ConstStringFormat, where: str) -> str:
        return self.text(fmt.value)

    def _lower_json_schema(self, fmt: JSONSchemaFormat, where: str) -> str:
        if fmt.style not in _XML_STYLES and fmt.style != "json":
            raise UnsupportedSchemaError(
                f"{where}: json_schema style {fmt.style!r} is not supported "
                f"(supported: 'json', {', '.join(repr(s) for s in _XML_STYLES)})"
            )
        if fmt.excludes:
            raise UnsupportedSchemaError(f"{where}: json_schema excludes are not supported")
        if fmt.any_order and fmt.style != "json":
            raise UnsupportedSchemaError(f"{where}: json_schema any_order is supported only with style 'json'")
        schema = fmt.json_schema
        if schema is True:
            schema = {}
        if schema is False:
            raise StructuralTagError(f"{where}: the JSON schema `false` matches nothing")
        if fmt.style in _XML_STYLES:
            return self._xml_arguments(schema, _XML_STYLES[fmt.style], fmt.max_whitespace_cnt, where)
        return self._json_value(schema, fmt.max_whitespace_cnt, fmt.any_order)

    def _json_value(self, schema: Dict[str, Any], max_whitespace: Optional[int], any_order: bool = False) -> str:
        text = json.dumps(schema)  # key order matters: members follow the schema order
        key = (text, max_whitespace, any_order)
        if key not in self._json_rules:
            ebnf, _ = _native._json_schema_to_ebnf(
                text, any_whitespace=self._any_whitespace, indent=None,
                separators=None, strict_mode=True,
                max_whitespace=max_whitespace, lenient=False, any_order=any_order,
            )
            self._json_rules[key] = self._embed(ebnf, "json")
        return self._json_rules[key]

    def _xml_arguments(self, schema: Dict[str, Any], style: Tuple[str, Tuple[str, ...], str, str],
                       max_whitespace: Optional[int], where: str) -> str:
        """An object's members in an XML-style argument format (module docstring)."""
        name_open, between, value_close, trailer = style
        # "x?" in `between` is an optional "x"
        name_close = " ".join(f"({self.text(p[:-1])})?" if p.endswith("?") else self.text(p) for p in between)
        after = f" ({self.text(trailer)})?" if trailer else ""
        if schema.get("type", "object") != "object":
            raise UnsupportedSchemaError(f"{where}: XML-style arguments need an object schema, got type {schema.get('type')!r}")
        unsupported = sorted(set(schema) & {"patternProperties", "minProperties", "maxProperties", "propertyNames",
                                            "dependentRequired", "dependentSchemas", "allOf", "anyOf", "oneOf",
                                            "not", "if", "$ref"})
        if unsupported:
            raise UnsupportedSchemaError(f"{where}: XML-style arguments do not support {', '.join(unsupported)} on the object")
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        missing = sorted(required - set(properties))
        if missing:
            raise UnsupportedSchemaError(f"{where}: required members {missing} have no schema in properties")
        definitions = {k: schema[k] for k in ("$defs", "definitions") if k in schema}
        if not properties:
            # Any members, raw-text values (an object schema without declared properties).
            name = self._rule(r'[^<>\n]+', "xml_name")
            value = self._rule(f"TagDispatch(stop_eos=false, stop_str=({self.pieces(value_close)},))", "xml_text")
            return self._rule(f"({self.text(name_open)} {name} {name_close} {value}{after})*", "xml_args")
        items = []
        for key, member in properties.items():
            member_where = f"{where}/json_schema/properties/{key}"
            head = f"{self.text(name_open + key)} {name_close}"
            value = self._xml_value(member, definitions, value_close, max_whitespace, member_where)
            items.append((self._rule(f"{head} {value}{after}", "xml_member"), key in required))
        # Members in schema order; optional ones may be left out.
        body = " ".join(item if needed else f"({item})?" for item, needed in items)
        return self._rule(body, "xml_args")

    def _xml_value(self, member: Any, definitions: Dict[str, Any], close: str, max_whitespace: Optional[int],
                   where: str) -> str:
        """A member's value followed by `close`: raw text for strings, JSON otherwise."""
        if member is True:
            member = {}
        if member is False:
            raise StructuralTagError(f"{where}: the JSON schema `false` matches nothing")
        if isinstance(member, dict) and member.get("type") == "string":
            limits = sorted(set(member) & {"minLength", "maxLength", "format", "contentEncoding", "$ref",
                                           "allOf", "anyOf", "oneOf", "not"})
            if limits:
                raise UnsupportedSchemaError(f"{where}: a raw-text XML value cannot enforce {', '.join(limits)}")
            closing = self.text(close)
            if "const" in member or "enum" in member:
                values = [member["const"]] if "const" in member else member["enum"]
                texts = [v for v in values if isinstance(v, str)]
                if not texts:
                    raise StructuralTagError(f"{where}: enum/const has no string value")
                return self._rule(f"({' | '.join(self.text(v) if v else chr(34) * 2 for v in texts)}) {closing}", "xml_enum")
            if "pattern" in member:
                return self._rule(f"{_native._regex_to_ebnf(member['pattern'])} {closing}", "xml_pattern")
            # Free text up to the first occurrence of the closing string (a stop string, so the
            # value can never contain it, even overlapping the close).
            return self._rule(f"TagDispatch(stop_eos=false, stop_str=({self.pieces(close)},))", "xml_text")
        sub = dict(member) if isinstance(member, dict) else member
        if definitions and isinstance(sub, dict):
            sub = {**definitions, **sub}
        return self._rule(f"{self._json_value(sub, max_whitespace)} {self.text(close)}", "xml_json")

    def _lower_qwen_xml_parameter(self, fmt: QwenXMLParameterFormat, where: str) -> str:
        return self._lower_json_schema(JSONSchemaFormat(json_schema=fmt.json_schema, style="qwen_xml"), where)

    def _lower_grammar(self, fmt: GrammarFormat, where: str) -> str:
        return self._embed(fmt.grammar, "grammar")

    def _embed(self, ebnf: str, hint: str) -> str:
        self._counter += 1
        prefix = f"st_{hint}_{self._counter}_"
        self._rules.append(_native._ebnf_prefix_rules(ebnf, "root", prefix).rstrip("\n"))
        return prefix + "root"

    def _lower_regex(self, fmt: RegexFormat, where: str) -> str:
        return self._rule(_native._regex_to_ebnf(fmt.pattern), "regex")

    def _lower_any_text(self, fmt: AnyTextFormat, where: str, ends: Tuple[str, ...] = ()) -> str:
        if fmt.max_tokens is not None:
            raise UnsupportedSchemaError(f"{where}: any_text.max_tokens counts tokens, which the byte-level matcher cannot")
        excludes = list(ends) + [e for e in fmt.excludes if e not in ends]
        if fmt.max_chars is not None:
            if excludes:
                raise UnsupportedSchemaError(f"{where}: any_text with both max_chars and excluded strings is not supported")
            return self._rule(f".{{0,{fmt.max_chars}}}", "text") if fmt.max_chars else '""'
        return self._rule(f"TagDispatch(excludes={self._string_tuple(excludes, where)})", "text")

    def _lower_token(self, fmt: TokenFormat, where: str) -> str:
        return self._token_text(fmt, where)

    def _unsupported_token_level(self, fmt: Any, where: str) -> str:
        raise UnsupportedSchemaError(
            f"{where}: {fmt.type} constrains ordinary tokens by id, which the byte-level matcher "
            "cannot express exactly"
        )

    _lower_exclude_token = _unsupported_token_level
    _lower_any_tokens = _unsupported_token_level
    _lower_token_triggered_tags = _unsupported_token_level
    _lower_token_dispatch = _unsupported_token_level

    # -- combinators

    def _lower_sequence(self, fmt: SequenceFormat, where: str) -> str:
        if not fmt.elements:
            raise StructuralTagError(f"{where}/elements: a sequence needs at least one element")
        parts = [self.lower(e, f"{where}/elements/{i}") for i, e in enumerate(fmt.elements)]
        return self._rule(" ".join(parts), "seq")

    def _lower_or(self, fmt: OrFormat, where: str) -> str:
        if not fmt.elements:
            raise StructuralTagError(f"{where}/elements: an or needs at least one element")
        parts = [self.lower(e, f"{where}/elements/{i}") for i, e in enumerate(fmt.elements)]
        return self._rule(" | ".join(parts), "or")

    def _lower_optional(self, fmt: OptionalFormat, where: str) -> str:
        return self._rule(f"({self.lower(fmt.content, where + '/content')})?", "opt")

    def _lower_plus(self, fmt: PlusFormat, where: str) -> str:
        return self._rule(f"({self.lower(fmt.content, where + '/content')})+", "plus")

    def _lower_star(self, fmt: StarFormat, where: str) -> str:
        return self._rule(f"({self.lower(fmt.content, where + '/content')})*", "star")

    def _lower_repeat(self, fmt: RepeatFormat, where: str) -> str:
        if fmt.max != -1 and fmt.max < fmt.min:
            raise StructuralTagError(f"{where}: repeat max {fmt.max} is below min {fmt.min}")
        bound = f"{{{fmt.min},}}" if fmt.max == -1 else f"{{{fmt.min},{fmt.max}}}"
        return self._rule(f"({self.lower(fmt.content, where + '/content')}){bound}", "repeat")

    def _ends(self, tag: TagFormat, where: str) -> List[str]:
        if isinstance(tag.end, TokenFormat):
            return []
        ends = [tag.end] if isinstance(tag.end, str) else list(tag.end)
        if not ends:
            raise StructuralTagError(f"{where}/end: a tag needs at least one end string")
        return ends

    def _lower_tag(self, tag: TagFormat, where: str, begin_override: Optional[str] = None) -> str:
        begin = begin_override if begin_override is not None else self._begin_end_text(tag.begin, where + "/begin")
        ends = self._ends(tag, where)
        if isinstance(tag.end, TokenFormat):
            end = self._token_text(tag.end, where + "/end")
            end_texts: Tuple[str, ...] = ()  # a special token never occurs in free text anyway
        else:
            end = " | ".join(self.text(e) for e in ends)
            end_texts = tuple(e for e in ends if e)
        text = tag.content if isinstance(tag.content, AnyTextFormat) else None
        if (text is not None and end_texts and len(end_texts) == len(ends) and text.max_chars is None
                and text.max_tokens is None):
            # Free text up to the first occurrence of an end string: the ends are stop strings,
            # exact even where an end overlaps itself ("\n</p>\n" after text ending in "\n</p>").
            excludes = [e for e in text.excludes if e not in end_texts]
            dispatch = self._rule(
                f"TagDispatch(stop_eos=false, stop_str={self._string_tuple(list(end_texts), where + '/end')}, "
                f"excludes={self._string_tuple(excludes, where + '/content')})",
                "text",
            )
            return self._rule(f"{begin} {dispatch}", "tag")
        if text is not None:
            content = self._lower_any_text(text, where + "/content", ends=end_texts)
        else:
            content = self.lower(tag.content, where + "/content")
        return self._rule(f"{begin} {content} ({end})", "tag")

    def _lower_triggered_tags(self, fmt: TriggeredTagsFormat, where: str) -> str:
        if not fmt.triggers:
            raise StructuralTagError(f"{where}/triggers: at least one trigger is required")
        if not fmt.tags:
            raise StructuralTagError(f"{where}/tags: at least one tag is required")
        by_trigger: Dict[str, List[str]] = {t: [] for t in fmt.triggers}
        for i, tag in enumerate(fmt.tags):
            if not isinstance(tag.begin, str):
                raise StructuralTagError(f"{where}/tags/{i}/begin: triggered tags need string begins")
            matching = [t for t in fmt.triggers if tag.begin.startswith(t)]
            if len(matching) != 1:
                raise StructuralTagError(
                    f"{where}/tags/{i}: begin {tag.begin!r} must start with exactly one trigger, "
                    f"found {len(matching)}"
                )
            trigger = matching[0]
            rest = tag.begin[len(trigger):]
            rest_text = self.text(rest) if rest else '""'
            by_trigger[trigger].append(self._lower_tag(tag, f"{where}/tags/{i}", begin_override=rest_text))
        pairs = []
        for trigger, alternatives in by_trigger.items():
            if not alternatives:
                continue
            rule = self._rule(" | ".join(alternatives), "trigger")
            pairs.append(f"({self.pieces(trigger)}, {rule})")
        loop = "false" if fmt.stop_after_first else "true"
        dispatch = self._rule(
            f"TagDispatch({', '.join(pairs)}, loop_after_dispatch={loop}, "
            f"excludes={self._string_tuple(fmt.excludes, where)})",
            "dispatch",
        )
        if not fmt.at_least_one:
            return dispatch
        first = self._rule(
            " | ".join(self._lower_tag(tag, f"{where}/tags/{i}") for i, tag in enumerate(fmt.tags)), "first"
        )
        return first if fmt.stop_after_first else self._rule(f"{first} {dispatch}", "triggered")

    def _lower_tags_with_separator(self, fmt: TagsWithSeparatorFormat, where: str) -> str:
        if not fmt.tags:
            raise StructuralTagError(f"{where}/tags: at least one tag is required")
        one = self._rule(" | ".join(self._lower_tag(t, f"{where}/tags/{i}") for i, t in enumerate(fmt.tags)), "one")
        if fmt.stop_after_first:
            body = one if fmt.at_least_one else f"{one}?"
        else:
            sep = self.text(fmt.separator)
            body = f"{one} ({sep} {one})*" if fmt.at_least_one else f"({one} ({sep} {one})*)?"
        return self._rule(body, "tags")

    def _lower_dispatch(self, fmt: DispatchFormat, where: str) -> str:
        pairs = []
        for i, (pattern, content) in enumerate(fmt.rules):
            if pattern == "":
                raise StructuralTagError(f"{where}/rules/{i}: the pattern must not be empty")
            rule = self._rule(self.lower(content, f"{where}/rules/{i}/1"), "dispatched")
            pairs.append(f"({self.pieces(pattern)}, {rule})")
        loop = "true" if fmt.loop else "false"
        args = pairs + [f"loop_after_dispatch={loop}", f"excludes={self._string_tuple(fmt.excludes, where)}"]
        return self._rule(f"TagDispatch({', '.join(args)})", "dispatch")


def structural_tag_to_ebnf(value: Union[str, bytes, Dict[str, Any], StructuralTag], tokenizer_info: Any = None,
                           *, any_whitespace: bool = True) -> str:
    """EBNF text for a structural tag (root rule ``root``). With ``tokenizer_info``, special
    token text in the format's strings becomes ``Token(id)``. ``any_whitespace=False`` makes
    the JSON of ``json_schema`` formats compact (vLLM's ``disable_any_whitespace``)."""
    tag = parse_structural_tag(value)
    return _Lowering(tokenizer_info, any_whitespace).grammar(tag)
