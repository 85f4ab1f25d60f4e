"""Our bitmasks on a real GPU: copied to the device and applied by the kernels serving engines use.

vLLM applies the CPU bitmask a backend fills with xgrammar's CUDA/Triton kernel; our
``apply_token_bitmask_inplace`` is the torch fallback. Along sampled decodes of JSONSchemaBench
schemas (real Llama-3.1 tokenizer), every row applied on the GPU must leave exactly the tokens the
plain reference mask allows, and every token sampled from the masked logits must be accepted.
Skipped without a CUDA device (CI has none); run on a GPU machine.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import xg2_plugin as xg
from xg2_plugin.bitmask import bitmask_to_bool_array
from xg2_corpus import make_validator, stratified_sample
from xg2_test_support import hf_compiler, hf_tokenizer_info, require_data

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

TOKENIZER = "llama3.1"
STEPS = 48


def _kernels() -> dict[str, object]:
    kernels: dict[str, object] = {"xg2_plugin torch": xg.apply_token_bitmask_inplace}
    try:
        from xgrammar import apply_token_bitmask_inplace as xgrammar_apply
    except ImportError:
        pass
    else:
        kernels["xgrammar (vLLM's kernel)"] = xgrammar_apply
    return kernels


def _grammars() -> list[tuple[str, object, xg.CompiledGrammar]]:
    compiler = hf_compiler(TOKENIZER)
    grammars = []
    for path in stratified_sample(require_data("jsonschemabench"), 1, seed=0):
        schema = json.loads(path.read_text(encoding="utf-8"))["schema"]
        try:
            grammars.append((path.name, schema, compiler.compile_json_schema(json.dumps(schema))))
        except xg.XG2Error:
            continue
    assert len(grammars) >= 5, "too few corpus schemas compiled"
    return grammars


@pytest.mark.parametrize("kernel_name", list(_kernels()))
def test_gpu_applied_masks_equal_the_reference(kernel_name: str) -> None:
    kernel = _kernels()[kernel_name]
    info = hf_tokenizer_info(TOKENIZER)
    vocab = info.vocab_size
    grammars = _grammars()
    matchers = [xg.GrammarMatcher(g) for _, _, g in grammars]
    generated: list[list[int]] = [[] for _ in matchers]
    bitmask = xg.allocate_token_bitmask(len(matchers), vocab).pin_memory()
    reference = np.zeros((1, bitmask.shape[1]), dtype=np.int32)
    generator = torch.Generator(device="cuda").manual_seed(0)
    rows_checked = 0
    for _ in range(STEPS):
        live = [i for i, m in enumerate(matchers) if not m.is_terminated()]
        if not live:
            break
        xg.batch_fill_next_token_bitmask([matchers[i] for i in live], bitmask, indices=live)
        logits = torch.randn(len(matchers), vocab, device="cuda", generator=generator)
        kernel(logits, bitmask.to("cuda", non_blocking=True), indices=live)
        # Rows that are not live stay unmasked; live rows keep exactly the reference's tokens.
        finite = torch.isfinite(logits).cpu().numpy()
        for i in live:
            matchers[i]._fill_next_token_bitmask_reference(reference, 0)
            expected = bitmask_to_bool_array(reference[0], vocab)
            mismatch = np.flatnonzero(finite[i] != expected)
            assert mismatch.size == 0, (
                f"{grammars[i][0]}: GPU-masked row differs from the reference mask at tokens {mismatch[:10].tolist()}")
            rows_checked += 1
        # Sample from the masked logits (sharpened so outputs close within the step budget).
        probs = torch.softmax(logits[live] * 4.0, dim=-1)
        sampled = torch.multinomial(probs, 1, generator=generator).squeeze(1).tolist()
        for i, token in zip(live, sampled):
            assert matchers[i].accept_token(token), f"{grammars[i][0]}: sampled token {token} was refused"
            generated[i].append(token)
    assert rows_checked >= len(matchers)
    decoded = info.decoded_vocab
    for (name, schema, _), matcher, ids in zip(grammars, matchers, generated):
        if matcher.is_terminated():
            text = b"".join(decoded[t] for t in ids if t not in matcher.stop_token_ids).decode("utf-8")
            errors = [e.message for e in make_validator(schema).iter_errors(json.loads(text))]
            assert not errors, f"{name}: sampled output {text!r} violates the schema: {errors[:3]}"
