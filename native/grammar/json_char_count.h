// JSON character counts (grammar/grammar_fsm.h, "JSON character counts"): a rule body's byte
// DFA times the phases of one JSON string character, with the nodes where a character ends.
#ifndef XG2_GRAMMAR_JSON_CHAR_COUNT_H_
#define XG2_GRAMMAR_JSON_CHAR_COUNT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "grammar/fsm_automata.h"

namespace xg2 {
namespace fsm_build {

struct CharCountedDfa {
  Dfa dfa;                       // byte edges only; node 0 is the start
  std::vector<uint8_t> char_end;  // per node: 1 where arriving completes a JSON character
  std::vector<int32_t> fewest;    // per node: the fewest / most characters to acceptance
  std::vector<int32_t> most;      //   (-1: unbounded); every count in between is possible
};

// The product of `body` (a rule DFA with byte edges only, no counted loop) with the phases of
// a JSON string character: a raw UTF-8 character, a short escape, a \uXXXX escape, or a
// surrogate-pair escape \uD8xx\uDCxx (one character: the pair decodes to one code point; a
// lone surrogate escape counts one, as Python's json module decodes it). Accepting nodes are
// those at a character boundary. Throws GrammarSyntaxError naming `rule` when some string of
// the body is not a sequence of JSON string characters (a quote, a control character, a
// broken escape): the product would drop it, and the rule's language would silently shrink;
// likewise when some node's completion lengths have gaps, or no count in [min_chars,
// max_chars] (max_chars < 0: unbounded) is a length of the body's strings.
CharCountedDfa CountJsonChars(const Dfa& body, const std::string& rule, int32_t min_chars, int32_t max_chars);

}  // namespace fsm_build
}  // namespace xg2

#endif  // XG2_GRAMMAR_JSON_CHAR_COUNT_H_
