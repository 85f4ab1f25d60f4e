// SchemaConverter::CountedStringBody (schema_converter_internal.h): minLength / maxLength
// next to a pattern or format whose product automaton passes the state limit.
#include "frontends/json_schema/length_counts.h"
#include "frontends/json_schema/schema_converter_internal.h"
#include "support/cancellation.h"
#include "support/error.h"

namespace xg2 {
namespace schema_internal {

Fragment SchemaConverter::CountedStringBody(const Node& node, const CodepointDfa& language,
                                            const std::optional<Fragment>& written, long long min_length,
                                            long long max_length) {
  // The matcher would enter such a string and never be able to close it: decide first. Where
  // completion lengths have gaps the matcher cannot count exactly (the FSM builder would
  // refuse the rule): a resource limit, so StringValue refuses as it did before counting.
  switch (CountableLengths(language, JsonCharDfa(), min_length, max_length)) {
    case CountedLengths::kNone: return Fragment::Never();
    case CountedLengths::kGaps:
      throw ResourceLimitError("the lengths of its strings have gaps wider than the window between the bounds, "
                               "which the matcher cannot count");
    case CountedLengths::kSome: break;
  }
  const std::string hint = RuleHint(node.pointer) + "_chars";
  const Fragment body = written ? *written : DfaToFragment(language, &rules_, hint);
  if (body.never()) return Fragment::Never();
  return rules_.ShareCountingJsonChars(hint + "_counted", body, min_length, max_length);
}

std::optional<Fragment> SchemaConverter::CountedString(
    const Node& node, const CodepointDfa& language, const std::vector<std::pair<std::string, std::string>>& languages,
    bool subtracts, const std::optional<Fragment>& body, std::optional<long long> min_length,
    std::optional<long long> max_length, std::string* why) {
  try {
    // One language and the length: its own fragment (a pattern's expression, a format's
    // rules) is the counted body; several, or a subtraction, are written from the automaton.
    std::optional<Fragment> written;
    if (languages.size() == 2 && !subtracts) {
      const JsonValue* format = node.schema.Find("format");
      written = languages[0].first == "format" ? FormatInRules(format->string_value()) : body;
    }
    Fragment counted = CountedStringBody(node, language, written, min_length.value_or(0), max_length.value_or(-1));
    if (counted.never()) return Fragment::Never();
    return rules_.Share(RuleHint(node.pointer) + "_string",
                        Seq({Fragment::Literal("\""), counted, Fragment::Literal("\"")}));
  } catch (const CompilationCancelledError&) {
    throw;
  } catch (const ResourceLimitError& e) {
    *why = e.what();
    return std::nullopt;
  }
}

}  // namespace schema_internal
}  // namespace xg2
