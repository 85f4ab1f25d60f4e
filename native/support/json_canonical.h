// The identity of a JSON value as JSON Schema's uniqueItems compares values: two texts get the
// same key exactly when they spell equal values (string escapes decoded, numbers by
// mathematical value, so 1, 1.0 and 10e-1 are one value and -0 equals 0).
#ifndef XG2_SUPPORT_JSON_CANONICAL_H_
#define XG2_SUPPORT_JSON_CANONICAL_H_

#include <string>
#include <string_view>

namespace xg2 {

// The key of the JSON scalar spelled by `text` (a string with its quotes, a number, true,
// false or null; JSON whitespace around it is ignored). A text that is none of those (an
// object or array, or malformed text) keys as itself, prefixed so it never meets a scalar's
// key: equal only to the same spelling.
std::string CanonicalJsonScalar(std::string_view text);

// The key of any JSON value spelled by `text`: scalars as CanonicalJsonScalar, arrays by
// their items' keys in order, objects by their members' name and value keys sorted by name
// (JSON Schema's equality: member order does not matter; a repeated name keeps its last
// value, as Python's json does). The parts are length-prefixed, so distinct values never
// share a key. An object item of the JSON Schema frontend's uniqueItems arrays ends before
// its closing brace (grammar/grammar_fsm.h, "Unique items"): a text that is an object
// missing only that brace keys as the object. Malformed text keys as itself, prefixed as
// CanonicalJsonScalar prefixes it.
std::string CanonicalJsonValue(std::string_view text);

}  // namespace xg2

#endif  // XG2_SUPPORT_JSON_CANONICAL_H_
