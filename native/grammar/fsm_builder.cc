// Lowering of the grammar AST into per-rule DFAs:
//   1. Thompson construction: AST -> epsilon-NFA over bytes + rule ids (one NFA per rule).
//   2. Subset construction: epsilon-NFA -> DFA, splitting byte ranges into disjoint pieces.
//   3. Minimisation: partition refinement (Moore for small machines, Hopcroft above).
//   4. Nullability fixpoint over rules, and flattening into GrammarFsm's CSR tables.
// A rule whose determinisation explodes is split into rules of its parts (see
// DeterminisationExplosion). Long repetitions are compressed on the way (grammar_fsm.h,
// "Repetition state compression"): step 1 lowers them as a counted loop copy plus an
// explicit tail, step 2 checks that every DFA state carries at most one counter
// consistently, and where it does not, the repetition is lifted into a synthetic rule of its
// own and the rule is lowered again.
#include <algorithm>
#include <cassert>
#include <climits>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>
#include <unordered_map>
#include <sstream>

#include "grammar/grammar_fsm.h"
#include "grammar/tag_dispatch.h"
#include "support/cancellation.h"
#include "support/error.h"
#include "support/graph.h"
#include "support/partition_refinement.h"
#include "support/sequence_interner.h"
#include "support/utf8.h"

namespace xg2 {
namespace {

constexpr int kEpsilon = -1;

// Appends the bytes of `v` to a lookup key (structural ids, shared-table keys).
void AppendKeyWord(std::string* key, int32_t v) { key->append(reinterpret_cast<const char*>(&v), sizeof v); }

struct NfaEdge {
  int kind;  // kEpsilon, or -2 for a byte range, or a rule id >= 0
  uint8_t lo = 0, hi = 0;
  int32_t target;
};
constexpr int kByteRange = -2;

// A counted loop as lowered into the NFA (grammar_fsm.h): `members` are h and the nodes of
// the loop copy (its final node is the gate).
struct NfaLoop {
  int32_t head;
  int32_t gate;
  int32_t limit;
  std::vector<int32_t> members;
  ExprId expr;     // the repetition, for lifting it on a conflict
  bool optional;   // folds the repetition's optional iterations (else its mandatory ones)
};

// Lowering adds edges in any node order; Finish() then groups them by source node into flat
// CSR arrays (each node's edges keep the order they were added in). One allocation per array
// instead of one vector per node, and Reset() keeps the capacity for the next rule.
struct Nfa {
  int32_t num_nodes = 0;
  int32_t start = 0;
  int32_t accept = 0;
  std::vector<NfaLoop> loops;
  std::vector<int32_t> edge_begin;  // size num_nodes + 1, after Finish()
  std::vector<NfaEdge> edges;       // grouped by source node, after Finish()

  struct EdgeRange {
    const NfaEdge* first;
    const NfaEdge* last;
    const NfaEdge* begin() const { return first; }
    const NfaEdge* end() const { return last; }
  };
  EdgeRange EdgesOf(int32_t n) const { return {edges.data() + edge_begin[n], edges.data() + edge_begin[n + 1]}; }

  int32_t AddNode() { return num_nodes++; }
  void AddEdge(int32_t from, const NfaEdge& edge) {
    added_from_.push_back(from);
    added_.push_back(edge);
  }
  void Reset() {
    num_nodes = start = accept = 0;
    loops.clear();
    added_from_.clear();
    added_.clear();
  }
  // A stable counting sort of the added edges by source node.
  void Finish() {
    edge_begin.assign(static_cast<size_t>(num_nodes) + 1, 0);
    for (int32_t from : added_from_) ++edge_begin[from + 1];
    for (int32_t n = 0; n < num_nodes; ++n) edge_begin[n + 1] += edge_begin[n];
    edges.resize(added_.size());
    fill_.assign(edge_begin.begin(), edge_begin.end() - 1);
    for (size_t i = 0; i < added_.size(); ++i) edges[fill_[added_from_[i]]++] = added_[i];
  }

 private:
  std::vector<int32_t> added_from_;
  std::vector<NfaEdge> added_;
  std::vector<int32_t> fill_;
};

// A read-only slice of a flat array, for range-for over one state's edges.
template <typename T>
struct Slice {
  const T* first;
  const T* last;
  const T* begin() const { return first; }
  const T* end() const { return last; }
  bool empty() const { return first == last; }
};

// A DFA for one rule, before flattening. Node 0 is the start. The edges of all nodes live
// in two flat arrays (a node's edges are one contiguous run), so a DFA costs a handful of
// allocations however many nodes it has. Built node by node: AddNode, then its edges.
struct Dfa {
  struct Node {
    bool accepting = false;
    int32_t loop = -1;       // counted loop whose counter items here carry
    int32_t gate_loop = -1;  // counted loop whose gate this is
    int32_t byte_begin = 0, byte_end = 0;  // byte_edges[byte_begin, byte_end): sorted, disjoint
    int32_t rule_begin = 0, rule_end = 0;  // rule_edges[rule_begin, rule_end): sorted by rule
  };
  std::vector<Node> nodes;
  std::vector<ByteEdge> byte_edges;
  std::vector<RuleEdge> rule_edges;
  std::vector<CountedLoop> loops;  // head/gate are node indices of this DFA

  Slice<ByteEdge> BytesOf(int32_t n) const {
    return {byte_edges.data() + nodes[n].byte_begin, byte_edges.data() + nodes[n].byte_end};
  }
  Slice<RuleEdge> RulesOf(int32_t n) const {
    return {rule_edges.data() + nodes[n].rule_begin, rule_edges.data() + nodes[n].rule_end};
  }
  int32_t size() const { return static_cast<int32_t>(nodes.size()); }
  void AddNode(bool accepting, int32_t loop = -1, int32_t gate_loop = -1) {
    const int32_t b = static_cast<int32_t>(byte_edges.size()), r = static_cast<int32_t>(rule_edges.size());
    nodes.push_back({accepting, loop, gate_loop, b, b, r, r});
  }
  // Edges of the node added last.
  void AddByteEdge(const ByteEdge& e) {
    byte_edges.push_back(e);
    nodes.back().byte_end = static_cast<int32_t>(byte_edges.size());
  }
  void AddRuleEdge(const RuleEdge& e) {
    rule_edges.push_back(e);
    nodes.back().rule_end = static_cast<int32_t>(rule_edges.size());
  }
};

// The empty language: a lone, non-accepting start.
Dfa EmptyLanguageDfa() {
  Dfa dfa;
  dfa.AddNode(false);
  return dfa;
}

// Thrown while lowering a rule when a DFA state would need two counters, or a counter that
// is both carried and fresh: the repetition `expr` is then lifted into a rule of its own.
struct CounterConflict {
  ExprId expr;
};

// Determinisation fallback. Subset construction can be exponential in the NFA
// ([ab]*a[ab]{22} needs 2^23 states: after any `a`, which of the next 22 bytes were `a`).
// A build stops once its DFA passes DeterminisationCap states (or its states' NFA node sets
// pass kMaxSubsetSetEntries) and throws this with the expression it was determinising. The
// enclosing rule build (the one with a LoweringContext) then lowers that expression's
// compound parts (all but bytes, classes and rule references) as calls of synthetic rules
// and builds again (LoweringContext::OnExplosion). The language is unchanged: the Earley
// parser follows the calls exactly, whatever nondeterminism there is between a caller and
// its callees. An expression whose compound parts are all calls determinises in linear
// size (a chain, a trie or a loop of leaves and calls), so each retry makes progress, and
// every part, now a rule, goes through the same cap in turn. No DFA below the cap changes.
// A lookahead assertion must stay one byte-only DFA: past the cap it is refused.
struct DeterminisationExplosion {
  ExprId expr;
};

// The most DFA states one determinisation may make before it falls back (see above).
int64_t DeterminisationCap(int64_t nfa_nodes) {
  constexpr int64_t kMinCap = 4096;
  constexpr int64_t kStatesPerNfaNode = 64;
  return std::max(kMinCap, kStatesPerNfaNode * nfa_nodes);
}

// The repeated expression of a compressed repetition, as a DFA that is a prefix code.
struct RepetitionBody {
  Dfa dfa;
  int32_t min_bytes = INT_MAX;  // fewest bytes of one iteration by byte edges alone
};

struct BuildScratch;  // working memory of the rule builds, defined with BuildRuleDfa

// Shared by every rule lowered for one grammar: compression settings, AST-level nullability
// and the synthetic rules created for lifted repetitions and bodies.
class LoweringContext {
 public:
  LoweringContext(const GrammarAst& ast, const FsmBuildLimits& limits)
      : ast_(ast), threshold_(limits.repetition_compression_threshold),
        max_token_bytes_(std::max(limits.max_token_bytes, 1)) {
    ComputeRuleNullable();
    contains_compressible_.assign(ast.nodes.size(), -1);
    // Parents are counted among the nodes the rules reach: inlining leaves the bodies of the
    // rules it dropped in the node table, and a parent there is never lowered.
    uses_.assign(ast.nodes.size(), 0);
    std::vector<uint8_t> reached(ast.nodes.size(), 0);
    std::vector<ExprId> stack;
    for (const RuleDef& rule : ast.rules) {
      for (ExprId root : {rule.body, rule.lookahead}) {
        if (root >= 0 && !reached[root]) reached[root] = 1, stack.push_back(root);
      }
    }
    while (!stack.empty()) {
      const ExprId e = stack.back();
      stack.pop_back();
      for (ExprId child : ast.node(e).children) {
        uses_[child] = static_cast<uint8_t>(std::min(uses_[child] + 1, kMinFragmentUses));
        if (!reached[child]) reached[child] = 1, stack.push_back(child);
      }
    }
    // Nullability only of the nodes the rules reach: the bodies of rules that inlining or
    // reachability dropped stay in the node table, and their rule references may name rules
    // that no longer exist (an index past rule_nullable_).
    expr_nullable_.assign(ast.nodes.size(), -1);
    std::vector<uint32_t> stamps(ast.nodes.size(), 0);
    for (ExprId e = 0; e < static_cast<ExprId>(ast.nodes.size()); ++e) {
      if (reached[e]) StampedNullable(e, &expr_nullable_, &stamps, 1);
    }
    fragment_size_.assign(ast.nodes.size(), -1);
  }

  // Fragments. Inlining shares children: an expression node with several parents (the
  // character loop of json_string once json_string is inlined into every string-valued
  // property, say) is lowered again at every occurrence, and each Thompson copy (UTF-8
  // ranges, epsilon edges) is determinised again inside its rule. Such an expression, when
  // it is large enough to matter and holds no compressible repetition, is determinised and
  // minimised once per grammar, and each occurrence is a copy of that DFA: the same
  // language, so the rule's minimal DFA is the same, from a smaller and epsilon-poorer NFA.
  // A fragment costs a determinisation of its own; at two occurrences that costs more than
  // it saves (JSONSchemaBench: compile time about 10% lower with three than with two).
  static constexpr int64_t kMinFragmentSize = 12;  // expression nodes, repetitions unrolled
  static constexpr int kMinFragmentUses = 3;
  bool IsFragment(ExprId e) {
    const ExprNode& node = ast_.node(e);
    if (uses_[e] < kMinFragmentUses || (node.kind != ExprKind::kSequence && node.kind != ExprKind::kChoice &&
                         node.kind != ExprKind::kRepeat)) {
      return false;
    }
    return FragmentSize(e) >= kMinFragmentSize && !ContainsCompressible(e) && !Exploded(e);
  }
  const Dfa& Fragment(ExprId e, int64_t* budget, const std::string& owner);

  // Tails. An occurrence in tail position (nothing of the rule follows it) of an expression
  // worth sharing: equal tails are lowered once per rule, see NfaBuilder::Lower.
  bool IsSharedTail(ExprId e) {
    const ExprKind kind = ast_.node(e).kind;
    return (kind == ExprKind::kSequence || kind == ExprKind::kChoice || kind == ExprKind::kRepeat) &&
           FragmentSize(e) >= kMinFragmentSize;
  }
  // Equal ids for structurally equal expressions (same kinds, payloads and rule ids, children
  // equal in turn): inlining copies a callee's body node at every call site, so equal
  // expressions are often distinct nodes that share only their children.
  int32_t StructuralId(ExprId e) {
    if (structural_id_.empty()) structural_id_.assign(ast_.nodes.size(), -1);
    if (structural_id_[e] >= 0) return structural_id_[e];
    const ExprNode& node = ast_.node(e);
    for (ExprId child : node.children) StructuralId(child);
    // The key: kind, payload, -1, the children's ids (built after the recursion, which uses
    // the same scratch vector).
    std::vector<int32_t>& key = structural_key_;
    key.clear();
    key.push_back(static_cast<int32_t>(node.kind));
    switch (node.kind) {
      case ExprKind::kBytes:
        key.push_back(static_cast<int32_t>(node.bytes.size()));
        for (size_t i = 0; i < node.bytes.size(); i += 4) {
          uint32_t word = 0;
          for (size_t j = i; j < std::min(i + 4, node.bytes.size()); ++j) {
            word |= static_cast<uint32_t>(static_cast<uint8_t>(node.bytes[j])) << (8 * (j - i));
          }
          key.push_back(static_cast<int32_t>(word));
        }
        break;
      case ExprKind::kCharClass:
        for (const CodepointRange& r : node.ranges) {
          key.push_back(static_cast<int32_t>(r.first));
          key.push_back(static_cast<int32_t>(r.last));
        }
        break;
      case ExprKind::kRuleRef:
        key.push_back(node.rule_id);
        break;
      case ExprKind::kRepeat:
        key.push_back(node.min_repeat);
        key.push_back(node.max_repeat);
        break;
      case ExprKind::kTagDispatch:
        key.push_back(node.tag_dispatch);
        break;
      default:
        break;
    }
    key.push_back(-1);
    for (ExprId child : node.children) key.push_back(structural_id_[child]);
    const int32_t id = structural_ids_.Intern(key);
    structural_id_[e] = id;
    return id;
  }

  struct Synthetic {
    ExprId body;
    ExprId exempt;  // the body itself: never lifted again inside its own rule
    std::string name;
  };

  bool enabled() const { return threshold_ > 0; }
  BuildScratch* scratch() const { return scratch_; }
  void set_scratch(BuildScratch* scratch) { scratch_ = scratch; }
  int32_t max_token_bytes() const { return max_token_bytes_; }
  RuleId first_synthetic_rule() const { return static_cast<RuleId>(ast_.rules.size()); }
  std::vector<Synthetic>& synthetic() { return synthetic_; }
  bool IsLifted(ExprId e) const { return lifted_.count(e) > 0; }
  // Lowered as a call of a synthetic rule whose body it is (determinisation fallback).
  bool IsSplit(ExprId e) const { return split_.count(e) > 0; }
  // Its determinisation passed the cap: never a fragment or an inline repetition body.
  bool Exploded(ExprId e) const { return exploded_.count(e) > 0; }
  // No repetition has been lifted into a rule or kept explicit, and no determinisation
  // has fallen back, yet: lowering an expression depends on nothing but the expression
  // and the settings.
  bool Pristine() const { return lifted_.empty() && explicit_.empty() && split_.empty(); }
  int32_t threshold() const { return threshold_; }
  bool RuleNullable(RuleId r) const { return rule_nullable_[r]; }
  // Expression nodes of `e` with every bounded repetition unrolled (capped): the size of
  // the NFA a build would start from, roughly.
  int64_t ExpandedSize(ExprId e) { return FragmentSize(e); }

  // Whether the repetition `e` is lowered compressed (with the counter).
  bool Compressible(ExprId e) const {
    const ExprNode& node = ast_.node(e);
    if (!enabled() || node.kind != ExprKind::kRepeat || explicit_.count(e)) return false;
    bool long_bound = node.max_repeat < 0 ? node.min_repeat > threshold_ : node.max_repeat > threshold_;
    // A nullable body could make the counter run through empty iterations; kept explicit.
    return long_bound && !expr_nullable_[node.children[0]];
  }

  bool ContainsCompressible(ExprId e) {
    if (contains_compressible_[e] >= 0) return contains_compressible_[e];
    bool found = Compressible(e);
    for (ExprId child : ast_.node(e).children) found = ContainsCompressible(child) || found;
    contains_compressible_[e] = found;
    return found;
  }

  // The determinisation of `expr` passed the cap: its compound children become calls.
  void OnExplosion(ExprId expr, const std::string& owner) {
    bool progress = exploded_.insert(expr).second;
    for (ExprId child : ast_.node(expr).children) {
      const ExprKind kind = ast_.node(child).kind;
      if (kind == ExprKind::kSequence || kind == ExprKind::kChoice || kind == ExprKind::kRepeat) {
        progress = split_.insert(child).second || progress;
      }
    }
    // Not expected (the retry of an exploded expression is linear in size); a guard against
    // retrying forever.
    if (!progress) {
      throw ResourceLimitError("rule '" + owner + "': determinisation exceeded its state limit and no "
                               "smaller lowering is left");
    }
  }

  void OnConflict(ExprId expr, ExprId exempt) {
    if (expr == exempt || lifted_.count(expr)) {
      explicit_.insert(expr);
      std::fill(contains_compressible_.begin(), contains_compressible_.end(), -1);
    } else {
      lifted_.insert(expr);
    }
  }

  // The synthetic rule whose body is `expr` (one per expression).
  // `kind` names it in dumps: "#rep" for a lifted repetition or body, "#part" for a split.
  RuleId SyntheticRule(ExprId expr, const std::string& owner, const char* kind = "#rep") {
    auto it = synthetic_of_.find(expr);
    if (it != synthetic_of_.end()) return it->second;
    RuleId id = first_synthetic_rule() + static_cast<RuleId>(synthetic_.size());
    synthetic_.push_back({expr, expr, owner + kind + std::to_string(synthetic_.size())});
    synthetic_of_.emplace(expr, id);
    return id;
  }

  const RepetitionBody* FindBody(ExprId e) const {
    auto it = bodies_.find(e);
    return it == bodies_.end() ? nullptr : &it->second;
  }
  const RepetitionBody& StoreBody(ExprId e, RepetitionBody body) {
    return bodies_.emplace(e, std::move(body)).first->second;
  }

 private:
  // The least fixpoint of rule nullability, by a worklist: a rule's body is examined again
  // only when a rule it refers to has just become nullable (re-running every body until
  // nothing changes costs one pass per link of a chain of rules declared caller first).
  void ComputeRuleNullable() {
    const size_t num_rules = ast_.rules.size();
    rule_nullable_.assign(num_rules, 0);
    std::vector<std::vector<RuleId>> callers(num_rules);
    std::vector<uint32_t> seen(ast_.nodes.size(), 0);
    std::vector<ExprId> stack;
    for (size_t r = 0; r < num_rules; ++r) {
      const uint32_t stamp = static_cast<uint32_t>(r) + 1;
      stack.assign(1, ast_.rules[r].body);
      seen[ast_.rules[r].body] = stamp;
      while (!stack.empty()) {
        const ExprNode& node = ast_.node(stack.back());
        stack.pop_back();
        if (node.kind == ExprKind::kRuleRef) {
          std::vector<RuleId>& list = callers[node.rule_id];
          if (list.empty() || list.back() != static_cast<RuleId>(r)) list.push_back(static_cast<RuleId>(r));
        }
        for (ExprId child : node.children) {
          if (seen[child] != stamp) {
            seen[child] = stamp;
            stack.push_back(child);
          }
        }
      }
    }
    // Each examination gets fresh memo entries (a stamp per examination), so an expression
    // found not nullable before a callee became nullable is looked at again.
    std::vector<int8_t> memo(ast_.nodes.size(), -1);
    std::vector<uint32_t> memo_stamp(ast_.nodes.size(), 0);
    uint32_t stamp = 0;
    std::vector<RuleId> queue(num_rules);
    std::vector<uint8_t> queued(num_rules, 1);
    for (size_t r = 0; r < num_rules; ++r) queue[r] = static_cast<RuleId>(r);
    for (size_t k = 0; k < queue.size(); ++k) {
      const RuleId r = queue[k];
      queued[r] = 0;
      if (rule_nullable_[r]) continue;
      ++stamp;
      if (!StampedNullable(ast_.rules[r].body, &memo, &memo_stamp, stamp)) continue;
      rule_nullable_[r] = 1;
      for (RuleId caller : callers[r]) {
        if (!rule_nullable_[caller] && !queued[caller]) {
          queued[caller] = 1;
          queue.push_back(caller);
        }
      }
    }
  }

  // Whether `e` matches the empty string under the current rule_nullable_; memo entries
  // count only where memo_stamp equals `stamp`.
  bool StampedNullable(ExprId e, std::vector<int8_t>* memo, std::vector<uint32_t>* memo_stamp, uint32_t stamp) {
    if ((*memo_stamp)[e] == stamp) return (*memo)[e];
    const ExprNode& node = ast_.node(e);
    bool nullable = false;
    switch (node.kind) {
      case ExprKind::kEmpty:
      case ExprKind::kTagDispatch:  // may end at once; conservative either way
        nullable = true;
        break;
      case ExprKind::kBytes:
      case ExprKind::kCharClass:
        break;
      case ExprKind::kRuleRef:
        assert(node.rule_id >= 0 && static_cast<size_t>(node.rule_id) < rule_nullable_.size());
        nullable = rule_nullable_[node.rule_id];
        break;
      case ExprKind::kSequence:
        nullable = true;
        for (ExprId c : node.children) nullable = StampedNullable(c, memo, memo_stamp, stamp) && nullable;
        break;
      case ExprKind::kChoice:
        for (ExprId c : node.children) nullable = StampedNullable(c, memo, memo_stamp, stamp) || nullable;
        break;
      case ExprKind::kRepeat:
        nullable = StampedNullable(node.children[0], memo, memo_stamp, stamp) || node.min_repeat == 0;
        break;
    }
    (*memo_stamp)[e] = stamp;
    (*memo)[e] = nullable;
    return nullable;
  }

  const GrammarAst& ast_;
  int32_t threshold_;
  int32_t max_token_bytes_;
  std::vector<uint8_t> rule_nullable_;
  std::vector<int8_t> expr_nullable_;
  std::vector<int8_t> contains_compressible_;
  std::set<ExprId> lifted_;    // lowered as a call of a synthetic rule
  std::set<ExprId> explicit_;  // never compressed (conflicts even alone)
  std::set<ExprId> split_;     // lowered as a call of a synthetic rule (OnExplosion)
  std::set<ExprId> exploded_;  // determinisations that passed the cap
  std::map<ExprId, RuleId> synthetic_of_;
  std::vector<Synthetic> synthetic_;
  std::map<ExprId, RepetitionBody> bodies_;
  BuildScratch* scratch_ = nullptr;
  std::vector<uint8_t> uses_;  // parents of each expression node, capped at kMinFragmentUses
  std::vector<int64_t> fragment_size_;
  std::map<ExprId, Dfa> fragments_;
  std::vector<int32_t> structural_id_;  // per expression node, -1 until computed
  SequenceInterner structural_ids_;
  std::vector<int32_t> structural_key_;  // StructuralId's scratch

  int64_t FragmentSize(ExprId e) {
    if (fragment_size_[e] >= 0) return fragment_size_[e];
    const ExprNode& node = ast_.node(e);
    int64_t size = 1;
    for (ExprId child : node.children) size = std::min<int64_t>(size + FragmentSize(child), 1 << 30);
    if (node.kind == ExprKind::kRepeat) {
      const int64_t copies = std::max<int64_t>(1, node.max_repeat < 0 ? node.min_repeat + 1 : node.max_repeat);
      size = std::min<int64_t>(1 + (size - 1) * copies, 1 << 30);
    }
    fragment_size_[e] = size;
    return size;
  }
};

// What a build reports besides its DFA: the size of the rule's (outermost) NFA, and the
// repetition folded into each counted loop of the DFA (dfa.loops[k] folds the iterations of
// loops[k].expr, its optional or its mandatory ones).
struct BuildReport {
  struct Loop {
    ExprId expr;
    bool optional;
  };
  int64_t nfa_nodes = 0;
  std::vector<Loop> loops;
};

// `scratch` null: working memory of its own.
Dfa BuildRuleDfa(const GrammarAst& ast, ExprId body, int64_t* budget, LoweringContext* ctx,
                 ExprId exempt, const std::string& owner, BuildScratch* scratch = nullptr,
                 BuildReport* report = nullptr);

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

  // Counts the occurrences with `continuation` that Lower will meet: it follows the
  // continuation as LowerOnce passes it on, stops at fragments (lowered as a DFA copy), and
  // does not look inside a repeated occurrence (its later occurrences reuse the first copy).
  void CountTails(ExprId expr, int32_t continuation) {
    if (ctx_->IsSharedTail(expr) && ++tail_count_[TailKey(ctx_->StructuralId(expr), continuation)] >= 2) return;
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
    ThrowIfCancelled();
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
    // Built from the last byte backwards: the node that reads a sequence's bytes i.. and
    // reaches `to` is shared by every sequence of this rule with the same suffix and target
    // (the continuation bytes [80-BF] of the multi-byte sequences of a character class, say),
    // so subset construction meets one node where it would meet one per sequence.
    for (const Utf8ByteSequence& seq : Utf8RangeSequences(first, last)) {
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
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> shared_tails_;
  int32_t next_choice_key_ = kRuleEnd + 1;  // continuation keys of choices
  std::unordered_map<uint64_t, int32_t> suffix_nodes_;  // (next, lo, hi) -> node, see SuffixNode
};

// The determinised machine before minimisation, in flat arrays: the byte edges of state s
// are byte_edges[byte_begin[s], byte_begin[s + 1]) (sorted, disjoint), its rule edges
// likewise (sorted by rule). State 0 is the start; the per-state fields mean what
// Dfa::Node's do.
struct FlatDfa {
  std::vector<uint8_t> accepting;
  std::vector<int32_t> loop;
  std::vector<int32_t> gate_loop;
  std::vector<int32_t> byte_begin{0};
  std::vector<int32_t> rule_begin{0};
  std::vector<ByteEdge> byte_edges;
  std::vector<RuleEdge> rule_edges;
  std::vector<CountedLoop> loops;

  int32_t size() const { return static_cast<int32_t>(accepting.size()); }
  Slice<ByteEdge> BytesOf(int32_t s) const {
    return {byte_edges.data() + byte_begin[s], byte_edges.data() + byte_begin[s + 1]};
  }
  Slice<RuleEdge> RulesOf(int32_t s) const {
    return {rule_edges.data() + rule_begin[s], rule_edges.data() + rule_begin[s + 1]};
  }
  void Clear() {
    accepting.clear();
    loop.clear();
    gate_loop.clear();
    byte_begin.assign(1, 0);
    rule_begin.assign(1, 0);
    byte_edges.clear();
    rule_edges.clear();
    loops.clear();
  }
};

// Working memory of the subset construction, kept across the rules of one grammar so that a
// rule allocates only where it is larger than the rules before it.
struct SubsetScratch {
  FlatDfa dfa;
  // The NFA node set of every DFA state, concatenated: state s is
  // set_pool[set_begin[s], set_begin[s + 1]), and set_hash[s] its hash.
  std::vector<int32_t> set_pool;
  std::vector<uint32_t> set_begin;
  std::vector<uint64_t> set_hash;
  std::vector<int32_t> slots;  // open addressing over DFA states by set; -1 empty; power-of-two size
  std::vector<uint32_t> mark;  // generation-stamped NFA node marks of Closure
  std::vector<uint8_t> reads;  // NFA node -> it has a byte or rule edge
  uint32_t generation = 0;
  std::vector<int32_t> member_of;  // NFA node -> counted loop it belongs to; empty: no loops
  std::vector<int32_t> gate_of;
  std::vector<int32_t> seeds, closure, closure_stack, fresh, current, targets, previous_targets;
  std::vector<int> cuts;
  std::vector<int32_t> piece_begin, piece_fill, piece_targets;
  int32_t piece_at[257];  // cut value -> its index in `cuts` (only the current cuts are valid)
  std::vector<std::pair<int32_t, int32_t>> rule_targets;  // (rule, NFA target)
  std::vector<NfaEdge> single_node_bytes;  // ExpandDisjointBytes
};

// The node budget counts DFA states, not the NFA node set each one is keyed by: a rule whose
// states hold thousands of NFA nodes each (overlapping UTF-8 classes under nested loops) could
// exhaust memory long before the budget. The sets of one construction hold at most this many
// node ids in all (128 MiB); the largest seen on JSONSchemaBench hold well under 1% of it.
constexpr size_t kMaxSubsetSetEntries = size_t{1} << 25;

class SubsetConstruction {
 public:
  // `scratch` null: working memory of its own.
  // `stop_at_budget`: running out of `budget` stops the construction early (exhausted()
  // then says so, and the result is incomplete) instead of throwing ResourceLimitError.
  // `max_states`: making more states than this stops it early too (whatever the budget), and
  // so does passing kMaxSubsetSetEntries then.
  SubsetConstruction(const Nfa& nfa, int64_t* budget, SubsetScratch* scratch = nullptr, bool stop_at_budget = false,
                     int64_t max_states = INT64_MAX)
      : nfa_(nfa),
        budget_(budget),
        stop_at_budget_(stop_at_budget),
        max_states_(max_states),
        own_(scratch ? nullptr : std::make_unique<SubsetScratch>()),
        s_(scratch ? *scratch : *own_) {
    s_.member_of.clear();
    s_.gate_of.clear();
    if (nfa.loops.empty()) {  // Closure keeps the important nodes only (see there)
      s_.reads.assign(nfa.num_nodes, 0);
      for (int32_t n = 0; n < nfa.num_nodes; ++n) {
        for (const NfaEdge& e : nfa.EdgesOf(n)) {
          if (e.kind != kEpsilon) s_.reads[n] = 1;
        }
      }
      return;
    }
    s_.member_of.assign(nfa.num_nodes, -1);
    s_.gate_of.assign(nfa.num_nodes, -1);
    for (size_t k = 0; k < nfa.loops.size(); ++k) {
      for (int32_t n : nfa.loops[k].members) s_.member_of[n] = static_cast<int32_t>(k);
      s_.gate_of[nfa.loops[k].gate] = static_cast<int32_t>(k);
    }
  }

  // Throws CounterConflict (see the file comment) when a counted loop cannot be kept. The
  // result lives in the scratch memory until the next Run on it.
  const FlatDfa& Run() {
    FlatDfa& dfa = s_.dfa;
    dfa.Clear();
    s_.set_pool.clear();
    s_.set_begin.assign(1, 0);
    s_.set_hash.clear();
    s_.slots.assign(64, -1);
    Intern(Closure(nfa_.start));
    std::vector<std::vector<int32_t>> heads;
    for (size_t k = 0; k < nfa_.loops.size(); ++k) {
      gate_closures_.push_back(Closure(nfa_.loops[k].gate));
      // The gate holds no counter: a redirected item continues with the count it carries.
      for (int32_t n : gate_closures_.back()) {
        if (s_.member_of[n] >= 0) throw CounterConflict{nfa_.loops[s_.member_of[n]].expr};
      }
      heads.push_back(Closure(nfa_.loops[k].head));
    }
    // Redirect targets exist even when no byte step reaches exactly h's state.
    std::vector<int32_t> head_ids;
    for (const auto& head : heads) head_ids.push_back(Intern(head));
    for (int32_t id = 0; id < dfa.size() && !exhausted_; ++id) {
      ThrowIfCancelled();
      Expand(id);
    }
    if (exhausted_) return dfa;
    for (size_t k = 0; k < nfa_.loops.size(); ++k) {
      dfa.loops.push_back({head_ids[k], Find(gate_closures_[k], HashSet(gate_closures_[k])), nfa_.loops[k].limit});
    }
    return dfa;
  }
  bool exhausted() const { return exhausted_; }

 private:
  // The epsilon closure of `seeds` (or of one seed), sorted, in a buffer reused by the next
  // call (so a closure that names an existing DFA state allocates nothing); `seeds` must not
  // be that buffer. Without counted loops only the closure's important nodes are kept (the
  // Dragon Book's "important states": those with a byte or rule edge, and the accepting
  // node): a node with epsilon edges only adds nothing its successors in the closure do
  // not, so two closures with the same important nodes accept the same language and are one
  // DFA state. Thompson's construction makes many such nodes (choice joins, loop heads,
  // copy entries), and without this each distinct mix of them would be a state of its own
  // for minimisation to merge again. With counted loops the whole closure stays: a state's
  // counter roles are read from all of its nodes.
  const std::vector<int32_t>& Closure(int32_t seed) {
    s_.seeds.assign(1, seed);
    return Closure(s_.seeds);
  }
  const std::vector<int32_t>& Closure(const std::vector<int32_t>& seeds) {
    std::vector<int32_t>& set = s_.closure;
    // One seed without epsilon edges (a position inside a literal, say) is its own closure.
    if (seeds.size() == 1) {
      const int32_t seed = seeds[0];
      bool epsilon = false;
      for (const NfaEdge& e : nfa_.EdgesOf(seed)) epsilon = epsilon || e.kind == kEpsilon;
      if (!epsilon) {
        set.clear();
        if (!nfa_.loops.empty() || Important(seed)) set.push_back(seed);
        return set;
      }
    }
    std::vector<int32_t>& stack = s_.closure_stack;
    set.assign(seeds.begin(), seeds.end());
    stack.assign(seeds.begin(), seeds.end());
    // Generation-stamped marks: clearing is O(1), so closures cost only what they visit.
    if (s_.mark.size() < static_cast<size_t>(nfa_.num_nodes)) s_.mark.assign(nfa_.num_nodes, 0);
    if (++s_.generation == 0) {
      std::fill(s_.mark.begin(), s_.mark.end(), 0);
      s_.generation = 1;
    }
    const uint32_t generation = s_.generation;
    for (int32_t n : set) s_.mark[n] = generation;
    while (!stack.empty()) {
      int32_t n = stack.back();
      stack.pop_back();
      for (const NfaEdge& e : nfa_.EdgesOf(n)) {
        if (e.kind == kEpsilon && s_.mark[e.target] != generation) {
          s_.mark[e.target] = generation;
          set.push_back(e.target);
          stack.push_back(e.target);
        }
      }
    }
    if (nfa_.loops.empty()) {
      set.erase(std::remove_if(set.begin(), set.end(), [&](int32_t n) { return !Important(n); }),
                set.end());
    }
    std::sort(set.begin(), set.end());
    return set;
  }

  // Whether NFA node `n` is one of the "important" nodes a closure keeps (see Closure); only
  // meaningful without counted loops (s_.reads is not filled otherwise).
  bool Important(int32_t n) const { return s_.reads[n] || n == nfa_.accept; }

  static uint64_t HashSet(const std::vector<int32_t>& set) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ set.size();
    for (int32_t n : set) {
      h = (h ^ static_cast<uint32_t>(n)) * 0xFF51AFD7ED558CCDull;
      h ^= h >> 31;
    }
    return h;
  }

  // The DFA state whose NFA set is `set`, or -1.
  int32_t Find(const std::vector<int32_t>& set, uint64_t hash) const {
    const size_t mask = s_.slots.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const int32_t id = s_.slots[i];
      if (id < 0) return -1;
      if (s_.set_hash[id] != hash) continue;
      const uint32_t b = s_.set_begin[id], e = s_.set_begin[id + 1];
      if (e - b == set.size() && std::equal(set.begin(), set.end(), s_.set_pool.begin() + b)) return id;
    }
  }

  void Insert(int32_t id, uint64_t hash) {
    size_t mask = s_.slots.size() - 1;
    size_t i = hash & mask;
    while (s_.slots[i] >= 0) i = (i + 1) & mask;
    s_.slots[i] = id;
  }

  int32_t Intern(const std::vector<int32_t>& set) {
    const uint64_t hash = HashSet(set);
    const int32_t known = Find(set, hash);
    if (known >= 0) return known;
    if (exhausted_) return 0;
    if (s_.dfa.size() >= max_states_) {
      exhausted_ = true;
      return 0;
    }
    if (s_.set_pool.size() + set.size() > kMaxSubsetSetEntries) {
      if (stop_at_budget_ || max_states_ != INT64_MAX) {
        exhausted_ = true;
        return 0;
      }
      throw ResourceLimitError("grammar too large: determinisation exceeded its memory limit (the NFA node "
                               "sets of the DFA states of one rule)");
    }
    if (--*budget_ < 0) {
      if (stop_at_budget_) {
        exhausted_ = true;
        return 0;
      }
      throw ResourceLimitError("grammar too large: determinisation exceeded the node limit");
    }
    FlatDfa& dfa = s_.dfa;
    const int32_t id = dfa.size();
    dfa.accepting.push_back(std::binary_search(set.begin(), set.end(), nfa_.accept));
    int32_t loop = -1, gate_loop = -1;
    if (!s_.member_of.empty()) {
      for (int32_t n : set) {
        int32_t k = s_.member_of[n];
        if (k >= 0) {
          if (loop >= 0 && loop != k) throw CounterConflict{nfa_.loops[k].expr};
          loop = k;
        }
        k = s_.gate_of[n];
        if (k >= 0) {
          if (set != gate_closures_[k]) throw CounterConflict{nfa_.loops[k].expr};
          gate_loop = k;
        }
      }
    }
    dfa.loop.push_back(loop);
    dfa.gate_loop.push_back(gate_loop);
    s_.set_pool.insert(s_.set_pool.end(), set.begin(), set.end());
    s_.set_begin.push_back(static_cast<uint32_t>(s_.set_pool.size()));
    s_.set_hash.push_back(hash);
    // Keep the table at most half full.
    if (static_cast<size_t>(id + 1) * 2 > s_.slots.size()) {
      s_.slots.assign(s_.slots.size() * 2, -1);
      for (int32_t other = 0; other <= id; ++other) Insert(other, s_.set_hash[other]);
    } else {
      Insert(id, hash);
    }
    return id;
  }

  // From a state that carries a counter, a step may not enter a counted loop afresh: the
  // fresh entry would need count 0 while the item keeps its count.
  void CheckNoFreshEntry(const std::vector<int32_t>& set, bool carries_counter, int kind, int lo, int hi) {
    if (!carries_counter) return;
    std::vector<int32_t>& fresh = s_.fresh;
    fresh.clear();
    for (int32_t n : set) {
      if (s_.member_of[n] >= 0) continue;
      for (const NfaEdge& e : nfa_.EdgesOf(n)) {
        bool match = kind == kByteRange ? (e.kind == kByteRange && e.lo <= lo && hi <= e.hi) : e.kind == kind;
        if (match) fresh.push_back(e.target);
      }
    }
    if (fresh.empty()) return;
    for (int32_t n : Closure(fresh)) {
      if (s_.member_of[n] >= 0) throw CounterConflict{nfa_.loops[s_.member_of[n]].expr};
    }
  }

  // Appends the edges of state `id` (states are expanded in order, so each state's edges
  // are one contiguous run of the flat arrays).
  void Expand(int32_t id) {
    FlatDfa& dfa = s_.dfa;
    // Intern appends to the set pool: work on a copy of this state's set.
    std::vector<int32_t>& set = s_.current;
    set.assign(s_.set_pool.begin() + s_.set_begin[id], s_.set_pool.begin() + s_.set_begin[id + 1]);
    const bool carries_counter = dfa.loop[id] >= 0;
    if (set.size() == 1 && s_.member_of.empty() && ExpandDisjointBytes(set[0])) {
      AddRuleEdges(set, carries_counter);
      return;
    }
    // Byte edges: cut [0, 255] at every range boundary, then gather targets per piece.
    std::vector<int>& cuts = s_.cuts;
    std::vector<std::pair<int32_t, int32_t>>& rule_targets = s_.rule_targets;
    std::vector<int32_t>& targets = s_.targets;
    std::vector<int32_t>& previous_targets = s_.previous_targets;
    cuts.clear();
    rule_targets.clear();
    previous_targets.clear();
    for (int32_t n : set) {
      for (const NfaEdge& e : nfa_.EdgesOf(n)) {
        if (e.kind == kByteRange) {
          cuts.push_back(e.lo);
          cuts.push_back(e.hi + 1);
        } else if (e.kind >= 0) {
          rule_targets.push_back({e.kind, e.target});
        }
      }
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    // Neighbouring pieces often step to the same NFA nodes (a character class cut by other
    // ranges); their closure and DFA state are then reused.
    const size_t first_byte_edge = dfa.byte_edges.size();
    int32_t previous_target = -1;
    // The targets of every piece in one pass over the edges (CSR over pieces; each piece's
    // targets keep the order of the edges): an edge covers the pieces from the one starting
    // at its lo up to the one ending at its hi, so a state with many ranges costs the sum of
    // its pieces' targets rather than pieces x edges.
    const size_t num_pieces = cuts.empty() ? 0 : cuts.size() - 1;
    std::vector<int32_t>& piece_begin = s_.piece_begin;
    std::vector<int32_t>& piece_targets = s_.piece_targets;
    piece_begin.assign(num_pieces + 1, 0);
    // Every edge's lo and hi + 1 is a cut: its index is looked up, not searched for.
    int32_t* piece_at = s_.piece_at;
    for (size_t c = 0; c < cuts.size(); ++c) piece_at[cuts[c]] = static_cast<int32_t>(c);
    auto piece_of = [piece_at](int boundary) { return static_cast<size_t>(piece_at[boundary]); };
    for (int pass = 0; pass < 2; ++pass) {
      for (int32_t n : set) {
        for (const NfaEdge& e : nfa_.EdgesOf(n)) {
          if (e.kind != kByteRange) continue;
          const size_t first = piece_of(e.lo), last = piece_of(e.hi + 1);
          for (size_t c = first; c < last; ++c) {
            if (pass == 0) {
              ++piece_begin[c + 1];
            } else {
              piece_targets[s_.piece_fill[c]++] = e.target;
            }
          }
        }
      }
      if (pass == 0) {
        for (size_t c = 0; c < num_pieces; ++c) piece_begin[c + 1] += piece_begin[c];
        piece_targets.resize(piece_begin[num_pieces]);
        s_.piece_fill.assign(piece_begin.begin(), piece_begin.end() - 1);
      }
    }
    for (size_t c = 0; c < num_pieces; ++c) {
      int lo = cuts[c], hi = cuts[c + 1] - 1;
      if (piece_begin[c] == piece_begin[c + 1]) continue;
      targets.assign(piece_targets.begin() + piece_begin[c], piece_targets.begin() + piece_begin[c + 1]);
      CheckNoFreshEntry(set, carries_counter, kByteRange, lo, hi);
      int32_t target = previous_target;
      if (previous_target < 0 || targets != previous_targets) {
        target = Intern(Closure(targets));
        previous_targets.swap(targets);
        previous_target = target;
      }
      AppendByteEdge(first_byte_edge, static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), target);
    }
    AddRuleEdges(set, carries_counter);
  }

  // A state of one NFA node without epsilon edges whose byte edges do not overlap (most
  // states of a JSON grammar: a position inside a literal, or before a rule reference): each
  // byte edge is a DFA edge of its own, to the closure of its target, so the cuts and pieces
  // of Expand are not needed. Appends the state's byte edges and collects its rule edges in
  // s_.rule_targets, exactly as the general path would (same edges, same order of new
  // states); false, adding no edge or state, for any other node.
  bool ExpandDisjointBytes(int32_t node) {
    std::vector<NfaEdge>& bytes = s_.single_node_bytes;
    std::vector<std::pair<int32_t, int32_t>>& rule_targets = s_.rule_targets;
    bytes.clear();
    rule_targets.clear();
    for (const NfaEdge& e : nfa_.EdgesOf(node)) {
      if (e.kind == kEpsilon) return false;
      if (e.kind == kByteRange) {
        bytes.push_back(e);
      } else {
        rule_targets.push_back({e.kind, e.target});
      }
    }
    if (bytes.size() > 1) {
      std::sort(bytes.begin(), bytes.end(), [](const NfaEdge& x, const NfaEdge& y) { return x.lo < y.lo; });
      for (size_t k = 1; k < bytes.size(); ++k) {
        if (bytes[k].lo <= bytes[k - 1].hi) return false;
      }
    }
    const size_t first_byte_edge = s_.dfa.byte_edges.size();
    int32_t previous_nfa_target = -1, previous_target = -1;
    for (const NfaEdge& e : bytes) {
      const int32_t target = e.target == previous_nfa_target ? previous_target : Intern(Closure(e.target));
      previous_nfa_target = e.target;
      previous_target = target;
      AppendByteEdge(first_byte_edge, e.lo, e.hi, target);
    }
    return true;
  }

  // Appends the byte edge lo..hi -> target to the state whose edges start at
  // `first_byte_edge`, extending that state's last edge where it ends at lo - 1 on the
  // same target (edges are appended in increasing lo).
  void AppendByteEdge(size_t first_byte_edge, uint8_t lo, uint8_t hi, int32_t target) {
    std::vector<ByteEdge>& byte_edges = s_.dfa.byte_edges;
    if (byte_edges.size() > first_byte_edge && byte_edges.back().target == target && byte_edges.back().hi + 1 == lo) {
      byte_edges.back().hi = hi;
    } else {
      byte_edges.push_back({lo, hi, target});
    }
  }

  // Ends the expansion of a state whose byte edges are in place: its rule edges, from the
  // (rule, NFA target) pairs in s_.rule_targets.
  void AddRuleEdges(const std::vector<int32_t>& set, bool carries_counter) {
    FlatDfa& dfa = s_.dfa;
    std::vector<std::pair<int32_t, int32_t>>& rule_targets = s_.rule_targets;
    std::vector<int32_t>& targets = s_.targets;
    dfa.byte_begin.push_back(static_cast<int32_t>(dfa.byte_edges.size()));
    std::sort(rule_targets.begin(), rule_targets.end());
    for (size_t k = 0; k < rule_targets.size();) {
      const int32_t rule = rule_targets[k].first;
      targets.clear();
      for (; k < rule_targets.size() && rule_targets[k].first == rule; ++k) targets.push_back(rule_targets[k].second);
      CheckNoFreshEntry(set, carries_counter, rule, 0, 0);
      const int32_t target = Intern(Closure(targets));
      dfa.rule_edges.push_back({rule, target});
    }
    dfa.rule_begin.push_back(static_cast<int32_t>(dfa.rule_edges.size()));
  }

  const Nfa& nfa_;
  int64_t* budget_;
  bool stop_at_budget_;
  int64_t max_states_;
  bool exhausted_ = false;
  std::unique_ptr<SubsetScratch> own_;  // only without a caller's scratch (its FlatDfa allocates)
  SubsetScratch& s_;
  std::vector<std::vector<int32_t>> gate_closures_;
};

// Symbols lo..hi (byte classes, then rules) of an edge from `source`, in Hopcroft's algorithm.

// Working memory of minimisation, kept across the rules of one grammar.
struct MinimizeScratch {
  std::vector<int32_t> reverse_begin, reverse, fill, stack, cls, new_id, representative;
  std::vector<uint8_t> live;
  std::vector<std::pair<std::tuple<bool, int32_t, int32_t>, int32_t>> initial;
  // Moore's rounds.
  std::vector<int64_t> words;
  std::vector<uint32_t> begin;
  std::vector<uint64_t> hash;
  std::vector<int32_t> order, next;
  // Hopcroft: the alphabet and incoming runs, then the refiner's own memory.
  std::vector<int32_t> rules, byte_class, in_begin;
  std::vector<SymbolRun> in_runs;
  std::vector<uint8_t> cut;
  PartitionRefiner refiner;
  // The output's edges of one node, before they are copied into it.
  std::vector<ByteEdge> out_bytes;
  std::vector<RuleEdge> out_rules;
};

// Minimises by PartitionRefiner (support/partition_refinement.h) over the live states: `cls`
// holds the initial class of every live state and -1 for the others, and ends as the coarsest
// stable refinement. The alphabet is the byte classes of the DFA (bytes no edge boundary
// separates) plus the rule ids; an edge into a dead state counts as no edge.
void RefineHopcroft(const FlatDfa& dfa, int32_t num_initial, std::vector<int32_t>* cls_out, MinimizeScratch* m) {
  std::vector<int32_t>& cls = *cls_out;
  const int32_t n = dfa.size();
  // Byte classes: a cut before every edge's lo and after its hi.
  std::vector<uint8_t>& cut = m->cut;
  std::vector<int32_t>& rules = m->rules;
  cut.assign(257, 0);
  rules.clear();
  for (int32_t s = 0; s < n; ++s) {
    if (cls[s] < 0) continue;
    for (const ByteEdge& e : dfa.BytesOf(s)) {
      if (cls[e.target] < 0) continue;
      cut[e.lo] = 1;
      cut[e.hi + 1] = 1;
    }
    for (const RuleEdge& e : dfa.RulesOf(s)) {
      if (cls[e.target] >= 0) rules.push_back(e.rule);
    }
  }
  std::sort(rules.begin(), rules.end());
  rules.erase(std::unique(rules.begin(), rules.end()), rules.end());
  std::vector<int32_t>& byte_class = m->byte_class;
  byte_class.resize(256);
  int32_t num_byte_classes = 0;
  for (int b = 0; b < 256; ++b) {
    if (b > 0 && cut[b]) ++num_byte_classes;
    byte_class[b] = num_byte_classes;
  }
  ++num_byte_classes;
  auto rule_symbol = [&](RuleId rule) {
    return num_byte_classes + static_cast<int32_t>(std::lower_bound(rules.begin(), rules.end(), rule) - rules.begin());
  };
  // Incoming edges per target (CSR), each a run of symbols and its source.
  std::vector<int32_t>& in_begin = m->in_begin;
  in_begin.assign(n + 1, 0);
  auto for_each_edge = [&](auto&& visit) {
    for (int32_t s = 0; s < n; ++s) {
      if (cls[s] < 0) continue;
      for (const ByteEdge& e : dfa.BytesOf(s)) {
        if (cls[e.target] >= 0) visit(e.target, SymbolRun{byte_class[e.lo], byte_class[e.hi], s});
      }
      for (const RuleEdge& e : dfa.RulesOf(s)) {
        if (cls[e.target] < 0) continue;
        const int32_t symbol = rule_symbol(e.rule);
        visit(e.target, SymbolRun{symbol, symbol, s});
      }
    }
  };
  for_each_edge([&](int32_t t, const SymbolRun&) { ++in_begin[t + 1]; });
  for (int32_t t = 0; t < n; ++t) in_begin[t + 1] += in_begin[t];
  std::vector<SymbolRun>& in_runs = m->in_runs;
  in_runs.resize(in_begin[n]);
  {
    std::vector<int32_t>& fill = m->fill;
    fill.assign(in_begin.begin(), in_begin.end() - 1);
    for_each_edge([&](int32_t t, const SymbolRun& run) { in_runs[fill[t]++] = run; });
  }
  m->refiner.Refine(num_initial, in_begin, in_runs, &cls);
}

// Minimisation: drops states that cannot reach an accepting state, then merges equivalent
// ones. Small machines use Moore's rounds (cheap without set-up); larger ones Hopcroft's
// algorithm, whose cost does not grow with the number of rounds (a long literal chain needs
// one Moore round per state). Both give the coarsest partition, and the renumbering below is
// canonical, so the result does not depend on which one ran.
constexpr size_t kMaxMooreNodes = 32;

Dfa Minimize(const FlatDfa& dfa, MinimizeScratch* scratch = nullptr) {
  MinimizeScratch own;
  MinimizeScratch& m = scratch ? *scratch : own;
  const size_t n = static_cast<size_t>(dfa.size());
  // Live states: those that can reach acceptance. Predecessors in CSR form.
  std::vector<int32_t>& reverse_begin = m.reverse_begin;
  std::vector<int32_t>& reverse = m.reverse;
  reverse_begin.assign(n + 1, 0);
  for (const ByteEdge& e : dfa.byte_edges) ++reverse_begin[e.target + 1];
  for (const RuleEdge& e : dfa.rule_edges) ++reverse_begin[e.target + 1];
  for (size_t i = 0; i < n; ++i) reverse_begin[i + 1] += reverse_begin[i];
  reverse.resize(reverse_begin[n]);
  m.fill.assign(reverse_begin.begin(), reverse_begin.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    for (const ByteEdge& e : dfa.BytesOf(static_cast<int32_t>(i))) reverse[m.fill[e.target]++] = static_cast<int32_t>(i);
    for (const RuleEdge& e : dfa.RulesOf(static_cast<int32_t>(i))) reverse[m.fill[e.target]++] = static_cast<int32_t>(i);
  }
  std::vector<uint8_t>& live = m.live;
  live.assign(dfa.accepting.begin(), dfa.accepting.end());
  MarkCoReachable(reverse_begin, reverse, &live, &m.stack);

  // Initial partition: acceptance and the counter roles, which merging must preserve.
  std::vector<int32_t>& cls = m.cls;
  cls.assign(n, -1);
  auto& initial = m.initial;
  initial.clear();
  for (size_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    auto key = std::make_tuple(static_cast<bool>(dfa.accepting[i]), dfa.loop[i], dfa.gate_loop[i]);
    auto it = std::find_if(initial.begin(), initial.end(), [&](const auto& entry) { return entry.first == key; });
    if (it == initial.end()) {
      initial.push_back({key, static_cast<int32_t>(initial.size())});
      it = initial.end() - 1;
    }
    cls[i] = it->second;
  }
  if (n <= kMaxMooreNodes) {
    // Each round gives every live state a signature (its class, then its edges' labels and
    // target classes) and numbers the distinct signatures. Signatures live in one flat
    // buffer and are grouped by sorting (hash first, then the words), so a round allocates
    // nothing: the rounds of a long chain of look-alike states stay cheap.
    std::vector<int64_t>& words = m.words;
    std::vector<uint32_t>& begin = m.begin;
    std::vector<uint64_t>& hash = m.hash;
    std::vector<int32_t>& order = m.order;
    std::vector<int32_t>& next = m.next;
    begin.assign(n + 1, 0);
    hash.assign(n, 0);
    next.assign(n, -1);
    size_t num_classes = 0;
    for (;;) {
      words.clear();
      order.clear();
      for (size_t i = 0; i < n; ++i) {
        begin[i] = static_cast<uint32_t>(words.size());
        if (cls[i] < 0) continue;
        words.push_back(cls[i]);
        // Neighbouring ranges into one class are one word, so that a state whose range was
        // cut in two (by a distinction later merged away) still matches its equivalents.
        size_t first_byte_word = words.size();
        for (const auto& e : dfa.BytesOf(static_cast<int32_t>(i))) {
          if (cls[e.target] < 0) continue;
          const int64_t target = static_cast<uint32_t>(cls[e.target]);
          if (words.size() > first_byte_word && (words.back() & 0xFFFFFFFF) == target &&
              ((words.back() >> 32) & 0xFF) + 1 == e.lo) {
            words.back() = (words.back() & ~(int64_t{0xFF} << 32)) | (static_cast<int64_t>(e.hi) << 32);
            continue;
          }
          words.push_back((static_cast<int64_t>(e.lo) << 40) | (static_cast<int64_t>(e.hi) << 32) | target);
        }
        words.push_back(-7);
        for (const auto& e : dfa.RulesOf(static_cast<int32_t>(i))) {
          if (cls[e.target] < 0) continue;
          words.push_back((static_cast<int64_t>(e.rule) << 32) | static_cast<uint32_t>(cls[e.target]));
        }
        uint64_t h = 0x9E3779B97F4A7C15ull;
        for (size_t w = begin[i]; w < words.size(); ++w) {
          h = (h ^ static_cast<uint64_t>(words[w])) * 0xFF51AFD7ED558CCDull;
          h ^= h >> 29;
        }
        hash[i] = h;
        order.push_back(static_cast<int32_t>(i));
      }
      begin[n] = static_cast<uint32_t>(words.size());
      auto end_of = [&](int32_t i) { return words.begin() + begin[i + 1]; };
      auto less = [&](int32_t a, int32_t b) {
        if (hash[a] != hash[b]) return hash[a] < hash[b];
        return std::lexicographical_compare(words.begin() + begin[a], end_of(a), words.begin() + begin[b],
                                            end_of(b));
      };
      std::sort(order.begin(), order.end(), less);
      int32_t classes = 0;
      for (size_t k = 0; k < order.size(); ++k) {
        if (k > 0 && less(order[k - 1], order[k])) ++classes;
        next[order[k]] = classes;
      }
      if (!order.empty()) ++classes;
      for (size_t i = 0; i < n; ++i) cls[i] = cls[i] < 0 ? -1 : next[i];
      if (static_cast<size_t>(classes) == num_classes) break;
      num_classes = classes;
    }
  } else {
    RefineHopcroft(dfa, static_cast<int32_t>(initial.size()), &cls, &m);
  }

  // Renumber classes in BFS order from the start so the result is canonical.
  Dfa out;
  if (cls[0] < 0) return EmptyLanguageDfa();  // the rule's language is empty
  int32_t num_classes = 0;
  for (int32_t c : cls) num_classes = std::max(num_classes, c + 1);
  std::vector<int32_t>& new_id = m.new_id;
  std::vector<int32_t>& representative = m.representative;
  new_id.assign(num_classes, -1);
  representative.clear();
  auto id_of = [&](int32_t state) {
    int32_t& id = new_id[cls[state]];
    if (id < 0) {
      id = static_cast<int32_t>(representative.size());
      representative.push_back(state);
    }
    return id;
  };
  id_of(0);
  // Loop heads are reached by the parser's redirect, not necessarily by an edge.
  std::vector<uint8_t> loop_alive;
  for (const CountedLoop& loop : dfa.loops) {
    bool alive = cls[loop.head] >= 0 && loop.gate >= 0 && cls[loop.gate] >= 0;
    loop_alive.push_back(alive);
    if (alive) id_of(loop.head);
  }
  out.nodes.reserve(num_classes);
  // Built in scratch arrays and copied once at their final size.
  std::vector<ByteEdge>& out_bytes = m.out_bytes;
  std::vector<RuleEdge>& out_rules = m.out_rules;
  out_bytes.clear();
  out_rules.clear();
  for (size_t k = 0; k < representative.size(); ++k) {
    const int32_t src = representative[k];
    Dfa::Node node;
    node.accepting = dfa.accepting[src];
    if (dfa.loop[src] >= 0 && loop_alive[dfa.loop[src]]) node.loop = dfa.loop[src];
    if (dfa.gate_loop[src] >= 0 && loop_alive[dfa.gate_loop[src]]) node.gate_loop = dfa.gate_loop[src];
    node.byte_begin = static_cast<int32_t>(out_bytes.size());
    node.rule_begin = static_cast<int32_t>(out_rules.size());
    for (const auto& e : dfa.BytesOf(src)) {
      if (cls[e.target] < 0) continue;
      int32_t t = id_of(e.target);
      if (static_cast<int32_t>(out_bytes.size()) > node.byte_begin && out_bytes.back().target == t &&
          out_bytes.back().hi + 1 == e.lo) {
        out_bytes.back().hi = e.hi;
      } else {
        out_bytes.push_back({e.lo, e.hi, t});
      }
    }
    for (const auto& e : dfa.RulesOf(src)) {
      if (cls[e.target] < 0) continue;
      out_rules.push_back({e.rule, id_of(e.target)});
    }
    node.byte_end = static_cast<int32_t>(out_bytes.size());
    node.rule_end = static_cast<int32_t>(out_rules.size());
    out.nodes.push_back(node);
  }
  out.byte_edges.assign(out_bytes.begin(), out_bytes.end());
  out.rule_edges.assign(out_rules.begin(), out_rules.end());
  for (size_t k = 0; k < dfa.loops.size(); ++k) {
    const CountedLoop& loop = dfa.loops[k];
    // A dead loop keeps its slot (nodes name loops by index) but is never entered.
    out.loops.push_back(loop_alive[k] ? CountedLoop{new_id[cls[loop.head]], new_id[cls[loop.gate]], loop.limit}
                                      : CountedLoop{-1, -1, loop.limit});
  }
  return out;
}

// Working memory reused by every rule lowered for one grammar. BuildRuleDfa nests once (the
// body of a compressed repetition is lowered while its rule's NFA is being built), so NFAs
// are a stack; the subset construction and minimisation never run nested.
struct BuildScratch {
  std::vector<std::unique_ptr<Nfa>> nfas;
  size_t nfas_in_use = 0;
  SubsetScratch subsets;
  MinimizeScratch minimize;
  int64_t largest_nfa = 0;  // NFA nodes of the largest rule since the last TakeScratch
};

// One scratch per thread, kept from one grammar to the next: the buffers of the first
// grammars grow to the usual rule size and later builds allocate almost nothing in them.
// A build whose rules were unusually large gives its memory back (see ScratchLease).
constexpr int64_t kKeepScratchNfaNodes = 1 << 16;

class ScratchLease {
 public:
  ScratchLease() : scratch_(Cached()) {
    if (in_use_) {  // not expected (builds do not nest), but then a private one
      own_ = std::make_unique<BuildScratch>();
      scratch_ = own_.get();
    } else {
      in_use_ = true;
    }
    scratch_->largest_nfa = 0;
  }
  ~ScratchLease() {
    if (own_) return;
    in_use_ = false;
    if (scratch_->largest_nfa > kKeepScratchNfaNodes) *scratch_ = BuildScratch();
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  BuildScratch* get() const { return scratch_; }

 private:
  static BuildScratch* Cached() {
    thread_local BuildScratch cached;
    return &cached;
  }
  static thread_local bool in_use_;
  BuildScratch* scratch_;
  std::unique_ptr<BuildScratch> own_;
};
thread_local bool ScratchLease::in_use_ = false;

Dfa BuildRuleDfa(const GrammarAst& ast, ExprId body, int64_t* budget, LoweringContext* ctx,
                 ExprId exempt, const std::string& owner, BuildScratch* scratch, BuildReport* report) {
  std::unique_ptr<BuildScratch> own;  // only without a caller's scratch (it allocates)
  if (!scratch) own = std::make_unique<BuildScratch>();
  BuildScratch& s = scratch ? *scratch : *own;
  if (s.nfas_in_use == s.nfas.size()) s.nfas.push_back(std::make_unique<Nfa>());
  Nfa& nfa = *s.nfas[s.nfas_in_use];
  struct Release {
    size_t* in_use;
    ~Release() { --*in_use; }
  } release{&++s.nfas_in_use};
  for (;;) {
    const int64_t saved_budget = *budget;
    try {
      nfa.Reset();
      nfa.start = nfa.AddNode();
      NfaBuilder builder(ast, &nfa, budget, ctx, exempt, owner, ctx && !ctx->ContainsCompressible(body));
      nfa.accept = builder.LowerRule(body, nfa.start);
      nfa.Finish();
      s.largest_nfa = std::max<int64_t>(s.largest_nfa, nfa.num_nodes);
      SubsetConstruction subsets(nfa, budget, &s.subsets, /*stop_at_budget=*/false,
                                 DeterminisationCap(nfa.num_nodes));
      const FlatDfa& determinised = subsets.Run();
      if (subsets.exhausted()) throw DeterminisationExplosion{body};
      Dfa dfa = Minimize(determinised, &s.minimize);
      *budget += static_cast<int64_t>(nfa.num_nodes);  // the NFA is freed; only DFA nodes stay
      if (report) {
        report->nfa_nodes = nfa.num_nodes;
        report->loops.clear();
        for (const NfaLoop& loop : nfa.loops) report->loops.push_back({loop.expr, loop.optional});
      }
      return dfa;
    } catch (const CounterConflict& conflict) {
      // Lift the repetition into a rule of its own (or, if it conflicts even there, expand
      // it explicitly) and lower the rule again.
      *budget = saved_budget;
      ctx->OnConflict(conflict.expr, exempt);
    } catch (const DeterminisationExplosion& explosion) {
      // Without a context (a fragment, a repetition body, a lookahead) the caller decides.
      if (!ctx) throw;
      *budget = saved_budget;
      ctx->OnExplosion(explosion.expr, owner);
    }
  }
}

// Built with no context: no fragments inside, and no compression (a fragment holds no
// compressible repetition).
const Dfa& LoweringContext::Fragment(ExprId e, int64_t* budget, const std::string& owner) {
  auto it = fragments_.find(e);
  if (it != fragments_.end()) return it->second;
  Dfa dfa = BuildRuleDfa(ast_, e, budget, nullptr, -1, owner, scratch_);
  return fragments_.emplace(e, std::move(dfa)).first->second;
}

// A rule whose body is a TagDispatch is lowered directly to its (deterministic) machine.
Dfa BuildTagDispatchDfa(const GrammarAst& ast, const RuleDef& rule, int64_t* budget) {
  RuleMachine machine = BuildTagDispatchMachine(
      ast.tag_dispatches[ast.node(rule.body).tag_dispatch], rule.name, budget);
  Dfa dfa;
  for (const RuleMachine::Node& node : machine.nodes) {
    dfa.AddNode(node.accepting);
    for (const ByteEdge& e : node.byte_edges) dfa.AddByteEdge(e);
    for (const RuleEdge& e : node.rule_edges) dfa.AddRuleEdge(e);
  }
  return dfa;
}

// Copies expression `expr` of `source` into `target` (a rule-free AST of its own), every rule
// reference replaced by the rule's body, recursively. Recursion (a non-regular assertion)
// is an error.
ExprId InlineRuleRefs(const GrammarAst& source, ExprId expr, GrammarAst* target, const std::string& owner,
                      int depth) {
  constexpr int kMaxInlineDepth = 64;
  if (depth > kMaxInlineDepth) {
    throw GrammarSyntaxError("rule '" + owner +
                             "': its lookahead assertion refers to rules recursively; "
                             "a lookahead must be a regular expression");
  }
  const ExprNode& original = source.node(expr);
  if (original.kind == ExprKind::kRuleRef) {
    return InlineRuleRefs(source, source.rules[original.rule_id].body, target, owner, depth + 1);
  }
  ExprNode node = original;
  for (ExprId& child : node.children) child = InlineRuleRefs(source, child, target, owner, depth + 1);
  return target->AddNode(std::move(node));
}

// Shared rule DFAs. Many rule bodies recur in grammar after grammar: the JSON Schema
// frontend writes the same text for a string format (format "date-time" with RFC 3339 leap
// seconds lowers to 24 rule DFAs of some 740 states each, 5 ms to determinise and
// minimise), for a bounded string (json_char{0,64}: 1,300 states, 0.6 ms), and a server
// compiles the same sub-schema in many grammars. A rule body whose expansion is large
// enough is looked up by its content in a process-wide table before it is lowered.
//
// A body may refer to rules of its grammar. Lowering reads a referenced rule only through
// its id, compared with other ids (sorted, or tested for equality), and through its
// nullability (whether a repetition around it is compressed). So the key names each
// referenced rule by its rank among the body's distinct referenced ids, with its
// nullability; the stored DFA's rule edges hold those ranks, and a hit maps rank k back to
// the k-th smallest id referenced in the grammar at hand. That map is increasing, so the DFA
// is exactly the one a build would give (each node's rule edges stay sorted). Otherwise the
// DFA is a function of the body and the compression settings alone (while no repetition has
// been lifted, see LoweringContext::Pristine).
constexpr int64_t kMinSharedBodySize = 48;      // expression nodes, repetitions unrolled
constexpr int32_t kMinSharedMergedNodes = 2000;  // DFA nodes of a right-linear group's members
constexpr size_t kMaxSharedDfaBytes = 32 << 20;  // the table's memory bound (keys + DFAs)

struct SharedRuleDfa {
  Dfa dfa;
  // A rule body ('R' keys): the NFA the build held at its peak, with the subset states, and
  // what the build took from the node budget. A right-linear group ('M' keys): net_nodes is
  // the number of states its subset construction made.
  int64_t nfa_nodes = 0;
  int64_t net_nodes = 0;
  // A rule body: for each counted loop of the DFA, the repetition it folds (its position in
  // the key's node order), which iterations, and the explicit copies after the loop copy, so
  // that a hit sets the loop's limit from the repetition's bounds in the grammar at hand.
  struct LoopOrigin {
    int32_t node;
    bool optional;
    int64_t chain;
  };
  std::vector<LoopOrigin> loops;
};

class SharedRuleDfas {
 public:
  static SharedRuleDfas& Instance() {
    static SharedRuleDfas* table = new SharedRuleDfas();  // never destroyed: used at exit
    return *table;
  }
  std::shared_ptr<const SharedRuleDfa> Find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      ++misses_;
      return nullptr;
    }
    ++hits_;
    return it->second;
  }
  // Oldest entries go first when the table would pass its memory bound.
  void Store(const std::string& key, std::shared_ptr<const SharedRuleDfa> entry) {
    const size_t bytes = Bytes(key, *entry);
    if (bytes > kMaxSharedDfaBytes / 4) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!entries_.emplace(key, std::move(entry)).second) return;
    order_.push_back(key);
    bytes_ += bytes;
    while (bytes_ > kMaxSharedDfaBytes && !order_.empty()) {
      auto it = entries_.find(order_.front());
      bytes_ -= Bytes(it->first, *it->second);
      entries_.erase(it);
      order_.pop_front();
      ++evictions_;
    }
  }
  SharedRuleDfaStats Stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    SharedRuleDfaStats stats;
    stats.entries = entries_.size();
    stats.bytes = bytes_;
    stats.limit_bytes = kMaxSharedDfaBytes;
    stats.hits = hits_;
    stats.misses = misses_;
    stats.evictions = evictions_;
    return stats;
  }

 private:
  static size_t Bytes(const std::string& key, const SharedRuleDfa& e) {
    return 2 * key.size() + e.dfa.nodes.size() * sizeof(Dfa::Node) + e.dfa.byte_edges.size() * sizeof(ByteEdge) +
           e.dfa.rule_edges.size() * sizeof(RuleEdge) + e.dfa.loops.size() * sizeof(CountedLoop) +
           e.loops.size() * sizeof(SharedRuleDfa::LoopOrigin) + 256;
  }
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const SharedRuleDfa>> entries_;
  std::deque<std::string> order_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

// Writes the content key of a rule body into `key`: the settings the lowering reads, then the
// expression DAG reachable from the body, each distinct node once in depth-first order, its
// children named by their position in that order, a rule reference by the rank of its rule
// among the body's referenced rules (referenced_rules(), ascending) and that rule's
// nullability. A compressed repetition's iteration count (mandatory, then optional) is
// written as kFoldedCount where it is certainly folded into a counted loop: the count then
// only sets the loop's limit (SharedRuleDfa::loops), so `json_char{0,256}` and
// `json_char{0,4096}` share one DFA. False (no key) for a body that holds a TagDispatch, or
// whose expansion is smaller than kMinSharedBodySize (cheaper to build than to key).
// `stamp`/`local` are per-grammar working memory, one entry per AST node, `rank` one per
// rule.
class BodyKeyWriter {
 public:
  explicit BodyKeyWriter(const GrammarAst& ast)
      : ast_(ast), stamp_(ast.nodes.size(), 0), local_(ast.nodes.size(), 0), rank_(ast.rules.size(), -1) {}

  bool Write(ExprId body, LoweringContext* ctx, std::string* key) {
    if (ctx->ExpandedSize(body) < kMinSharedBodySize) return false;
    ++generation_;
    order_.clear();
    for (RuleId r : refs_) rank_[r] = -1;
    refs_.clear();
    stack_.assign(1, body);
    while (!stack_.empty()) {
      const ExprId e = stack_.back();
      stack_.pop_back();
      if (stamp_[e] == generation_) continue;
      stamp_[e] = generation_;
      local_[e] = static_cast<int32_t>(order_.size());
      order_.push_back(e);
      const ExprNode& node = ast_.node(e);
      if (node.kind == ExprKind::kTagDispatch) return false;
      if (node.kind == ExprKind::kRuleRef && rank_[node.rule_id] < 0) {
        rank_[node.rule_id] = 0;
        refs_.push_back(node.rule_id);
      }
      for (auto it = node.children.rbegin(); it != node.children.rend(); ++it) stack_.push_back(*it);
    }
    std::sort(refs_.begin(), refs_.end());
    for (size_t k = 0; k < refs_.size(); ++k) rank_[refs_[k]] = static_cast<int32_t>(k);
    // The key's words gather in a reused buffer, sized for the longest key first and written
    // through a cursor, and reach the string in one copy.
    size_t bound = 2;
    for (ExprId e : order_) bound += MaxWords(ast_.node(e));
    std::vector<int32_t>& w = words_;
    w.resize(bound);
    int32_t* out = w.data();
    *out++ = ctx->threshold();
    *out++ = ctx->max_token_bytes();
    for (ExprId e : order_) {
      const ExprNode& node = ast_.node(e);
      *out++ = static_cast<int32_t>(node.kind);
      switch (node.kind) {
        case ExprKind::kBytes: {
          const size_t size = node.bytes.size();
          *out++ = static_cast<int32_t>(size);
          const size_t words = (size + 3) / 4;
          if (words > 0) {
            out[words - 1] = 0;
            std::memcpy(out, node.bytes.data(), size);
          }
          out += words;
          break;
        }
        case ExprKind::kCharClass:
          *out++ = static_cast<int32_t>(node.ranges.size());
          for (const CodepointRange& r : node.ranges) {
            *out++ = static_cast<int32_t>(r.first);
            *out++ = static_cast<int32_t>(r.last);
          }
          break;
        case ExprKind::kRepeat: {
          // Compressed or not is part of the key: the two lower the same counts differently.
          const bool compressed = ctx->Compressible(e);
          *out++ = compressed ? 1 : 0;
          if (compressed) {
            *out++ = FoldedOrExact(node.min_repeat, ctx->max_token_bytes());
            *out++ = node.max_repeat < 0 ? -1 : FoldedOrExact(static_cast<int64_t>(node.max_repeat) - node.min_repeat,
                                                               ctx->max_token_bytes());
          } else {
            *out++ = node.min_repeat;
            *out++ = node.max_repeat;
          }
          break;
        }
        case ExprKind::kRuleRef:
          *out++ = rank_[node.rule_id];
          *out++ = ctx->RuleNullable(node.rule_id) ? 1 : 0;
          break;
        default:
          break;
      }
      *out++ = static_cast<int32_t>(node.children.size());
      for (ExprId child : node.children) *out++ = local_[child];
    }
    key->assign(1, 'R');
    key->append(reinterpret_cast<const char*>(w.data()), static_cast<size_t>(out - w.data()) * sizeof(int32_t));
    return true;
  }

  // The rules the last written body refers to, ascending: rank k is referenced_rules()[k].
  const std::vector<RuleId>& referenced_rules() const { return refs_; }
  // The last written body's expression nodes in key order, and the position of one of them.
  ExprId node_at(int32_t position) const { return order_[position]; }
  int32_t position_of(ExprId e) const { return local_[e]; }

 private:
  // LowerCompressed folds `count` iterations into a counted loop when count - chain >= 2,
  // where chain (explicit copies after the loop copy) is at most max_token_bytes + 2.
  static constexpr int32_t kFoldedCount = -2;
  // The most words Write spends on `node`: kind, its payload, child count, children.
  static size_t MaxWords(const ExprNode& node) {
    size_t payload = 0;
    switch (node.kind) {
      case ExprKind::kBytes: payload = 1 + (node.bytes.size() + 3) / 4; break;
      case ExprKind::kCharClass: payload = 1 + 2 * node.ranges.size(); break;
      case ExprKind::kRepeat: payload = 3; break;
      case ExprKind::kRuleRef: payload = 2; break;
      default: break;
    }
    return 2 + payload + node.children.size();
  }
  static int32_t FoldedOrExact(int64_t count, int32_t max_token_bytes) {
    return count >= static_cast<int64_t>(max_token_bytes) + 4 ? kFoldedCount : static_cast<int32_t>(count);
  }
  const GrammarAst& ast_;
  std::vector<uint32_t> stamp_;
  std::vector<int32_t> local_;
  std::vector<int32_t> rank_;
  std::vector<ExprId> order_, stack_;
  std::vector<RuleId> refs_;
  std::vector<int32_t> words_;  // the key being written, before it is copied into the string
  uint32_t generation_ = 0;
};

// Iterations of repetition `node` that a counted loop folds (its optional or mandatory ones).
int64_t FoldedIterations(const ExprNode& node, bool optional) {
  return optional ? static_cast<int64_t>(node.max_repeat) - node.min_repeat : node.min_repeat;
}

// The DFA with each rule edge's rule replaced by map(rule).
template <typename Map>
Dfa WithRulesMapped(Dfa dfa, Map map) {
  for (RuleEdge& e : dfa.rule_edges) e.rule = map(e.rule);
  return dfa;
}

// BuildRuleDfa for a rule body, through the shared table where the body is large and closed.
// A hit takes from the budget what the build would have (and throws where the build would
// have run out: at the end of its subset construction it held the NFA and all the states).
Dfa BuildRuleDfaShared(const GrammarAst& ast, ExprId body, int64_t* budget, LoweringContext* ctx,
                       const std::string& owner, BuildScratch* scratch, BodyKeyWriter* keys) {
  std::string key;
  if (!ctx->Pristine() || !keys->Write(body, ctx, &key)) {
    return BuildRuleDfa(ast, body, budget, ctx, -1, owner, scratch);
  }
  const std::vector<RuleId>& refs = keys->referenced_rules();
  if (std::shared_ptr<const SharedRuleDfa> hit = SharedRuleDfas::Instance().Find(key)) {
    if (hit->nfa_nodes > *budget) {
      throw ResourceLimitError("grammar too large: more than the node limit of the FSM builder "
                               "(reduce repetition bounds or grammar size)");
    }
    if (hit->nfa_nodes + hit->net_nodes > *budget) {
      throw ResourceLimitError("grammar too large: determinisation exceeded the node limit");
    }
    *budget -= hit->net_nodes;
    Dfa dfa = WithRulesMapped(hit->dfa, [&refs](RuleId rank) { return refs[rank]; });
    for (size_t k = 0; k < hit->loops.size(); ++k) {
      const SharedRuleDfa::LoopOrigin& origin = hit->loops[k];
      const ExprNode& repeat = ast.node(keys->node_at(origin.node));
      dfa.loops[k].limit = static_cast<int32_t>(FoldedIterations(repeat, origin.optional) - origin.chain);
    }
    return dfa;
  }
  const size_t synthetic_before = ctx->synthetic().size();
  const int64_t budget_before = *budget;
  BuildReport report;
  Dfa dfa = BuildRuleDfa(ast, body, budget, ctx, -1, owner, scratch, &report);
  // A repetition lifted on the way makes the DFA call a rule of this grammar: not shared. So
  // does a repetition body lifted into a synthetic rule by an earlier rule of this grammar
  // (LoweringContext::Body caches it per child): a rule edge to a rule the body does not name.
  if (!ctx->Pristine() || ctx->synthetic().size() != synthetic_before) return dfa;
  for (const RuleEdge& e : dfa.rule_edges) {
    if (!std::binary_search(refs.begin(), refs.end(), e.rule)) return dfa;
  }
  auto entry = std::make_shared<SharedRuleDfa>();
  entry->dfa = WithRulesMapped(dfa, [&refs](RuleId rule) {
    return static_cast<RuleId>(std::lower_bound(refs.begin(), refs.end(), rule) - refs.begin());
  });
  entry->nfa_nodes = report.nfa_nodes;
  entry->net_nodes = budget_before - *budget;
  for (size_t k = 0; k < report.loops.size(); ++k) {
    const BuildReport::Loop& loop = report.loops[k];
    entry->loops.push_back({keys->position_of(loop.expr), loop.optional,
                            FoldedIterations(ast.node(loop.expr), loop.optional) - dfa.loops[k].limit});
  }
  SharedRuleDfas::Instance().Store(key, std::move(entry));
  return dfa;
}

// Right-linear groups (a pass over the rule DFAs, before flattening). A rule is pure
// right-linear when every rule edge it has is a tail call (its target accepts only the empty
// string: the rule ends right after the call) of another pure right-linear rule, and it has
// no counted loop, lookahead or TagDispatch body. Such a rule's language is regular, and a
// chain of them (the JSON Schema frontend's right-linear rules for a regular language of more
// than 32 states, one rule per state) costs the mask cache dearly: every token that crosses a
// rule boundary stays uncertain and goes through the Earley parser at fill time. So each pure right-linear rule called from elsewhere gets ONE DFA for its whole
// language: a tail call becomes an epsilon edge into the callee's start (the callee's
// accepting states end the caller too, so one shared copy per callee serves every call site),
// then subset construction and minimisation. Members only called from inside the group become
// unreachable and are emptied. A group that holds another entry (its members would be copied
// into each), or whose determinisation would pass kMaxMergedStates, four times the group's
// nodes, or the node budget, is left as rules.
constexpr size_t kMaxMergedStates = 20000;

// The merged DFA of pure right-linear rule `entry` (its tail calls followed into `dfas`), or
// an empty Dfa when a member is an entry of its own (`is_entry`: merging both would copy the
// shared members into each, quadratic on a chain such as the optional-property rules
// rest_1 -> rest_2 -> ... of a large object, each called from the object rule) or when the
// result would be too large. The group is written as an NFA over the members' nodes (a tail
// call is an epsilon edge to the callee's start, an accepting node an epsilon edge to one
// extra accept node) and goes through the same subset construction and minimisation as a
// rule. `offset` (one entry per rule, all -1) is working memory and is left all -1.
Dfa MergedRightLinearDfa(const std::vector<Dfa>& dfas, RuleId entry, const std::vector<uint8_t>& is_entry,
                         int64_t budget, std::vector<int32_t>* offset_scratch, BuildScratch* scratch) {
  // Members reachable by tail calls, each with the offset of its nodes in one numbering.
  std::vector<int32_t>& offset = *offset_scratch;
  std::vector<RuleId> members{entry};
  offset[entry] = 0;
  int32_t total = static_cast<int32_t>(dfas[entry].nodes.size());
  bool shares_entry = false;
  for (size_t m = 0; m < members.size() && !shares_entry; ++m) {
    for (const RuleEdge& e : dfas[members[m]].rule_edges) {
      if (offset[e.rule] >= 0) continue;
      if (is_entry[e.rule]) {
        shares_entry = true;
        break;
      }
      offset[e.rule] = total;
      total += static_cast<int32_t>(dfas[e.rule].nodes.size());
      members.push_back(e.rule);
    }
  }
  struct ResetOffsets {
    const std::vector<RuleId>& members;
    std::vector<int32_t>& offset;
    ~ResetOffsets() {
      for (RuleId m : members) offset[m] = -1;
    }
  } reset{members, offset};
  if (shares_entry) return Dfa{};
  // Determinising a group written from one DFA gives about that DFA back; a blow-up beyond
  // a few times the group's own nodes is not worth its memory.
  int64_t max_states = static_cast<int64_t>(std::min<size_t>(
      {kMaxMergedStates, static_cast<size_t>(std::max<int64_t>(budget, 0)), static_cast<size_t>(total) * 4 + 64}));

  // A large group is looked up in the shared table by its members' DFAs (the merged DFA is a
  // function of them). The entry keeps the subset construction's state count, so that a hit
  // is refused exactly where the construction would have run past max_states.
  std::string key;
  if (total >= kMinSharedMergedNodes) {
    auto put = [&key](int32_t v) { AppendKeyWord(&key, v); };
    key.push_back('M');
    for (RuleId m : members) {
      const Dfa& dfa = dfas[m];
      put(dfa.size());
      for (int32_t i = 0; i < dfa.size(); ++i) {
        put(dfa.nodes[i].accepting);
        const Slice<ByteEdge> bytes = dfa.BytesOf(i);
        const Slice<RuleEdge> rules = dfa.RulesOf(i);
        put(static_cast<int32_t>(bytes.end() - bytes.begin()));
        for (const ByteEdge& e : bytes) {
          put(e.lo | (e.hi << 8));
          put(e.target);
        }
        put(static_cast<int32_t>(rules.end() - rules.begin()));
        for (const RuleEdge& e : rules) put(offset[e.rule]);
      }
    }
    if (std::shared_ptr<const SharedRuleDfa> hit = SharedRuleDfas::Instance().Find(key)) {
      if (hit->net_nodes > max_states) return Dfa{};
      return hit->dfa;
    }
  }

  if (scratch->nfas_in_use == scratch->nfas.size()) scratch->nfas.push_back(std::make_unique<Nfa>());
  Nfa& nfa = *scratch->nfas[scratch->nfas_in_use];
  struct Release {
    size_t* in_use;
    ~Release() { --*in_use; }
  } release{&++scratch->nfas_in_use};
  nfa.Reset();
  nfa.num_nodes = total;
  nfa.start = offset[entry];
  nfa.accept = nfa.AddNode();
  for (RuleId m : members) {
    const int32_t base = offset[m];
    const Dfa& dfa = dfas[m];
    for (int32_t i = 0; i < dfa.size(); ++i) {
      for (const ByteEdge& e : dfa.BytesOf(i)) nfa.AddEdge(base + i, {kByteRange, e.lo, e.hi, base + e.target});
      for (const RuleEdge& e : dfa.RulesOf(i)) nfa.AddEdge(base + i, {kEpsilon, 0, 0, offset[e.rule]});
      if (dfa.nodes[i].accepting) nfa.AddEdge(base + i, {kEpsilon, 0, 0, nfa.accept});
    }
  }
  nfa.Finish();
  SubsetConstruction subsets(nfa, &max_states, &scratch->subsets, /*stop_at_budget=*/true);
  const FlatDfa& flat = subsets.Run();
  if (subsets.exhausted()) return Dfa{};
  Dfa merged = Minimize(flat, &scratch->minimize);
  if (!key.empty()) {
    auto entry = std::make_shared<SharedRuleDfa>();
    entry->dfa = merged;
    entry->net_nodes = flat.size();  // here: the subset construction's states
    SharedRuleDfas::Instance().Store(key, std::move(entry));
  }
  return merged;
}

void MergeRightLinearGroups(std::vector<Dfa>* dfas, const std::vector<uint8_t>& excluded, RuleId root,
                            int64_t* budget, BuildScratch* scratch) {
  const size_t n = dfas->size();
  auto is_end = [](const Dfa& dfa, int32_t node) {
    return dfa.nodes[node].accepting && dfa.BytesOf(node).empty() && dfa.RulesOf(node).empty();
  };
  // Greatest fixpoint: start from every candidate, drop those with a call that is not a
  // tail call of a remaining candidate.
  std::vector<uint8_t> pure(n, 0);
  for (size_t r = 0; r < n; ++r) pure[r] = !excluded[r] && (*dfas)[r].loops.empty();
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (!pure[r]) continue;
      const Dfa& dfa = (*dfas)[r];
      for (const RuleEdge& e : dfa.rule_edges) {
        if (!pure[e.rule] || !is_end(dfa, e.target)) pure[r] = 0;
      }
      changed |= !pure[r];
    }
  }
  // Entries: pure rules with calls that the root is or that an impure rule calls.
  std::vector<uint8_t> entry(n, 0);
  if (root >= 0 && static_cast<size_t>(root) < n) entry[root] = 1;
  for (size_t r = 0; r < n; ++r) {
    if (pure[r]) continue;
    for (const RuleEdge& e : (*dfas)[r].rule_edges) entry[e.rule] = 1;
  }
  std::vector<std::pair<RuleId, Dfa>> merged;
  std::vector<int32_t> offset(n, -1);
  for (size_t r = 0; r < n; ++r) {
    if (!pure[r] || !entry[r]) continue;
    if ((*dfas)[r].rule_edges.empty()) continue;
    Dfa dfa = MergedRightLinearDfa(*dfas, static_cast<RuleId>(r), entry, *budget, &offset, scratch);
    if (dfa.nodes.empty()) continue;
    *budget -= static_cast<int64_t>(dfa.nodes.size());
    merged.emplace_back(static_cast<RuleId>(r), std::move(dfa));
  }
  // Replaced only now: every merge above read the original rule DFAs.
  for (auto& [r, dfa] : merged) (*dfas)[r] = std::move(dfa);
  if (merged.empty()) return;
  // Members that only merged rules called are now unreachable from the root: they become a
  // lone non-accepting node (the empty language, as Minimize writes it), so that neither the
  // FSM nor the mask cache's precompute spends anything on them.
  std::vector<uint8_t> reachable(n, 0);
  std::vector<RuleId> stack;
  if (root >= 0 && static_cast<size_t>(root) < n) reachable[root] = 1, stack.push_back(root);
  while (!stack.empty()) {
    RuleId r = stack.back();
    stack.pop_back();
    for (const RuleEdge& e : (*dfas)[r].rule_edges) {
      if (!reachable[e.rule]) reachable[e.rule] = 1, stack.push_back(e.rule);
    }
  }
  for (size_t r = 0; r < n; ++r) {
    if (pure[r] && !reachable[r] && (*dfas)[r].nodes.size() > 1) {
      *budget += static_cast<int64_t>((*dfas)[r].nodes.size()) - 1;
      (*dfas)[r] = EmptyLanguageDfa();
    }
  }
}

}  // namespace

SharedRuleDfaStats GetSharedRuleDfaStats() { return SharedRuleDfas::Instance().Stats(); }

GrammarFsm BuildGrammarFsm(const GrammarAst& ast, const FsmBuildLimits& limits) {
  GrammarFsm fsm;
  const int32_t num_ast_rules = static_cast<int32_t>(ast.rules.size());
  if (ast.root_rule < 0 || ast.root_rule >= num_ast_rules) {
    throw GrammarSyntaxError("grammar has no root rule");
  }
  fsm.root_rule = ast.root_rule;
  int64_t budget = limits.max_nodes;
  LoweringContext ctx(ast, limits);
  ScratchLease lease;
  BuildScratch& scratch = *lease.get();
  ctx.set_scratch(&scratch);
  std::vector<Dfa> dfas;
  std::vector<std::string> names;
  BodyKeyWriter body_keys(ast);
  for (const RuleDef& rule : ast.rules) {
    ThrowIfCancelled();  // a rule found in the shared DFA table builds no node (no check there)
    dfas.push_back(ast.node(rule.body).kind == ExprKind::kTagDispatch
                       ? BuildTagDispatchDfa(ast, rule, &budget)
                       : BuildRuleDfaShared(ast, rule.body, &budget, &ctx, rule.name, &scratch, &body_keys));
    names.push_back(rule.name);
  }
  // Synthetic rules (lifted repetitions and repetition bodies); lowering one may add more.
  for (size_t s = 0; s < ctx.synthetic().size(); ++s) {
    const LoweringContext::Synthetic synthetic = ctx.synthetic()[s];
    dfas.push_back(BuildRuleDfa(ast, synthetic.body, &budget, &ctx, synthetic.exempt, synthetic.name, &scratch));
    names.push_back(synthetic.name);
  }
  {
    std::vector<uint8_t> excluded(dfas.size(), 0);
    for (int32_t r = 0; r < num_ast_rules; ++r) {
      excluded[r] = ast.rules[r].lookahead >= 0 || ast.node(ast.rules[r].body).kind == ExprKind::kTagDispatch;
    }
    MergeRightLinearGroups(&dfas, excluded, ast.root_rule, &budget, &scratch);
  }
  const int32_t num_rules = static_cast<int32_t>(dfas.size());
  // Lookahead DFAs: rule references inside an assertion are inlined (the assertion must be
  // regular), then lowered like a rule body.
  std::vector<int32_t> lookahead_dfa(num_rules, -1);
  std::vector<Dfa> lookahead_dfas;
  GrammarAst inlined;  // the assertions' expressions only
  for (int32_t r = 0; r < num_ast_rules; ++r) {
    if (ast.rules[r].lookahead < 0) continue;
    ExprId body = InlineRuleRefs(ast, ast.rules[r].lookahead, &inlined, ast.rules[r].name, 0);
    // Guards step byte-only DFAs without counters: assertions are never compressed, nor
    // split into rules.
    Dfa dfa;
    try {
      dfa = BuildRuleDfa(inlined, body, &budget, nullptr, -1, ast.rules[r].name, &scratch);
    } catch (const DeterminisationExplosion&) {
      throw ResourceLimitError("rule '" + ast.rules[r].name +
                               "': the DFA of its lookahead assertion exceeds the determinisation limits "
                               "(states, or the memory of their NFA node sets)");
    }
    if (dfa.nodes[0].accepting) continue;  // matches the empty string: always true
    lookahead_dfa[r] = static_cast<int32_t>(lookahead_dfas.size());
    lookahead_dfas.push_back(std::move(dfa));
  }

  // Flatten into the global node space.
  fsm.rule_first_node.push_back(0);
  for (int32_t r = 0; r < num_rules; ++r) {
    ThrowIfCancelled();
    fsm.rule_names.push_back(names[r]);
    NodeId base = fsm.rule_first_node.back();
    fsm.rule_start.push_back(base);
    fsm.rule_first_node.push_back(base + static_cast<NodeId>(dfas[r].nodes.size()));
  }
  {
    // Sized once: append_dfa below fills the tables rule by rule through cursors.
    size_t nodes = 0, byte_edges = 0, rule_edges = 0;
    auto count = [&](const Dfa& dfa) {
      nodes += dfa.nodes.size();
      for (const Dfa::Node& node : dfa.nodes) {
        byte_edges += node.byte_end - node.byte_begin;
        rule_edges += node.rule_end - node.rule_begin;
      }
    };
    for (const Dfa& dfa : dfas) count(dfa);
    for (const Dfa& dfa : lookahead_dfas) count(dfa);
    fsm.node_rule.resize(nodes);
    fsm.node_accepting.resize(nodes);
    fsm.byte_edge_begin.resize(nodes + 1);
    fsm.rule_edge_begin.resize(nodes + 1);
    fsm.byte_edges.resize(byte_edges);
    fsm.rule_edges.resize(rule_edges);
  }
  fsm.byte_edge_begin[0] = 0;
  fsm.rule_edge_begin[0] = 0;
  std::vector<int32_t> node_loop(fsm.node_rule.size(), -1), node_gate_loop(fsm.node_rule.size(), -1);
  NodeId next_node = 0;
  int32_t next_byte_edge = 0, next_rule_edge = 0;
  auto append_dfa = [&](const Dfa& dfa, RuleId owner) {
    const NodeId base = next_node;
    const int32_t loop_base = static_cast<int32_t>(fsm.counted_loops.size());
    for (const CountedLoop& loop : dfa.loops) {
      fsm.counted_loops.push_back(loop.head < 0 ? loop : CountedLoop{base + loop.head, base + loop.gate, loop.limit});
    }
    for (int32_t i = 0; i < dfa.size(); ++i) {
      const Dfa::Node& node = dfa.nodes[i];
      const NodeId global = base + i;
      if (node.loop >= 0) node_loop[global] = loop_base + node.loop;
      if (node.gate_loop >= 0) node_gate_loop[global] = loop_base + node.gate_loop;
      fsm.node_rule[global] = owner;
      fsm.node_accepting[global] = node.accepting;
      for (const ByteEdge& e : dfa.BytesOf(i)) fsm.byte_edges[next_byte_edge++] = {e.lo, e.hi, base + e.target};
      for (const RuleEdge& e : dfa.RulesOf(i)) {
        // Every pass must keep rule ids valid; the parser indexes rule tables with them.
        if (e.rule < 0 || e.rule >= static_cast<RuleId>(fsm.rule_start.size())) {
          throw GrammarSyntaxError("internal error: a rule edge names rule " + std::to_string(e.rule) +
                                   " of " + std::to_string(fsm.rule_start.size()));
        }
        fsm.rule_edges[next_rule_edge++] = {e.rule, base + e.target};
      }
      fsm.byte_edge_begin[global + 1] = next_byte_edge;
      fsm.rule_edge_begin[global + 1] = next_rule_edge;
    }
    next_node += dfa.size();
    return base;
  };
  for (int32_t r = 0; r < num_rules; ++r) append_dfa(dfas[r], r);
  fsm.rule_lookahead.assign(num_rules, -1);
  for (int32_t r = 0; r < num_ast_rules; ++r) {
    if (lookahead_dfa[r] >= 0) {
      fsm.rule_lookahead[r] = append_dfa(lookahead_dfas[lookahead_dfa[r]], -1);
      fsm.has_lookahead = true;
    }
  }
  if (!fsm.counted_loops.empty()) {
    fsm.node_loop = std::move(node_loop);
    fsm.node_gate_loop = std::move(node_gate_loop);
  }

  // Nullability: a rule is nullable iff an accepting node is reachable from its start
  // through rule edges of nullable rules only. Iterate to a fixpoint.
  fsm.rule_nullable.assign(num_rules, 0);
  std::vector<NodeId> stack;
  std::vector<uint8_t> seen;
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < num_rules; ++r) {
      if (fsm.rule_nullable[r]) continue;
      stack.assign(1, fsm.rule_start[r]);
      seen.assign(fsm.rule_first_node[r + 1] - fsm.rule_first_node[r], 0);
      seen[0 + fsm.rule_start[r] - fsm.rule_first_node[r]] = 1;
      bool nullable = false;
      while (!stack.empty() && !nullable) {
        NodeId n = stack.back();
        stack.pop_back();
        if (fsm.node_accepting[n]) nullable = true;
        for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
          int32_t local = e->target - fsm.rule_first_node[r];
          if (fsm.rule_nullable[e->rule] && !seen[local]) {
            seen[local] = 1;
            stack.push_back(e->target);
          }
        }
      }
      if (nullable) {
        fsm.rule_nullable[r] = 1;
        changed = true;
      }
    }
  }
  for (int32_t r = 0; r < num_rules; ++r) {
    if (fsm.rule_lookahead[r] >= 0 && fsm.rule_nullable[r]) {
      throw GrammarSyntaxError("rule '" + fsm.rule_names[r] +
                               "': a lookahead assertion on a rule that can match the empty "
                               "string is not supported");
    }
  }
  for (RuleId r = 0; r < static_cast<RuleId>(ast.rules.size()); ++r) {
    if (ast.rules[r].max_tokens < 0) continue;
    if (fsm.rule_max_tokens.empty()) fsm.rule_max_tokens.assign(num_rules, -1);
    fsm.rule_max_tokens[r] = ast.rules[r].max_tokens;
    for (NodeId n = fsm.rule_first_node[r]; n < fsm.rule_first_node[r + 1]; ++n) {
      if (fsm.rule_edge_begin[n] != fsm.rule_edge_begin[n + 1]) {
        throw GrammarSyntaxError("rule '" + fsm.rule_names[r] +
                                 "': a token budget [max_tokens=N] needs a rule that calls no other rule");
      }
    }
  }
  fsm.token_sets = ast.token_sets;
  IndexTokenSetEdges(&fsm);
  return fsm;
}

size_t GrammarFsm::MemoryBytes() const {
  return sizeof(*this) + rule_start.capacity() * 4 + rule_first_node.capacity() * 4 +
         rule_nullable.capacity() + node_rule.capacity() * 4 + node_accepting.capacity() +
         byte_edge_begin.capacity() * 4 + byte_edges.capacity() * sizeof(ByteEdge) +
         rule_edge_begin.capacity() * 4 + rule_edges.capacity() * sizeof(RuleEdge) +
         counted_loops.capacity() * sizeof(CountedLoop) + node_loop.capacity() * 4 +
         node_gate_loop.capacity() * 4 + token_set_edge_begin.capacity() * 4 +
         token_set_edges.capacity() * sizeof(TokenSetEdge);
}

std::string GrammarFsm::ToString() const {
  std::ostringstream os;
  for (int32_t r = 0; r < num_rules(); ++r) {
    os << "rule " << rule_names[r] << (rule_nullable[r] ? " (nullable)" : "") << " start "
       << rule_start[r] << "\n";
    for (NodeId n = rule_first_node[r]; n < rule_first_node[r + 1]; ++n) {
      os << "  " << n << (node_accepting[n] ? "*" : "") << ":";
      if (!node_loop.empty() && node_loop[n] >= 0) os << " (loop " << node_loop[n] << ")";
      if (!node_gate_loop.empty() && node_gate_loop[n] >= 0) {
        const CountedLoop& loop = counted_loops[node_gate_loop[n]];
        os << " (gate of loop " << node_gate_loop[n] << ": back to " << loop.head << " up to "
           << loop.limit << " times)";
      }
      for (const ByteEdge* e = byte_edges_begin(n); e != byte_edges_end(n); ++e) {
        os << " [" << int(e->lo) << "-" << int(e->hi) << "]->" << e->target;
      }
      for (const RuleEdge* e = rule_edges_begin(n); e != rule_edges_end(n); ++e) {
        os << " <" << rule_names[e->rule] << ">->" << e->target;
      }
      os << "\n";
    }
  }
  return os.str();
}

}  // namespace xg2
