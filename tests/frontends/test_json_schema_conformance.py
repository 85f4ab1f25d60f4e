"""JSON-Schema-Test-Suite conformance (draft2020-12 and draft7).

For every test case the engine either refuses the schema with the policy error
(UnsupportedSchemaError / SchemaError) or agrees with the suite on every instance at the
string level: valid instances are accepted (and complete), invalid ones are not.

Instances are serialised with object keys in the order the grammar enforces: declared
properties first, in the order a depth-first walk of the schema meets them (own
`properties`, then `$ref`, `allOf`, `anyOf`, `oneOf`, `if`/`then`/`else`, `dependentSchemas`),
then undeclared keys in instance order. Schemas compile with strict_mode=False because the
suite's instances carry undeclared properties. The engine asserts `format` (the
format-assertion vocabulary), so for `format.json` the expected result comes from the
`jsonschema` library with its format checker rather than from the suite's annotation-only
expectation (those strings violate the format); the optional `format/*` files, which
state format-assertion results, are run as well. Draft-7 schemas get draft-7 `$schema` so the converter applies draft-7 rules.

`python tests/frontends/test_json_schema_conformance.py` prints the per-keyword table (the generator
script scripts/gen_schema_support.py writes it to docs/).
"""

from __future__ import annotations

import json
import os
import pathlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Optional

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA_DIR = pathlib.Path(os.environ.get("XG2_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))
SUITE_DIR = DATA_DIR / "json_schema_test_suite" / "tests"
DRAFTS = {"draft2020-12": "https://json-schema.org/draft/2020-12/schema",
          "draft7": "http://json-schema.org/draft-07/schema#"}

# One byte per token plus a stop token: string-level checks need no real tokenizer.
_VOCAB = [bytes([b]) for b in range(256)] + [b"</s>"]


@dataclass
class CaseResult:
    draft: str
    keyword: str
    description: str
    status: str  # "pass", "refused" or "fail"
    message: str = ""
    instances: int = 0
    mismatches: list = field(default_factory=list)


def _resolve(schema: Any, root: Any, seen: int = 0) -> Any:
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 32:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            return schema
        target: Any = root
        for token in ref[2:].split("/"):
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(target, list) and token.isdigit() and int(token) < len(target):
                target = target[int(token)]
            elif isinstance(target, dict) and token in target:
                target = target[token]
            else:
                return schema
        if set(schema) - {"$ref"}:
            return schema  # siblings: walked by _parts
        schema, seen = target, seen + 1
    return schema


def _parts(schema: Any, root: Any, depth: int = 0) -> list:
    """The schema objects a depth-first walk meets, in the order the grammar merges them."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict) or depth > 16:
        return []
    out = [schema]
    ref = schema.get("$ref")
    if isinstance(ref, str) and set(schema) - {"$ref"}:
        out += _parts({"$ref": ref}, root, depth + 1)
    for keyword in ("allOf", "anyOf", "oneOf"):
        for branch in schema.get(keyword, []) if isinstance(schema.get(keyword), list) else []:
            out += _parts(branch, root, depth + 1)
    for keyword in ("if", "then", "else"):
        out += _parts(schema.get(keyword), root, depth + 1)
    for sub in (schema.get("dependentSchemas") or {}).values() if isinstance(schema.get("dependentSchemas"), dict) else []:
        out += _parts(sub, root, depth + 1)
    return out


def _same_json(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b))
    numbers = (int, float)
    return a == b and (type(a) is type(b) or (type(a) in numbers and type(b) in numbers))


def canonical_numbers(value: Any) -> Any:
    """Integral floats as integers: the same JSON Schema value, in the spelling the grammar
    uses for integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: canonical_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [canonical_numbers(v) for v in value]
    return value


def order_like_grammar(value: Any, schema: Any, root: Any) -> Any:
    parts = _parts(schema, root)
    for part in parts:
        # const / enum values are written in their own key order.
        for candidate in ([part["const"]] if "const" in part else []) + (
                part["enum"] if isinstance(part.get("enum"), list) else []):
            if isinstance(candidate, (dict, list)) and _same_json(candidate, value):
                return canonical_numbers(candidate)
    if isinstance(value, dict):
        declared: list = []
        for part in parts:
            props = part.get("properties")
            for key in props if isinstance(props, dict) else []:
                if key not in declared:
                    declared.append(key)
        keys = [k for k in declared if k in value] + [k for k in value if k not in declared]
        out = {}
        for key in keys:
            subs = [p["properties"][key] for p in parts
                    if isinstance(p.get("properties"), dict) and key in p["properties"]]
            subs += [p["additionalProperties"] for p in parts if key not in declared and "additionalProperties" in p]
            out[key] = order_like_grammar(value[key], {"allOf": subs} if subs else {}, root)
        return out
    if isinstance(value, list):
        out = []
        for i, item in enumerate(value):
            subs = []
            for part in parts:
                prefix = part.get("prefixItems")
                items = part.get("items")
                if isinstance(prefix, list) and i < len(prefix):
                    subs.append(prefix[i])
                elif isinstance(items, list):
                    subs.append(items[i] if i < len(items) else part.get("additionalItems", {}))
                elif items is not None:
                    subs.append(items)
            out.append(order_like_grammar(item, {"allOf": subs} if subs else {}, root))
        return out
    return value


def run_case(compiler: Any, draft: str, keyword: str, group: dict) -> CaseResult:
    import xg2_plugin as xg
    from xg2_plugin import _native

    schema = group["schema"]
    if isinstance(schema, dict) and draft == "draft7" and "$schema" not in schema:
        schema = {"$schema": DRAFTS[draft], **schema}
    result = CaseResult(draft, keyword, group["description"], "pass")
    try:
        grammar = compiler.compile_json_schema(json.dumps(schema), strict_mode=False)
    except (_native.UnsupportedSchemaError, _native.SchemaError) as e:
        result.status, result.message = "refused", str(e)
        return result
    for test in group["tests"]:
        expected = test["valid"]
        if keyword == "format" and "only an annotation" in test["description"]:
            expected = False  # format-assertion semantics: the string violates the format
        data = canonical_numbers(test["data"])
        text = json.dumps(order_like_grammar(data, schema, schema), ensure_ascii=False)
        matcher = xg.GrammarMatcher(grammar, terminate_without_stop_token=True)
        accepted = matcher.accept_string(text) and matcher.is_completed()
        result.instances += 1
        if accepted != expected:
            result.mismatches.append((test["description"], text, expected))
    if result.mismatches:
        result.status = "fail"
    return result


def suite_cases() -> list:
    cases = []
    for draft in DRAFTS:
        for path in sorted((SUITE_DIR / draft).glob("*.json")):
            for group in json.loads(path.read_text()):
                cases.append((draft, path.stem, group))
        for path in sorted((SUITE_DIR / draft / "optional" / "format").glob("*.json")):
            for group in json.loads(path.read_text()):
                cases.append((draft, "format/" + path.stem, group))
    return cases


_COMPILER = None


def compiler() -> Any:
    global _COMPILER
    if _COMPILER is None:
        import xg2_plugin as xg

        info = xg.TokenizerInfo(_VOCAB, xg.VocabType.RAW, stop_token_ids=[len(_VOCAB) - 1])
        _COMPILER = xg.GrammarCompiler(info, max_threads=1)
    return _COMPILER


def run_suite() -> list:
    return [run_case(compiler(), draft, keyword, group) for draft, keyword, group in suite_cases()]


def pass_table(results: list) -> str:
    rows: dict = defaultdict(lambda: defaultdict(lambda: [0, 0, 0, 0]))
    for r in results:
        cell = rows[r.keyword][r.draft]
        cell[0] += 1
        cell[1] += r.status == "pass"
        cell[2] += r.status == "refused"
        cell[3] += r.status == "fail"
    lines = ["| keyword (suite file) | " + " | ".join(f"{d}: exact / refused / wrong (of cases)" for d in DRAFTS) + " |",
             "|---|" + "---|" * len(DRAFTS)]
    totals = {d: [0, 0, 0, 0] for d in DRAFTS}
    for keyword in sorted(rows):
        cells = []
        for d in DRAFTS:
            c = rows[keyword].get(d)
            if c is None:
                cells.append("-")
                continue
            totals[d] = [a + b for a, b in zip(totals[d], c)]
            cells.append(f"{c[1]} / {c[2]} / {c[3]} ({c[0]})")
        lines.append(f"| {keyword} | " + " | ".join(cells) + " |")
    lines.append("| **total** | " + " | ".join(f"**{t[1]} / {t[2]} / {t[3]} ({t[0]})**" for t in totals.values()) + " |")
    return "\n".join(lines) + "\n"


_CASES = suite_cases() if SUITE_DIR.is_dir() else []


@pytest.mark.parametrize("draft,keyword,group", _CASES,
                         ids=[f"{d}/{k}/{i}" for i, (d, k, _) in enumerate(_CASES)])
def test_suite_case(draft: str, keyword: str, group: dict) -> None:
    pytest.importorskip("jsonschema")
    result = run_case(compiler(), draft, keyword, group)
    assert result.status != "fail", f"{group['description']}: {result.mismatches}\n{json.dumps(group['schema'])}"
    if result.status == "refused":
        assert "/" in result.message or "#" in result.message or "schema" in result.message, result.message


def test_suite_present() -> None:
    if not SUITE_DIR.is_dir():
        pytest.skip(f"no suite at {SUITE_DIR}")
    assert len(_CASES) > 500


def main(argv: Optional[list] = None) -> int:
    results = run_suite()
    print(pass_table(results))
    for r in results:
        if r.status == "fail":
            print(f"FAIL {r.draft}/{r.keyword}: {r.description}: {r.mismatches[:3]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
