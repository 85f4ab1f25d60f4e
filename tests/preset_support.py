"""Shared by the preset tests: BFCL tool sets as OpenAI tools, each family's chat template
rendered with transformers' own renderer, the tokenizer each family is tested with, and a
parser per family that reads tool calls back out of an output (as the serving tool parsers do).
"""

from __future__ import annotations

import base64
import functools
import json
import random
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin.bitmask import bitmask_to_bool_array

from xg2_test_support import hf_compiler, hf_tokenizer, require_data

# ---- BFCL ------------------------------------------------------------------------------

_BFCL_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}


def bfcl_to_json_schema(schema: Any) -> Any:
    """BFCL's dialect to JSON Schema: dict -> object, float -> number, tuple -> array, any -> {}."""
    if isinstance(schema, list):
        return [bfcl_to_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            mapped = _BFCL_TYPES.get(value, value)
            if mapped is not None:
                out["type"] = mapped
        elif key == "properties":
            out[key] = {k: bfcl_to_json_schema(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = bfcl_to_json_schema(value)
        elif key in ("description", "optional", "default", "format"):
            continue
        else:
            out[key] = value
    return out


def _normalise(value: Any, schema: Dict[str, Any]) -> Any:
    """Ground-truth values as a model would write them for the schema (3.0 for an integer is 3)."""
    if schema.get("type") == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if schema.get("type") == "object" and isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: _normalise(v, props.get(k, {})) for k, v in value.items()}
    return value


@dataclass
class BfclCase:
    id: str
    tools: List[Dict[str, Any]]
    calls: List[Tuple[str, Dict[str, Any]]]


def bfcl_cases(category: str, count: int) -> List[BfclCase]:
    """The first `count` cases of a category whose ground truth validates against its schemas
    (arguments in schema order, as the grammars expect)."""
    import jsonschema

    questions = require_data(f"bfcl_v3/question/BFCL_v3_{category}.json").read_text().splitlines()
    answers = require_data(f"bfcl_v3/possible_answer/BFCL_v3_{category}.json").read_text().splitlines()
    truth = {a["id"]: a for a in map(json.loads, answers)}
    cases = []
    for line in questions:
        q = json.loads(line)
        tools = [{"type": "function", "function": {"name": f["name"], "description": f.get("description", ""),
                                                   "parameters": bfcl_to_json_schema(f["parameters"])}}
                 for f in q["function"]]
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
        calls = []
        for call in truth[q["id"]]["ground_truth"]:
            (name, params), = call.items()
            schema = schemas[name]
            args = {k: params[k][0] for k in schema.get("properties", {})
                    if k in params and params[k] and params[k][0] != ""}
            calls.append((name, _normalise(args, schema)))
        if all(jsonschema.Draft202012Validator(schemas[n]).is_valid(a) for n, a in calls):
            cases.append(BfclCase(q["id"], tools, calls))
        if len(cases) == count:
            break
    return cases


# ---- tokenizers ------------------------------------------------------------------------


@dataclass
class Tok:
    name: str
    info: xg.TokenizerInfo
    compiler: xg.GrammarCompiler
    encode: Callable[[str], List[int]]

    def decode(self, ids: Sequence[int]) -> str:
        vocab = self.info.decoded_vocab
        return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


@functools.lru_cache(maxsize=None)
def tokenizer(name: str) -> Tok:
    if name == "tekken":
        return _tekken()
    tok = hf_tokenizer(name)
    compiler = hf_compiler(name)
    # Special-token text in the output is encoded as the special token, as a model emits it.
    return Tok(name, compiler._tokenizer_info, compiler, lambda text: tok.encode(text, add_special_tokens=False).ids)


def _tekken() -> Tok:
    """Mistral's tekken vocabulary (tokenizers/mistral), encoded with tiktoken over its ranks."""
    tiktoken = pytest.importorskip("tiktoken")
    path = require_data("tokenizers/mistral/tekken_240718.json")
    data = json.loads(path.read_text())
    config = data["config"]
    num_special = config["default_num_special_tokens"]
    ranks = {base64.b64decode(e["token_bytes"]): e["rank"] for e in data["vocab"]
             if e["rank"] < config["default_vocab_size"] - num_special}
    encoding = tiktoken.Encoding("tekken", pat_str=config["pattern"], mergeable_ranks=ranks, special_tokens={})
    info = xg.TokenizerInfo.from_mistral_tekken(path)
    return Tok("tekken", info, xg.GrammarCompiler(info),
               lambda text: [num_special + i for i in encoding.encode(text, disallowed_special=())])


# ---- chat templates --------------------------------------------------------------------


def render_reply(template: str, case: BfclCase, content: str = "", reasoning: Optional[str] = None,
                 **kwargs: Any) -> str:
    """The assistant reply the chat template renders for `case`'s calls: the conversation with
    the reply, minus the same conversation rendered up to the generation prompt."""
    from transformers.utils.chat_template_utils import render_jinja_template

    source = require_data(f"chat_templates/{template}").read_text()
    user = {"role": "user", "content": "Please help."}
    reply: Dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": [
        {"type": "function", "id": f"call{i:05d}", "function": {"name": n, "arguments": a}}
        for i, (n, a) in enumerate(case.calls)]}
    if reasoning is not None:
        reply["reasoning_content"] = reasoning
        reply["thinking"] = reasoning
    full = _render(source, [user, reply], case.tools, False, kwargs)
    prompt = _render(source, [user], case.tools, True, kwargs)
    # Some templates open the reasoning block in the generation prompt but not in history
    # (DeepSeek R1 distills: "<｜Assistant｜><think>\n"): the reply starts after the prompt
    # without that opener.
    for opener in ("", "<think>\n", "<think>", "<think>\n</think>", "</think>"):
        if prompt.endswith(opener) and full.startswith(prompt[:len(prompt) - len(opener)]):
            return full[len(prompt) - len(opener):]
    raise AssertionError(f"{template}: the generation prompt is not a prefix of the rendered reply")


def _render(source: str, messages: List[Dict[str, Any]], tools: Any, add_generation_prompt: bool,
            kwargs: Dict[str, Any]) -> str:
    import jinja2
    from jinja2.sandbox import SecurityError
    from transformers.utils.chat_template_utils import render_jinja_template

    try:
        return render_jinja_template([messages], tools=tools, chat_template=source,
                                     add_generation_prompt=add_generation_prompt, **kwargs)[0][0]
    except SecurityError:
        # Kimi-K2-Instruct/-Thinking call list.append, which transformers' sandbox refuses;
        # render those with plain jinja2 and the same tojson.
        env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
        env.filters["tojson"] = lambda v, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(
            v, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
        return env.from_string(source).render(messages=messages, tools=tools, add_generation_prompt=add_generation_prompt,
                                              **kwargs)


def cut(reply: str, end: Optional[str]) -> str:
    """The reply up to its end-of-turn marker (first occurrence), which is the stop token."""
    if end is None:
        return reply
    assert end in reply, (end, reply[-100:])
    return reply[:reply.index(end)]


# ---- parsers (what a serving tool parser reads back) -----------------------------------


def _json_args(text: str) -> Any:
    return json.loads(text)


def _xml_args(pairs: Sequence[Tuple[str, str]], schema: Dict[str, Any]) -> Dict[str, Any]:
    props = schema.get("properties", {})
    out = {}
    for key, raw in pairs:
        member = props.get(key, {})
        if member.get("type") == "string" and ("enum" in member or "const" in member):
            out[key] = raw.strip()  # the formats allow whitespace around a choice
        else:
            out[key] = raw if member.get("type") == "string" or not props else json.loads(raw)
    return out


# xgrammar's families whose call syntax is one of ours.
_SAME_SYNTAX = {"qwen_3": "qwen", "qwen_3_coder": "qwen3_coder", "qwen_3_5": "qwen3_coder",
                "glm_4_7": "glm4", "kimi": "kimi_k2", "deepseek_r1": "deepseek_v3"}
_M3 = re.escape("]<]minimax[>[")


def _typed_args(pairs: Sequence[Tuple[str, str, bool]]) -> Dict[str, Any]:
    """(key, raw, is_string) triples: strings raw, other values JSON."""
    return {key: raw if is_string else json.loads(raw) for key, raw, is_string in pairs}


def _is_string(schema: Dict[str, Any], key: str) -> bool:
    return schema.get("properties", {}).get(key, {}).get("type") == "string"


def parse_calls(family: str, text: str, schemas: Dict[str, Dict[str, Any]]) -> List[Tuple[str, Any]]:
    """Tool calls in `text` for `family`, as (name, arguments)."""
    S = re.DOTALL
    family = _SAME_SYNTAX.get(family, family)
    if family in ("deepseek_v3_2", "deepseek_v4"):
        out = []
        for name, body in re.findall(r'<｜DSML｜invoke name="([^"]+)">\n(.*?)</｜DSML｜invoke>', text, S):
            params = re.findall(r'<｜DSML｜parameter name="([^"]+)" string="(true|false)">(.*?)</｜DSML｜parameter>', body, S)
            out.append((name, _typed_args([(k, v, s == "true") for k, s, v in params])))
        return out
    if family == "minimax":
        out = []
        for name, body in re.findall(r'<invoke name="([^"]+)">\n(.*?)</invoke>', text, S):
            params = re.findall(r'<parameter name="([^"]+)">(.*?)</parameter>', body, S)
            out.append((name, _typed_args([(k, v, _is_string(schemas.get(name, {}), k)) for k, v in params])))
        return out
    if family == "minimax_m3":
        out = []
        for name, body in re.findall(_M3 + r'<invoke name="([^"]+)">(.*?)' + _M3 + "</invoke>", text, S):
            params = re.findall(_M3 + r"<([^/>]+)>(.*?)" + _M3 + r"</\1>", body, S)
            out.append((name, _typed_args([(k, v, _is_string(schemas.get(name, {}), k)) for k, v in params])))
        return out
    if family == "kimi_k3":
        out = []
        pattern = r'<\|open\|>call tool="([^"]+)" index="\d+"<\|sep\|>(.*?)<\|close\|>call<\|sep\|>'
        for name, body in re.findall(pattern, text, S):
            params = re.findall(r'<\|open\|>argument key="([^"]+)" type="([^"]+)"<\|sep\|>(.*?)<\|close\|>argument<\|sep\|>',
                                body, S)
            out.append((name, _typed_args([(k, v, t == "string") for k, t, v in params])))
        return out
    if family == "exaone":
        return [(v["name"], v["arguments"]) for v in map(json.loads, re.findall(r"<tool_call>(.*?)</tool_call>", text, S))]
    if family == "llama":
        # xgrammar's llama format: calls are JSON objects triggered by `{"name": ` anywhere in
        # free text (text may follow a call), each decoded where it starts.
        decoder, out, start = json.JSONDecoder(), [], text.find('{"name": ')
        while start >= 0:
            value, end = decoder.raw_decode(text, start)
            out.append((value["name"], value["parameters"]))
            start = text.find('{"name": ', end)
        return out
    if family == "llama3_json":
        if not text.startswith('{"name": '):
            return []
        value = json.loads(text)
        return [(value["name"], value["parameters"])]
    if family == "llama3_function":
        return [(n, _json_args(a)) for n, a in re.findall(r"<function=([^>]+)>(.*?)</function>", text, S)]
    if family == "qwen":
        out = []
        for body in re.findall(r"<tool_call>\n(.*?)\n</tool_call>", text, S):
            value = json.loads(body)
            out.append((value["name"], value["arguments"]))
        return out
    if family == "qwen3_coder":
        out = []
        # As vLLM's qwen3_coder parser reads it: whitespace between the parts, one line break
        # around a value dropped (the format allows any whitespace there, as xgrammar's does).
        for name, body in re.findall(r"<tool_call>\s*<function=([^>\n]+)>(.*?)</function>\s*</tool_call>", text, S):
            pairs = [(k, v[1:] if v.startswith("\n") else v) for k, v in
                     re.findall(r"<parameter=([^>\n]+)>(.*?)</parameter>", body, S)]
            pairs = [(k, v[:-1] if v.endswith("\n") else v) for k, v in pairs]
            out.append((name, _xml_args(pairs, schemas.get(name, {}))))
        return out
    if family in ("glm4", "glm4_7"):
        out = []
        for name, body in re.findall(r"<tool_call>([^\n<]+)\n?(.*?)</tool_call>", text, S):
            pairs = re.findall(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", body, S)
            out.append((name.strip(), _xml_args(pairs, schemas.get(name.strip(), {}))))
        return out
    if family == "deepseek_v3":
        pattern = r"<｜tool▁call▁begin｜>function<｜tool▁sep｜>([^\n]+)\n```json\n(.*?)\n```<｜tool▁call▁end｜>"
        return [(n, _json_args(a)) for n, a in re.findall(pattern, text, S)]
    if family == "deepseek_v3_1":
        pattern = r"<｜tool▁call▁begin｜>(.*?)<｜tool▁sep｜>(.*?)<｜tool▁call▁end｜>"
        return [(n, _json_args(a)) for n, a in re.findall(pattern, text, S)]
    if family == "kimi_k2":
        pattern = r"<\|tool_call_begin\|>functions\.(.+?):\d+<\|tool_call_argument_begin\|>(.*?)<\|tool_call_end\|>"
        return [(n, _json_args(a)) for n, a in re.findall(pattern, text, S)]
    if family == "harmony":
        pattern = r"to=functions\.([^<\s]+)\s*<\|channel\|>commentary (?:<\|constrain\|>)?json<\|message\|>(.*?)<\|call\|>"
        pattern2 = r"<\|channel\|>commentary to=functions\.([^<\s]+) <\|constrain\|>json<\|message\|>(.*?)<\|call\|>"
        return [(n, _json_args(a)) for n, a in re.findall(pattern, text, S) + re.findall(pattern2, text, S)]
    if family == "mistral":
        out, decoder, pos = [], json.JSONDecoder(), 0
        while True:
            match = re.compile(r"\[TOOL_CALLS\](.+?)\[ARGS\]", S).search(text, pos)
            if not match:
                return out
            value, pos = decoder.raw_decode(text, match.end())
            out.append((match.group(1), value))
    raise ValueError(family)


# ---- matching ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _solid_tokens(name: str) -> np.ndarray:
    """Per token id of tokenizer `name`: whether its text is more than whitespace."""
    vocab = tokenizer(name).info.decoded_vocab
    return np.fromiter((bool(piece.strip(b" \t\r\n")) for piece in vocab), dtype=bool, count=len(vocab))


def accepts(tok: Tok, grammar: xg.CompiledGrammar, text: str) -> bool:
    """Every token of `text` accepted one by one (each also in the mask), and the grammar then
    complete (ended, for a stop token that is a terminal)."""
    matcher = xg.GrammarMatcher(grammar)
    bitmask = xg.allocate_token_bitmask(1, tok.info.vocab_size)
    for token in tok.encode(text):
        matcher.fill_next_token_bitmask(bitmask)
        in_mask = bool(bitmask_to_bool_array(np.asarray(bitmask)[0], tok.info.vocab_size)[token])
        accepted = matcher.accept_token(token)
        assert in_mask == accepted, (token, in_mask, accepted)
        if not accepted:
            return False
    return matcher.is_completed()


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def random_walk(tok: Tok, grammar: xg.CompiledGrammar, seed: int, closers: Sequence[str],
                uniform_steps: int = 60, max_steps: int = 600) -> Tuple[Optional[str], int]:
    """A seeded walk: tokens drawn uniformly from the mask for `uniform_steps` steps, then, to
    bring the output to an end within `max_steps`, the jump-forward string or one of `closers`
    (spelled by tokens, each checked against the mask) when the grammar allows one, else a
    uniform draw. Returns (text, steps), text None when the walk did not end."""
    rng = random.Random(seed)
    matcher = xg.GrammarMatcher(grammar)
    bitmask = xg.allocate_token_bitmask(1, tok.info.vocab_size)
    stops = set(matcher.stop_token_ids)
    stop_ids = np.array(sorted(stops), dtype=np.int64)
    ids: List[int] = []

    def mask() -> np.ndarray:
        matcher.fill_next_token_bitmask(bitmask)
        return np.flatnonzero(bitmask_to_bool_array(np.asarray(bitmask)[0], tok.info.vocab_size))

    while len(ids) < max_steps:
        if matcher.is_terminated():
            return tok.decode(ids), len(ids)
        allowed = mask()
        assert len(allowed) > 0, tok.decode(ids)
        if len(ids) >= uniform_steps:
            if np.isin(allowed, stop_ids).any():
                return tok.decode(ids), len(ids)
            # (Read as bytes: in the middle of a character the forced bytes are not valid UTF-8
            # on their own.)
            jump = matcher.find_jump_forward_bytes()
            forced = [jump.decode("utf-8")] if jump and _is_utf8(jump) else []
            spelled = None
            for text in forced + list(closers):
                tokens = tok.encode(text)
                if tokens and matcher.validate_tokens(tokens) == len(tokens):
                    spelled = tokens
                    break
            if spelled is not None:
                for token in spelled:
                    assert token in mask()
                    assert matcher.accept_token(token)
                    ids.append(token)
                continue
        if len(ids) >= uniform_steps:
            # Formats that allow any whitespace run (the XML argument styles, JSON) would let
            # whitespace tokens, which outnumber the rest, stall the walk.
            solid = allowed[_solid_tokens(tok.name)[allowed]]
            if len(solid):
                allowed = solid
        token = int(rng.choice(allowed))
        if token in stops:
            return tok.decode(ids), len(ids)
        assert matcher.accept_token(token)
        ids.append(token)
    return None, len(ids)
