"""Reports the largest source files and the longest functions under native/.

    python scripts/code_facts.py [--top N] [--root DIR]

Files are ranked by lines. Functions are found by a brace-matching heuristic, not a C++
parser: comments, string and character literals and preprocessor lines are blanked out,
then every `{` at namespace or class scope whose preceding text (since the last `;`, `{`
or `}`) looks like a signature -- it has a parameter list and is not a class, struct, enum,
namespace or an initialiser -- opens a function, which ends at its matching `}`. A
function's length counts its lines from the first line of that text to the closing brace;
lambdas and local classes count towards the function that holds them.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import NamedTuple

SOURCE_SUFFIXES = {".cc", ".h", ".cpp", ".hpp"}
SCOPE_WORDS = re.compile(r"\b(class|struct|union|enum|namespace)\b")
CONTROL_WORDS = re.compile(r"^\s*(if|for|while|switch|catch|do|else|return)\b")
TYPE_OPERATORS = {"decltype", "sizeof", "alignof", "noexcept", "alignas"}
ACCESS_LABEL = re.compile(r"^\s*(public|private|protected)\s*:(?!:)")
NAME_BEFORE_PARAMS = re.compile(r"([~\w:]+(?:operator\s*[^\s(]+)?)\s*\($")


class Function(NamedTuple):
    path: str
    name: str
    first_line: int
    lines: int


def blank_non_code(text: str) -> str:
    """`text` with comments, literals and preprocessor lines replaced by spaces (newlines
    kept, so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            while i < n and text[i] != "\n":
                # A continued directive goes on to the next line.
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if c == "/" and text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        if c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            delimiter_end = text.find("(", i + 2)
            closing = ")" + text[i + 2:delimiter_end] + '"'
            end = text.find(closing, delimiter_end)
            end = n if end < 0 else end + len(closing)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        if c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
            continue
        out.append(c)
        at_line_start = c == "\n" or (at_line_start and c in " \t")
        i += 1
    return "".join(out)


def classify(header: str, in_function: bool) -> tuple[str, str]:
    """What the `{` after `header` opens: ("scope", ""), ("block", "") or ("function", name)."""
    if in_function:
        return "block", ""
    text = header.strip()
    before_params = text[:text.find("(")] if "(" in text else text
    if SCOPE_WORDS.search(before_params) and not text.endswith(")") or text.startswith("extern"):
        return "scope", ""
    if "(" in text and not CONTROL_WORDS.match(text) and not text.endswith("="):
        name = function_name(text)
        if name:
            return "function", name
    return "block", ""


def function_name(signature: str) -> str:
    """The name before the parameter list: before the first '(' at depth 0 that does not
    follow decltype/sizeof/alignof/noexcept (a return type such as decltype(x) f(...))."""
    depth = 0
    for k, ch in enumerate(signature):
        if ch == "(":
            if depth == 0:
                match = NAME_BEFORE_PARAMS.search(signature[:k + 1])
                if match and match.group(1) not in TYPE_OPERATORS:
                    return match.group(1)
                if not match:
                    return ""
            depth += 1
        elif ch == ")":
            depth -= 1
    return ""


def functions_in(path: Path, label: str) -> list[Function]:
    code = blank_non_code(path.read_text(encoding="utf-8", errors="replace"))
    found: list[Function] = []
    # Each open brace: ("scope" | "function" | "block", function name, first line).
    stack: list[tuple[str, str, int]] = []
    header_start = 0  # offset after the last ';', '{' or '}'
    line = 1
    line_at = [0] * (len(code) + 1)
    for k, ch in enumerate(code):
        line_at[k] = line
        if ch == "\n":
            line += 1
    line_at[len(code)] = line
    for k, ch in enumerate(code):
        if ch == ";":
            header_start = k + 1
        elif ch == "{":
            header = ACCESS_LABEL.sub("", code[header_start:k])
            kind, name = classify(header, in_function=any(kind == "function" for kind, _, _ in stack))
            header_start += len(code[header_start:k]) - len(header)
            first = line_at[header_start + len(header) - len(header.lstrip())]
            stack.append((kind, name, first))
            header_start = k + 1
        elif ch == "}":
            if stack:
                kind, name, first = stack.pop()
                if kind == "function":
                    found.append(Function(label, name, first, line_at[k] - first + 1))
            header_start = k + 1
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the repository root (default: this checkout)")
    args = parser.parse_args()
    native = args.root / "native"
    files = sorted(p for p in native.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())
    sizes = []
    functions: list[Function] = []
    for path in files:
        label = str(path.relative_to(args.root))
        sizes.append((sum(1 for _ in path.open(encoding="utf-8", errors="replace")), label))
        functions += functions_in(path, label)
    sizes.sort(reverse=True)
    functions.sort(key=lambda f: (-f.lines, f.path, f.first_line))
    print(f"{len(files)} files, {sum(s for s, _ in sizes)} lines, {len(functions)} functions under native/")
    print(f"\nlargest files (lines):")
    for lines, label in sizes[:args.top]:
        print(f"  {lines:6d}  {label}")
    print(f"\nlongest functions (lines, heuristic):")
    for f in functions[:args.top]:
        print(f"  {f.lines:6d}  {f.name}  ({f.path}:{f.first_line})")
    over = [f for f in functions if f.lines > 150]
    print(f"\nfunctions over 150 lines: {len(over)}; files over 1,200 lines: "
          f"{sum(1 for s, _ in sizes if s > 1200)}")


if __name__ == "__main__":
    main()
