// Thompson construction of one rule body (see the header): NfaBuilder.
#include "grammar/nfa_builder.h"

#include <algorithm>
#include <climits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/automaton_literal.h"
#include "grammar/rule_dfa_build.h"
#include "support/cancellation.h"
#include "support/dcheck.h"
#include "support/error.h"
#include "support/utf8.h"

namespace xg2 {
namespace fsm_build {
namespace {

class NfaBuilder {
 public:
  // `ctx` null: no compression (lookahead assertions, bodies of compressed repetitions).
  // `fragments`: occurrences of fragments (LoweringContext::IsFragment) are lowered as copies
  // of their DFA; only where no repetition of the rule is compressed (counted loops mark
  // the NFA nodes of their copies).
  NfaBuilder(const GrammarAst& ast, Nfa* nfa, int64_t* budget, LoweringContext* ctx = nullptr,
             ExprId exempt = -1, std::string owner = {}, bool fragments = false)
      : ast_(ast), nfa_(nfa), budget_(budget), ctx_(ctx), exempt_(exempt), owner_(std::move(owner)),
        fragments_(fragments && ctx != nullptr) {}

  // Adds states so that the language from `from` to the returned node is `expr`.
  //
  // `continuation`: what the returned node leads to, by epsilon edges only, when every
  // occurrence given the same continuation leads there: kRuleEnd (nothing of the rule
  // follows), the join node of an enclosing choice (a key of that choice's own, see
  // LowerOnce), or kUnknown. Equal expressions with one continuation then share one copy:
  // the copy is lowered once from a fresh entry node, a later occurrence adds an epsilon
  // edge into that entry and returns the copy's exit, which leads to the same place either
  // way. Subset construction would otherwise make one state per copy (per trie node of a
  // key-exclusion rule, each branch ending in `json_key_char*`; per property of an object
  // rule, each alternative ending in the same rest of the members before the closing brace)
  // for minimisation to merge again; the minimal DFA is the same.
  //
  // Occurrences are counted before they are lowered (LowerRule for the rule's end, a choice
  // for its own join): only an expression that occurs at least twice gets the extra entry
  // node, so no rule holds more NFA nodes than without sharing.
  static constexpr int32_t kUnknown = -1;
  static constexpr int32_t kRuleEnd = 0;

  int32_t LowerRule(ExprId body, int32_t from) {
    if (fragments_) CountTails(body, kRuleEnd);
    return Lower(body, from, kRuleEnd);
  }

  int32_t Lower(ExprId expr, int32_t from, int32_t continuation = kUnknown) {
    if (continuation == kUnknown || !fragments_ || !ctx_->IsSharedTail(expr)) {
      return LowerOnce(expr, from, continuation);
    }
    // An occurrence whose shape is unique cannot be an equal tail: no structural id needed.
    auto shape = shape_count_.find(ShapeKey(expr, continuation));
    if (shape == shape_count_.end() || shape->second.count < 2) return LowerOnce(expr, from, continuation);
    const uint64_t key = TailKey(ctx_->StructuralId(expr), continuation);
    auto count = tail_count_.find(key);
    if (count == tail_count_.end() || count->second < 2) return LowerOnce(expr, from, continuation);
    auto it = shared_tails_.find(key);
    if (it != shared_tails_.end()) {
      AddEpsilon(from, it->second.first);
      return it->second.second;
    }
    const int32_t entry = NewNode();
    AddEpsilon(from, entry);
    const int32_t exit = LowerOnce(expr, entry, continuation);
    shared_tails_.emplace(key, std::make_pair(entry, exit));
    return exit;
  }

 private:
  static uint64_t TailKey(int32_t structural_id, int32_t continuation) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(structural_id)) << 32) | static_cast<uint32_t>(continuation);
  }

  // A necessary condition for two occurrences to be equal tails, cheaper to know than their
  // structural ids (which walk the whole expression): the same kind, expanded size and
  // continuation. Structural ids are computed only for occurrences whose shape repeats.
  uint64_t ShapeKey(ExprId expr, int32_t continuation) {
    XG2_DCHECK(continuation >= 0 && ctx_->IsSharedTail(expr), "shape key of an occurrence that is never shared");
    constexpr int64_t kSizeMask = (int64_t{1} << 30) - 1;
    const uint64_t kind = static_cast<uint64_t>(ast_.node(expr).kind) - static_cast<uint64_t>(ExprKind::kSequence);
    const uint64_t size = static_cast<uint64_t>(std::min(ctx_->ExpandedSize(expr), kSizeMask));
    return (static_cast<uint64_t>(static_cast<uint32_t>(continuation)) << 32) | (kind << 30) | size;
  }

  // Counts one occurrence of a shared-tail candidate; returns how many occurrences of its
  // structural class with `continuation` have been counted. The first occurrence of a shape
  // is counted by shape alone; when a second one comes, both are counted by structural id,
  // and so is every later one, so tail_count_ is exact for every shape seen twice.
  int32_t CountTail(ExprId expr, int32_t continuation) {
    ShapeCount& shape = shape_count_[ShapeKey(expr, continuation)];
    if (++shape.count == 1) {
      shape.first = expr;
      return 1;
    }
    if (shape.count == 2) ++tail_count_[TailKey(ctx_->StructuralId(shape.first), continuation)];
    return ++tail_count_[TailKey(ctx_->StructuralId(expr), continuation)];
  }

  // Counts the occurrences with `continuation` that Lower will meet: it follows the
  // continuation as LowerOnce passes it on, stops at fragments (lowered as a DFA copy), and
  // does not look inside a repeated occurrence (its later occurrences reuse the first copy).
  void CountTails(ExprId expr, int32_t continuation) {
    if (ctx_->IsSharedTail(expr) && CountTail(expr, continuation) >= 2) return;
    if (ctx_->IsFragment(expr)) return;
    const ExprNode& node = ast_.node(expr);
    if (node.kind == ExprKind::kSequence && !node.children.empty()) {
      CountTails(node.children.back(), continuation);
    } else if (node.kind == ExprKind::kChoice) {
      for (ExprId child : node.children) CountTails(child, continuation);
    }
  }

  int32_t LowerOnce(ExprId expr, int32_t from, int32_t continuation) {
    if (ctx_ && expr != exempt_ && ctx_->IsSplit(expr)) {
      int32_t to = NewNode();
      nfa_->AddEdge(from, {ctx_->SyntheticRule(expr, owner_, "#part"), 0, 0, to});
      return to;
    }
    if (fragments_ && ctx_->IsFragment(expr)) return EmitFragment(ctx_->Fragment(expr, budget_, owner_), from);
    const ExprNode& node = ast_.node(expr);
    switch (node.kind) {
      case ExprKind::kEmpty:
        return from;
      case ExprKind::kBytes: {
        int32_t cur = from;
        for (char c : node.bytes) {
          int32_t next = NewNode();
          AddByte(cur, static_cast<uint8_t>(c), static_cast<uint8_t>(c), next);
          cur = next;
        }
        return cur;
      }
      case ExprKind::kCharClass: {
        int32_t to = NewNode();
        for (const CodepointRange& r : node.ranges) AddCodepointRange(from, r.first, r.last, to);
        return to;
      }
      case ExprKind::kRuleRef: {
        int32_t to = NewNode();
        nfa_->AddEdge(from, {node.rule_id, 0, 0, to});
        return to;
      }
      case ExprKind::kSequence: {
        int32_t cur = from;
        for (size_t k = 0; k < node.children.size(); ++k) {
          cur = Lower(node.children[k], cur, k + 1 == node.children.size() ? continuation : kUnknown);
        }
        return cur;
      }
      case ExprKind::kChoice: {
        int32_t to = NewNode();
        // The alternatives all continue at `to`: without a continuation of its own, the
        // choice gives them one (a fresh key) and counts their occurrences under it.
        int32_t joined = continuation;
        if (joined == kUnknown && fragments_) {
          joined = next_choice_key_++;
          for (ExprId child : node.children) CountTails(child, joined);
        }
        for (ExprId child : node.children) {
          int32_t start = NewNode();
          AddEpsilon(from, start);
          AddEpsilon(Lower(child, start, joined), to);
        }
        return to;
      }
      case ExprKind::kTagDispatch:
        throw GrammarSyntaxError("TagDispatch must be a whole rule body and cannot be part of a "
                                 "lookahead assertion");
      case ExprKind::kAutomaton:
        return EmitAutomaton(*ast_.automata[node.automaton], from);
      case ExprKind::kRepeat: {
        if (ctx_ && ctx_->Compressible(expr)) {
          if (expr != exempt_ && ctx_->IsLifted(expr)) {
            int32_t to = NewNode();
            nfa_->AddEdge(from, {ctx_->SyntheticRule(expr, owner_), 0, 0, to});
            return to;
          }
          return LowerCompressed(expr, from);
        }
        ExprId child = node.children[0];
        int32_t cur = from;
        for (int32_t i = 0; i < node.min_repeat; ++i) cur = LowerIsolated(child, cur);
        if (node.max_repeat < 0) {
          // Kleene star: a loop node with the body hanging off it.
          int32_t loop = NewNode();
          AddEpsilon(cur, loop);
          int32_t body_end = LowerIsolated(child, loop);
          AddEpsilon(body_end, loop);
          return loop;
        }
        int32_t to = NewNode();
        AddEpsilon(cur, to);
        for (int32_t i = node.min_repeat; i < node.max_repeat; ++i) {
          cur = LowerIsolated(child, cur);
          AddEpsilon(cur, to);
        }
        return to;
      }
    }
    return from;
  }

  // The body of a compressed repetition as a prefix-code DFA: its own DFA when it is one and
  // holds no compressible repetition itself (one counter per item), else a call of a
  // synthetic rule whose body it is (a single rule edge is a prefix code).
  const RepetitionBody& Body(ExprId child) {
    if (const RepetitionBody* known = ctx_->FindBody(child)) return *known;
    RepetitionBody body;
    bool lift = ctx_->ContainsCompressible(child) || ctx_->IsSplit(child) || ctx_->Exploded(child);
    if (!lift) {
      body.dfa = BuildRuleDfa(ast_, child, budget_, nullptr, -1, owner_, ctx_->scratch());
      bool prefix_code = !body.dfa.nodes[0].accepting;
      for (int32_t i = 0; i < body.dfa.size(); ++i) {
        if (body.dfa.nodes[i].accepting && (!body.dfa.BytesOf(i).empty() || !body.dfa.RulesOf(i).empty())) {
          prefix_code = false;
        }
      }
      lift = !prefix_code;
    }
    if (lift) {
      body.dfa = Dfa();
      body.dfa.AddNode(false);
      body.dfa.AddRuleEdge({ctx_->SyntheticRule(child, owner_), 1});
      body.dfa.AddNode(true);
    } else {
      // Breadth-first over byte edges: the shortest iteration a token can cross.
      std::vector<int32_t> dist(body.dfa.nodes.size(), -1);
      std::vector<int32_t> queue{0};
      dist[0] = 0;
      for (size_t k = 0; k < queue.size(); ++k) {
        if (body.dfa.nodes[queue[k]].accepting) {
          body.min_bytes = dist[queue[k]];
          break;
        }
        for (const ByteEdge& e : body.dfa.BytesOf(queue[k])) {
          if (dist[e.target] < 0) {
            dist[e.target] = dist[queue[k]] + 1;
            queue.push_back(e.target);
          }
        }
      }
    }
    return ctx_->StoreBody(child, std::move(body));
  }

  // Algorithm 3 of the paper, with the folded part as a counted loop (grammar_fsm.h).
  int32_t LowerCompressed(ExprId expr, int32_t from) {
    const ExprNode& node = ast_.node(expr);
    const int32_t lo = node.min_repeat, hi = node.max_repeat;
    const RepetitionBody& body = Body(node.children[0]);
    // Explicit copies after the loop copy: more than a token can cross (grammar_fsm.h).
    const int64_t chain =
        body.min_bytes == INT_MAX ? 2 : static_cast<int64_t>(ctx_->max_token_bytes()) / body.min_bytes + 2;
    int32_t cur = from;
    if (lo - chain >= 2) {
      cur = EmitCountedLoop(body, lo, static_cast<int32_t>(chain), /*optional=*/false, cur, expr);
    } else {
      for (int32_t i = 0; i < lo; ++i) cur = EmitCopy(body, cur);
    }
    if (hi < 0) {
      int32_t loop = NewNode();
      AddEpsilon(cur, loop);
      AddEpsilon(EmitCopy(body, loop), loop);
      return loop;
    }
    const int64_t optional = static_cast<int64_t>(hi) - lo;
    if (optional - chain >= 2) {
      return EmitCountedLoop(body, static_cast<int32_t>(optional), static_cast<int32_t>(chain),
                             /*optional=*/true, cur, expr);
    }
    int32_t to = NewNode();
    AddEpsilon(cur, to);
    for (int64_t i = 0; i < optional; ++i) {
      cur = EmitCopy(body, cur);
      AddEpsilon(cur, to);
    }
    return to;
  }

  // h, the loop copy, then `chain - 1` explicit copies; `count` iterations in all, all of
  // them optional or all mandatory.
  int32_t EmitCountedLoop(const RepetitionBody& body, int32_t count, int32_t chain, bool optional,
                          int32_t entry, ExprId expr) {
    NfaLoop loop;
    loop.expr = expr;
    loop.optional = optional;
    loop.limit = count - chain;
    loop.head = NewNode();
    loop.members.push_back(loop.head);
    AddEpsilon(entry, loop.head);
    int32_t exit = optional ? NewNode() : -1;
    if (optional) AddEpsilon(loop.head, exit);
    loop.gate = NewNode();
    EmitCopyInto(body, loop.head, loop.gate, &loop.members);
    int32_t cur = loop.gate;
    for (int32_t j = 1; j < chain; ++j) {
      if (optional) AddEpsilon(cur, exit);
      int32_t next = NewNode();
      EmitCopyInto(body, cur, next, nullptr);
      cur = next;
    }
    nfa_->loops.push_back(std::move(loop));
    if (!optional) return cur;
    AddEpsilon(cur, exit);
    return exit;
  }

  // A copy of a fragment's DFA between `from` (epsilon into its start) and a fresh exit
  // node (epsilon from each accepting node; those may have out-edges).
  int32_t EmitFragment(const Dfa& dfa, int32_t from) {
    std::vector<int32_t> map(dfa.nodes.size());
    for (int32_t i = 0; i < dfa.size(); ++i) map[i] = NewNode();
    const int32_t exit = NewNode();
    AddEpsilon(from, map[0]);
    for (int32_t i = 0; i < dfa.size(); ++i) {
      for (const ByteEdge& e : dfa.BytesOf(i)) AddByte(map[i], e.lo, e.hi, map[e.target]);
      for (const RuleEdge& e : dfa.RulesOf(i)) nfa_->AddEdge(map[i], {e.rule, 0, 0, map[e.target]});
      if (dfa.nodes[i].accepting) AddEpsilon(map[i], exit);
    }
    return exit;
  }

  // An automaton literal inlined into a body (a counted or lookahead body's rule references):
  // a copy of its byte DFA, from `from` to a fresh exit (epsilon from each accepting node).
  int32_t EmitAutomaton(const AutomatonLiteral& literal, int32_t from) {
    std::vector<int32_t> map(literal.num_byte_nodes());
    for (int32_t& node : map) node = NewNode();
    const int32_t exit = NewNode();
    AddEpsilon(from, map[0]);
    for (int32_t v = 0; v < literal.num_byte_nodes(); ++v) {
      for (int32_t k = literal.byte_begin[v]; k < literal.byte_begin[v + 1]; ++k) {
        const AutomatonLiteral::ByteEdge& e = literal.byte_edges[k];
        AddByte(map[v], e.lo, e.hi, map[e.target]);
      }
      if (literal.ByteNodeAccepting(v)) AddEpsilon(map[v], exit);
    }
    return exit;
  }

  int32_t EmitCopy(const RepetitionBody& body, int32_t entry) {
    int32_t exit = NewNode();
    EmitCopyInto(body, entry, exit, nullptr);
    return exit;
  }

  // One copy of the body between `entry` (epsilon into its start) and `exit` (its accepting
  // nodes, which have no out-edges, become `exit` itself).
  void EmitCopyInto(const RepetitionBody& body, int32_t entry, int32_t exit, std::vector<int32_t>* members) {
    const Dfa& dfa = body.dfa;
    std::vector<int32_t>& map = copy_map_;
    map.resize(dfa.nodes.size());
    for (int32_t i = 0; i < dfa.size(); ++i) {
      map[i] = dfa.nodes[i].accepting ? exit : NewNode();
      if (members && !dfa.nodes[i].accepting) members->push_back(map[i]);
    }
    AddEpsilon(entry, map[0]);
    for (int32_t i = 0; i < dfa.size(); ++i) {
      for (const ByteEdge& e : dfa.BytesOf(i)) AddByte(map[i], e.lo, e.hi, map[e.target]);
      for (const RuleEdge& e : dfa.RulesOf(i)) nfa_->AddEdge(map[i], {e.rule, 0, 0, map[e.target]});
    }
  }

  // Lowers `expr` between fresh entry and exit nodes joined by epsilon edges, so loops
  // built around it cannot leak into neighbouring constructs.
  int32_t LowerIsolated(ExprId expr, int32_t from) {
    int32_t entry = NewNode();
    AddEpsilon(from, entry);
    int32_t exit = NewNode();
    AddEpsilon(Lower(expr, entry), exit);
    return exit;
  }

  int32_t NewNode() {
    // Cancellation is checked at every 64th node: a check calls out of line and reads
    // thread-local state, which per node cost more than making the node.
    if ((nfa_->num_nodes & 63) == 0) ThrowIfCancelled();
    if (--*budget_ < 0) {
      throw ResourceLimitError("grammar too large: more than the node limit of the FSM builder "
                               "(reduce repetition bounds or grammar size)");
    }
    return nfa_->AddNode();
  }
  void AddEpsilon(int32_t from, int32_t to) { nfa_->AddEdge(from, {kEpsilon, 0, 0, to}); }
  void AddByte(int32_t from, uint8_t lo, uint8_t hi, int32_t to) {
    nfa_->AddEdge(from, {kByteRange, lo, hi, to});
  }

  void AddCodepointRange(int32_t from, uint32_t first, uint32_t last, int32_t to) {
    // Surrogates have no UTF-8 encoding; skip them if a range spans the block.
    if (first <= 0xDFFF && last >= 0xD800) {
      if (first < 0xD800) AddCodepointRange(from, first, 0xD7FF, to);
      if (last > 0xDFFF) AddCodepointRange(from, 0xE000, last, to);
      return;
    }
    // One byte, the same edge Utf8RangeSequences would give, without building its list.
    if (last < 0x80) {
      AddByte(from, static_cast<uint8_t>(first), static_cast<uint8_t>(last), to);
      return;
    }
    // Built from the last byte backwards: the node that reads a sequence's bytes i.. and
    // reaches `to` is shared by every sequence of this rule with the same suffix and target
    // (the continuation bytes [80-BF] of the multi-byte sequences of a character class, say),
    // so subset construction meets one node where it would meet one per sequence.
    // Through the context's per-grammar cache where there is a context.
    std::vector<Utf8ByteSequence> uncached;
    if (!ctx_) uncached = Utf8RangeSequences(first, last);
    for (const Utf8ByteSequence& seq : ctx_ ? ctx_->Utf8Sequences(first, last) : uncached) {
      int32_t next = to;
      for (int i = seq.length - 1; i >= 1; --i) next = SuffixNode(seq.lo[i], seq.hi[i], next);
      AddByte(from, seq.lo[0], seq.hi[0], next);
    }
  }

  // The node whose only edge reads [lo, hi] into `next`, one per (lo, hi, next) and rule.
  int32_t SuffixNode(uint8_t lo, uint8_t hi, int32_t next) {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(next)) << 16) | (lo << 8) | hi;
    auto it = suffix_nodes_.find(key);
    if (it != suffix_nodes_.end()) return it->second;
    const int32_t node = NewNode();
    AddByte(node, lo, hi, next);
    suffix_nodes_.emplace(key, node);
    return node;
  }

  const GrammarAst& ast_;
  Nfa* nfa_;
  int64_t* budget_;
  LoweringContext* ctx_;
  ExprId exempt_;
  std::string owner_;
  bool fragments_;
  std::vector<int32_t> copy_map_;  // EmitCopyInto's body node -> NFA node (capacity reused)
  // TailKey(structural id, continuation) -> occurrences in the rule, and -> the shared copy's
  // (entry, exit).
  std::unordered_map<uint64_t, int32_t> tail_count_;
  struct ShapeCount {
    int32_t count = 0;
    ExprId first = -1;  // the first occurrence counted with this shape
  };
  std::unordered_map<uint64_t, ShapeCount> shape_count_;  // ShapeKey -> occurrences, see CountTail
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> shared_tails_;
  int32_t next_choice_key_ = kRuleEnd + 1;  // continuation keys of choices
  std::unordered_map<uint64_t, int32_t> suffix_nodes_;  // (next, lo, hi) -> node, see SuffixNode
};

}  // namespace

int32_t LowerRuleBody(const GrammarAst& ast, ExprId body, int32_t from, Nfa* nfa, int64_t* budget,
                      LoweringContext* ctx, ExprId exempt, const std::string& owner, bool fragments) {
  NfaBuilder builder(ast, nfa, budget, ctx, exempt, owner, fragments);
  return builder.LowerRule(body, from);
}

}  // namespace fsm_build
}  // namespace xg2
