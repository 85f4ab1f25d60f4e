// JSON Schema -> grammar: types and scalars (null, booleans, integers, numbers, strings and
// their formats), split from json_schema_converter.cc.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "frontends/json_schema/decimal.h"
#include "frontends/json_schema/integer_range.h"
#include "frontends/json_schema/number_bounds.h"
#include "frontends/json_schema/regular_language.h"
#include "frontends/json_schema/schema_converter_internal.h"
#include "frontends/json_schema/string_excludes.h"
#include "frontends/json_schema/string_formats.h"
#include "frontends/json_schema/string_language.h"
#include "frontends/regex/regex_converter.h"
#include "support/cancellation.h"
#include "support/compile_limits.h"
#include "support/error.h"

namespace xg2 {
namespace schema_internal {

// ---------------------------------------------------------------------------------------
// Types and scalars

std::vector<std::string> SchemaConverter::AllowedTypes(const Node& node) {
  std::vector<std::string> types;
  const JsonValue* type = node.schema.Find("type");
  auto invalid = [&node]() -> std::string {
    return "keyword 'type' at " + ShowPointer(node.pointer) + " must be a type name or an array of type names";
  };
  if (type == nullptr || IsIgnored(node, "type")) {
    types.assign(std::begin(kAllTypes), std::end(kAllTypes));
  } else if (type->is_string()) {
    if (type->string_value() == "any") {
      types.assign(std::begin(kAllTypes), std::end(kAllTypes));
    } else {
      if (!IsTypeName(type->string_value())) Invalid(invalid());
      types.push_back(type->string_value());
    }
  } else if (type->is_array()) {
    for (const JsonValue& name : type->array_items()) {
      if (!name.is_string() || !IsTypeName(name.string_value())) Invalid(invalid());
      if (std::find(types.begin(), types.end(), name.string_value()) == types.end()) {
        types.push_back(name.string_value());
      }
    }
  } else {
    Invalid(invalid());
  }
  const JsonValue* nullable = node.schema.Find("nullable");
  if (nullable != nullptr) {
    if (!nullable->is_bool()) {
      Invalid("keyword 'nullable' at " + ShowPointer(node.pointer) + " must be a boolean");
    }
    if (nullable->bool_value() && std::find(types.begin(), types.end(), std::string_view("null")) == types.end()) {
      types.push_back("null");
    }
  }
  // Integers are numbers: with "number" allowed, "integer" adds nothing.
  if (std::find(types.begin(), types.end(), std::string_view("number")) != types.end()) {
    types.erase(std::remove(types.begin(), types.end(), std::string_view("integer")), types.end());
  }
  return types;
}

Fragment SchemaConverter::TypedValue(const Node& node, int depth) {
  bool has_assertions = false;
  for (const auto& member : node.schema.object_members()) {
    has_assertions = has_assertions || !(IsPassiveKeyword(member.first) || IsIgnored(node, member.first));
  }
  if (!has_assertions) return AnyValue(depth);
  std::vector<Fragment> choices;
  for (const std::string& type_name : AllowedTypes(node)) {
    const std::string_view type = type_name;  // compares with each literal inline (length first)
    if (type == "null") {
      choices.push_back(Fragment::Literal("null"));
    } else if (type == "boolean") {
      choices.push_back(Alt({Fragment::Literal("true"), Fragment::Literal("false")}));
    } else if (type == "integer") {
      choices.push_back(IntegerValue(node));
    } else if (type == "number") {
      choices.push_back(NumberValue(node));
    } else if (type == "string") {
      choices.push_back(StringValue(node));
    } else if (type == "array") {
      bool unique = node.schema.Find("uniqueItems") != nullptr && node.schema.Find("uniqueItems")->is_bool() &&
                    node.schema.Find("uniqueItems")->bool_value() && !IsIgnored(node, "uniqueItems") &&
                    !UniqueItemsTrivial(node);
      bool contains = node.schema.Find("contains") != nullptr && !IsIgnored(node, "contains");
      choices.push_back(contains ? ContainsArrayValue(node, depth)
                        : unique ? UniqueArrayValue(node, depth)
                                 : ArrayValue(node, depth));
    } else if (type == "object") {
      choices.push_back(ObjectValue(node, depth));
    }
  }
  return rules_.ShareLazily(Alt(choices), [&] { return RuleHint(node.pointer); });
}

Fragment SchemaConverter::IntegerValue(const Node& node) {
  if (ExcludesIntegers(node.schema) && !IsIgnored(node, "not")) return Fragment::Never();
  std::optional<BigInteger> lower, upper;
  auto tighten = [](std::optional<BigInteger>* bound, const BigInteger& candidate, bool is_lower) {
    if (!*bound || (is_lower ? Compare(candidate, **bound) > 0 : Compare(candidate, **bound) < 0)) {
      *bound = candidate;
    }
  };
  for (const char* keyword : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    const JsonValue* value = node.schema.Find(keyword);
    if (value == nullptr || IsIgnored(node, keyword) || value->is_bool()) continue;
    if (!value->is_number()) {
      Invalid("keyword " + Quoted(keyword) + " at " + ShowPointer(node.pointer) + " must be a number");
    }
    std::string name = keyword;
    bool is_lower = name == "minimum" || name == "exclusiveMinimum";
    // Draft 4 spells exclusivity as a boolean next to the bound.
    const JsonValue* flag = node.schema.Find(is_lower ? "exclusiveMinimum" : "exclusiveMaximum");
    bool exclusive = name.rfind("exclusive", 0) == 0 ||
                     (flag != nullptr && flag->is_bool() && flag->bool_value());
    Rounding rounding = (is_lower != exclusive) ? Rounding::kCeiling : Rounding::kFloor;
    std::optional<BigInteger> bound =
        RoundJsonNumber(value->number_lexeme(), rounding, kMaxBoundDigits);
    if (!bound) {
      Unsupported("keyword " + Quoted(keyword) + " at " + ShowPointer(node.pointer) + ": bound " +
                  value->number_lexeme() + " is too large");
      ignored_keywords_.insert({node.pointer, keyword});
      continue;
    }
    if (exclusive) *bound = is_lower ? Increment(*bound) : Decrement(*bound);
    tighten(is_lower ? &lower : &upper, *bound, is_lower);
  }
  std::string hint = RuleHint(node.pointer) + "_range";
  if (node.schema.Find("multipleOf") != nullptr && !IsIgnored(node, "multipleOf")) {
    Fragment range = IntegerRangeFragment(lower, upper);
    if (range.never()) return range;
    return NumberIntersection(node, {range}, hint);
  }
  if (!lower && !upper) return CommonRule("json_integer");
  return rules_.Share(hint, IntegerRangeFragment(lower, upper));
}

// The multipleOf divisor, or nullopt (absent or ignored).
std::optional<Decimal> SchemaConverter::MultipleOf(const Node& node) {
  const JsonValue* value = node.schema.Find("multipleOf");
  if (value == nullptr || IsIgnored(node, "multipleOf")) return std::nullopt;
  std::optional<Decimal> divisor;
  if (value->is_number()) divisor = ParseDecimal(value->number_lexeme());
  if (!value->is_number() || (divisor && (divisor->negative || divisor->is_zero()))) {
    Invalid("keyword 'multipleOf' at " + ShowPointer(node.pointer) + " must be a number > 0");
  }
  if (!divisor) {
    Unsupported("keyword 'multipleOf' at " + ShowPointer(node.pointer) + ": divisor " +
                value->number_lexeme() + " is out of range");
    ignored_keywords_.insert({node.pointer, "multipleOf"});
  }
  return divisor;
}

// The intersection of number grammars (rule-free fragments) and, when the node has
// multipleOf, the multiples of its divisor. A single fragment is returned as it is.
Fragment SchemaConverter::NumberIntersection(const Node& node, const std::vector<Fragment>& parts,
                                             const std::string& hint) {
  std::optional<Decimal> divisor = MultipleOf(node);
  for (const Fragment& part : parts) {
    if (part.never()) return Fragment::Never();
  }
  if (!divisor && parts.size() == 1) return rules_.Share(hint, parts[0]);
  std::string where = " at " + ShowPointer(node.pointer);
  try {
    std::optional<CodepointDfa> language;
    if (divisor) {
      language = MultipleOfDfa(*divisor, kMaxMultipleOfDivisor);
      if (!language) {
        Unsupported("unsupported keyword 'multipleOf'" + where + ": the divisor scaled to an integer exceeds " +
                    std::to_string(kMaxMultipleOfDivisor));
        ignored_keywords_.insert({node.pointer, "multipleOf"});
        if (parts.size() == 1) return rules_.Share(hint, parts[0]);
      }
    }
    if (!language && parts.empty()) return CommonRule("json_number");
    // The same bounds recur across a schema (vega-lite: 35 numbers in [0, 1]): their
    // automata are built once per conversion. No diagnostic depends on the node past here.
    std::string key = divisor && language ? node.schema.Find("multipleOf")->number_lexeme() : std::string();
    for (const Fragment& part : parts) key.append(1, '\0').append(part.text());
    if (auto known = number_languages_.find(key); known != number_languages_.end()) return known->second;
    for (const Fragment& part : parts) {
      CodepointDfa dfa = DfaFromFragment(part);
      language = language ? Product(*language, dfa, ProductKind::kIntersection) : dfa;
    }
    Fragment fragment = DfaToFragment(*language, &rules_, hint);
    number_languages_.emplace(std::move(key), fragment);
    return fragment;
  } catch (const ResourceLimitError& e) {
    const char* keyword = divisor ? "multipleOf" : "maximum";
    Unsupported("unsupported keyword '" + std::string(keyword) + "'" + where + ": " + e.what());
    ignored_keywords_.insert({node.pointer, keyword});
    return rules_.Share(hint, parts[0]);
  }
}

Fragment SchemaConverter::NumberValue(const Node& node) {
  std::string where = " at " + ShowPointer(node.pointer);
  // The tightest lower and upper bounds (value, exclusive).
  std::optional<std::pair<Decimal, bool>> lower, upper;
  for (const char* keyword : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    const JsonValue* value = node.schema.Find(keyword);
    if (value == nullptr || IsIgnored(node, keyword) || value->is_bool()) continue;
    if (!value->is_number()) Invalid("keyword " + Quoted(keyword) + where + " must be a number");
    std::string name = keyword;
    bool is_lower = name == "minimum" || name == "exclusiveMinimum";
    // Draft 4 spells exclusivity as a boolean next to the bound.
    const JsonValue* flag = node.schema.Find(is_lower ? "exclusiveMinimum" : "exclusiveMaximum");
    bool exclusive = name.rfind("exclusive", 0) == 0 || (flag != nullptr && flag->is_bool() && flag->bool_value());
    std::optional<Decimal> bound = ParseDecimal(value->number_lexeme());
    if (!bound) {
      Unsupported("keyword " + Quoted(keyword) + where + ": bound " + value->number_lexeme() + " is too large");
      ignored_keywords_.insert({node.pointer, keyword});
      continue;
    }
    auto& side = is_lower ? lower : upper;
    int order = side ? CompareDecimal(*bound, side->first) : 0;
    if (!side || (is_lower ? order > 0 : order < 0) || (order == 0 && exclusive)) side = std::make_pair(*bound, exclusive);
  }
  std::string hint = RuleHint(node.pointer) + "_number";
  // Complement's form for "not an integer" (ExcludesIntegers): one more language in the product.
  std::vector<Fragment> parts;
  if (ExcludesIntegers(node.schema) && !IsIgnored(node, "not")) parts.push_back(NonIntegralNumber());
  if (!lower && !upper) {
    if (!MultipleOf(node) && parts.empty()) return CommonRule("json_number");
    return NumberIntersection(node, parts, hint);
  }
  if (lower && upper) {
    int order = CompareDecimal(lower->first, upper->first);
    if (order > 0 || (order == 0 && (lower->second || upper->second))) return Fragment::Never();
  }
  for (const auto* side : {&lower, &upper}) {
    if (!*side) continue;
    std::optional<Fragment> part = side == &lower
                                       ? NumberAtLeast((*side)->first, (*side)->second, kMaxBoundDigits)
                                       : NumberAtMost((*side)->first, (*side)->second, kMaxBoundDigits);
    if (!part) {
      const char* keyword = side == &lower ? "minimum" : "maximum";
      Unsupported("keyword '" + std::string(keyword) + "'" + where + ": the bound has more than " +
                  std::to_string(kMaxBoundDigits) + " digits");
      ignored_keywords_.insert({node.pointer, keyword});
      continue;
    }
    parts.push_back(*part);
  }
  if (parts.empty()) return CommonRule("json_number");
  return NumberIntersection(node, parts, hint);
}

// ---------------------------------------------------------------------------------------
// Strings

// Format grammars are large (date-time spells out every leap-second offset), and schemas
// repeat the same few formats many times, so each is built once per process
// (PrebuiltFormatGrammar); the standalone grammar is that build, charged against this
// conversion's limit as building it here would be.
const PrebuiltFormat& SchemaConverter::StandaloneFormatGrammar(const std::string& format) {
  // Draft 3's `time` is hh:mm:ss as jsonschema reads it (strptime "%H:%M:%S": one-digit
  // fields, Unicode digits), not RFC 3339's full-time: no grammar.
  static const PrebuiltFormat kNoGrammar;
  if (draft3_ && format == "time") return kNoGrammar;
  const PrebuiltFormat& prebuilt = PrebuiltFormatGrammar(format);
  RuleSet::CheckTotalBytes(prebuilt.bytes, static_cast<size_t>(CurrentCompileLimits().max_generated_grammar_bytes));
  return prebuilt;
}

// The format's rules in rules_: the prebuilt definitions where RuleSet::AddShared can add them
// exactly as building them here would, else built here. Invariant: building a format's rules
// a second time in the same RuleSet finds every shared body already defined, adds nothing and
// returns the same fragment, so the first result can stand for all. Not so for "regex", whose
// recursive rule is reserved afresh on every call (and is not made by Share).
std::optional<Fragment> SchemaConverter::FormatInRules(const std::string& format) {
  if (format == "regex") return StringFormatBody(format, &rules_);
  auto found = formats_in_rules_.find(format);
  if (found != formats_in_rules_.end()) return found->second;
  const PrebuiltFormat& prebuilt = PrebuiltFormatGrammar(format);
  std::optional<Fragment> body =
      prebuilt.body && rules_.AddShared(prebuilt.definitions, prebuilt.productive) ? prebuilt.body : StringFormatBody(format, &rules_);
  formats_in_rules_.emplace(format, body);
  return body;
}

// The string languages `format` and `pattern` add to StringValue's intersection (keyword,
// what identifies the language: the format's name, the pattern's length and source), and the
// body each writes on its own.
void SchemaConverter::AddFormatAndPatternLanguages(const Node& node, const JsonValue* format, const JsonValue* pattern,
                                                   const std::string& where,
                                                   std::vector<std::pair<std::string, std::string>>* languages,
                                                   std::optional<Fragment>* body,
                                                   std::optional<Fragment>* format_fragment) {
  if (format != nullptr && !IsUnknownFormat(format->string_value(), draft3_)) {
    const PrebuiltFormat& standalone = StandaloneFormatGrammar(format->string_value());
    const std::optional<Fragment>& format_body = standalone.body;
    if (format_body && !StringFormatIsExact(format->string_value())) {
      // Lenient: the sound subset is kept (better than ignoring the format).
      Unsupported("unsupported format '" + format->string_value() + "'" + where +
                  ": only a subset of its strings can be generated");
    }
    if (!format_body) {
      Unsupported("unsupported format '" + format->string_value() + "'" + where);
      ignored_keywords_.insert({node.pointer, "format"});
    } else {
      *format_fragment = *body = format_body;  // its rules are copied to rules_ when it is used
      languages->emplace_back("format", format->string_value());
    }
  }
  if (pattern != nullptr) {
    try {
      RegexOptions regex_options;
      regex_options.search = true;
      regex_options.json_string_body = true;
      *body = PatternFragment(pattern->string_value(), regex_options, &rules_, RuleHint(node.pointer) + "_pattern");
      const std::string& source = pattern->string_value();
      languages->emplace_back("pattern", std::to_string(source.size()) + ":" + source);
    } catch (const RegexError& e) {
      Unsupported("unsupported pattern" + where + ": " + e.what());
      ignored_keywords_.insert({node.pointer, "pattern"});
    } catch (const ResourceLimitError& e) {  // a leading look-ahead's automaton (PatternFragment)
      Unsupported("unsupported pattern" + where + ": " + e.what());
      ignored_keywords_.insert({node.pointer, "pattern"});
    }
  }
}

Fragment SchemaConverter::StringValue(const Node& node) {
  std::string where = " at " + ShowPointer(node.pointer);
  const JsonValue* pattern = IsIgnored(node, "pattern") ? nullptr : node.schema.Find("pattern");
  const JsonValue* format = IsIgnored(node, "format") ? nullptr : node.schema.Find("format");
  if (pattern != nullptr && !pattern->is_string()) Invalid("keyword 'pattern'" + where + " must be a string");
  if (format != nullptr && !format->is_string()) Invalid("keyword 'format'" + where + " must be a string");
  std::optional<long long> min_length = CountKeyword(node, "minLength");
  std::optional<long long> max_length = CountKeyword(node, "maxLength");
  if (format != nullptr && !IsUnknownFormat(format->string_value(), draft3_)) {
    if (std::optional<long long> format_max = StringFormatMaxLength(format->string_value())) {
      max_length = std::min(max_length.value_or(*format_max), *format_max);
    }
  }
  if (min_length == 0) min_length.reset();
  if (min_length && max_length && *min_length > *max_length) return Fragment::Never();
  // The languages to intersect (string bodies, JSON-escaped): a single one is written as
  // is; several are combined by the product construction (regular_language.h).
  std::vector<std::pair<std::string, std::string>> languages;  // (keyword, its identity; empty: none)
  std::optional<Fragment> body, format_fragment;
  AddFormatAndPatternLanguages(node, format, pattern, where, &languages, &body, &format_fragment);
  // The automaton of a format or pattern language, built from its grammar's nodes.
  auto language_dfa = [&](const std::pair<std::string, std::string>& language) {
    if (language.first == "pattern") {
      RegexOptions regex_options;
      regex_options.search = true;
      regex_options.json_string_body = true;
      return DfaFromRegex(pattern->string_value(), regex_options);
    }
    const PrebuiltFormat& standalone = StandaloneFormatGrammar(format->string_value());
    return DfaFromRules(standalone.definitions, *standalone.body);
  };
  // `not: {enum: [strings]}` on a string: the spellings of those strings are subtracted.
  std::optional<std::vector<std::string>> excluded = ExcludedStrings(node);
  // `not` over a string schema: its language (canonical spellings) is subtracted.
  std::optional<CodepointDfa> excluded_language;
  if (!excluded && node.schema.Find("enum") == nullptr && node.schema.Find("const") == nullptr) {
    excluded_language = NegatedStringLanguage(node);
  }
  bool subtracts = excluded || excluded_language;
  bool with_length = (!languages.empty() || subtracts) && (min_length || max_length);
  if (with_length && pattern == nullptr && format_fragment && max_length == std::nullopt &&
      *min_length <= StringFormatMinLength(format->string_value())) {
    // A minimum the format already implies (e.g. minLength 1 next to date-time, whose
    // automaton is too large to build for the check below).
    with_length = false;
    min_length.reset();
  }
  std::optional<CodepointDfa> first_language;  // languages[0] as an automaton, once built
  if (with_length && languages.size() == 1) {
    // Lengths the pattern or format already implies (e.g. minLength 1 next to date-time)
    // are dropped, so that language is written as is rather than as a product automaton.
    try {
      first_language = language_dfa(languages[0]);
      if (LengthImplied(*first_language, JsonCharDfa(), min_length.value_or(0), max_length.value_or(-1))) {
        with_length = false;
        min_length.reset();
        max_length.reset();
      }
    } catch (const CompilationCancelledError&) {
      throw;
    } catch (const Error&) {
      // Not regular or too large: the product below reports it.
    }
  }
  if (with_length) languages.emplace_back(min_length ? "minLength" : "maxLength", "");
  if (subtracts && languages.empty()) languages.emplace_back("not", "");
  if (languages.size() > 1 || subtracts) {
    // Identical keyword sets (common in generated schemas) share one automaton.
    std::string cache_key = std::to_string(min_length.value_or(0)) + "," + std::to_string(max_length.value_or(-1));
    for (const auto& language : languages) cache_key += "\n" + language.first + "\n" + language.second;
    for (const std::string& text : excluded.value_or(std::vector<std::string>{})) cache_key += "\nnot\n" + text;
    if (excluded_language) cache_key += "\nnot-language\n" + DumpJson(*node.schema.Find("not"));
    auto cached = string_languages_.find(cache_key);
    if (cached != string_languages_.end()) return cached->second;
    std::optional<CodepointDfa> unbounded;  // the language before the lengths, kept for counting
    try {
      auto json_chars = [&] {
        return Repeated(JsonCharDfa(), 0, -1);  // lengths: below
      };
      CodepointDfa language = languages[0].second.empty() ? json_chars()
                              : first_language      ? std::move(*first_language)
                                                    : language_dfa(languages[0]);
      for (size_t i = 1; i < languages.size(); ++i) {
        if (languages[i].second.empty()) continue;  // the length: last, below
        language = Product(language, language_dfa(languages[i]),
                           ProductKind::kIntersection);
      }
      if (excluded) {
        language = Product(language, DfaFromFragment(StringSpellings(*excluded)), ProductKind::kDifference);
      }
      if (excluded_language) {
        // Within the canonical spellings, where the excluded language is complete.
        language = Product(Product(language, CanonicalStrings(), ProductKind::kIntersection), *excluded_language,
                           ProductKind::kDifference);
      }
      if (with_length) unbounded = language;
      std::string chars_hint = RuleHint(node.pointer) + "_chars";
      Fragment intersected =
          with_length ? LengthBoundedFragment(language, JsonCharDfa(),
                                              CommonRule("json_char"), min_length.value_or(0),
                                              max_length.value_or(-1), &rules_, chars_hint)
                      : DfaToFragment(language, &rules_, chars_hint);
      Fragment result = intersected.never()
                            ? Fragment::Never()
                            : rules_.Share(RuleHint(node.pointer) + "_string",
                                           Seq({Fragment::Literal("\""), intersected, Fragment::Literal("\"")}));
      string_languages_.emplace(cache_key, result);
      return result;
    } catch (const CompilationCancelledError&) {
      throw;
    } catch (const Error& e) {
      std::string why = e.what();
      if (unbounded && dynamic_cast<const ResourceLimitError*>(&e) != nullptr) {
        // The lengths made the product too large: the matcher counts them instead.
        std::string not_counted;
        if (std::optional<Fragment> counted = CountedString(node, *unbounded, languages, subtracts, body, min_length,
                                                            max_length, &not_counted)) {
          string_languages_.emplace(cache_key, *counted);
          return *counted;
        }
        why += "; nor can the matcher count the length: " + not_counted;
      }
      // Too many automaton states (or a grammar that is not regular): keep the first.
      if (languages.size() > 1) {
        Unsupported("unsupported keyword '" + languages[1].first + "' alongside '" +
                    languages[0].first + "'" + where + ": " + why);
      } else {
        Unsupported("unsupported keyword 'not'" + where + ": " + e.what());
      }
      for (size_t i = 1; i < languages.size(); ++i) ignored_keywords_.insert({node.pointer, languages[i].first});
      if (subtracts) ignored_keywords_.insert({node.pointer, "not"});
      if (languages[0].first == "format") body = FormatInRules(format->string_value());
    }
    if (!languages[0].second.empty()) {
      min_length.reset();
      max_length.reset();
    }
  }
  if (body && format_fragment && languages.size() == 1 && !subtracts) body = FormatInRules(format->string_value());
  if (!body) {
    if (!min_length && !max_length) return JsonStringFragment();
    if (!options_.string_excludes.empty()) {
      Unsupported("minLength/maxLength at " + ShowPointer(node.pointer) +
                  " next to a structural tag's excludes (the length of a filtered string)");
    }
    body = Repeat(CommonRule("json_char"), static_cast<int>(min_length.value_or(0)),
                  max_length ? static_cast<int>(*max_length) : -1);
  }
  return rules_.Share(RuleHint(node.pointer) + "_string",
                      Seq({Fragment::Literal("\""), *body, Fragment::Literal("\"")}));
}

}  // namespace schema_internal
}  // namespace xg2
