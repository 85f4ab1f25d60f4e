"""xgrammar 0.2.8 as a test oracle for structural tags (never imported by the package).

The tags come from xgrammar's own builders (``xgrammar.get_model_structural_tag``, every
registered model x tool_choice x reasoning mode) over BFCL tool sets; the same tag JSON is
compiled by both engines on the same tokenizer, and seeded walks driven by one engine's mask
check every token against the other engine's mask.

Special-token text is mapped, not ignored: xgrammar reads a special token's text (Harmony's
<|channel|>, <|call|>) as text, spelled by any tokens; ours matches it as the special token
only. The other engine is fed the same text in its own form: in a walk driven by xgrammar, a
run of ordinary tokens that spells a special token's text reaches ours as that special token
(checked against ours' mask where the text completes); in a walk driven by ours, a special
token reaches xgrammar as ordinary tokens of its text.

Sampling, so that walks enter tool calls and finish them: in free text (most of the vocabulary
allowed) a walk spells one of the tag's literal strings (triggers, begins, ends, constants),
stops when the stop token is allowed, or draws a uniform token; inside constrained parts it
prefers tokens of the tag's own text and of the ground-truth call (property names, JSON
punctuation, values), spells a literal whose first token is allowed, or draws uniformly.

Each disagreement is classified (classify): a documented deliberate difference (allowed),
or a named defect class (known bugs in ours carry their class name so a report groups them),
or unclassified. Only DOCUMENTED_DIFFERENCES pass a test.
"""

from __future__ import annotations

import codecs
import functools
import zlib
import json
import random
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pytest

import xgrammar as xgr  # xgrammar==0.2.8, the oracle (test extras); missing, the tests fail rather than skip
from xgrammar.builtin_structural_tag import _structural_tag_registry  # noqa: E402

import xg2_plugin as xg  # noqa: E402

from preset_support import BfclCase  # noqa: E402
from xg2_test_support import hf_compiler, hf_tokenizer, hf_tokenizer_info  # noqa: E402

MODELS: Tuple[str, ...] = tuple(sorted(_structural_tag_registry))
TOOL_CHOICES = ("auto", "required", "named", "none")
REASONING_MODES = ("enabled", "disabled", "auto")
ENGINES = ("ours", "xgrammar")

# Families whose tool arguments are an XML-style rendering of the JSON schema.
XML_STYLE_MODELS = frozenset({"qwen_3_coder", "qwen_3_5", "glm_4_7", "mimo", "minimax", "minimax_m3",
                              "deepseek_v3_2", "deepseek_v4", "deepseek_v4_1", "kimi_k3", "cohere"})

# class -> why the engines differ on purpose. A disagreement of any other class fails a test.
# Where xgrammar is wrong and ours right, the class is listed here too, its reason says so.
DOCUMENTED_DIFFERENCES: Dict[str, str] = {
    "special_token_as_text": (
        "xgrammar treats every token as its text, special tokens (<|eot_id|>, reserved ids) included, "
        "so its free text may contain them; ours never reads a special token as grammar text."),
    "stop_token_inside_text": (
        "xgrammar bug: it also reads a stop token as its text (Harmony's <|call|> inside a JSON string), "
        "but the serving engine stops on it, so the output ends cut off; ours allows a stop token only "
        "where the output may end."),
    "invalid_utf8_text": (
        "xgrammar bug (the detokenized output would hold replacement characters): xgrammar's free "
        "text and string contents accept any bytes; ours keeps the output valid UTF-8, so a token "
        "that cannot continue valid UTF-8 is forbidden."),
    "stop_token_is_grammar_text": (
        "a stop token whose text the tag spells (Harmony's <|call|>, <|return|>): ours reads the token as "
        "that text, where the grammar has it, and ends there; xgrammar takes the text only as ordinary "
        "tokens and the token only as a stop wherever the grammar may end."),
    "negative_zero_integer": (
        "-0 is a JSON number (RFC 8259) with an integral value, so JSON Schema's integer takes it and "
        "ours allows it; xgrammar's integer grammar leaves it out."),
}

# Defect classes ours had (fixed; named so that a report groups them if one comes back).
# They are never allowed.
KNOWN_DEFECTS: Dict[str, str] = {
    "json_whitespace_cr": "ours drops CR from JSON whitespace (RFC 8259 allows it)",
    "xml_style_whitespace": ("ours forbids or requires whitespace where xgrammar's XML styles take any: "
                             "after <function=NAME / <tool_call>NAME / a tag's '>', around parameter values"),
    "exclude_blocks_tag_end": ("ours forbids a free-text exclude string even where it opens the tag's own "
                               "end string, so the tag can never end (kimi_k3 tool_choice none)"),
}


# ---- tags ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TagCase:
    model: str
    tool_choice: str
    reasoning: str
    tag_json: str

    @property
    def id(self) -> str:
        return f"{self.model}-{self.tool_choice}-{self.reasoning}"


def tool_choice_value(tool_choice: str, tools: Sequence[Dict[str, Any]]) -> Any:
    if tool_choice == "named":
        return {"type": "function", "function": {"name": tools[0]["function"]["name"]}}
    return tool_choice


def build_tags(tools: Sequence[Dict[str, Any]]) -> Iterator[TagCase]:
    """xgrammar's tag for every registered model x tool_choice x reasoning mode."""
    for model in MODELS:
        for choice in TOOL_CHOICES:
            for reasoning in REASONING_MODES:
                tag = xgr.get_model_structural_tag(model, list(tools), tool_choice_value(choice, tools), reasoning)
                yield TagCase(model, choice, reasoning, tag.model_dump_json())


def literal_strings(tag: Any) -> List[str]:
    """Every literal a tag's output may contain: begins, ends, triggers, separators, constants."""
    found: List[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("begin", "end", "separator", "value") and isinstance(value, str):
                    found.append(value)
                elif key in ("end", "triggers") and isinstance(value, list):
                    found.extend(v for v in value if isinstance(v, str))
                elif key != "json_schema":
                    visit(value)
        elif isinstance(node, list):
            for item in node:
                visit(item)

    visit(tag)
    return sorted({s for s in found if s})


def _has_schema(node: Any) -> bool:
    if isinstance(node, dict):
        return node.get("type") == "json_schema" or any(_has_schema(v) for v in node.values())
    return isinstance(node, list) and any(_has_schema(v) for v in node)


def _objects(node: Any) -> Iterator[Dict[str, Any]]:
    """Every JSON object in `node`, depth first."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _objects(value)
    elif isinstance(node, list):
        for item in node:
            yield from _objects(item)


def call_begins(tag: Any) -> List[str]:
    """The begin strings of the tags whose content holds tool arguments (a JSON schema)."""
    return sorted({node["begin"] for node in _objects(tag)
                   if node.get("type") == "tag" and node.get("begin") and _has_schema(node.get("content"))})


def argument_strings(case: BfclCase) -> List[str]:
    """Text a call's arguments are spelled with, in the JSON and the XML-style renderings."""
    out = ['{"', '": ', '", "', '"}', ", ", "}", "]", "\n"]
    for tool in case.tools:
        out.append(tool["function"]["name"])
        for prop in tool["function"]["parameters"].get("properties", {}):
            out += [f'"{prop}": ', f"<parameter={prop}>\n", "\n</parameter>\n", f"<arg_key>{prop}</arg_key>",
                    "<arg_value>", "</arg_value>", f'<parameter name="{prop}">', "</parameter>"]
    for name, args in case.calls:
        out.append(json.dumps(args))
        out += [v if isinstance(v, str) else json.dumps(v) for v in args.values()]
    return out


# ---- engines ---------------------------------------------------------------------------


class OraclePair:
    """Both engines on one tokenizer, with the same stop tokens."""

    def __init__(self, tokenizer_name: str) -> None:
        self.name = tokenizer_name
        self.hf = hf_tokenizer(tokenizer_name)
        self.ours_info = hf_tokenizer_info(tokenizer_name)
        self.vocab_size = self.ours_info.vocab_size
        self.stop_ids = list(self.ours_info.stop_token_ids)
        self.vocab: List[bytes] = self.ours_info.decoded_vocab
        # xgrammar's tokenizer from the same token bytes: for these byte-level vocabularies it
        # is what its from_huggingface builds (same decoded vocabulary, no special ids), in a
        # fraction of the time; the stop tokens are ours, so both engines stop on the same ids.
        self.xgr_info = xgr.TokenizerInfo(self.vocab, xgr.VocabType.RAW, vocab_size=self.vocab_size,
                                          stop_token_ids=self.stop_ids)
        self.compilers = {"ours": hf_compiler(tokenizer_name), "xgrammar": xgr.GrammarCompiler(self.xgr_info)}
        self.special_ids = frozenset(self.ours_info.special_token_ids) - set(self.stop_ids)
        # Every special token's text, stop tokens included (Harmony's <|call|> is both).
        self.special_by_bytes = {self.vocab[i]: i for i in self.ours_info.special_token_ids if self.vocab[i]}
        self.special_prefixes = frozenset({text[:k] for text in self.special_by_bytes for k in range(1, len(text) + 1)})

    def text_of(self, token: int) -> str:
        return self.vocab[token].decode("utf-8", "replace")

    def compile(self, engine: str, tag_json: str) -> Any:
        return self.compilers[engine].compile_structural_tag(tag_json)

    def encode(self, text: str) -> List[int]:
        """Tokens a model emits for `text`; special-token text becomes the special token."""
        return self.hf.encode(text, add_special_tokens=False).ids

    def encode_plain(self, text: str) -> List[int]:
        """`text` in ordinary tokens only: each special-token string is cut in two and each
        piece encoded on its own."""
        ids: List[int] = []
        start = i = 0
        specials = sorted((t.decode("utf-8", "replace") for t in self.special_by_bytes), key=len, reverse=True)
        while i < len(text):
            hit = next((s for s in specials if text.startswith(s, i)), None)
            if hit is None:
                i += 1
                continue
            for piece in (text[start:i], hit[:len(hit) // 2], hit[len(hit) // 2:]):
                if piece:
                    ids += self.hf.encode(piece, add_special_tokens=False).ids
            i += len(hit)
            start = i
        if start < len(text):
            ids += self.hf.encode(text[start:], add_special_tokens=False).ids
        return ids


@functools.lru_cache(maxsize=None)
def oracle_pair(tokenizer_name: str) -> OraclePair:
    return OraclePair(tokenizer_name)


class Side:
    """One engine's matcher over a compiled tag, with its mask as a bool array."""

    def __init__(self, engine: str, pair: OraclePair, grammar: Any) -> None:
        self.engine = engine
        self.vocab_size = pair.vocab_size
        if engine == "ours":
            self.matcher = xg.GrammarMatcher(grammar)
            self.bitmask = xg.allocate_token_bitmask(1, pair.vocab_size)
        else:
            self.matcher = xgr.GrammarMatcher(grammar)
            self.bitmask = xgr.allocate_token_bitmask(1, pair.vocab_size)

    def mask(self) -> np.ndarray:
        self.matcher.fill_next_token_bitmask(self.bitmask)
        row = np.ascontiguousarray(np.asarray(self.bitmask)[0], dtype="<i4")
        return np.unpackbits(row.view(np.uint8), bitorder="little")[:self.vocab_size].astype(bool)

    def accept(self, token: int) -> bool:
        return bool(self.matcher.accept_token(int(token)))

    def rollback(self, count: int) -> None:
        if count:
            self.matcher.rollback(count)

    def is_terminated(self) -> bool:
        return bool(self.matcher.is_terminated())


# ---- walks -----------------------------------------------------------------------------


@dataclass
class Disagreement:
    model: str
    tool_choice: str
    reasoning: str
    tokenizer: str
    driver: str            # the engine whose mask chose the token
    text: bytes            # the output so far, as the other engine was fed it
    token: int
    token_bytes: bytes
    detail: str            # "mask": the other engine's mask forbids it; "accept": mask allows, accept fails
    kind: str = ""
    # Where ours is the engine that forbids: how many of the token's bytes ours accepts, and
    # whether ours would take a whitespace byte at the first byte it refuses.
    accepted_bytes: Optional[int] = None
    ours_wants_whitespace: bool = False
    ours_may_stop: bool = False  # ours allows some stop token where the walk stands
    tag_json: str = field(default="", repr=False)

    @property
    def other(self) -> str:
        return "xgrammar" if self.driver == "ours" else "ours"

    def describe(self) -> str:
        where = "" if self.accepted_bytes is None else f", refused from byte {self.accepted_bytes}"
        return (f"[{self.kind}] {self.model} tool_choice={self.tool_choice} reasoning={self.reasoning} "
                f"tokenizer={self.tokenizer} driven by {self.driver}: {self.other} forbids token {self.token} "
                f"{self.token_bytes!r} ({self.detail}{where}) after {self.text[-160:]!r}")


@dataclass
class WalkResult:
    steps: int = 0
    ended: bool = False          # the driver accepted a stop token (or terminated)
    mapped_specials: int = 0     # special-token texts fed to ours as the special token
    reached_call: bool = False   # the output holds the begin of a tool call
    disagreements: List[Disagreement] = field(default_factory=list)


@dataclass
class Sampler:
    pair: OraclePair
    literals: List[str]
    structural: np.ndarray        # bool over the vocabulary: tokens of the tag's and the call's text
    rng: random.Random

    @classmethod
    def for_tag(cls, pair: OraclePair, case: TagCase, bfcl: BfclCase, seed: int) -> "Sampler":
        tag = json.loads(case.tag_json)
        literals = literal_strings(tag)
        structural = np.zeros(pair.vocab_size, dtype=bool)
        for text in literals + argument_strings(bfcl) + [case.tag_json]:
            structural[pair.encode(text)] = True
        for ch in '{}[],:"0123456789.-\n ':
            structural[pair.encode(ch)] = True
        structural[pair.stop_ids] = True
        return cls(pair, literals, structural, random.Random(seed))

    def literal_unit(self, driver: str, allowed: Optional[np.ndarray]) -> Optional[List[int]]:
        """The tokens of a literal; a walk driven by xgrammar spells special-token text with
        ordinary tokens half the time (as xgrammar's mask allows)."""
        choices = self.literals
        if allowed is not None:
            choices = [s for s in choices if allowed[self.pair.encode(s)[0]]]
        if not choices:
            return None
        text = self.rng.choice(choices)
        if driver == "xgrammar" and self.rng.random() < 0.5:
            return self.pair.encode_plain(text)
        return self.pair.encode(text)

    def next_unit(self, driver: str, allowed: np.ndarray, step: int) -> List[int]:
        """The driver's next tokens: one, or a literal's."""
        r = self.rng.random()
        allowed_ids = np.flatnonzero(allowed)
        if len(allowed_ids) > self.pair.vocab_size // 2:  # free text
            stops = [s for s in self.pair.stop_ids if allowed[s]]
            if stops and step >= 8 and r < 0.2:
                return [stops[0]]
            if r < 0.6:
                unit = self.literal_unit(driver, None)
                if unit is not None:
                    return unit
        else:
            if r < 0.3:
                unit = self.literal_unit(driver, allowed)
                if unit is not None:
                    return unit
            preferred = np.flatnonzero(allowed & self.structural)
            if len(preferred) and r < 0.9:
                return [int(self.rng.choice(preferred))]
        return [int(self.rng.choice(allowed_ids))]


def run_walk(pair: OraclePair, case: TagCase, bfcl: BfclCase, grammars: Dict[str, Any], driver: str,
             seed: int, max_steps: int) -> WalkResult:
    """A walk driven by `driver`'s mask; every token is checked against the other engine's
    mask and then accepted by it. Ends at the first disagreement, a stop, or `max_steps`."""
    other = "xgrammar" if driver == "ours" else "ours"
    sides = {name: Side(name, pair, grammars[name]) for name in ENGINES}
    sampler = Sampler.for_tag(pair, case, bfcl, seed)
    result = WalkResult()
    text = b""
    pending = b""  # ordinary tokens of xgrammar's that spell the start of a special token's text
    pending_tokens: List[int] = []
    stops = set(pair.stop_ids)
    begins = [b.encode() for b in call_begins(json.loads(case.tag_json))]
    for _ in range(4 * max_steps):  # draws; a literal the driver cannot spell is drawn again
        if result.steps >= max_steps:
            break
        drive = sides[driver]
        allowed = drive.mask()
        if not allowed.any():
            result.ended = True  # xgrammar's matcher may end without a stop token
            break
        driver_tokens = sampler.next_unit(driver, allowed, result.steps)
        fed = 0
        for token in driver_tokens:
            if not (allowed if fed == 0 else drive.mask())[token]:
                break
            assert drive.accept(token), (driver, case.id, token, text)
            fed += 1
        if fed < len(driver_tokens):  # a literal the driver cannot spell here: undo, draw again
            drive.rollback(fed)
            continue
        check = sides[other]
        other_tokens = driver_tokens
        if driver == "ours":  # xgrammar reads special-token text as text: feed it the text
            mapped = []
            for t in driver_tokens:
                if t in pair.special_ids:
                    mapped += pair.encode_plain(pair.text_of(t))
                elif t in stops and pair.text_of(t) in case.tag_json and not drive.is_terminated():
                    mapped += pair.encode_plain(pair.text_of(t))  # a stop token read as text
                elif t in stops and pair.text_of(t) in case.tag_json:
                    mapped += pair.encode_plain(pair.text_of(t)) + [t]  # ... that ends the output
                else:
                    mapped.append(t)
            result.mapped_specials += mapped != driver_tokens
            other_tokens = mapped
        queue = [(t, True) for t in other_tokens]  # (token, may start a special token's text)
        while queue:
            token, may_map = queue.pop(0)
            token_bytes = pair.vocab[token]
            if other == "ours" and token in stops and check.is_terminated():
                break  # ours ended on a stop token read as the tag's text; xgrammar now stops too
            if other == "ours" and may_map:
                # Ordinary tokens of xgrammar's that spell a special token's text reach ours as
                # that special token (then the rest of the last ordinary token); a run that turns
                # out to spell no special token reaches ours as it is.
                joined = pending + token_bytes
                head = next((sp for sp in pair.special_by_bytes if joined.startswith(sp)), None)
                if head is None and joined in pair.special_prefixes:
                    pending, pending_tokens = joined, pending_tokens + [token]
                    continue
                rest = joined[len(head):] if head is not None else b""
                if head is not None and _is_utf8_prefix(rest) and rest.decode("utf-8", "ignore").encode() == rest:
                    queue[:0] = [(t, True) for t in pair.encode(rest.decode("utf-8"))]
                    token, token_bytes = pair.special_by_bytes[head], head
                    result.mapped_specials += 1
                elif head is not None:
                    token_bytes = joined  # a special token's text ends inside a character
                elif pending_tokens:
                    queue[:0] = [(pending_tokens[0], False)] + [(t, True) for t in pending_tokens[1:] + [token]]
                    pending, pending_tokens = b"", []
                    continue
                pending, pending_tokens = b"", []
            in_mask = check.mask()[token]
            if not in_mask or token_bytes != pair.vocab[token] or not check.accept(token):
                detail = "mask" if not in_mask else "accept"
                if token_bytes != pair.vocab[token]:
                    detail = "special-token text broken off"
                found = Disagreement(case.model, case.tool_choice, case.reasoning, pair.name, driver, text, token,
                                     token_bytes, detail, tag_json=case.tag_json)
                if other == "ours":
                    _locate_in_ours(check.matcher, found)
                    found.ours_may_stop = bool(check.mask()[pair.stop_ids].any())
                result.disagreements.append(classify(found, pair.special_ids, frozenset(pair.stop_ids),
                                                     pair.special_prefixes))
                return result
            text += token_bytes
        result.reached_call = result.reached_call or any(b in text for b in begins)
        result.steps += len(driver_tokens)
        if drive.is_terminated():
            result.ended = True
            break
    return result


# ---- classification --------------------------------------------------------------------


def _locate_in_ours(matcher: Any, d: Disagreement) -> None:
    """The first byte of the token ours refuses (on forks: the matcher is left as it is)."""
    data = d.token_bytes
    accepted = 0
    while accepted < len(data) and matcher.fork().accept_string(data[:accepted + 1]):
        accepted += 1
    d.accepted_bytes = accepted
    for space in (b" ", b"\n", b"\t"):
        probe = matcher.fork()
        if probe.accept_string(data[:accepted] + space):
            d.ours_wants_whitespace = True
            break


def _is_utf8_prefix(data: bytes) -> bool:
    """True iff some continuation makes `data` valid UTF-8. Python's incremental decoder holds
    back an incomplete tail unchecked (b"\\xed\\xb3" starts a surrogate), so the tail is
    completed with 0x80 bytes, which any valid prefix of a character accepts."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        decoder.decode(data, final=False)
        tail = decoder.getstate()[0]
        if tail:
            lead = tail[0]
            length = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
            (tail + b"\x80" * (length - len(tail))).decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _after_xml_name(text: bytes) -> bool:
    """The output ends right after an XML-style name or opening tag, where xgrammar's styles
    allow whitespace (``<function=NAME``, ``<parameter=NAME``, ``<tool_call>NAME``, ``>``)."""
    tail = text[-80:]
    return any(marker in tail for marker in (b"<function=", b"<parameter=", b"<tool_call>", b"<arg_key>",
                                             b"<arg_value>", b"<invoke", b"<parameter"))


def classify(d: Disagreement, special_ids: frozenset, stop_ids: frozenset = frozenset(),
             special_prefixes: frozenset = frozenset()) -> Disagreement:
    """Sets d.kind. `special_ids`: the tokenizer's special tokens other than stop tokens;
    `special_prefixes`: the prefixes of every special token's text."""
    if (d.driver == "xgrammar" and d.token in stop_ids and d.ours_may_stop and d.token_bytes
            and d.token_bytes.decode("utf-8", "replace") in d.tag_json):
        d.kind = "stop_token_is_grammar_text"
    elif d.driver == "xgrammar" and d.token in stop_ids and not d.ours_may_stop:
        d.kind = "stop_token_inside_text"
    elif d.driver == "xgrammar":
        refused_at = d.accepted_bytes or 0
        refused = d.token_bytes[refused_at:][:1]
        inside_json = d.text.rfind(b"{") > d.text.rfind(b">")
        if d.token in special_ids or (refused_at and d.token_bytes[refused_at:] in special_prefixes):
            # a special token, or ordinary text that starts a special token's text inside a token
            # (the walk maps such text to the special token only where it starts a token)
            d.kind = "special_token_as_text"
        elif not _is_utf8_prefix(d.text + d.token_bytes):
            d.kind = "invalid_utf8_text"
        elif (d.model in XML_STYLE_MODELS and not inside_json and _after_xml_name(d.text)
              and (refused.isspace() or d.ours_wants_whitespace)):
            d.kind = "xml_style_whitespace"
        elif refused == b"\r":
            d.kind = "json_whitespace_cr"
        elif _exclude_starts_end(d):
            d.kind = "exclude_blocks_tag_end"
        else:
            d.kind = "unclassified_ours_forbids"
    elif d.text.endswith(b"-") and d.token_bytes.startswith(b"0"):
        d.kind = "negative_zero_integer"
    else:
        d.kind = "unclassified_xgrammar_forbids"
    return d


def exclude_end_overlaps(tag: Any) -> List[Tuple[str, str]]:
    """(excluded string, end string) pairs where a tag's free-text content excludes a string
    that its own end string starts with (kimi_k3: "<|close|>" and "<|close|>response<|sep|>")."""
    pairs: List[Tuple[str, str]] = []
    for node in _objects(tag):
        content = node.get("content")
        if node.get("type") == "tag" and isinstance(content, dict) and content.get("type") == "any_text":
            ends = node.get("end")
            for end in ends if isinstance(ends, list) else [ends]:
                pairs.extend((x, end) for x in content.get("excludes") or [] if isinstance(end, str) and end.startswith(x))
    return pairs


def _exclude_starts_end(d: Disagreement) -> bool:
    tail = d.text + d.token_bytes
    return any(tail.endswith(x.encode()) for x, _ in exclude_end_overlaps(json.loads(d.tag_json)))


def is_documented(d: Disagreement) -> bool:
    return d.kind in DOCUMENTED_DIFFERENCES


# ---- one tag, both directions ----------------------------------------------------------


@dataclass
class TagOutcome:
    case: TagCase
    compile_errors: Dict[str, str] = field(default_factory=dict)
    walks: List[Tuple[str, WalkResult]] = field(default_factory=list)

    @property
    def disagreements(self) -> List[Disagreement]:
        return [d for _, w in self.walks for d in w.disagreements]


def check_tag(pair: OraclePair, case: TagCase, bfcl: BfclCase, *, walks_per_direction: int, max_steps: int,
              seed: int = 0) -> TagOutcome:
    outcome = TagOutcome(case)
    grammars: Dict[str, Any] = {}
    for engine in ENGINES:
        try:
            grammars[engine] = pair.compile(engine, case.tag_json)
        except Exception as error:  # noqa: BLE001 - reported per engine, the sweep goes on
            outcome.compile_errors[engine] = f"{type(error).__name__}: {str(error)[:300]}"
    if outcome.compile_errors:
        return outcome
    for driver in ENGINES:
        for k in range(walks_per_direction):
            walk_seed = zlib.crc32(f"{seed}/{case.id}/{driver}/{k}".encode())
            outcome.walks.append((driver, run_walk(pair, case, bfcl, grammars, driver, walk_seed, max_steps)))
    return outcome
