"""Model presets on BFCL tool sets: calls in each family's rendered format are accepted token by
token with the real tokenizer; malformed calls are rejected."""

from __future__ import annotations

import json

import pytest

import xg2_plugin as xg
from xg2_plugin.presets import get_model_structural_tag

from preset_support import bfcl_to_json_schema
from xg2_test_support import encode_continuation, hf_compiler, hf_tokenizer, hf_tokenizer_info, require_data

def bfcl_cases(count=3):
    path = require_data("bfcl_v3/question/BFCL_v3_simple.json")
    answers = require_data("bfcl_v3/possible_answer/BFCL_v3_simple.json")
    questions = [json.loads(line) for line in path.read_text().splitlines()[:count]]
    truth = {a["id"]: a for a in (json.loads(line) for line in answers.read_text().splitlines()[:count])}
    cases = []
    for q in questions:
        tools = [{"type": "function", "function": {"name": f["name"], "parameters": bfcl_to_json_schema(f["parameters"])}}
                 for f in q["function"]]
        (name, params), = truth[q["id"]]["ground_truth"][0].items()
        args = {k: v[0] for k, v in params.items() if v and v[0] != ""}
        cases.append((tools, name, args))
    return cases


def accepted_token_by_token(compiler_name, tag, text, ids=None):
    grammar = hf_compiler(compiler_name).compile_structural_tag(tag)
    matcher = xg.GrammarMatcher(grammar)
    ids = ids if ids is not None else encode_continuation(compiler_name, text)
    return all(matcher.accept_token(t) for t in ids) and matcher.is_completed()


@pytest.mark.parametrize("tools,name,args", bfcl_cases())
def test_llama3_json(tools, name, args):
    tag = get_model_structural_tag("llama3_json", tools, "required")
    # meta-llama-Llama-3.1-8B-Instruct.jinja renders {"name": "...", "parameters": <tojson>}.
    call = '{"name": "' + name + '", "parameters": ' + json.dumps(args) + "}"
    assert accepted_token_by_token("llama3.1", tag, call)
    assert not accepted_token_by_token("llama3.1", tag, call.replace(name, name + "x"))
    assert not accepted_token_by_token("llama3.1", tag, "Sure. " + call)
    auto = get_model_structural_tag("llama3_json", tools, "auto")
    assert accepted_token_by_token("llama3.1", auto, "I can't call a tool for that.")


@pytest.mark.parametrize("tools,name,args", bfcl_cases())
def test_llama3_function_tag(tools, name, args):
    tag = get_model_structural_tag("llama3_function", tools, "auto")
    call = f"<function={name}>{json.dumps(args)}</function>"
    assert accepted_token_by_token("llama3.1", tag, "Let me check. " + call + " Done.")
    assert not accepted_token_by_token("llama3.1", tag, f"<function={name}>{{\"bogus\": 1}}</function>")
    assert not accepted_token_by_token("llama3.1", tag, f"<function={name}>{json.dumps(args)}")


@pytest.mark.parametrize("tools,name,args", bfcl_cases(2))
def test_qwen3_tool_call_with_reasoning(tools, name, args):
    # Qwen-Qwen3-0.6B.jinja: <tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>
    call = '<tool_call>\n{"name": "' + name + '", "arguments": ' + json.dumps(args) + "}\n</tool_call>"
    enabled = get_model_structural_tag("qwen", tools, "auto", reasoning="enabled")
    assert accepted_token_by_token("qwen3", enabled, "<think>\nThe user wants " + name + ".\n</think>\n\n" + call)
    assert not accepted_token_by_token("qwen3", enabled, call)  # the think block is required
    disabled = get_model_structural_tag("qwen", tools, "auto", reasoning="disabled")
    assert accepted_token_by_token("qwen3", disabled, call)
    assert not accepted_token_by_token("qwen3", disabled, "<think>x</think>" + call)
    assert not accepted_token_by_token("qwen2.5", disabled, call.replace("</tool_call>", ""))


@pytest.mark.parametrize("tools,name,args", bfcl_cases(2))
def test_harmony_special_tokens_are_tokens(tools, name, args):
    tok = hf_tokenizer("gpt-oss")
    # openai-gpt-oss-120b.jinja: analysis, then commentary to=functions.NAME <|constrain|>json.
    text = ("<|channel|>analysis<|message|>Need " + name + ".<|end|><|start|>assistant"
            "<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>"
            + json.dumps(args) + "<|call|>")
    ids = tok.encode(text, add_special_tokens=False).ids
    assert 200012 in ids and 200003 in ids  # <|call|>, <|constrain|> as special tokens
    tag = get_model_structural_tag("harmony", tools, "auto", reasoning="enabled")
    assert accepted_token_by_token("gpt-oss", tag, text, ids=ids)
    final = "<|channel|>analysis<|message|>ok<|end|><|start|>assistant<|channel|>final<|message|>Hi!<|return|>"
    assert accepted_token_by_token("gpt-oss", tag, final, ids=tok.encode(final, add_special_tokens=False).ids)
    # The same markers spelled by ordinary tokens are not the special tokens.
    grammar = hf_compiler("gpt-oss").compile_structural_tag(tag)
    assert not xg.GrammarMatcher(grammar).accept_string("<|channel|>analysis")
    required = get_model_structural_tag("harmony", tools, "required", reasoning="disabled")
    assert not accepted_token_by_token("gpt-oss", required, final[final.index("<|channel|>final"):],
                                       ids=tok.encode(final[final.index("<|channel|>final"):], add_special_tokens=False).ids)


def test_errors():
    with pytest.raises(ValueError, match="unknown model family"):
        get_model_structural_tag("nope")
    with pytest.raises(ValueError, match="not among the tools"):
        get_model_structural_tag("qwen", [], {"type": "function", "function": {"name": "f"}})


def test_cached_masks_equal_reference_masks_on_dispatch_and_token_literals():
    """The mask cache (issue 5) over TagDispatch machines and derived vocabularies agrees
    with the reference vocabulary walk at every step of a Harmony tool call."""
    import numpy as np

    (tools, name, args), = bfcl_cases(1)
    tok = hf_tokenizer("gpt-oss")
    text = ("<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant<|channel|>commentary to=functions."
            + name + " <|constrain|>json<|message|>" + json.dumps(args) + "<|call|>")
    ids = tok.encode(text, add_special_tokens=False).ids
    grammar = hf_compiler("gpt-oss").compile_structural_tag(
        get_model_structural_tag("harmony", tools, "auto", reasoning="auto"))
    info = grammar.tokenizer_info
    matcher = xg.GrammarMatcher(grammar)
    cached = np.zeros(xg.get_bitmask_shape(1, info.vocab_size), dtype=np.int32)
    reference = np.zeros_like(cached)
    for step, token in enumerate(ids):
        # Dense free-text steps are slow on the reference walk: check a few of them.
        if step < 3 or step % 4 == 0 or step >= len(ids) - 3:
            assert matcher.fill_next_token_bitmask(cached) == matcher._fill_next_token_bitmask_reference(reference)
            assert np.array_equal(cached, reference), step
        assert matcher.accept_token(token)
    assert matcher.is_completed()


def _analysis_then_call(tools):
    """A Harmony-style tag written out (an analysis message, then a call): its states classify
    special-token literals, which is what the pool shares. (The ``harmony`` preset, shaped as
    xgrammar's, does not reach the pool: noted for the mask-cache owners.)"""
    calls = [{"type": "tag", "begin": f"<|channel|>commentary to=functions.{t['function']['name']} <|constrain|>json<|message|>",
              "content": {"type": "json_schema", "json_schema": t["function"]["parameters"]}, "end": "<|call|>"}
             for t in tools]
    analysis = {"type": "tag", "begin": "<|channel|>analysis<|message|>", "content": {"type": "any_text"},
                "end": "<|end|><|start|>assistant"}
    return {"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "optional", "content": analysis}, {"type": "or", "elements": calls}]}}


def test_harmony_grammars_share_a_pool_and_stay_exact():
    """Grammars that name the same special tokens share the derived vocabulary's cross-grammar
    pool (native/compiler/derived_vocabularies.h); masks built from pooled classifications
    equal the reference walk on a second tool set. The first grammar fills its own masks (no
    background precompute, whose timing is the machine's) so that the pool holds its
    classifications when the second grammar looks them up."""
    import numpy as np

    compiler = xg.GrammarCompiler(hf_tokenizer_info("gpt-oss"), precompute_nodes=0)
    tok = hf_tokenizer("gpt-oss")
    cases = bfcl_cases(3)
    for index, (tools, name, args) in enumerate(cases[:2]):
        grammar = compiler.compile_structural_tag(_analysis_then_call(tools))
        text = ("<|channel|>analysis<|message|>Ok.<|end|><|start|>assistant<|channel|>commentary to=functions."
                + name + " <|constrain|>json<|message|>" + json.dumps(args) + "<|call|>")
        matcher = xg.GrammarMatcher(grammar)
        cached = np.zeros(xg.get_bitmask_shape(1, grammar.tokenizer_info.vocab_size), dtype=np.int32)
        reference = np.zeros_like(cached)
        for step, token in enumerate(tok.encode(text, add_special_tokens=False).ids):
            if step < 6 or step % 3 == 0:
                matcher.fill_next_token_bitmask(cached)
                if index == 1:
                    matcher._fill_next_token_bitmask_reference(reference)
                    assert np.array_equal(cached, reference), step
            assert matcher.accept_token(token)
        assert matcher.is_terminated()
    (vocab, pool), = compiler._token_literal_vocabs.values()
    assert pool.hits > 0, (pool.hits, pool.misses)
