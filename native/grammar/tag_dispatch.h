// Lowering of a TagDispatch rule (grammar_ast.h, TagDispatchDef) into the rule DFA that the
// Earley matcher runs unchanged (XGrammar 2, section 3.1).
//
// Semantics (free text is "dispatching mode"; a tag's rule is "dispatched mode"):
//  * Free text is any valid UTF-8. It is watched by an Aho-Corasick automaton over all tags,
//    stop strings and excluded strings; each DFA node of the free text is a pair (automaton
//    state, UTF-8 decoding state).
//  * At the first position where a watched string ends (the earliest end wins; strings ending
//    at the same position rank exclude > stop string > tag, and among tags the longest wins):
//      - an excluded string: the byte is not allowed (no edge);
//      - a stop string: the dispatch ends there (the stop string is part of the output);
//      - a tag: the tag's rule follows (a rule edge). When it completes, free text resumes
//        from an empty automaton (loop_after_dispatch) or the dispatch ends.
//    When the completed tag is a proper prefix of a longer tag, the output may instead go on
//    spelling the longer tag (xgrammar 0.2.8 does the same); any other byte is not allowed.
//  * With stop_eos, the dispatch may also end wherever free text is at a character boundary.
//  * Token literals (grammar/token_literal.h) may occur inside watched strings. Their bytes
//    are allowed in free text only while they spell a watched string, so a special token can
//    start a tag but never appears in free text on its own.
//
// Cost: O(total length of watched strings) automaton states times at most 8 UTF-8 states,
// 256 byte steps each, independent of how the strings are distributed among tags.
#ifndef XG2_GRAMMAR_TAG_DISPATCH_H_
#define XG2_GRAMMAR_TAG_DISPATCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar_ast.h"
#include "grammar/grammar_fsm.h"

namespace xg2 {

// A deterministic rule machine before it is placed in GrammarFsm's node space. Node 0 is the
// start; edge targets index `nodes`. Per node, byte edges are sorted and disjoint and rule
// edges are sorted by rule with at most one per rule (the GrammarFsm invariants).
struct RuleMachine {
  struct Node {
    std::vector<ByteEdge> byte_edges;
    std::vector<RuleEdge> rule_edges;
    bool accepting = false;
  };
  std::vector<Node> nodes;
};

// Builds the machine of a rule named `rule_name` whose body is `def`. Decrements
// `*node_budget` per node and throws ResourceLimitError when it runs out; throws
// GrammarSyntaxError for invalid parameters (an empty or duplicate tag, an empty stop or
// excluded string, or a dispatch that could never end).
RuleMachine BuildTagDispatchMachine(const TagDispatchDef& def, const std::string& rule_name,
                                    int64_t* node_budget);

}  // namespace xg2

#endif  // XG2_GRAMMAR_TAG_DISPATCH_H_
