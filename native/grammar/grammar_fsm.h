// The compiled grammar: one deterministic finite-state machine per rule, all numbered in a
// single node space (paper section 2: rule-level FSMs). An edge either consumes one byte in a
// range or "calls" another rule; there are no epsilon edges after construction.
//
// Invariants (established by BuildGrammarFsm and relied on by the Earley parser; checked by
// CheckGrammarFsmInvariants, grammar/fsm_invariants.h, in debug and sanitizer builds):
//  * Nodes of rule r are the contiguous block rule_nodes[r] = [begin, end) (non-empty for a
//    built rule); rule_start[r] lies in that block, and every edge target of a node lies in
//    its block. The blocks and the lookahead blocks partition the node space; the compile
//    lays them out in rule order with the lookahead blocks last, and a rule built later
//    appends its block at the end (see "Snapshots"), so no reader may assume an order.
//  * Per node, byte edges are sorted by `lo`, pairwise disjoint, and at most one rule edge
//    exists per (node, rule) pair (determinism over the alphabet bytes + rule ids).
//  * rule_nullable[r] is true iff rule r derives the empty string.
//  * rule_lookahead[r] is -1 or the start node of a byte-only DFA (no rule edges, stored as
//    an extra block after the rules, owned by no rule: node_rule == -1) for the rule's
//    lookahead assertion. A rule with a lookahead is never nullable, and its lookahead does
//    not accept the empty string (such an assertion is trivially true and is dropped).
//  * Rules past the grammar's own (index >= the AST's rule count) are synthetic: bodies of
//    compressed repetitions lifted into a rule of their own (see below), and parts of a rule
//    whose subset construction passed its state cap (fsm_builder.cc, "Determinisation
//    fallback"), so that no rule DFA has more than max(4096, 64 x its NFA nodes) states.
//
// Repetition state compression (XGrammar 2, section 3.5 and Algorithm 3). A repetition
// x{lo,hi} whose explicit expansion would exceed a threshold is lowered as
//     h --x--> R[T-1] --x--> ... --x--> R[0]
// where the copy of x out of h (the "loop copy") stands for all the folded iterations: an
// Earley item inside the loop copy or at h carries a counter `count` (iterations folded so
// far), and when it completes the copy it lands on the gate R[T-1], which the parser
// redirects back to h with count + 1 while count < limit (CountedLoop). So the FSM holds
// T + 1 copies of x whatever hi is, and the language stays exact: the counter enforces the
// bound. For the optional part x{0,m}, every R[j] and h may exit; for a mandatory part x{n}
// only R[0] exits. limit = (iterations of the part) - T.
//
// Invariants:
//  * x is a prefix code over bytes and rule ids (no accepting node has out-edges, the empty
//    string is not in x), so the iteration count is a function of the text; other bodies
//    are first lifted into a synthetic rule (a single rule edge is a prefix code).
//  * node_loop[n] = k for the loop copy's nodes and h (every item there carries loop k's
//    counter), -1 elsewhere; items at other nodes always have count 0. A DFA node holds the
//    counter of at most one loop; a step between two nodes of loop k keeps the count, any
//    other step starts at 0 (the builder checks that no step enters a loop afresh from
//    inside one, and lifts the repetition into a rule of its own otherwise).
//  * node_gate_loop[n] = k only for loop k's gate, whose state set is exactly R[T-1]'s.
//  * Token-mask exactness: the FSM as stored is the count == limit case (no back edge); a
//    token starting in the loop copy differs from the real language only after crossing all
//    T copies, which the builder rules out by T > max_token_bytes / (fewest bytes of one
//    iteration by byte edges alone) + 1. So per-node token classifications stay exact for
//    every count, and all the folded states share one cache entry (h's).
// History (rollback = truncation, fork = copy) needs nothing more: the count is part of the
// item, stored in the per-position chart like the rest of it.
//
// Token sets (grammar_ast.h TokenSetDef; TokenSet(...) / ExcludeToken(...) in EBNF). A token-set
// terminal is an ordinary byte path in the rule DFA spelling the set's marker
// (grammar/token_literal.h), so construction, minimisation and repetition compression treat
// it as a literal. No token's bytes contain a marker byte, so the byte-level scan never enters
// one; IndexTokenSetEdges records, per node, each complete marker path out of it as a token-set
// edge (set, target), and the parser takes those edges only in its token step, consuming one
// whole token. Invariants: the nodes strictly inside a marker path have marker bytes only (a
// marker is atomic in every word of the rule), and one marker is at most one iteration of a
// compressed loop, so the walk crosses no gate before its last node.
//
// Token budgets (`name[max_tokens=N] ::= ...`, any_text.max_tokens). rule_max_tokens[r] = N
// bounds the tokens that BEGIN inside one match of rule r (xgrammar 0.2.8's count: a token that
// runs into the match from before it does not count, one that runs on past its end does). The
// parser numbers its history steps (each accepted token or string is one step) and stores per
// position the step that created it; an item of rule r with origin o may scan a byte of step k
// only while k - step_at[o] <= N (the steps that began at or after o). Invariant, checked by
// the builder: a budgeted rule's DFA has no rule edges, so every byte of a match is scanned by
// the rule's own items (the passes never inline, merge or sink a budgeted rule).
//
// JSON character counts (`name[json_chars=M..N] ::= ...`: the JSON Schema frontend's
// minLength / maxLength next to a pattern or format, whose product automaton would hold one
// copy of the pattern per length). The rule matches the strings of its body that are M..N
// JSON string characters long, counted as JSON Schema counts them: decoded code points, so
// `\u00e9` and `\"` are one character and a surrogate-pair escape is one (grammar/
// json_char_count.h). The builder inlines the body's rule references and takes the product of
// its byte DFA with the phases of a JSON string character, so that node_char_end[n] = 1
// exactly where arriving at n completes a character. Items of the rule carry the count of
// characters completed since their origin in `count` (the repetition counter's field; such a
// rule holds no counted loop): a byte step to n adds node_char_end[n] and is refused unless
// some completion from n fits the count (count + node_fewest_chars[n] <= N, and count +
// node_most_chars[n] >= M when that is bounded), and the rule completes only with a count of
// at least M. The builder refuses a body where some node's completion lengths have gaps
// (support/completion_lengths.h), so this test is exact: every item can still complete, and
// no mask allows a token into a dead end. So the FSM grows with the pattern, never with the
// bound (any bound up to 2^31-1).
// Invariants (checked by the builder and by CheckGrammarFsmInvariants): a counting rule's
// DFA has no rule edges and no counted-loop node; rule_min_json_chars / rule_max_json_chars
// have one entry per rule (-1: no count / unbounded) and node_char_end one per node, all empty
// when no rule counts; node_char_end is 0 outside counting rules; a counting rule with M > 0
// is not nullable.
// Token-mask exactness: a node's cached classification ignores the count. It is exact for an
// item whose count is at least M and at least max_token_bytes below N (no token can cross
// either bound from there, allowing for rule_chars_slack); the matcher decides the mask of any
// other item by walking the vocabulary through the parser (GrammarMatcher, as for a pending
// lookahead).
//
// Unique items (`item[unique_item] ::= ...` called by `array[unique_items] ::= ...`: the JSON
// Schema frontend's uniqueItems over item languages no grammar can make distinct; paper
// section 2's Earley items with a value attached). An item of a holder rule (unique_items)
// carries in `count` the id of the set of JSON values completed so far by the unique_item
// rules it called (the parser's UniqueValueSets; 0 is the empty set). When a unique_item rule
// completes at position j from origin i, its text [i, j) is read as one JSON value
// (support/json_canonical.h: escapes decoded, numbers by value, object members in any order;
// an object item's rule may end before the object's closing brace, which the holder writes
// after it, and its text then reads as the object) and a waiting holder item
// resumes only when that value is not in its set, with the set plus the value. The set is a
// function of the text since the holder's origin, kept in the chart like the other counters,
// so rollback and fork stay exact. Invariants (builder and CheckGrammarFsmInvariants):
// rule_unique is empty or has one entry per rule; every rule edge to a unique_item rule
// leaves a holder's node; a holder holds no counted-loop node and counts no characters.
// Token-mask exactness: a node's cached classification ignores the values. A token that
// ends inside a unique_item rule without completing it is exact when every prefix of the
// item's language that is not complete has completions of infinitely many values (the
// frontend only marks such languages), since only finitely many values are used; a token
// that leaves the item rule is uncertain and decided by the parser. What remains is a token
// that completes the item at a final node (accepting, no edges), where it must end: where an
// item rule's item is live, the matcher re-checks through the parser every allowed token whose
// last byte may bring the rule to one of its final nodes, by a byte edge or by completing a
// rule called at its end (CompiledGrammar::unique_recheck_positions). A closed object item
// therefore ends before its brace: the last member's value ends it, at a final node.
//
// Snapshots (docs/lazy_rule_dfas.md). A rule's DFA may be left unbuilt at compile, marked by
// rule_start[r] == kUnbuiltRule, and built when a parser first predicts the rule. A build never
// edits a GrammarFsm: it copies the latest one, appends the rule's nodes (and those of any
// synthetic rule it creates) at the end of the node space, and publishes the copy as the next
// snapshot (matcher/rule_dfa_snapshots.h). Invariants:
//  * Append-only node space: a node id, once issued, names the same node in every later
//    snapshot.
//  * Prefix: every snapshot is a prefix of every later one -- the same nodes with the same
//    edges and per-node fields, and for every rule built in the older one the same per-rule
//    fields; rule names, root, token sets and the other per-grammar fields are equal (checked
//    by SnapshotPrefixViolation, matcher/rule_dfa_snapshots.h, in debug builds on every
//    publish). So an Earley item, a chart or a cached token classification made on an older
//    snapshot stays valid on a newer one.
//  * An unbuilt rule has no nodes (an empty block). It is reached only through a rule edge of
//    a built node, so the parser's prediction step (RuleAt below) is the one place that meets
//    one; it asks for the build and reloads the snapshot before it adds the rule's item.
// BuildGrammarFsm builds every rule; BuildGrammarFsmLazily (lazy_rule_builder.h, behind the
// compile's internal lazy_rule_dfas switch, off by default) leaves rules unbuilt. Of the
// whole-grammar passes, nullability comes from the AST there, FSM hashes skip what reaches an
// unbuilt rule, serialization and dumps build all first; the mask cache's leave sets still
// need every rule (docs/lazy_rule_dfas.md, "What remains").
#ifndef XG2_GRAMMAR_GRAMMAR_FSM_H_
#define XG2_GRAMMAR_GRAMMAR_FSM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar_ast.h"

namespace xg2 {

using NodeId = int32_t;

// rule_start of a rule whose DFA is not built yet (see "Snapshots" in the file comment).
constexpr NodeId kUnbuiltRule = -2;

struct ByteEdge {
  uint8_t lo;
  uint8_t hi;
  NodeId target;
};

struct RuleEdge {
  RuleId rule;
  NodeId target;
};

// A compressed repetition's counter (see the file comment).
struct CountedLoop {
  NodeId head;    // h: where a redirected item continues, with count + 1
  NodeId gate;    // R[T-1]: reached when the loop copy completes
  int32_t limit;  // the most iterations folded into h
};

struct TokenSetEdge {
  int32_t set;  // index into GrammarFsm::token_sets
  NodeId target;
};

// The nodes [begin, end) of one rule's DFA.
struct NodeBlock {
  NodeId begin = 0;
  NodeId end = 0;
  int32_t size() const { return end - begin; }
  bool operator==(const NodeBlock& o) const { return begin == o.begin && end == o.end; }
};

struct GrammarFsm {
  RuleId root_rule = -1;
  std::vector<std::string> rule_names;
  std::vector<NodeId> rule_start;
  std::vector<NodeBlock> rule_nodes;  // per rule; empty blocks for unbuilt rules
  std::vector<uint8_t> rule_nullable;
  std::vector<NodeId> rule_lookahead;
  std::vector<int32_t> rule_max_tokens;  // empty when no rule has a budget; else -1 or N per rule
  // JSON character counts (see the file comment); all three empty when no rule counts.
  std::vector<int32_t> rule_min_json_chars;  // -1: the rule does not count
  std::vector<int32_t> rule_max_json_chars;  // -1: unbounded
  std::vector<uint8_t> node_char_end;        // 1 where arriving completes a JSON character
  // Per node of a counting rule: the fewest / most characters a completion of the rule from
  // there takes (most -1: unbounded); every count in between is possible (the builder checks).
  std::vector<int32_t> node_fewest_chars;
  std::vector<int32_t> node_most_chars;
  std::vector<int32_t> rule_chars_slack;  // per counting rule: the largest node_fewest_chars in it
  bool has_json_char_counts() const { return !rule_min_json_chars.empty(); }
  bool CountsJsonChars(NodeId n) const {
    return has_json_char_counts() && node_rule[n] >= 0 && rule_min_json_chars[node_rule[n]] >= 0;
  }
  bool has_lookahead = false;
  // Unique items (see the file comment); empty when no rule is marked.
  enum UniqueRole : uint8_t { kNotUnique = 0, kUniqueItem = 1, kUniqueItemsHolder = 2 };
  std::vector<uint8_t> rule_unique;
  bool has_unique_items() const { return !rule_unique.empty(); }
  bool HoldsUniqueValues(NodeId n) const {
    return has_unique_items() && node_rule[n] >= 0 && rule_unique[node_rule[n]] == kUniqueItemsHolder;
  }
  bool IsUniqueItemRule(RuleId r) const { return has_unique_items() && rule_unique[r] == kUniqueItem; }

  std::vector<RuleId> node_rule;
  std::vector<uint8_t> node_accepting;
  std::vector<int32_t> byte_edge_begin;  // size num_nodes + 1 (CSR)
  std::vector<ByteEdge> byte_edges;
  std::vector<int32_t> rule_edge_begin;  // size num_nodes + 1 (CSR)
  std::vector<RuleEdge> rule_edges;

  // Empty when the grammar has no compressed repetition; otherwise one entry per node.
  std::vector<CountedLoop> counted_loops;
  std::vector<int32_t> node_loop;
  std::vector<int32_t> node_gate_loop;

  // Empty when the grammar has no token set; otherwise token_set_edge_begin is a CSR over
  // nodes (see the file comment).
  std::vector<TokenSetDef> token_sets;
  std::vector<int32_t> token_set_edge_begin;
  std::vector<TokenSetEdge> token_set_edges;
  bool has_token_sets() const { return !token_sets.empty(); }
  const TokenSetEdge* token_set_edges_begin(NodeId n) const { return token_set_edges.data() + token_set_edge_begin[n]; }
  const TokenSetEdge* token_set_edges_end(NodeId n) const { return token_set_edges.data() + token_set_edge_begin[n + 1]; }

  int32_t num_rules() const { return static_cast<int32_t>(rule_start.size()); }

  // What the parser's prediction step reads of a rule, in one place (docs/lazy_rule_dfas.md):
  // start is kUnbuiltRule where the rule's DFA is not built in this snapshot, and then the
  // other two fields are not meaningful.
  struct RuleEntry {
    NodeId start;
    bool nullable;
    NodeId lookahead;
  };
  RuleEntry RuleAt(RuleId r) const { return {rule_start[r], rule_nullable[r] != 0, rule_lookahead[r]}; }
  bool IsBuilt(RuleId r) const { return rule_start[r] != kUnbuiltRule; }

  int32_t num_nodes() const { return static_cast<int32_t>(node_rule.size()); }

  const ByteEdge* byte_edges_begin(NodeId n) const { return byte_edges.data() + byte_edge_begin[n]; }
  const ByteEdge* byte_edges_end(NodeId n) const { return byte_edges.data() + byte_edge_begin[n + 1]; }
  const RuleEdge* rule_edges_begin(NodeId n) const { return rule_edges.data() + rule_edge_begin[n]; }
  const RuleEdge* rule_edges_end(NodeId n) const { return rule_edges.data() + rule_edge_begin[n + 1]; }

  // The node reached from `n` on `byte`, or -1.
  NodeId StepByte(NodeId n, uint8_t byte) const {
    for (const ByteEdge* e = byte_edges_begin(n), *end = byte_edges_end(n); e != end; ++e) {
      if (byte < e->lo) return -1;
      if (byte <= e->hi) return e->target;
    }
    return -1;
  }

  size_t MemoryBytes() const;
  // Human-readable dump for tests and debugging.
  std::string ToString() const;
};

struct FsmBuildLimits {
  // Upper bound on NFA plus DFA nodes created while lowering one grammar.
  int64_t max_nodes = 4'000'000;
  // Repetition state compression: a repetition is compressed when its explicit expansion
  // would hold more than this many copies of its body; <= 0 turns compression off.
  int32_t repetition_compression_threshold = 0;
  // The longest token of the vocabulary the grammar is matched against, in bytes; sets the
  // number of explicit copies kept after a compressed loop (token-mask exactness).
  int32_t max_token_bytes = 0;
};

// Default threshold of the compiler (in iterations of the repeated expression).
constexpr int32_t kDefaultRepetitionCompressionThreshold = 64;

// Lowers every rule of `ast` into a minimal DFA (subset construction, then partition
// refinement; a rule whose DFA would be exponential is split into rules of its parts).
// Throws ResourceLimitError when limits are exceeded and
// GrammarSyntaxError for constructs the matcher cannot run.
GrammarFsm BuildGrammarFsm(const GrammarAst& ast, const FsmBuildLimits& limits = {});

// Fills fsm->token_set_edges from the marker paths of its nodes (token_set_edges.cc); a no-op
// when fsm->token_sets is empty.
void IndexTokenSetEdges(GrammarFsm* fsm);

// The process-wide table of shared rule DFAs (fsm_builder.cc, "Shared rule DFAs"): what it
// holds now and its lookups since the process started.
struct SharedRuleDfaStats {
  size_t entries = 0;
  size_t bytes = 0;        // as the table counts them against its bound
  size_t limit_bytes = 0;  // the bound: past it the oldest entries go
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
};
SharedRuleDfaStats GetSharedRuleDfaStats();

}  // namespace xg2

#endif  // XG2_GRAMMAR_GRAMMAR_FSM_H_
