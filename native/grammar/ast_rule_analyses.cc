// The AST analyses of ast_rule_analyses.h: body orders, nullability, FIRST and FOLLOW bytes.
// (Right-linear rules and the build policy: ast_build_policy.cc.)
#include "grammar/ast_rule_analyses.h"

#include <algorithm>
#include <vector>

#include "grammar/automaton_literal.h"
#include "support/dcheck.h"

namespace xg2 {
namespace {

// Runs `examine(r)` on every rule, then again on a rule whenever `examine` of a rule it
// watches (`watchers_of[c]`: the rules to revisit when c's value grows) reports growth. The
// values only grow and are bounded, so this ends; each rule is examined once more per growth
// of what it watches instead of once per sweep of the whole grammar.
template <typename Examine>
void Worklist(size_t num_rules, const std::vector<std::vector<RuleId>>& watchers_of, const Examine& examine) {
  std::vector<RuleId> queue(num_rules);
  std::vector<uint8_t> queued(num_rules, 1);
  for (size_t r = 0; r < num_rules; ++r) queue[r] = static_cast<RuleId>(r);
  for (size_t k = 0; k < queue.size(); ++k) {
    const RuleId r = queue[k];
    queued[r] = 0;
    examine(r, [&](RuleId grown) {
      for (RuleId w : watchers_of[grown]) {
        if (!queued[w]) queued[w] = 1, queue.push_back(w);
      }
    });
  }
}

// First bytes of the UTF-8 encodings of the code points first..last: the lead byte is
// monotone in the code point within each encoding length, so each length contributes the
// lead bytes between those of its two ends. (The surrogate block's lead byte 0xED stays in
// when a range spans it: an over-approximation.)
ByteSet Utf8LeadBytes(uint32_t first, uint32_t last) {
  struct Length {
    uint32_t lo, hi;
    int shift;
    uint32_t mark;
  };
  static constexpr Length kLengths[] = {
      {0, 0x7F, 0, 0}, {0x80, 0x7FF, 6, 0xC0}, {0x800, 0xFFFF, 12, 0xE0}, {0x10000, kMaxCodepoint, 18, 0xF0}};
  ByteSet bytes;
  for (const Length& length : kLengths) {
    const uint32_t lo = std::max(first, length.lo), hi = std::min(last, length.hi);
    if (lo > hi) continue;
    bytes |= ByteSpan(length.mark | (lo >> length.shift), length.mark | (hi >> length.shift));
  }
  return bytes;
}

// FIRST of an expression that refers to nothing (a leaf other than a reference): it depends on
// the node alone, so ComputeFirst computes it once however often the rules holding it are
// examined again.
bool FirstOfNodeAlone(ExprKind kind) {
  return kind != ExprKind::kRuleRef && kind != ExprKind::kSequence && kind != ExprKind::kChoice &&
         kind != ExprKind::kRepeat;
}

}  // namespace

RuleBodyOrder ComputeRuleBodyOrder(const GrammarAst& ast) {
  const size_t num_rules = ast.rules.size();
  RuleBodyOrder order;
  order.begin.reserve(num_rules + 1);
  order.callers.resize(num_rules);
  std::vector<uint32_t> seen(ast.nodes.size(), 0);
  std::vector<std::pair<ExprId, size_t>> stack;  // node, next child to visit
  for (size_t r = 0; r < num_rules; ++r) {
    order.begin.push_back(static_cast<int32_t>(order.nodes.size()));
    const uint32_t stamp = static_cast<uint32_t>(r) + 1;
    const ExprId body = ast.rules[r].body;
    seen[body] = stamp;
    stack.assign(1, {body, 0});
    while (!stack.empty()) {
      auto& [e, next] = stack.back();
      const ExprNode& node = ast.node(e);
      if (next < node.children.size()) {
        const ExprId child = node.children[next++];
        if (seen[child] != stamp) {
          seen[child] = stamp;
          stack.push_back({child, 0});
        }
        continue;
      }
      order.nodes.push_back(e);
      if (node.kind == ExprKind::kRuleRef) {
        XG2_DCHECK(node.rule_id >= 0 && static_cast<size_t>(node.rule_id) < num_rules,
                   "a rule body refers to an existing rule");
        std::vector<RuleId>& callers = order.callers[node.rule_id];
        if (callers.empty() || callers.back() != static_cast<RuleId>(r)) callers.push_back(static_cast<RuleId>(r));
      }
      stack.pop_back();
    }
  }
  order.begin.push_back(static_cast<int32_t>(order.nodes.size()));
  return order;
}

AstNullability AstRuleNullable(const GrammarAst& ast, const RuleBodyOrder& order) {
  AstNullability out;
  out.rule.assign(ast.rules.size(), 0);
  out.expr.assign(ast.nodes.size(), 0);
  Worklist(ast.rules.size(), order.callers, [&](RuleId r, const auto& grew) {
    if (out.rule[r]) return;
    for (int32_t k = order.begin[r]; k < order.begin[r + 1]; ++k) {
      const ExprId e = order.nodes[k];
      const ExprNode& node = ast.node(e);
      bool nullable = false;
      switch (node.kind) {
        case ExprKind::kEmpty:
          nullable = true;
          break;
        case ExprKind::kBytes:
        case ExprKind::kCharClass:
          break;
        case ExprKind::kTagDispatch:  // free text may end before its first byte
          nullable = ast.tag_dispatches[node.tag_dispatch].stop_eos;
          break;
        case ExprKind::kAutomaton:  // its start accepts
          nullable = ast.automata[node.automaton]->accepting[0] != 0;
          break;
        case ExprKind::kRuleRef:
          nullable = out.rule[node.rule_id];
          break;
        case ExprKind::kSequence:
          nullable = std::all_of(node.children.begin(), node.children.end(), [&](ExprId c) { return out.expr[c]; });
          break;
        case ExprKind::kChoice:
          nullable = std::any_of(node.children.begin(), node.children.end(), [&](ExprId c) { return out.expr[c]; });
          break;
        case ExprKind::kRepeat:
          nullable = node.min_repeat == 0 || out.expr[node.children[0]];
          break;
      }
      out.expr[e] = nullable;
    }
    const RuleDef& rule = ast.rules[r];
    // A rule that counts at least one JSON character derives no empty string.
    if (out.expr[rule.body] && !(rule.counts_json_chars() && rule.min_json_chars > 0)) {
      out.rule[r] = 1;
      grew(r);
    }
  });
  return out;
}

std::vector<uint8_t> AstStartRules(const GrammarAst& ast, const AstNullability& nullable) {
  std::vector<uint8_t> start(ast.rules.size(), 0);
  std::vector<RuleId> rules(1, ast.root_rule);
  start[ast.root_rule] = 1;
  // The references an expression begins with do not depend on where it occurs: each node is
  // walked once, whichever start rule reaches it first.
  std::vector<uint8_t> seen(ast.nodes.size(), 0);
  std::vector<ExprId> stack;
  for (size_t k = 0; k < rules.size(); ++k) {
    stack.assign(1, ast.rules[rules[k]].body);
    while (!stack.empty()) {
      const ExprId e = stack.back();
      stack.pop_back();
      if (seen[e]) continue;
      seen[e] = 1;
      const ExprNode& node = ast.node(e);
      switch (node.kind) {
        case ExprKind::kRuleRef:
          if (!start[node.rule_id]) start[node.rule_id] = 1, rules.push_back(node.rule_id);
          break;
        case ExprKind::kSequence:
          for (ExprId c : node.children) {
            stack.push_back(c);
            if (!nullable.expr[c]) break;
          }
          break;
        case ExprKind::kChoice:
          for (ExprId c : node.children) stack.push_back(c);
          break;
        case ExprKind::kRepeat:
          if (node.max_repeat != 0) stack.push_back(node.children[0]);
          break;
        default:  // bytes and classes read a byte first; a TagDispatch calls a tag's rule after its trigger
          break;
      }
    }
  }
  return start;
}

namespace {

// FIRST: per expression node from its children's (and the rules' it refers to), a least
// fixpoint over the rules.
void ComputeFirst(const GrammarAst& ast, const RuleBodyOrder& order, const AstNullability& nullable, AstByteSets* sets) {
  ByteSet any;
  any.set();
  std::vector<uint8_t> alone_done(ast.nodes.size(), 0);
  Worklist(ast.rules.size(), order.callers, [&](RuleId r, const auto& grew) {
    for (int32_t k = order.begin[r]; k < order.begin[r + 1]; ++k) {
      const ExprId e = order.nodes[k];
      const ExprNode& node = ast.node(e);
      if (FirstOfNodeAlone(node.kind)) {
        if (alone_done[e]) continue;
        alone_done[e] = 1;
      }
      ByteSet first;
      switch (node.kind) {
        case ExprKind::kEmpty:
          break;
        case ExprKind::kBytes:
          first.set(static_cast<uint8_t>(node.bytes[0]));
          break;
        case ExprKind::kCharClass:
          for (const CodepointRange& range : node.ranges) first |= Utf8LeadBytes(range.first, range.last);
          break;
        case ExprKind::kTagDispatch:  // free text: any byte
          first = any;
          break;
        case ExprKind::kAutomaton: {  // the bytes its start reads
          const AutomatonLiteral& literal = *ast.automata[node.automaton];
          for (int32_t k = literal.byte_begin[0]; k < literal.byte_begin[1]; ++k) {
            first |= ByteSpan(literal.byte_edges[k].lo, literal.byte_edges[k].hi);
          }
          break;
        }
        case ExprKind::kRuleRef:
          first = sets->rule_first[node.rule_id];
          break;
        case ExprKind::kSequence:
          for (ExprId c : node.children) {
            first |= sets->first[c];
            if (!nullable.expr[c]) break;
          }
          break;
        case ExprKind::kChoice:
          for (ExprId c : node.children) first |= sets->first[c];
          break;
        case ExprKind::kRepeat:
          if (node.max_repeat != 0) first = sets->first[node.children[0]];
          break;
      }
      sets->first[e] = first;
    }
    const ByteSet& body = sets->first[ast.rules[r].body];
    if (body != sets->rule_first[r]) {
      sets->rule_first[r] = body;
      grew(r);
    }
  });
}

// FOLLOW: pushed from parents to children (a body's nodes in reverse post-order, so every
// parent in the body before its children), from a reference to its rule, and from a rule to
// its body; a rule's body is pushed again whenever its rule's set grows.
void ComputeFollow(const GrammarAst& ast, const RuleBodyOrder& order, const AstNullability& nullable,
                   AstByteSets* sets) {
  ByteSet any;
  any.set();
  std::vector<std::vector<RuleId>> self(ast.rules.size());
  for (size_t r = 0; r < ast.rules.size(); ++r) self[r].push_back(static_cast<RuleId>(r));
  Worklist(ast.rules.size(), self, [&](RuleId r, const auto& grew) {
    auto add = [&](RuleId target, const ByteSet& bytes) {
      const ByteSet next = sets->rule_follow[target] | bytes;
      if (next != sets->rule_follow[target]) {
        sets->rule_follow[target] = next;
        grew(target);
      }
    };
    sets->follow[ast.rules[r].body] |= sets->rule_follow[r];
    for (int32_t k = order.begin[r + 1] - 1; k >= order.begin[r]; --k) {
      const ExprId e = order.nodes[k];
      const ExprNode& node = ast.node(e);
      const ByteSet& follow = sets->follow[e];
      switch (node.kind) {
        case ExprKind::kRuleRef:
          add(node.rule_id, follow);
          break;
        case ExprKind::kTagDispatch:  // a tag's rule is followed by free text or the end
          for (const TagDispatchDef::Tag& tag : ast.tag_dispatches[node.tag_dispatch].tags) add(tag.rule, any);
          break;
        case ExprKind::kSequence: {
          ByteSet suffix = follow;  // bytes that can come after child i
          for (size_t i = node.children.size(); i-- > 0;) {
            const ExprId c = node.children[i];
            sets->follow[c] |= suffix;
            suffix = nullable.expr[c] ? suffix | sets->first[c] : sets->first[c];
          }
          break;
        }
        case ExprKind::kChoice:
          for (ExprId c : node.children) sets->follow[c] |= follow;
          break;
        case ExprKind::kRepeat: {
          if (node.max_repeat == 0) break;
          const ExprId c = node.children[0];
          sets->follow[c] |= follow;
          if (node.max_repeat < 0 || node.max_repeat > 1) sets->follow[c] |= sets->first[c];
          break;
        }
        default:
          break;
      }
    }
  });
}

}  // namespace

AstByteSets ComputeAstByteSets(const GrammarAst& ast, const RuleBodyOrder& order, const AstNullability& nullable) {
  AstByteSets sets;
  sets.first.assign(ast.nodes.size(), ByteSet());
  sets.follow.assign(ast.nodes.size(), ByteSet());
  sets.rule_first.assign(ast.rules.size(), ByteSet());
  sets.rule_follow.assign(ast.rules.size(), ByteSet());
  ComputeFirst(ast, order, nullable, &sets);
  ComputeFollow(ast, order, nullable, &sets);
  return sets;
}

}  // namespace xg2
