// Writes rule DFAs (and lookahead DFAs) into a GrammarFsm's single node space and CSR tables
// (grammar_fsm.h), after the nodes it already has: the compile's flattening of every DFA it
// built, and a later build appending one rule's DFAs to a copy of the latest snapshot
// ("Snapshots": node ids, once issued, never change).
// Invariants: the tables are sized once by the constructor for every DFA to be appended and
// filled through cursors, so after the last Append every new node has its CSR offsets; the
// per-node side tables (counted loops, JSON character counts) get their neutral entries for
// the new nodes (-1 / 0), which Append and the caller then overwrite where they apply.
#ifndef XG2_GRAMMAR_FSM_APPENDER_H_
#define XG2_GRAMMAR_FSM_APPENDER_H_

#include <vector>

#include "grammar/fsm_automata.h"
#include "grammar/grammar_fsm.h"

namespace xg2 {
namespace fsm_build {

class FsmAppender {
 public:
  // Grows `fsm`'s node tables by the nodes and edges of `dfas` (every DFA Append will get).
  // The per-rule tables must already name every rule an edge of them calls.
  FsmAppender(GrammarFsm* fsm, const std::vector<const Dfa*>& dfas);
  // Appends `dfa` as the nodes of rule `owner` (-1: a lookahead); returns its first node.
  NodeId Append(const Dfa& dfa, RuleId owner);
  // Stores the counted-loop tables (kept empty while the grammar has no counted loop).
  void Finish();

 private:
  GrammarFsm& fsm_;
  std::vector<int32_t> node_loop_, node_gate_loop_;
  NodeId next_node_;
  int32_t next_byte_edge_, next_rule_edge_;
};

}  // namespace fsm_build
}  // namespace xg2

#endif  // XG2_GRAMMAR_FSM_APPENDER_H_
