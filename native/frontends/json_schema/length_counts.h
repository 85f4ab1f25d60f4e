// Length bounds that the product automaton cannot hold (a pattern or format whose automaton
// times the length range passes the state limit): the strings of the language are counted by
// the matcher instead (RuleSet::ShareCountingJsonChars, grammar/grammar_fsm.h "JSON character
// counts"). A counting rule whose count no string of its body can reach would leave the
// matcher in a string it can never close, so emptiness is decided here first.
#ifndef XG2_FRONTENDS_JSON_SCHEMA_LENGTH_COUNTS_H_
#define XG2_FRONTENDS_JSON_SCHEMA_LENGTH_COUNTS_H_

#include "frontends/json_schema/regular_language.h"

namespace xg2 {

enum class CountedLengths {
  kNone,   // no string of the language has a count in the range
  kSome,   // some has, and the matcher decides every count exactly (CountWindowIsDecided)
  kGaps,   // the completion lengths have gaps wider than the window between the bounds
};

// Whether the strings of `language` that consist of min_count..max_count (< 0: unbounded)
// strings of `unit` (a prefix code: one JSON string character) can be counted by the matcher
// (support/completion_lengths.h over the automaton's one-unit steps). Throws
// ResourceLimitError where the lengths take too long to repeat.
CountedLengths CountableLengths(const CodepointDfa& language, const CodepointDfa& unit, long long min_count,
                                long long max_count);

}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_LENGTH_COUNTS_H_
