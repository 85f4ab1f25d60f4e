// Token-set edges of a GrammarFsm: each complete marker path (grammar/token_literal.h) out of a
// node, found by a walk over the marker bytes (see grammar/grammar_fsm.h, "Token sets").
#include <vector>

#include "grammar/grammar_fsm.h"
#include "grammar/token_literal.h"
#include "support/error.h"

namespace xg2 {

namespace {

// Appends the (set, target) pairs of the marker digit paths of `remaining` more digits from
// `node`; `set` is the value of the digits read so far.
void CollectMarkerPaths(const GrammarFsm& fsm, NodeId node, int remaining, int32_t set,
                        std::vector<TokenSetEdge>* out) {
  if (remaining == 0) {
    out->push_back({set, node});
    return;
  }
  for (const ByteEdge* e = fsm.byte_edges_begin(node); e != fsm.byte_edges_end(node); ++e) {
    for (int byte = e->lo; byte <= e->hi; ++byte) {
      if (byte < kTokenLiteralDigitBase || byte > kTokenLiteralDigitBase + 6) continue;
      CollectMarkerPaths(fsm, e->target, remaining - 1, set * 7 + (byte - kTokenLiteralDigitBase), out);
    }
  }
}

}  // namespace

void IndexTokenSetEdges(GrammarFsm* fsm) {
  fsm->token_set_edge_begin.clear();
  fsm->token_set_edges.clear();
  if (fsm->token_sets.empty()) return;
  const int32_t num_nodes = fsm->num_nodes();
  fsm->token_set_edge_begin.assign(num_nodes + 1, 0);
  for (NodeId n = 0; n < num_nodes; ++n) {
    fsm->token_set_edge_begin[n] = static_cast<int32_t>(fsm->token_set_edges.size());
    NodeId first = fsm->StepByte(n, kTokenLiteralLead);
    NodeId second = first < 0 ? -1 : fsm->StepByte(first, kTokenLiteralLead);
    if (second >= 0) CollectMarkerPaths(*fsm, second, kTokenLiteralDigits, 0, &fsm->token_set_edges);
  }
  fsm->token_set_edge_begin[num_nodes] = static_cast<int32_t>(fsm->token_set_edges.size());
  for (const TokenSetEdge& edge : fsm->token_set_edges) {
    if (edge.set < 0 || edge.set >= static_cast<int32_t>(fsm->token_sets.size())) {
      throw GrammarSyntaxError("a token-set marker names set " + std::to_string(edge.set) +
                               ", which the grammar does not define");
    }
  }
}

}  // namespace xg2
