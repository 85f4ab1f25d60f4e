// Warming what the first fill inside a called rule reads, while the matcher is still in free
// text (XGrammar 2, section 4: TagDispatch; the free-text phase before a tag fires).
//
// A TagDispatch rule calls each tag's rule from the node its trigger ends at. The fill right
// after a trigger reads the mask-cache entries of the called rules' first nodes, which nothing
// in free text touches: a structural tag's entries are built at compile (many of them found
// in the cross-grammar pool, built for an earlier grammar and long since evicted), so that
// fill pays for cache misses that no other fill does. Each fill at a free-text state (one that
// starts the row from a dense accepted set) prefetches a few of those entries' first lines
// in turn: the slot, the entry, its accepted set and uncertain lists, and the first byte
// edges of the node. The addresses are collected once per rule per matcher (CallWarmList);
// a prefetch is only a hint, so the mask is unchanged by any of this.
#include <algorithm>
#include <cstdint>

#include "matcher/grammar_matcher.h"
#include "support/dcheck.h"

namespace xg2 {

namespace {

// Prefetches up to `max_lines` cache lines from `data` (`bytes` long) into `lines`.
// Adds the lines holding the first `max_lines` * 64 bytes of `data` (`bytes` long) to
// `lines`, each line once.
void AddLines(const void* data, size_t bytes, size_t max_lines, std::vector<const void*>* lines) {
  constexpr uintptr_t kLineBytes = 64;
  if (!data || bytes == 0) return;
  const uintptr_t first = reinterpret_cast<uintptr_t>(data) & ~(kLineBytes - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(data) + bytes;
  for (uintptr_t line = first; line < end && line < first + max_lines * kLineBytes; line += kLineBytes) {
    const void* address = reinterpret_cast<const void*>(line);
    if (std::find(lines->begin(), lines->end(), address) == lines->end()) lines->push_back(address);
  }
}

}  // namespace

void GrammarMatcher::CollectCallTargets(RuleId rule, std::vector<NodeId>* targets) const {
  const GrammarFsm& g = parser_.fsm();  // the snapshot of the fill's nodes
  auto add = [&](NodeId node) {
    // A rule not built yet has no node to warm (a prefetch hint never builds one).
    if (node != kUnbuiltRule && targets->size() < kMaxCallWarmTargets &&
        std::find(targets->begin(), targets->end(), node) == targets->end()) {
      targets->push_back(node);
    }
  };
  for (NodeId n = g.rule_nodes[rule].begin; n < g.rule_nodes[rule].end; ++n) {
    for (const RuleEdge* e = g.rule_edges_begin(n); e != g.rule_edges_end(n); ++e) add(g.rule_start[e->rule]);
  }
  // One level down: a called rule that starts by calling another (a tag whose body begins
  // with a rule) has that rule's first node scanned in the same fill.
  for (size_t k = 0, direct = targets->size(); k < direct; ++k) {
    const NodeId start = (*targets)[k];
    for (const RuleEdge* e = g.rule_edges_begin(start); e != g.rule_edges_end(start); ++e) add(g.rule_start[e->rule]);
  }
  XG2_DCHECK(targets->size() <= kMaxCallWarmTargets &&
                 std::all_of(targets->begin(), targets->end(), [&](NodeId n) { return n >= 0 && n < g.num_nodes(); }),
             "call-warm targets are at most kMaxCallWarmTargets nodes of the grammar");
}

bool GrammarMatcher::CollectWarmLines(const std::vector<NodeId>& targets, std::vector<const void*>* lines) const {
  const GrammarFsm& g = parser_.fsm();  // the snapshot of the fill's nodes
  const GrammarMaskCache& cache = *grammar_->mask_cache;
  bool complete = true;
  lines->clear();
  for (NodeId node : targets) {
    AddLines(cache.SlotAddress(node), sizeof(void*), 1, lines);
    AddLines(g.byte_edges_begin(node), sizeof(ByteEdge), 1, lines);
    const TokenClassification* entry = cache.Find(node);  // never builds
    if (!entry) {
      // Only a node with byte edges is ever scanned, so only its entry can still come.
      complete = complete && g.byte_edges_begin(node) == g.byte_edges_end(node);
      continue;
    }
    const AcceptedTokens& accepted = *entry->accepted;
    AddLines(entry, sizeof(TokenClassification), 1, lines);
    AddLines(&accepted, sizeof(AcceptedTokens), 1, lines);
    if (accepted.as_bits()) {
      AddLines(accepted.bits.data(), accepted.bits.size() * sizeof(uint32_t), 1, lines);
    } else {
      AddLines(accepted.ids.data(), accepted.ids.size() * sizeof(int32_t), kWarmLinesPerList, lines);
    }
    AddLines(entry->uncertain_positions.data(), entry->uncertain_positions.size() * sizeof(int32_t),
             kWarmLinesPerList, lines);
    AddLines(entry->uncertain_lcp.data(), entry->uncertain_lcp.size() * sizeof(int32_t), kWarmLinesPerList, lines);
  }
  return complete;
}

void GrammarMatcher::WarmCallTargets() {
  const GrammarFsm& g = parser_.fsm();  // the snapshot of the fill's nodes
  for (NodeId node : fill_nodes_) {
    const RuleId rule = g.node_rule[node];
    if (rule < 0) continue;  // a node outside every rule calls nothing
    auto list = std::find_if(call_warm_.begin(), call_warm_.end(),
                             [rule](const CallWarmList& l) { return l.rule == rule; });
    if (list == call_warm_.end()) {
      if (call_warm_.size() >= kMaxCallWarmRules) continue;
      call_warm_.push_back(CallWarmList{rule, {}, {}, 0, false});
      list = call_warm_.end() - 1;
      CollectCallTargets(rule, &list->targets);
    }
    // Entries not built yet (a JIT grammar) are looked for again at the next fill here.
    if (!list->complete) {
      list->complete = CollectWarmLines(list->targets, &list->lines);
      list->next_line = 0;
    }
    // A few lines per fill, in turn: free text takes many fills before a trigger, and each
    // fill there stays as cheap as it was (a whole list at once cost free-text fills ~5%).
    const size_t count = list->lines.size();
    for (size_t k = 0; k < std::min(count, kWarmLinesPerFill); ++k) {
      __builtin_prefetch(list->lines[list->next_line]);
      list->next_line = list->next_line + 1 == count ? 0 : list->next_line + 1;
    }
  }
}

}  // namespace xg2
