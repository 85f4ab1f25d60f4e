// Member names in every JSON spelling. A declared name may be written with any escape of
// any of its characters (`"\u0061"` is the name "a"); an undeclared one is any JSON string
// whose decoded value is none of the declared names, so that no spelling of a declared
// name passes as undeclared and escapes its schema (or repeats a required member).
#include <string>
#include <vector>

#include "frontends/json_schema/regular_language.h"
#include "frontends/json_schema/schema_converter_internal.h"
#include "support/cancellation.h"
#include "support/error.h"
#include "support/json.h"

namespace xg2 {
namespace schema_internal {

namespace {

// Automaton states of the undeclared-name language written as grammar; beyond it (many
// long declared names) KeyNotIn's canonical spellings are used.
constexpr size_t kMaxUndeclaredKeyStates = 2000;

}  // namespace

Fragment SchemaConverter::DeclaredKey(const std::string& name) {
  // A structural tag's excludes are forbidden substrings of the text as written: an escaped
  // spelling could contain one, so the names keep their single canonical spelling there.
  if (!options_.string_excludes.empty()) return Fragment::Literal(DumpJsonString(name));
  return Seq({Fragment::Literal("\""), StringSpellings({name}), Fragment::Literal("\"")});
}

Fragment SchemaConverter::UndeclaredKey(const std::vector<std::string>& names) {
  if (!options_.string_excludes.empty()) return KeyNotIn(names);
  const Fragment quote = Fragment::Literal("\"");
  if (names.empty()) return Seq({quote, Repeat(CommonRule("json_char"), 0, -1), quote});
  try {
    CodepointDfa undeclared = Product(Repeated(JsonCharDfa(), 0, -1), DfaFromExpression(StringSpellings(names).text()),
                                      ProductKind::kDifference);
    Fragment body = DfaToFragment(undeclared, &rules_, "key_not_declared", kMaxUndeclaredKeyStates);
    return rules_.Share("key_not_declared", Seq({quote, body, quote}));
  } catch (const CompilationCancelledError&) {
    throw;
  } catch (const ResourceLimitError&) {
    return KeyNotIn(names);  // raw characters and short escapes: a subset, still exact on names
  }
}

}  // namespace schema_internal
}  // namespace xg2
