"""The workloads: JSONSchemaBench schemas with their instances, and the EBNF grammars.

JSONSchemaBench files (MaskBench format) hold ``{"schema", "tests": [{"valid", "data"}]}``;
the category is the filename prefix before ``---``. Instances are serialized the way an
engine that keeps the schema's property order would emit them: keys in the schema's declared
order (undeclared keys after, in their own order), ``json.dumps`` default separators
(``", "`` and ``": "``), non-ASCII text kept as UTF-8.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional

from .config import data_dir

CATEGORIES = (
    "Github_trivial", "Github_easy", "Github_medium", "Github_hard", "Github_ultra",
    "Glaiveai2K", "Kubernetes", "JsonSchemaStore", "Snowplow", "WashingtonPost",
)


def schema_dir() -> Path:
    return data_dir() / "jsonschemabench"


def grammar_dir() -> Path:
    return data_dir() / "grammars"


def category_of(name: str) -> str:
    """``Github_easy---o10008.json`` -> ``Github_easy``."""
    return name.split("---", 1)[0]


def list_schemas(categories: Optional[Iterable[str]] = None) -> list[str]:
    """File names of the corpus (sorted), optionally restricted to some categories."""
    wanted = set(categories) if categories else None
    names = sorted(p.name for p in schema_dir().glob("*.json"))
    return [n for n in names if wanted is None or category_of(n) in wanted]


def stratified_sample(names: list[str], per_category: int, seed: int) -> list[str]:
    """``per_category`` names from each category, drawn with a fixed seed (sorted per category)."""
    by_category: dict[str, list[str]] = defaultdict(list)
    for name in names:
        by_category[category_of(name)].append(name)
    sample: list[str] = []
    for category in sorted(by_category):
        members = sorted(by_category[category])
        rng = random.Random(f"{seed}:{category}")
        sample.extend(sorted(rng.sample(members, min(per_category, len(members)))))
    return sample


def sample_paths(per_category: int, seed: int = 0) -> list[Path]:
    """The benchmark's schema sample as paths: what ``run.py --per-category N --seed S`` measures."""
    return [schema_dir() / name for name in stratified_sample(list_schemas(), per_category, seed)]


def list_grammars() -> list[str]:
    """The GBNF grammars (``*.gbnf``; the Lark files are llguidance-only and skipped)."""
    return sorted(p.name for p in grammar_dir().glob("*.gbnf"))


@dataclass
class SchemaItem:
    """One corpus entry."""

    name: str
    schema: Any
    valid: list[Any]
    invalid: list[Any]

    @property
    def category(self) -> str:
        return category_of(self.name)

    @property
    def schema_text(self) -> str:
        return json.dumps(self.schema)


def load_schema_item(name: str) -> SchemaItem:
    with open(schema_dir() / name, encoding="utf-8") as file:
        data = json.load(file)
    tests = data.get("tests") or []
    return SchemaItem(
        name=name,
        schema=data["schema"],
        valid=[t["data"] for t in tests if t.get("valid")],
        invalid=[t["data"] for t in tests if not t.get("valid")],
    )


# ---- instance serialization ---------------------------------------------------------------

_MAX_REF_HOPS = 32


def _resolve(schema: Any, root: Any) -> Any:
    """Follows local ``$ref`` pointers (``#/...``); anything else is returned as is."""
    for _ in range(_MAX_REF_HOPS):
        if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
            return schema
        ref = schema["$ref"]
        if not ref.startswith("#"):
            return schema
        target: Any = root
        for part in ref[1:].split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                return schema
        schema = target
    return schema


def _declared_properties(schema: Any, root: Any, depth: int = 0) -> dict[str, Any]:
    """Declared properties in order, gathered through ``$ref`` and the composition keywords."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict) or depth > 8:
        return {}
    props: dict[str, Any] = {}
    own = schema.get("properties")
    if isinstance(own, dict):
        props.update(own)
    for keyword in ("allOf", "anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list):
            for branch in branches:
                for key, sub in _declared_properties(branch, root, depth + 1).items():
                    props.setdefault(key, sub)
    for keyword in ("then", "else"):
        for key, sub in _declared_properties(schema.get(keyword), root, depth + 1).items():
            props.setdefault(key, sub)
    return props


def _item_schema(schema: Any, index: int) -> Any:
    if not isinstance(schema, dict):
        return None
    prefix = schema.get("prefixItems")
    items = schema.get("items")
    if isinstance(prefix, list):
        return prefix[index] if index < len(prefix) else items
    if isinstance(items, list):  # draft-04..07 tuple form
        return items[index] if index < len(items) else schema.get("additionalItems")
    return items


def order_like_schema(value: Any, schema: Any, root: Any, depth: int = 0) -> Any:
    """``value`` with object keys in the schema's declared order (recursively, best effort)."""
    if depth > 64:
        return value
    schema = _resolve(schema, root)
    if isinstance(value, dict):
        props = _declared_properties(schema, root)
        keys = [k for k in props if k in value] + [k for k in value if k not in props]
        additional = schema.get("additionalProperties") if isinstance(schema, dict) else None
        return {k: order_like_schema(value[k], props.get(k, additional), root, depth + 1) for k in keys}
    if isinstance(value, list):
        return [order_like_schema(v, _item_schema(schema, i), root, depth + 1) for i, v in enumerate(value)]
    return value


def serialize_instance(value: Any, schema: Any) -> str:
    """The text an engine is walked along for an instance (see the module docstring)."""
    return json.dumps(order_like_schema(value, schema, schema), ensure_ascii=False)
