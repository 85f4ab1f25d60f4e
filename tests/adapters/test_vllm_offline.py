"""The xg2 backend inside a real offline vLLM engine (CPU, tiny random-weights models).

Random weights choose arbitrarily among the tokens the grammar allows, so output that
validates shows the backend constrained every step. Schemas are bounded (string lengths,
enums, item counts) because a random model rarely chooses to close an open-ended string.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

import jsonschema  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm.exceptions import VLLMValidationError  # noqa: E402
from vllm.sampling_params import StructuredOutputsParams  # noqa: E402

from xg2_plugin import GrammarCompiler  # noqa: E402
from xg2_plugin.adapters.vllm import backend as xg2_backend  # noqa: E402
from xg2_plugin.testing import ebnf_accepts  # noqa: E402

from vllm_helpers import offline_llm  # noqa: E402

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 10},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "role": {"enum": ["admin", "user", "guest"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 2},
        "active": {"type": "boolean"},
    },
    "required": ["name", "age", "role", "tags", "active"],
}
EMAIL_REGEX = r"[a-z]{3,8}@[a-z]{2,6}\.(com|org|net)"
CHOICES = ["alpha", "beta", "gamma delta"]
# Parentheses nest one level, so every sentence has at most 71 bytes and random weights must
# stop within ARITH_MAX_TOKENS (with `term ::= "(" expr ")"` a temperature-1 sample could
# nest past max_tokens and end cut off).
ARITH_EBNF = r"""
root ::= expr
expr ::= term (("+" | "-" | "*") term){0,3}
term ::= num | "(" flat ")"
flat ::= num (("+" | "-" | "*") num){0,3}
num ::= [1-9] [0-9]{0,2}
"""
ARITH_MAX_TOKENS = 96
WEATHER_ARGS = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12}, "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"],
}
STRUCTURAL_TAG = {
    "type": "structural_tag",
    "format": {
        "type": "tag",
        "begin": "<function=get_weather>",
        # A bounded content format: random weights under a JSON-schema content (whose layout
        # the structural tag leaves flexible) can pad with whitespace past max_tokens.
        "content": {"type": "regex", "pattern": r'\{"city": "[a-z]{1,12}", "unit": "(celsius|fahrenheit)"\}'},
        "end": "</function>",
    },
}
INVALID_SCHEMA = {"type": "object", "properties": {"code": {"type": "string", "pattern": "(?<=x)y"}}}


# The engine's own JSON layout is flexible with a cap (XG2_MAX_WHITESPACE); requests ask for
# compact JSON themselves (disable_any_whitespace per request) unless a test says otherwise.
ENGINE_MAX_WHITESPACE = 2
SMALL = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}, "ok": {"type": "boolean"}},
    "required": ["n", "ok"],
}


def sampling(max_tokens: int = 64, **structured: Any) -> SamplingParams:
    """Random sampling (temperature 1) under one structured-output constraint, if any; JSON is
    compact unless ``disable_any_whitespace=False`` or a ``whitespace_pattern`` is given."""
    if structured:
        structured.setdefault("disable_any_whitespace", True)
    so = StructuredOutputsParams(**structured) if structured else None
    return SamplingParams(temperature=1.0, max_tokens=max_tokens, structured_outputs=so)


def check_json(text: str, schema: dict) -> Any:
    """Parses ``text``, validates it against ``schema`` and checks it is compact."""
    value = json.loads(text)
    jsonschema.validate(value, schema)
    assert "\n" not in text and not text.startswith(" "), f"not compact: {text!r}"
    return value


@pytest.fixture(scope="module")
def llm(tiny_llama: Path, xg2_registered: None) -> Iterator[Any]:
    before = os.environ.get("XG2_MAX_WHITESPACE")
    os.environ["XG2_MAX_WHITESPACE"] = str(ENGINE_MAX_WHITESPACE)
    xg2_backend.reload_settings()
    try:
        with offline_llm(tiny_llama, structured_outputs_config={"backend": "xg2"}) as engine:
            yield engine
    finally:
        if before is None:
            del os.environ["XG2_MAX_WHITESPACE"]
        else:
            os.environ["XG2_MAX_WHITESPACE"] = before
        xg2_backend.reload_settings()


def generate_one(llm: Any, params: SamplingParams, prompt: str = "Hello") -> Any:
    (output,) = llm.generate([prompt], params, use_tqdm=False)
    return output.outputs[0]


def test_json_schema(llm: Any) -> None:
    for output in llm.generate(["A person:"] * 3, sampling(json=PERSON), use_tqdm=False):
        completion = output.outputs[0]
        assert completion.finish_reason == "stop"
        check_json(completion.text, PERSON)


def test_json_object(llm: Any) -> None:
    # Any JSON object: nothing bounds it, so nudge the random model towards closing quotes
    # and braces (the grammar still decides what is allowed).
    tokenizer = llm.get_tokenizer()
    closers = {tokenizer.encode(text, add_special_tokens=False)[0]: 12.0 for text in ('"', "}", "]", '"}')}
    params = sampling(json_object=True)
    params.logit_bias = closers
    completion = generate_one(llm, params)
    assert completion.finish_reason == "stop", completion.text
    assert isinstance(json.loads(completion.text), dict)


def test_regex(llm: Any) -> None:
    completion = generate_one(llm, sampling(regex=EMAIL_REGEX))
    assert re.fullmatch(EMAIL_REGEX, completion.text), completion.text


def test_choice(llm: Any) -> None:
    for output in llm.generate(["Pick one:"] * 4, sampling(choice=CHOICES), use_tqdm=False):
        assert output.outputs[0].text in CHOICES


def test_ebnf_grammar(llm: Any) -> None:
    completion = generate_one(llm, sampling(max_tokens=ARITH_MAX_TOKENS, grammar=ARITH_EBNF))
    assert completion.finish_reason == "stop"
    assert ebnf_accepts(ARITH_EBNF, completion.text), completion.text


def test_structural_tag(llm: Any) -> None:
    spec = json.dumps(STRUCTURAL_TAG)
    if not hasattr(GrammarCompiler, "compile_structural_tag"):
        with pytest.raises(VLLMValidationError, match="compile_structural_tag is not available"):
            generate_one(llm, sampling(structural_tag=spec))
        return
    completion = generate_one(llm, sampling(max_tokens=96, structural_tag=spec))
    match = re.fullmatch(r"<function=get_weather>(.*)</function>", completion.text, re.S)
    assert match, completion.text
    check_json(match.group(1), WEATHER_ARGS)


def test_mixed_batch(llm: Any) -> None:
    requests = [
        ("A person:", sampling(json=PERSON)),
        ("Free text:", sampling(max_tokens=8)),
        ("Email:", sampling(regex=EMAIL_REGEX)),
        ("More free text:", sampling(max_tokens=8)),
        ("Pick:", sampling(choice=CHOICES)),
        ("Sum:", sampling(max_tokens=ARITH_MAX_TOKENS, grammar=ARITH_EBNF)),
    ]
    outputs = llm.generate([p for p, _ in requests], [s for _, s in requests], use_tqdm=False)
    texts = [o.outputs[0].text for o in outputs]
    check_json(texts[0], PERSON)
    assert len(outputs[1].outputs[0].token_ids) == 8 and len(outputs[3].outputs[0].token_ids) == 8
    assert re.fullmatch(EMAIL_REGEX, texts[2])
    assert texts[4] in CHOICES
    assert outputs[5].outputs[0].finish_reason == "stop"
    assert ebnf_accepts(ARITH_EBNF, texts[5]), texts[5]


def longest_whitespace_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"[ \t\n\r]+", text)), default=0)


def test_request_whitespace_options_and_the_engine_cap(llm: Any) -> None:
    """Whitespace tokens are pushed up, so each request writes as much whitespace as it may:
    none when the request disables it, at most the engine's cap, at most its own pattern's."""
    tokenizer = llm.get_tokenizer()
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    bias = {i: 20.0 for i, text in enumerate(texts) if text and set(text) <= set(" \t\n\r")}
    requests = [
        sampling(json=SMALL),
        sampling(json=SMALL, disable_any_whitespace=False),
        sampling(json=SMALL, disable_any_whitespace=False, whitespace_pattern="[ \t\n\r]?"),
        sampling(json=SMALL, whitespace_pattern="[ \t\n\r]*"),
    ]
    for params in requests:
        params.logit_bias = bias
    outputs = [o.outputs[0] for o in llm.generate(["Data:"] * len(requests), requests, use_tqdm=False)]
    for output in outputs:
        assert output.finish_reason == "stop", output.text
        jsonschema.validate(json.loads(output.text), SMALL)
    runs = [longest_whitespace_run(output.text) for output in outputs]
    assert runs == [0, ENGINE_MAX_WHITESPACE, 1, ENGINE_MAX_WHITESPACE], [o.text for o in outputs]
    with pytest.raises(VLLMValidationError, match="whitespace_pattern"):
        generate_one(llm, sampling(json=SMALL, whitespace_pattern=r"\s*"))


def test_invalid_schema_is_a_validation_error(llm: Any) -> None:
    with pytest.raises(VLLMValidationError, match=r"xg2 backend: unsupported pattern at /properties/code.*look-behind"):
        generate_one(llm, sampling(json=INVALID_SCHEMA))
    with pytest.raises(VLLMValidationError, match="Lark grammar, line 1, column 8: grammar references"):
        generate_one(llm, sampling(grammar='start: @sub'))
    # The engine is unaffected.
    assert generate_one(llm, sampling(choice=CHOICES)).text in CHOICES


def test_lark_grammar_request(llm: Any) -> None:
    # vLLM's `grammar` field carries Lark text (OpenAI-style custom tools); it goes to compile_lark.
    lark = 'start: ANSWER ("," ANSWER)~0..2\nANSWER: "yes" | "no"'
    output = generate_one(llm, sampling(max_tokens=24, grammar=lark))
    assert output.finish_reason == "stop" and re.fullmatch(r"(yes|no)(,(yes|no)){0,2}", output.text), output.text


def test_engine_side_compile_error_fails_only_its_request(llm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Skip the frontend check so the bad schema reaches the engine core's compile pool, the
    # path a grammar that only fails against the real vocabulary would take.
    monkeypatch.setattr(xg2_backend, "check_request", lambda params, config: None)
    outputs = llm.generate(
        ["Email:", "Bad:", "Pick:"],
        [sampling(regex=EMAIL_REGEX), sampling(json=INVALID_SCHEMA), sampling(choice=CHOICES)],
        use_tqdm=False,
    )
    assert re.fullmatch(EMAIL_REGEX, outputs[0].outputs[0].text)
    assert outputs[1].outputs[0].finish_reason not in ("stop", "length")
    assert outputs[2].outputs[0].text in CHOICES


def test_reasoning_parser(tiny_qwen3: Path, xg2_registered: None) -> None:
    config = {"backend": "xg2", "disable_any_whitespace": True, "reasoning_parser": "qwen3"}
    with offline_llm(tiny_qwen3, structured_outputs_config=config) as engine:
        tokenizer = engine.get_tokenizer()
        (think_end,) = tokenizer.encode("</think>", add_special_tokens=False)
        thinking = sampling(max_tokens=96, json=PERSON)
        # Free reasoning text until the random model picks </think> (nudged to within a few
        # tokens); the schema applies only from there.
        thinking.logit_bias = {think_end: 11.0}
        reasoned = generate_one(engine, thinking, prompt="<think>\n")
        # A prompt that already closed its reasoning is constrained from the first token.
        direct = generate_one(engine, sampling(json=PERSON), prompt="<think>\n</think>\n")
    reasoning, sep, answer = reasoned.text.partition("</think>")
    assert sep, reasoned.text
    check_json(answer, PERSON)
    check_json(direct.text, PERSON)


class _ValidateRecorder:
    """Wraps :meth:`XG2Grammar.validate_tokens` to record how drafts were judged."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []
        self._inner = xg2_backend.XG2Grammar.validate_tokens

    def __call__(self, grammar: Any, tokens: list[int]) -> list[int]:
        before = grammar.matcher.num_accepted_steps
        accepted = self._inner(grammar, tokens)
        assert grammar.matcher.num_accepted_steps == before, "validate_tokens moved the matcher"
        self.calls.append((len(tokens), len(accepted)))
        return accepted


def test_ngram_speculative_decoding(tiny_llama: Path, xg2_registered: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Run last in the session (conftest.py): the ngram proposer imports numba, after which vLLM 0.32's
    # CPU kernel registration fails for any further engine started in the same process.
    recorder = _ValidateRecorder()
    monkeypatch.setattr(xg2_backend.XG2Grammar, "validate_tokens", lambda self, tokens: recorder(self, tokens))
    speculative = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}
    repeated = r"(ab,){12}"
    with offline_llm(
        tiny_llama,
        structured_outputs_config={"backend": "xg2", "disable_any_whitespace": True},
        speculative_config=speculative,
    ) as engine:
        outputs = engine.generate(
            ["ab,ab,ab,ab,ab,ab,ab,ab,", '{"name":"ab","age":7,"role":"user",', "x@y.com, abc@de.org, "],
            [sampling(regex=repeated), sampling(json=PERSON), sampling(regex=EMAIL_REGEX)],
            use_tqdm=False,
        )
    texts = [o.outputs[0].text for o in outputs]
    assert re.fullmatch(repeated, texts[0]), texts[0]
    check_json(texts[1], PERSON)
    assert re.fullmatch(EMAIL_REGEX, texts[2]), texts[2]
    assert recorder.calls, "the ngram proposer drafted nothing"
    assert any(accepted > 0 for _, accepted in recorder.calls), recorder.calls
