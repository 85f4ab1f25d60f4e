"""The include graph of native/ that docs/architecture.md describes: each folder includes only the
folders below it, so the matcher never depends on how a grammar was written and native/compiler/
is the one place that joins a frontend to the matcher."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[2] / "native"
ALLOWED = {
    "support": {"support"},
    "grammar": {"support", "grammar"},
    "tokenizer": {"support", "grammar", "tokenizer"},
    "frontends": {"support", "grammar", "tokenizer", "frontends"},
    "matcher": {"support", "grammar", "tokenizer", "matcher"},
    "compiler": {"support", "grammar", "tokenizer", "frontends", "matcher", "compiler"},
}
INCLUDE = re.compile(r'^#include "([a-z_]+)/', re.MULTILINE)


@pytest.mark.parametrize("folder", sorted(ALLOWED))
def test_folder_includes_only_the_folders_below_it(folder: str) -> None:
    found = {}
    for path in sorted((NATIVE / folder).rglob("*")):
        if path.suffix in (".h", ".cc"):
            for included in INCLUDE.findall(path.read_text()):
                if included not in ALLOWED[folder]:
                    found.setdefault(included, []).append(str(path.relative_to(NATIVE)))
    assert found == {}, f"native/{folder} includes folders above it: {found}"


# The indexes only the token-mask cache walks live in matcher/vocabulary_index.h; the tokenizer
# layer keeps the vocabulary and knows its attachment only as a VocabularyAttachment.
MATCHER_INDEX_NAMES = ("TokenTrieNode", "TokenTrieTokens", "TrieChild", "RegionOutsiders", "ClassPrefixes",
                       "CharacterClass", "LongTokenTable", "ByteMask", "VocabularyIndex")


def test_tokenizer_layer_names_no_matcher_index() -> None:
    found = {}
    for path in sorted((NATIVE / "tokenizer").rglob("*")):
        if path.suffix in (".h", ".cc"):
            text = path.read_text()
            named = [name for name in MATCHER_INDEX_NAMES if re.search(rf"\b{name}\b", text)]
            if named:
                found[str(path.relative_to(NATIVE))] = named
    assert found == {}, f"native/tokenizer names the matcher's vocabulary index: {found}"
