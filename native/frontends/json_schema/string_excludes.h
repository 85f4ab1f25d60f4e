// Strings with forbidden substrings (a structural tag's json_schema `excludes`): the text
// between a JSON string's quotes, as written (escapes not decoded), contains none of them.
#ifndef XG2_FRONTENDS_JSON_SCHEMA_STRING_EXCLUDES_H_
#define XG2_FRONTENDS_JSON_SCHEMA_STRING_EXCLUDES_H_

#include <string>
#include <vector>

#include "frontends/json_schema/ebnf_builder.h"
#include "support/json.h"

namespace xg2 {

// A JSON string, quotes included, of `json_char`s (a rule-free fragment) whose text contains
// no string of `excludes` (each non-empty). Its rules go to `rules`.
Fragment JsonStringWithout(const Fragment& json_char, const std::vector<std::string>& excludes, RuleSet* rules);

// True when a string anywhere in `value` (member names included), as JSON writes it, contains
// one of `excludes`: such an enum/const alternative is left out.
bool MentionsExcluded(const JsonValue& value, const std::vector<std::string>& excludes);

}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_STRING_EXCLUDES_H_
