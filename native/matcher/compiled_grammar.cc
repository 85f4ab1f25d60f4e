#include "matcher/compiled_grammar.h"

#include <algorithm>
#include <utility>

#include "support/dcheck.h"

namespace xg2 {

namespace {

// Marks in `bytes` every byte that can complete rule `rule`: a byte edge into an accepting
// node, or one that completes a rule called by an edge into an accepting node (a superset of
// the bytes that leave the rule complete; re-checking more tokens costs time, never
// exactness).
void MarkCompletingBytes(const GrammarFsm& fsm, RuleId rule, std::vector<bool>* visited, bool* bytes) {
  if ((*visited)[rule]) return;
  (*visited)[rule] = true;
  for (NodeId n = fsm.rule_nodes[rule].begin; n < fsm.rule_nodes[rule].end; ++n) {
    for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) {
      if (fsm.node_accepting[e->target]) std::fill(bytes + e->lo, bytes + e->hi + 1, true);
    }
    for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
      if (fsm.node_accepting[e->target]) MarkCompletingBytes(fsm, e->rule, visited, bytes);
    }
  }
}

// The tokens whose last byte may bring a unique_item rule to a final node (accepting, no
// edges): a byte edge into one, or the completion of a rule called by an edge into one (an
// object item that ends with a string member's value ends with the string rule's quote).
std::vector<int32_t> UniqueRecheckPositions(const GrammarFsm& fsm, const TokenizerInfo& tokenizer) {
  if (!fsm.has_unique_items()) return {};
  bool closing[256] = {};
  std::vector<bool> visited(static_cast<size_t>(fsm.num_rules()), false);
  for (NodeId n = 0; n < fsm.num_nodes(); ++n) {
    if (fsm.node_rule[n] < 0 || !fsm.IsUniqueItemRule(fsm.node_rule[n])) continue;
    auto final = [&](NodeId t) {
      return fsm.node_accepting[t] && fsm.byte_edge_begin[t] == fsm.byte_edge_begin[t + 1] &&
             fsm.rule_edge_begin[t] == fsm.rule_edge_begin[t + 1];
    };
    for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) {
      if (final(e->target)) std::fill(closing + e->lo, closing + e->hi + 1, true);
    }
    for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
      if (final(e->target)) MarkCompletingBytes(fsm, e->rule, &visited, closing);
    }
  }
  std::vector<int32_t> positions;
  const std::string& bytes = tokenizer.sorted_token_bytes();
  const std::vector<int32_t>& offsets = tokenizer.sorted_token_offsets();
  // A final node has no edges, so a token the cache accepts that reaches one ends there.
  for (size_t p = 0; p + 1 < offsets.size(); ++p) {
    if (offsets[p + 1] > offsets[p] && closing[static_cast<uint8_t>(bytes[offsets[p + 1] - 1])]) {
      positions.push_back(static_cast<int32_t>(p));
    }
  }
  return positions;
}

// The snapshots' builder over `builder` (none without one).
RuleDfaSnapshots::Builder RuleBuilderOf(const std::shared_ptr<LazyRuleBuilder>& builder) {
  if (!builder) return nullptr;
  return [builder](const GrammarFsm& latest, RuleId rule) { return builder->Build(latest, rule); };
}

}  // namespace

CompiledGrammar::CompiledGrammar(CompiledGrammarParts parts)
    : fsm(std::make_shared<const GrammarFsm>(std::move(parts.fsm))),
      tokenizer(std::move(parts.tokenizer)),
      ebnf(std::move(parts.ebnf)),
      mask_cache(std::make_shared<GrammarMaskCache>(fsm, tokenizer, std::move(parts.pool), parts.cache_options,
                                                    parts.rule_builder ? parts.rule_builder->ByteContexts() : nullptr)),
      snapshots(std::make_unique<RuleDfaSnapshots>(fsm, RuleBuilderOf(parts.rule_builder))),
      rule_builder(std::move(parts.rule_builder)),
      earley_limits(parts.earley_limits),
      token_literal_ids(std::move(parts.token_literal_ids)),
      stop_terminal_ids(std::move(parts.stop_terminal_ids)),
      unique_recheck_positions(UniqueRecheckPositions(*fsm, *tokenizer)) {
  // mask_cache and rule_builder live as long as this grammar, which owns snapshots. The
  // listener runs under the build mutex right after the build that made `next`, so the
  // builder's contexts cover the synthetic rules that build added.
  snapshots->SetPublishListener([cache = mask_cache.get(), builder = rule_builder.get()](
                                    const std::shared_ptr<const GrammarFsm>& next) {
    cache->GrowTo(next, builder ? builder->ByteContexts() : nullptr);
  });
  XG2_DCHECK(!rule_builder || !fsm->has_unique_items(),
             "a grammar with unique items is built whole (its re-check positions read every item rule)");
  XG2_DCHECK(std::is_sorted(token_literal_ids.begin(), token_literal_ids.end()), "token literal ids are not sorted");
  XG2_DCHECK(std::is_sorted(stop_terminal_ids.begin(), stop_terminal_ids.end()), "stop terminal ids are not sorted");
}

}  // namespace xg2
