r"""Structural tags: the JSON format vLLM's tool parsers and SGLang send to grammar backends.

``{"type": "structural_tag", "format": {...}}`` describes an output as a tree of formats
(constant strings, JSON Schema, regex, EBNF, free text, sequences, alternatives, tags, triggered
tags, dispatch...). The pydantic models below are the typed way to build one, and
:func:`parse_structural_tag` validates into them (errors name the JSON path of the problem).
:func:`structural_tag_to_ebnf` and ``GrammarCompiler.compile_structural_tag`` hand the JSON to
the native frontend (``native/frontends/structural_tag``), which validates it again (same rules,
errors naming the JSON path) and lowers it to one EBNF grammar whose free-text regions are
``TagDispatch`` rules (docs/ebnf.md); JSON text goes there without a Python-side parse.

Special tokens. A string in the format that contains the text of one of the tokenizer's special
tokens (``<|channel|>``, ``<|call|>``...) matches that token there, and only that token (it
becomes ``Token(id)``); free text never contains special tokens. xgrammar 0.2.8 also lets
ordinary tokens spell such text; serving parsers read the special token, so xg2 does not.
Where special-token texts overlap, the longest one that starts at a position wins. A text
shared by several special ids, or not valid UTF-8, stays plain text.

Token-level forms. ``token`` (an id, or a token's text), ``exclude_token``, ``any_tokens``,
``token_triggered_tags`` and ``token_dispatch`` take whole tokens, only at token boundaries;
stop tokens are never members of their sets. A token budget (``any_text.max_tokens``,
``any_tokens.max_tokens``) counts the tokens that begin inside the region (one that runs past
its end counts once); once spent, only what may follow the region is allowed, by the mask and
by ``accept_token`` alike, and ``rollback``/``fork`` restore the count exactly.

What xg2 cannot express exactly raises ``UnsupportedSchemaError`` instead of approximating:
``any_text`` with both ``max_chars`` and ``excludes`` or ``max_tokens``.

JSON-schema styles: the nine of xgrammar 0.2.8, with its language. ``WS`` below is a run of
JSON whitespace (space, tab, LF, CR; at most ``max_whitespace_cnt`` characters when set).
An argument object is its members in schema order (optional ones may be left out), each after
a ``WS``, then a ``WS``; with ``any_order``, members in any order, keys neither required nor
unique, their count in ``[max(minProperties, #required), maxProperties]``. In the flat styles a
string member's value is raw text up to the closing string (no quotes or escapes), a
``const``/``enum`` string is one of its values (``WS`` around it except in the DeepSeek styles),
a string with ``pattern`` is ``WS`` regex ``WS``, an untyped member is raw text or ``WS`` JSON
array/object ``WS``, any other member is ``WS`` JSON ``WS``. An object schema without declared
properties takes any members named ``[a-zA-Z_][a-zA-Z0-9_]*`` with untyped values.

- ``json``: the JSON value.
- ``qwen_xml`` (Qwen3-Coder, Qwen3.5, MiMo): ``<parameter=NAME>VALUE</parameter>``.
- ``glm_xml`` (GLM 4.5-4.7): ``<arg_key>NAME</arg_key>WS<arg_value>VALUE</arg_value>``.
- ``minimax_xml``: ``<parameter name="NAME">VALUE</parameter>``.
- ``deepseek_xml`` (V3.2, V4): ``<｜DSML｜parameter name="NAME" string="true|false">VALUE</｜DSML｜parameter>``,
  ``true`` before raw text, ``false`` before JSON (either for an untyped member).
- ``deepseek_v4_1_xml``: the same with ``｜ parameter`` (a space after the marker).
- ``kimi_k3_xml``: ``<|open|>argument key="NAME" type="T"<|sep|>VALUE<|close|>argument<|sep|>``,
  ``T`` the member's JSON type (integers write ``number``; any of the seven names when untyped).
- ``minimax_m3_xml``: recursive namespace XML, ``M<NAME>VALUE M</NAME>`` with ``M`` =
  ``]<]minimax[>[``: strings raw, numbers/booleans/null bare, objects as nested members, arrays
  as ``M<item>...M</item>`` items; untyped members and object schemas without properties are
  refused, as in xgrammar.
- ``cohere_xml``: ``<cofl:value name="NAME" type="raw|json|dict|list">VALUE</cofl:value>``: raw
  strings, ``WS`` JSON scalar ``WS``, ``WS`` nested members ``WS``, ``WS`` nameless items ``WS``
  (names XML-escaped; an untyped member may be any of the four).

``excludes`` (non-empty; the XML styles refuse ones that start or end with whitespace,
``cohere_xml`` and ``minimax_m3_xml`` any): no raw text, JSON string or member name contains one
as written (escapes not decoded); quotes and the XML wrappers are never part of a match;
strings with ``pattern``/``format`` are not filtered; ``const``/``enum`` values mentioning one
are left out, and so is an optional member that no value can then fill.

Errors inside a tag name the tool (from the tag's begin, or a constant after it) and the JSON
pointer inside its parameters, e.g. ``tool 'f' (structural tag at /format/tags/3/content): the
schema at /properties/x accepts no JSON value (...)``.

Documented differences from xgrammar 0.2.8 (deliberate: xg2 stays exact or refuses): a string
member with ``format``, ``minLength`` or ``maxLength`` in an XML style is refused (xgrammar
takes ``WS`` any text ``WS`` there, the closing string included); ``minItems``/``maxItems``/
``prefixItems`` on minimax_m3 and cohere arrays are refused; ``minLength``/``maxLength`` next to
``excludes`` are refused (xgrammar drops them); JSON strings stay valid UTF-8 (no lone-surrogate
``\u`` escapes); a DeepSeek member whose schema is a union with a string branch writes
``string="false"`` before any JSON value of the union; ``any_order`` with style ``json`` keeps
each key at most once and required keys present.

Whitespace. ``any_whitespace=False`` (vLLM's ``disable_any_whitespace``) makes the JSON of
every ``json_schema`` format use fixed separators and no other whitespace, as
``compile_json_schema(any_whitespace=False)`` does.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Dict, List, Literal, Optional, Sequence, Tuple, Type, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import _native
from .compiler import _INT64_MAX, _check_text

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
    "StructuralTagItem",
    "legacy_structural_tag",
    "parse_structural_tag",
    "structural_tag_json",
    "structural_tag_to_ebnf",
]


# A structural tag that does not follow the format (the message names the JSON path); a
# SchemaError, raised by the native frontend and by parse_structural_tag alike.
StructuralTagError = _native.StructuralTagError


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
    """A value valid under ``json_schema``, written in ``style`` (the module docstring lists the
    styles, ``any_order``, ``max_whitespace_cnt`` and ``excludes``)."""

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
    """One whole token not in ``exclude_tokens`` (never a stop token)."""

    type: Literal["exclude_token"] = "exclude_token"
    exclude_tokens: List[TokenRef] = []


class AnyTokensFormat(_Model):
    """Any whole tokens except ``exclude_tokens`` (and stop tokens), at most ``max_tokens`` of them."""

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
    for i, item in enumerate(legacy.structures):
        schema = item.schema_
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError as error:
                raise StructuralTagError(
                    f"invalid structural tag: at /structures/{i}/schema: the schema text is not valid JSON: {error}"
                ) from None
        tags.append(TagFormat(begin=item.begin, content=JSONSchemaFormat(json_schema=schema), end=item.end))
    return TriggeredTagsFormat(triggers=legacy.triggers, tags=tags)


class StructuralTagItem(BaseModel):
    """One tag of xgrammar's deprecated ``compile_structural_tag(tags, triggers)`` form: text
    ``begin``, then JSON that follows ``schema`` (a dict, JSON text or pydantic model class),
    then ``end``."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    begin: str
    schema_: Union[str, Dict[str, Any], Type[BaseModel]] = Field(alias="schema")
    end: str


def legacy_structural_tag(tags: Sequence[StructuralTagItem], triggers: Sequence[str]) -> Dict[str, Any]:
    """The ``{"structures": [...], "triggers": [...]}`` structural tag of the deprecated
    ``(tags, triggers)`` pair; ``StructuralTagError`` when they are not lists of
    ``StructuralTagItem`` and of str."""
    if isinstance(tags, (str, bytes)) or not all(isinstance(tag, StructuralTagItem) for tag in tags):
        raise StructuralTagError("legacy structural tag: tags must be a list of StructuralTagItem")
    if isinstance(triggers, (str, bytes)) or not all(isinstance(trigger, str) for trigger in triggers):
        raise StructuralTagError("legacy structural tag: triggers must be a list of str")
    structures = []
    for tag in tags:
        schema = tag.schema_
        if isinstance(schema, type):
            schema = schema.model_json_schema()
        structures.append({"begin": tag.begin, "schema": schema, "end": tag.end})
    return {"structures": structures, "triggers": list(triggers)}


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


# ---- lowering to EBNF (native: frontends/structural_tag) ----------------------------------


def structural_tag_json(value: Union[str, bytes, Dict[str, Any], StructuralTag], max_bytes: Optional[int] = None
                        ) -> Union[str, bytes]:
    """The JSON text the native frontend reads: JSON text as given, a dict through
    ``json.dumps``, a model through ``model_dump_json``. Raises ``StructuralTagError`` for
    anything else, ``ResourceLimitError`` past ``max_bytes`` (UTF-8) or nesting too deep to
    serialise, ``InvalidArgumentError`` for a str that is not valid Unicode."""
    if isinstance(value, StructuralTag):
        text: Union[str, bytes] = value.model_dump_json(by_alias=True)
    elif isinstance(value, (str, bytes, bytearray)):
        text = bytes(value) if isinstance(value, bytearray) else value
    elif isinstance(value, dict):
        try:
            text = json.dumps(value, allow_nan=False)
        except RecursionError:
            raise _native.ResourceLimitError("structural tag nests too deeply to serialise as JSON") from None
        except (TypeError, ValueError) as error:
            raise StructuralTagError(f"structural tag cannot be serialised as JSON: {error}") from None
    else:
        raise StructuralTagError(f"structural tag must be a JSON object, got {type(value).__name__}")
    if isinstance(text, str):
        return _check_text(text, "structural tag", _INT64_MAX if max_bytes is None else max_bytes)
    if max_bytes is not None and len(text) > max_bytes:
        raise _native.ResourceLimitError(
            f"structural tag is {len(text)} bytes, above the limit of {max_bytes} (CompileLimits.max_input_bytes)"
        )
    return text


def structural_tag_to_ebnf(value: Union[str, bytes, Dict[str, Any], StructuralTag], tokenizer_info: Any = None,
                           *, any_whitespace: bool = True) -> str:
    """EBNF text for a structural tag (root rule ``root``). With ``tokenizer_info``, special
    token text in the format's strings becomes ``Token(id)``. ``any_whitespace=False`` makes
    the JSON of ``json_schema`` formats compact (vLLM's ``disable_any_whitespace``).

    The tag is validated and lowered natively (``native/frontends/structural_tag``); errors are
    ``StructuralTagError`` naming the JSON path, or ``UnsupportedSchemaError``."""
    native_info = getattr(tokenizer_info, "_handle", tokenizer_info)
    return _native._structural_tag_to_ebnf(structural_tag_json(value), native_info, any_whitespace=any_whitespace)
