"""The type stub xg2_plugin/_native.pyi against the built module: every name the module exports is
declared once, nothing is declared that the module lacks, and module functions and class members
take the parameters the bindings define (read from pybind11's signature line)."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from xg2_plugin import _native

STUB = Path(_native.__file__).with_name("_native.pyi")
if not STUB.exists():  # an installed wheel without the stub: check the source tree's copy
    STUB = Path(__file__).resolve().parents[2] / "xg2_plugin" / "_native.pyi"


def _stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text(), filename=str(STUB))


def _declared(body: list[ast.stmt]) -> list[str]:
    names = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return names


def _exported(obj: object) -> set[str]:
    return {name for name in vars(obj) if not (name.startswith("__") and name.endswith("__"))}


def _binding_parameters(function: object) -> list[str] | None:
    """Parameter names from pybind11's first docstring line `name(a: T, b: U = ...) -> R`."""
    doc = (getattr(function, "__doc__", None) or "").lstrip()
    match = re.match(r"\w+\((.*?)\)\s*->", doc.split("\n", 1)[0])
    if match is None:
        return None
    return [part.split(":")[0].strip() for part in re.split(r",\s*(?![^\[]*\])", match.group(1)) if part.strip()]


def _stub_parameters(node: ast.FunctionDef) -> list[str]:
    return [arg.arg for arg in node.args.args]


def test_every_module_name_is_declared_once_and_exists():
    declared = _declared(_stub_tree().body)
    duplicates = sorted({name for name in declared if declared.count(name) > 1})
    assert duplicates == [], f"declared more than once in {STUB.name}: {duplicates}"
    module_names = _exported(_native)
    assert sorted(module_names - set(declared)) == [], "exported by the module but not declared"
    assert sorted(set(declared) - module_names) == [], "declared but not exported by the module"


def test_module_functions_take_the_declared_parameters():
    mismatches = []
    for node in _stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            bound = _binding_parameters(getattr(_native, node.name))
            if bound is not None and bound != _stub_parameters(node):
                mismatches.append((node.name, _stub_parameters(node), bound))
    assert mismatches == []


@pytest.mark.parametrize("class_node", [n for n in _stub_tree().body if isinstance(n, ast.ClassDef)], ids=lambda n: n.name)
def test_class_members_match(class_node: ast.ClassDef):
    native_class = getattr(_native, class_node.name)
    if issubclass(native_class, BaseException):
        return
    declared = _declared(class_node.body)
    duplicates = sorted({name for name in declared if declared.count(name) > 1})
    assert duplicates == []
    # pybind11 internals (`_pybind11_*`, an enum's `__entries`) are not API.
    members = {name for name in _exported(native_class) if not name.startswith(("_pybind11", "__"))}
    public_declared = {name for name in declared if not (name.startswith("__") and name.endswith("__"))}
    assert sorted(members - public_declared) == [], f"{class_node.name}: members not declared"
    assert sorted(public_declared - members) == [], f"{class_node.name}: declared members missing"
    for node in class_node.body:
        if isinstance(node, ast.FunctionDef) and not any(
            isinstance(d, ast.Name) and d.id in ("property", "staticmethod") for d in node.decorator_list
        ):
            member = inspect.getattr_static(native_class, node.name)
            bound = _binding_parameters(member)
            if bound is not None and node.name != "__init__":
                assert bound == _stub_parameters(node), f"{class_node.name}.{node.name}"
