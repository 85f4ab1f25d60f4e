// The string values a schema accepts, as an automaton over their string bodies in the
// canonical spelling the regex frontend writes (every character raw, except those JSON must
// escape, which appear escaped: short escapes, else \u00XX in either hex case). Each string
// has a fixed set of canonical spellings, so within that universe complements are exact:
// `not S` on a string is (canonical strings) \ L(S). Used by `not` over string schemas and
// by the intersection of several patterns.
#ifndef XG2_FRONTENDS_JSON_SCHEMA_STRING_LANGUAGE_H_
#define XG2_FRONTENDS_JSON_SCHEMA_STRING_LANGUAGE_H_

#include <string>
#include <vector>

#include "frontends/json_schema/regular_language.h"
#include "support/json.h"

namespace xg2 {
namespace schema_internal {

// Every string body in the canonical spelling.
const CodepointDfa& CanonicalStrings();

// True when `schema` accepts no value that is not a string (so `not schema` says nothing
// about other types): a `type` of "string" alone, a const / enum of strings only, allOf with
// such a part, anyOf whose branches all are such.
bool RejectsNonStrings(const JsonValue& schema);

// True when `complement` (of a `not` next to enum / const) would bring a `not` back into
// the node it is merged into (which would rewrite it again without end).
bool ComplementRewritesAgain(const JsonValue& complement);

// Canonical spellings of the strings `texts`.
CodepointDfa CanonicalSpellings(const std::vector<std::string>& texts);

}  // namespace schema_internal
}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_STRING_LANGUAGE_H_
