"""How much of each compiled grammar its first mask needs: the case for building rule DFAs on first use.

    PYTHONPATH=. python bench/rule_dfa_reach.py [--per-category 10] [--tokenizer llama3.1]

Compiles the benchmark's JSONSchemaBench sample (``harness/corpus.py``) and,
per grammar, reads the rule DFAs from the FSM dump and takes the Earley prediction closure of
the start position: the root rule, every rule called from a node of a predicted rule reached so
far, and, past a call of a nullable rule, the call's target node too (what the parser predicts
before the first byte). Every first mask needs the DFAs of those rules; it needs more only where
a token is left to the parser, which predicts further rules as it consumes the token's bytes
(a lower bound of what a compile that builds rule DFAs on first use must build before the first
mask, not an upper one). Prints the share of rules and of DFA nodes
(a proxy for the build cost: subset construction and minimisation grow with the states) those
rules hold, over the sample and per grammar. Lookahead DFAs are not in the dump and not counted.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import xg2_plugin as xg  # noqa: E402
from harness.corpus import sample_paths  # noqa: E402
from xg2_test_support import hf_tokenizer_info  # noqa: E402

_RULE_LINE = re.compile(r"rule (\S+)( \(nullable\))? start (\d+)$")
_NODE_LINE = re.compile(r"\s+(\d+)\*?:(.*)$")
_RULE_EDGE = re.compile(r"<(\S+?)>->(\d+)")


def parse_fsm_dump(dump: str) -> dict[str, dict]:
    """Rule name -> {nullable, start, calls: node -> [(callee, target)]}, from GrammarFsm::ToString."""
    rules: dict[str, dict] = {}
    current = None
    for line in dump.splitlines():
        rule = _RULE_LINE.match(line)
        if rule:
            current = {"nullable": bool(rule.group(2)), "start": int(rule.group(3)), "calls": {}}
            rules[rule.group(1)] = current
            continue
        node = _NODE_LINE.match(line)
        if node is None or current is None:
            raise ValueError(f"unexpected FSM dump line: {line!r}")
        current["calls"][int(node.group(1))] = [(c, int(t)) for c, t in _RULE_EDGE.findall(node.group(2))]
    return rules


def predicted_at_start(rules: dict[str, dict], root: str) -> set[str]:
    """The rules the Earley parser predicts before the first byte (see the module comment)."""
    owner = {n: name for name, rule in rules.items() for n in rule["calls"]}
    predicted, visited, stack = {root}, set(), [rules[root]["start"]]
    while stack:
        node = stack.pop()
        if node in visited:
            continue
        visited.add(node)
        for callee, target in rules[owner[node]]["calls"][node]:
            if callee not in predicted:
                predicted.add(callee)
                stack.append(rules[callee]["start"])
            if rules[callee]["nullable"]:
                stack.append(target)
    return predicted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-category", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tokenizer", default="llama3.1")
    args = parser.parse_args()

    info = hf_tokenizer_info(args.tokenizer)
    compiler = xg.GrammarCompiler(info, cache_enabled=False, max_threads=1)
    paths = sample_paths(args.per_category, seed=args.seed)
    rules_total = rules_needed = nodes_total = nodes_needed = refused = 0
    rule_shares, node_shares = [], []
    for path in paths:
        text = json.dumps(json.loads(path.read_text())["schema"])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compiled = compiler.compile_json_schema(text)
        except xg.XG2Error:
            refused += 1
            continue
        rules = parse_fsm_dump(compiled._handle.fsm_dump())
        # The JSON Schema frontend's root rule is named "root"; it is the first rule dumped.
        root = "root" if "root" in rules else next(iter(rules))
        needed = predicted_at_start(rules, root)
        sizes = {name: len(rule["calls"]) for name, rule in rules.items()}
        grammar_nodes, grammar_needed = sum(sizes.values()), sum(sizes[name] for name in needed)
        rules_total += len(rules)
        rules_needed += len(needed)
        nodes_total += grammar_nodes
        nodes_needed += grammar_needed
        rule_shares.append(len(needed) / len(rules))
        node_shares.append(grammar_needed / grammar_nodes)
    deciles = statistics.quantiles(node_shares, n=10)
    print(f"{len(node_shares)} grammars ({refused} refused), tokenizer {args.tokenizer}")
    print(f"rules predicted at the start: {rules_needed}/{rules_total} ({rules_needed / rules_total:.1%}); "
          f"per grammar median {statistics.median(rule_shares):.1%}")
    print(f"DFA nodes of those rules: {nodes_needed}/{nodes_total} ({nodes_needed / nodes_total:.1%}); "
          f"per grammar p10 {deciles[0]:.1%}, median {statistics.median(node_shares):.1%}, p90 {deciles[-1]:.1%}")


if __name__ == "__main__":
    main()
