"""JSONSchemaBench, fixed stratified sample: every schema compiles or is refused with the
policy error; valid instances are accepted (token by token for the first of each), invalid ones
rejected, and random walks always produce output that validates."""

from __future__ import annotations

import os

import pytest

from xg2_corpus import evaluate_schema, stratified_sample
from xg2_test_support import data_dir, encode_continuation, hf_compiler

PER_CATEGORY = int(os.environ.get("XG2_CORPUS_PER_CATEGORY", "4"))
_CORPUS = data_dir() / "jsonschemabench"
SAMPLE = stratified_sample(_CORPUS, PER_CATEGORY, seed=2026) if _CORPUS.is_dir() else []


@pytest.mark.parametrize("path", SAMPLE, ids=[p.name for p in SAMPLE])
def test_corpus_schema(path) -> None:
    pytest.importorskip("jsonschema")
    result = evaluate_schema(
        path,
        hf_compiler("llama3.1"),
        lambda text: encode_continuation("llama3.1", text),
        token_level_instances=1,
        walks=2,
        walk_max_tokens=80,
    )
    assert result.status in ("ok", "unsupported", "invalid_schema"), result.message
    if result.status != "ok":
        # The policy error names a keyword and a JSON pointer.
        assert "/" in result.message or "#" in result.message, result.message
        return
    assert result.acceptance_failures == []
    assert result.token_failures == []
    assert result.walk_violations == []
