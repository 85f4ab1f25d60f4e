#include "matcher/compiled_grammar.h"

#include <algorithm>
#include <utility>

#include "support/dcheck.h"

namespace xg2 {

namespace {

std::vector<int32_t> UniqueRecheckPositions(const GrammarFsm& fsm, const TokenizerInfo& tokenizer) {
  if (!fsm.has_unique_items()) return {};
  bool closing[256] = {};
  for (NodeId n = 0; n < fsm.num_nodes(); ++n) {
    if (fsm.node_rule[n] < 0 || !fsm.IsUniqueItemRule(fsm.node_rule[n])) continue;
    for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) {
      const NodeId t = e->target;
      const bool final = fsm.node_accepting[t] && fsm.byte_edge_begin[t] == fsm.byte_edge_begin[t + 1] &&
                         fsm.rule_edge_begin[t] == fsm.rule_edge_begin[t + 1];
      if (final) std::fill(closing + e->lo, closing + e->hi + 1, true);
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

}  // namespace

CompiledGrammar::CompiledGrammar(CompiledGrammarParts parts)
    : fsm(std::make_shared<const GrammarFsm>(std::move(parts.fsm))),
      tokenizer(std::move(parts.tokenizer)),
      // A copy, so the text holds no spare capacity (MemoryBytes counts capacity).
      ebnf(parts.ebnf.data(), parts.ebnf.size()),
      mask_cache(std::make_shared<GrammarMaskCache>(fsm, tokenizer, std::move(parts.pool), parts.cache_options)),
      earley_limits(parts.earley_limits),
      token_literal_ids(std::move(parts.token_literal_ids)),
      stop_terminal_ids(std::move(parts.stop_terminal_ids)),
      unique_recheck_positions(UniqueRecheckPositions(*fsm, *tokenizer)) {
  XG2_DCHECK(std::is_sorted(token_literal_ids.begin(), token_literal_ids.end()), "token literal ids are not sorted");
  XG2_DCHECK(std::is_sorted(stop_terminal_ids.begin(), stop_terminal_ids.end()), "stop terminal ids are not sorted");
}

}  // namespace xg2
