// JSON Schema -> EBNF: the string language of a schema (string_language.h), for `not` over
// string schemas and for patterns intersected with other patterns.
#include "frontends/json_schema/string_language.h"

#include <algorithm>
#include <cstring>

#include "frontends/json_schema/schema_converter_internal.h"
#include "frontends/json_schema/string_formats.h"
#include "frontends/regex/regex_converter.h"
#include "support/cancellation.h"
#include "support/error.h"

namespace xg2 {
namespace schema_internal {

namespace {

// Keywords that constrain only values of other types than strings: a string passes them.
bool IgnoredByStrings(const std::string& keyword) {
  static const char* const kOtherTypes[] = {
      "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "properties",
      "patternProperties", "additionalProperties", "required", "propertyNames", "minProperties", "maxProperties",
      "dependencies", "dependentRequired", "dependentSchemas", "items", "prefixItems", "additionalItems",
      "contains", "minContains", "maxContains", "uniqueItems", "unevaluatedItems", "unevaluatedProperties",
      "nullable"};
  return std::any_of(std::begin(kOtherTypes), std::end(kOtherTypes),
                     [&](const char* k) { return keyword == k; });
}

bool TypeAllowsString(const JsonValue& type) {
  if (type.is_string()) return type.string_value() == "string";
  for (const JsonValue& name : type.array_items()) {
    if (name.is_string() && name.string_value() == "string") return true;
  }
  return false;
}

bool TypeIsStringOnly(const JsonValue& type) {
  if (type.is_string()) return type.string_value() == "string";
  if (!type.is_array() || type.array_items().empty()) return false;
  return std::all_of(type.array_items().begin(), type.array_items().end(),
                     [](const JsonValue& name) { return name.is_string() && name.string_value() == "string"; });
}

CodepointDfa EmptyLanguage() {
  CodepointDfa dfa;
  dfa.states.emplace_back();
  return dfa;
}

CodepointDfa Union(const CodepointDfa& a, const CodepointDfa& b) {
  // a ∪ b = U \ ((U \ a) ∩ (U \ b)) within the canonical universe U.
  const CodepointDfa& universe = CanonicalStrings();
  return Product(universe,
                 Product(Product(universe, a, ProductKind::kDifference), Product(universe, b, ProductKind::kDifference),
                         ProductKind::kIntersection),
                 ProductKind::kDifference);
}

// A regex matching exactly `text` (metacharacters escaped).
std::string LiteralRegex(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::strchr("\\^$.|?*+()[]{}", c) != nullptr && c != '\0') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

const CodepointDfa& CanonicalStrings() {
  static const CodepointDfa* every_string = [] {
    RegexOptions options;
    options.json_string_body = true;
    return new CodepointDfa(DfaFromRegex("[\\s\\S]*", options));
  }();
  return *every_string;
}

CodepointDfa CanonicalSpellings(const std::vector<std::string>& texts) {
  RegexOptions options;
  options.json_string_body = true;
  std::string alternation;
  for (const std::string& text : texts) {
    if (!alternation.empty()) alternation += "|";
    alternation += "(?:" + LiteralRegex(text) + ")";
  }
  if (texts.empty()) return EmptyLanguage();
  return DfaFromRegex("^(?:" + alternation + ")$", options);
}

bool RejectsNonStrings(const JsonValue& schema) {
  if (schema.is_bool()) return !schema.bool_value();
  if (!schema.is_object()) return false;
  if (const JsonValue* type = schema.Find("type"); type != nullptr && TypeIsStringOnly(*type)) {
    const JsonValue* nullable = schema.Find("nullable");
    if (nullable == nullptr || !nullable->is_bool() || !nullable->bool_value()) return true;
  }
  if (std::optional<std::vector<JsonValue>> values = ListedValuesOnly(schema)) {
    return std::all_of(values->begin(), values->end(), [](const JsonValue& v) { return v.is_string(); });
  }
  if (const JsonValue* parts = schema.Find("allOf"); parts != nullptr && parts->is_array()) {
    if (std::any_of(parts->array_items().begin(), parts->array_items().end(), RejectsNonStrings)) return true;
  }
  if (const JsonValue* branches = schema.Find("anyOf"); branches != nullptr && branches->is_array() &&
      !branches->array_items().empty() && schema.object_members().size() == 1) {
    return std::all_of(branches->array_items().begin(), branches->array_items().end(), RejectsNonStrings);
  }
  return false;
}

// The strings `schema` accepts (canonical spellings), or nullopt when a keyword that applies
// to strings has no automaton here (format, if / then / else, oneOf, $ref with siblings, ...).
// A merge's branches repeat their siblings' enums (distributed alternatives, nested
// anyOf levels), and StringsDisjoint asks for their languages once per pair: each listed set
// is turned into an automaton once per conversion. The key spells every text with its
// length, so no two lists share one.
const CodepointDfa& SchemaConverter::ListedSpellings(const std::vector<std::string>& texts) {
  std::string key;
  for (const std::string& text : texts) {
    key += std::to_string(text.size());
    key += ':';
    key += text;
  }
  auto found = listed_spellings_.find(key);
  if (found == listed_spellings_.end()) found = listed_spellings_.emplace(std::move(key), CanonicalSpellings(texts)).first;
  return found->second;
}

std::optional<CodepointDfa> SchemaConverter::StringLanguage(const JsonValue& schema_in, const std::string& pointer,
                                                            int budget) {
  ThrowIfCancelled();
  if (budget <= 0) return std::nullopt;
  const JsonValue& schema = Dereferenced(schema_in, pointer);
  if (schema.is_bool()) return schema.bool_value() ? CanonicalStrings() : EmptyLanguage();
  if (!schema.is_object()) return std::nullopt;
  CodepointDfa language = CanonicalStrings();
  auto intersect = [&](const CodepointDfa& other) { language = Product(language, other, ProductKind::kIntersection); };
  std::optional<long long> min_length, max_length;
  bool listed = false;
  for (const auto& [keyword, value] : schema.object_members()) {
    if (IsPassiveKeyword(keyword) || IgnoredByStrings(keyword)) continue;
    if (keyword == "type") {
      if (!TypeAllowsString(value)) return EmptyLanguage();
    } else if (keyword == "pattern") {
      if (!value.is_string()) return std::nullopt;
      RegexOptions options;
      options.search = true;
      options.json_string_body = true;
      std::optional<CodepointDfa> pattern_language;
      try {
        pattern_language = DfaFromRegex(value.string_value(), options);
      } catch (const RegexError&) {
        return std::nullopt;
      }
      intersect(*pattern_language);
    } else if (keyword == "minLength" || keyword == "maxLength") {
      if (!value.is_integral_number() || value.number_value() < 0) return std::nullopt;
      if (value.number_value() > static_cast<double>(kMaxRepetitionBound)) return std::nullopt;
      (keyword == "minLength" ? min_length : max_length) = static_cast<long long>(value.number_value());
    } else if (keyword == "const" || keyword == "enum") {
      if (listed) continue;  // const and enum together: const is checked against enum below
      listed = true;
      std::optional<std::vector<JsonValue>> values = ListedValuesOnly(schema);
      std::vector<JsonValue> items = values ? *values
                                     : keyword == "const" ? std::vector<JsonValue>{value}
                                     : value.is_array()   ? value.array_items()
                                                          : std::vector<JsonValue>{};
      if (!values && schema.Find("const") != nullptr && schema.Find("enum") != nullptr) return std::nullopt;
      std::vector<std::string> texts;
      for (const JsonValue& item : items) {
        if (item.is_string()) texts.push_back(item.string_value());
      }
      intersect(ListedSpellings(texts));
    } else if (keyword == "format") {
      if (!value.is_string()) return std::nullopt;
      if (IsUnknownFormat(value.string_value(), draft3_)) continue;  // an annotation
      std::optional<CodepointDfa> formatted = FormatLanguage(value.string_value());
      if (!formatted) return std::nullopt;
      intersect(*formatted);
    } else if (keyword == "not") {
      std::optional<CodepointDfa> negated = StringLanguage(value, pointer, budget - 1);
      if (!negated) return std::nullopt;
      language = Product(language, *negated, ProductKind::kDifference);
    } else if (keyword == "allOf" || keyword == "anyOf") {
      if (!value.is_array() || value.array_items().empty()) return std::nullopt;
      std::optional<CodepointDfa> combined;
      for (const JsonValue& item : value.array_items()) {
        std::optional<CodepointDfa> part = StringLanguage(item, pointer, budget - 1);
        if (!part) return std::nullopt;
        combined = !combined ? std::move(*part)
                   : keyword == "allOf" ? Product(*combined, *part, ProductKind::kIntersection)
                                        : Union(*combined, *part);
      }
      intersect(*combined);
    } else {
      return std::nullopt;
    }
  }
  if (min_length || max_length) {
    static const CodepointDfa* json_char = new CodepointDfa(DfaFromFragment(JsonCharFragment()));
    intersect(Repeated(*json_char, min_length.value_or(0), max_length.value_or(-1)));
  }
  return Minimized(language);
}

const CodepointDfa* SchemaConverter::FormatAutomaton(const std::string& format) {
  auto found = format_automata_.find(format);
  if (found == format_automata_.end()) {
    const PrebuiltFormat& standalone = StandaloneFormatGrammar(format);  // charged as its use would be
    std::optional<CodepointDfa> automaton;
    if (standalone.body) {
      try {
        automaton = DfaFromRules(standalone.definitions, *standalone.body);
      } catch (const ResourceLimitError&) {  // past the automaton limits: no automaton
      } catch (const GrammarSyntaxError&) {  // a recursive grammar (regex)
      }
    }
    found = format_automata_.emplace(format, std::move(automaton)).first;
  }
  return found->second ? &*found->second : nullptr;
}

// A format's strings as a language that may be complemented (`not`, oneOf's complements),
// so the automaton must hold every string the format's checker accepts, not a sound subset:
// the formats whose grammars are their RFCs' whole syntax (RFC 3339 full-date, RFC 2673
// dotted-quad ipv4, RFC 4122 uuid, RFC 3986 uri and uri-reference). Not email, duration,
// hostname and regex (subsets), nor ipv6 (Python's checker also takes RFC 4007 zone
// identifiers, which the grammar leaves out), nor time and date-time, whose automata
// (exact leap seconds: each offset spelled out) are past kMaxAutomatonStates. Under drafts 3-7 a schema's
// checker may leave such a format unchecked (docs/json_schema_support.md), where the
// complement would hold strings that also pass the format: nullopt there. The grammars
// spell strings in printable ASCII other than `"` and `\`, which is each character's
// canonical spelling; checked here on the automaton's edges (XG2_DCHECK would hide a
// grammar change in release builds, so it is a plain refusal).
std::optional<CodepointDfa> SchemaConverter::FormatLanguage(const std::string& format) {
  static const char* const kCompleteFormats[] = {"date", "ipv4", "uuid", "uri", "uri-reference"};
  if (legacy_ref_ || std::none_of(std::begin(kCompleteFormats), std::end(kCompleteFormats),
                                  [&](const char* name) { return format == name; })) {
    return std::nullopt;
  }
  const CodepointDfa* automaton = FormatAutomaton(format);
  if (automaton == nullptr) return std::nullopt;
  for (const CodepointDfa::State& state : automaton->states) {
    for (const CodepointDfa::Edge& edge : state.edges) {
      if (edge.lo < 0x20 || edge.hi > 0x7e || (edge.lo <= '"' && '"' <= edge.hi) ||
          (edge.lo <= '\\' && '\\' <= edge.hi)) {
        return std::nullopt;
      }
    }
  }
  return *automaton;
}

// `not` on `node` read by the string generator: the negated schema's string language, when
// `not` says nothing about the node's other types (the node is a string type, or the negated
// schema rejects every non-string) and that language has an automaton.
std::optional<CodepointDfa> SchemaConverter::NegatedStringLanguage(const Node& node) {
  const JsonValue* negated = node.schema.Find("not");
  if (negated == nullptr || IsIgnored(node, "not")) return std::nullopt;
  bool string_node = false;
  if (node.schema.Find("type") != nullptr) {
    std::vector<std::string> types = AllowedTypes(node);
    string_node = types.size() == 1 && types[0] == "string";
  }
  if (!string_node && !RejectsNonStrings(*negated)) return std::nullopt;
  std::string key = node.pointer + "\n" + DumpJson(*negated);
  auto cached = negated_string_languages_.find(key);
  if (cached != negated_string_languages_.end()) return cached->second;
  std::optional<CodepointDfa> language = StringLanguage(*negated, node.pointer, 8);
  negated_string_languages_.emplace(key, language);
  return language;
}

namespace {

// Whether `schema` accepts every non-string value (true), none (false), or depends on the
// value (nullopt).
std::optional<bool> AcceptsNonStrings(const JsonValue& schema) {
  if (RejectsNonStrings(schema)) return false;
  if (schema.is_bool()) return schema.bool_value();
  if (!schema.is_object()) return std::nullopt;
  for (const auto& [keyword, value] : schema.object_members()) {
    if (keyword != "pattern" && keyword != "minLength" && keyword != "maxLength" && keyword != "format" &&
        !IsPassiveKeyword(keyword)) {
      return std::nullopt;
    }
  }
  return true;
}

bool MentionsNot(const JsonValue& value) {
  for (const JsonValue& item : value.array_items()) {
    if (MentionsNot(item)) return true;
  }
  for (const auto& [key, member] : value.object_members()) {
    if (key == "not" || MentionsNot(member)) return true;
  }
  return false;
}

}  // namespace

// enum / const next to `not` over a string schema: the listed values the negated schema
// rejects, decided value by value (a string by its canonical spelling in the automaton).
std::optional<JsonValue> SchemaConverter::ListedWithoutNot(const Node& node, const JsonValue& negated) {
  const JsonValue* constant = node.schema.Find("const");
  const JsonValue* listed = node.schema.Find("enum");
  std::vector<JsonValue> values;
  if (constant != nullptr) {
    values.push_back(*constant);
  } else if (listed != nullptr && listed->is_array()) {
    values = listed->array_items();
  } else {
    return std::nullopt;
  }
  std::optional<bool> non_strings = AcceptsNonStrings(negated);
  std::optional<CodepointDfa> strings;
  std::vector<JsonValue> kept;
  for (const JsonValue& value : values) {
    bool rejected_by_negated;
    if (value.is_string()) {
      if (!strings) strings = StringLanguage(negated, node.pointer, 8);
      if (!strings) return std::nullopt;
      CodepointDfa spelled = Product(CanonicalSpellings({value.string_value()}), *strings, ProductKind::kIntersection);
      rejected_by_negated = spelled.Empty();
    } else {
      if (!non_strings) return std::nullopt;
      rejected_by_negated = !*non_strings;
    }
    if (rejected_by_negated) kept.push_back(value);
  }
  std::vector<JsonValue::Member> members;
  for (const auto& [keyword, value] : node.schema.object_members()) {
    if (keyword == "not" || keyword == "const") continue;
    if (keyword == "enum") continue;
    members.emplace_back(keyword, value);
  }
  members.emplace_back("enum", JsonValue::Array(std::move(kept)));
  return JsonValue::Object(std::move(members));
}

bool ComplementRewritesAgain(const JsonValue& complement) { return MentionsNot(complement); }

}  // namespace schema_internal
}  // namespace xg2
