// JSON Schema -> EBNF: entry points, keyword policy, references, combinators and scalars.
// Objects and arrays are in json_schema_objects.cc (uniqueItems and contains in
// array_uniqueness.cc), string formats in string_formats.cc, integer ranges in integer_range.cc.
#include "frontends/json_schema/json_schema_converter.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
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

namespace {

// What the converter does with a keyword. Keywords absent from the table are unknown and
// ignored: JSON Schema gives them no validation meaning, so ignoring them is exact.
enum class Role {
  kAnnotation,   // no validation meaning (or a container such as $defs): ignored
  kHandled,      // enforced by the generators
  kUnsupported,  // an assertion the converter cannot enforce (yet): the policy error
};

const std::unordered_map<std::string, Role>& KeywordRoles() {
  static const auto* roles = [] {
    auto* map = new std::unordered_map<std::string, Role>();
    for (const KeywordSupport& entry : JsonSchemaKeywordTable()) {
      std::string level = entry.level;
      Role role = level == "annotation"  ? Role::kAnnotation
                  : level == "error"     ? Role::kUnsupported
                                         : Role::kHandled;
      map->emplace(entry.keyword, role);
    }
    return map;
  }();
  return *roles;
}

std::optional<Role> RoleOf(const std::string& keyword) {
  if (keyword.rfind("x-", 0) == 0) return Role::kAnnotation;
  auto found = KeywordRoles().find(keyword);
  if (found == KeywordRoles().end()) return std::nullopt;
  return found->second;
}

}  // namespace

std::string TypeOfKeyword(const std::string& keyword) {
  static const auto* types = new std::unordered_map<std::string, std::string>{
      {"properties", "object"}, {"required", "object"}, {"additionalProperties", "object"},
      {"minProperties", "object"}, {"maxProperties", "object"},
      {"patternProperties", "object"}, {"propertyNames", "object"}, {"items", "array"}, {"prefixItems", "array"},
      {"additionalItems", "array"}, {"minItems", "array"}, {"maxItems", "array"},
      {"uniqueItems", "array"}, {"contains", "array"}, {"minContains", "array"}, {"maxContains", "array"},
      {"pattern", "string"}, {"minLength", "string"}, {"maxLength", "string"},
      {"format", "string"}, {"minimum", "number"}, {"maximum", "number"},
      {"exclusiveMinimum", "number"}, {"exclusiveMaximum", "number"}, {"multipleOf", "number"},
  };
  auto found = types->find(keyword);
  return found == types->end() ? "" : found->second;
}

std::string JsonTypeOf(const JsonValue& value) {
  switch (value.kind()) {
    case JsonKind::kNull: return "null";
    case JsonKind::kBool: return "boolean";
    case JsonKind::kNumber: return value.is_integral_number() ? "integer" : "number";
    case JsonKind::kString: return "string";
    case JsonKind::kArray: return "array";
    case JsonKind::kObject: return "object";
  }
  return "null";
}

namespace {

const char* const kAllTypes[] = {"null", "boolean", "object", "array", "number", "string"};

bool IsTypeName(std::string_view name) {
  return name == "integer" || std::find(std::begin(kAllTypes), std::end(kAllTypes), name) !=
                                  std::end(kAllTypes);
}

size_t CountCodepoints(const std::string& utf8) {
  size_t count = 0;
  for (char c : utf8) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

std::string Quoted(const std::string& keyword) { return "'" + keyword + "'"; }

// A JSON number without its sign: no leading zeros, optional fraction and exponent.
Fragment NumberMagnitude() {
  Fragment digits = Repeat(Fragment::Atom("[0-9]"), 1, -1);
  Fragment natural = Alt({Fragment::Literal("0"),
                          Seq({Fragment::Atom("[1-9]"), Repeat(Fragment::Atom("[0-9]"), 0, -1)})});
  return Seq({natural, Optional(Seq({Fragment::Literal("."), digits})),
              Optional(Seq({Fragment::Atom("[eE]"), Optional(Fragment::Atom("[+\\-]")), digits}))});
}


std::string EncodeUtf8(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

// "\u" and four hex digits (either case) for one UTF-16 code unit.
Fragment UnicodeEscape(uint32_t unit) {
  std::vector<Fragment> parts = {Fragment::Literal("\\u")};
  for (int shift = 12; shift >= 0; shift -= 4) {
    uint32_t digit = (unit >> shift) & 0xF;
    const char* lower = "0123456789abcdef";
    const char* upper = "0123456789ABCDEF";
    std::string cls = "[";
    cls += lower[digit];
    if (digit >= 10) cls += upper[digit];
    parts.push_back(Fragment::Atom(cls + "]"));
  }
  return Seq(parts);
}

}  // namespace

// Every JSON spelling of the string bodies of `texts` (raw characters, short escapes and
// \u escapes of any character), as one regular expression.
Fragment StringSpellings(const std::vector<std::string>& texts) {
  std::vector<Fragment> alternatives;
  for (const std::string& text : texts) {
    std::vector<Fragment> characters;
    for (char32_t cp : DecodeUtf8ToU32(text)) {
      std::vector<Fragment> ways;
      if (cp >= 0x20 && cp != U'"' && cp != U'\\') ways.push_back(Fragment::Literal(EncodeUtf8(cp)));
      static const std::map<char32_t, const char*> kShort = {{U'"', "\\\""}, {U'\\', "\\\\"}, {U'/', "\\/"},
          {U'\b', "\\b"}, {U'\f', "\\f"}, {U'\n', "\\n"}, {U'\r', "\\r"}, {U'\t', "\\t"}};
      if (auto found = kShort.find(cp); found != kShort.end()) ways.push_back(Fragment::Literal(found->second));
      if (cp < 0x10000) {
        ways.push_back(UnicodeEscape(cp));
      } else {
        uint32_t v = cp - 0x10000;
        ways.push_back(Seq({UnicodeEscape(0xD800 + (v >> 10)), UnicodeEscape(0xDC00 + (v & 0x3FF))}));
      }
      characters.push_back(Alt(ways));
    }
    alternatives.push_back(characters.empty() ? Fragment::Epsilon() : Seq(characters));
  }
  return Alt(alternatives);
}


// One character of a string body. \u escapes are either a non-surrogate code unit or a
// surrogate pair (lone surrogates are left out: they have no UTF-8 encoding), so each
// match is exactly one code point, as minLength/maxLength count.
Fragment JsonCharFragment() {
  Fragment hex = Fragment::Atom("[0-9a-fA-F]");
  Fragment non_surrogate = Alt({Seq({Fragment::Atom("[0-9a-cA-Ce-fE-F]"), Repeat(hex, 3, 3)}),
                                Seq({Fragment::Atom("[dD]"), Fragment::Atom("[0-7]"),
                                     Repeat(hex, 2, 2)})});
  Fragment pair = Seq({Fragment::Atom("[dD]"), Fragment::Atom("[89abAB]"), Repeat(hex, 2, 2),
                       Fragment::Literal("\\u"), Fragment::Atom("[dD]"),
                       Fragment::Atom("[c-fC-F]"), Repeat(hex, 2, 2)});
  Fragment escape = Seq({Fragment::Literal("\\"),
                         Alt({Fragment::Atom("[\"\\\\/bfnrt]"),
                              Seq({Fragment::Literal("u"), Alt({non_surrogate, pair})})})});
  return Alt({Fragment::Atom("[^\"\\\\\\x00-\\x1F]"), escape});
}

// JsonCharFragment as an automaton (the unit that minLength and maxLength count), built once
// per process: it is immutable and every length-bounded pattern or format needs it.
const CodepointDfa& JsonCharDfa() {
  static const CodepointDfa* dfa = new CodepointDfa(DfaFromExpression(JsonCharFragment().text()));
  return *dfa;
}

// Format names that no JSON Schema draft defines (e.g. "path", "byte", "int64"): they have
// no validation meaning (jsonschema's FormatChecker accepts every string for them), so
// the converter treats them as annotations.
bool IsUnknownFormat(const std::string& format) {
  static const std::set<std::string> kDefinedFormats = {
      "date-time", "date", "time", "duration", "email", "idn-email", "hostname",
      "idn-hostname", "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uuid",
      "uri-template", "json-pointer", "relative-json-pointer", "regex",
      // draft-03 names
      "utc-millisec", "color", "style", "phone", "ip-address", "host-name"};
  return kDefinedFormats.count(format) == 0;
}

bool IsPassiveKeyword(const std::string& keyword) {
  std::optional<Role> role = RoleOf(keyword);
  return !role || *role == Role::kAnnotation;
}

std::string ChildPointer(const std::string& pointer, const std::string& token) {
  std::string child = pointer;
  child.push_back('/');
  AppendJsonPointerToken(token, &child);
  return child;
}

std::string ShowPointer(const std::string& pointer) { return pointer.empty() ? "/" : pointer; }

// ---------------------------------------------------------------------------------------
// Layout

Layout::Layout(const JsonSchemaOptions& options)
    : max_whitespace_(options.max_whitespace), indent_(options.indent) {
  if (options.indent && *options.indent < 0) {
    throw InvalidArgumentError("indent must be >= 0");
  }
  if (options.max_whitespace && *options.max_whitespace < 0) {
    throw InvalidArgumentError("max_whitespace must be >= 0");
  }
  bool fixed = options.indent.has_value() || options.separators.has_value();
  flexible_ = options.any_whitespace && !fixed;
  // json.dumps defaults: (", ", ": ") inline, ("," , ": ") with an indent.
  item_separator_ = options.indent ? "," : ", ";
  key_separator_ = ": ";
  if (options.separators) {
    item_separator_ = options.separators->first;
    key_separator_ = options.separators->second;
  }
}

Fragment Layout::Whitespace() const {
  // RFC 8259 insignificant whitespace: space, tab, line feed, carriage return.
  Fragment space = Fragment::Atom("[ \\t\\n\\r]");
  return max_whitespace_ ? Repeat(space, 0, *max_whitespace_) : Repeat(space, 0, -1);
}

std::string Layout::Newline(int level) const {
  return "\n" + std::string(static_cast<size_t>(*indent_) * static_cast<size_t>(level), ' ');
}

Fragment Layout::Open(char bracket, int depth) const {
  std::string open(1, bracket);
  if (flexible_) return Seq({Fragment::Literal(open), Whitespace()});
  return Fragment::Literal(indent_ ? open + Newline(depth + 1) : open);
}

Fragment Layout::Close(char bracket, int depth) const {
  std::string close(1, bracket);
  if (flexible_) return Seq({Whitespace(), Fragment::Literal(close)});
  return Fragment::Literal(indent_ ? Newline(depth) + close : close);
}

Fragment Layout::ItemSeparator(int depth) const {
  if (flexible_) return Seq({Whitespace(), Fragment::Literal(","), Whitespace()});
  return Fragment::Literal(indent_ ? item_separator_ + Newline(depth + 1) : item_separator_);
}

Fragment Layout::KeySeparator() const {
  if (flexible_) return Seq({Whitespace(), Fragment::Literal(":"), Whitespace()});
  return Fragment::Literal(key_separator_);
}

Fragment Layout::EmptyContainer(char open, char close) const {
  std::string open_text(1, open), close_text(1, close);
  if (flexible_) {
    return Seq({Fragment::Literal(open_text), Whitespace(), Fragment::Literal(close_text)});
  }
  return Fragment::Literal(open_text + close_text);
}

// ---------------------------------------------------------------------------------------
// Entry, policy and shared helpers

namespace {
const char* const kCommonRules[] = {"root",        "json_value", "json_string", "json_char",
                                    "json_number", "json_integer", "json_key_char"};
}  // namespace

SchemaConverter::SchemaConverter(const JsonValue& document, const JsonSchemaOptions& options)
    : document_(document), options_(options), layout_(options),
      rules_(static_cast<size_t>(CurrentCompileLimits().max_generated_grammar_bytes)) {
  const JsonValue* dialect = document.Find("$schema");
  if (dialect != nullptr && dialect->is_string()) {
    const std::string& uri = dialect->string_value();
    for (const char* old : {"draft-03", "draft-04", "draft-06", "draft-07"}) {
      legacy_ref_ = legacy_ref_ || uri.find(old) != std::string::npos;
    }
    draft4_integers_ = uri.find("draft-03") != std::string::npos || uri.find("draft-04") != std::string::npos;
  }
  StartOutput();
}

void SchemaConverter::StartOutput() {
  rules_ = RuleSet(static_cast<size_t>(CurrentCompileLimits().max_generated_grammar_bytes));
  for (const char* name : kCommonRules) rules_.Claim(name);
  warnings_.clear();
  warned_.clear();
  ignored_keywords_.clear();
  reference_rules_.clear();
  references_in_progress_.clear();
  any_value_rules_.clear();
  string_languages_.clear();
  number_languages_.clear();
  formats_in_rules_.clear();
  active_depth_ = 0;
  merge_targets_.clear();
}

// Converts, then checks that every rule derives some finite string. A $ref target whose
// rule does not (its recursion never bottoms out) accepts no value; the conversion is
// redone with such targets known to be empty, until all rules are productive.
JsonSchemaConversion SchemaConverter::Convert() {
  std::string root_pointer;
  IndexIdentifiers(document_, &root_pointer, 0);
  std::map<std::pair<const JsonValue*, int>, std::string> empty_targets;
  while (true) {
    StartOutput();
    // A meta-schema that is not a published draft may declare other vocabularies (e.g. no
    // validation vocabulary), which would change what every keyword means.
    const JsonValue* dialect = document_.is_object() ? document_.Find("$schema") : nullptr;
    if (dialect != nullptr && dialect->is_string() &&
        dialect->string_value().find("json-schema.org/") == std::string::npos) {
      Unsupported("unsupported keyword '$schema' at /: meta-schema '" + dialect->string_value() +
                  "' is not a published draft, so its vocabularies are unknown");
    }
    reference_rules_ = empty_targets;
    rules_.ReserveNamed("root");
    Fragment root = Schema(document_, "", 0);
    if (root.never()) throw SchemaError("the schema at / accepts no JSON value");
    rules_.Define("root", root);
    std::vector<std::string> unproductive = rules_.UnproductiveRules();
    if (unproductive.empty()) return {rules_.Print(), warnings_};
    size_t known = empty_targets.size();
    for (const auto& [target, name] : reference_rules_) {
      if (std::find(unproductive.begin(), unproductive.end(), name) != unproductive.end()) {
        empty_targets.emplace(target, "");
      }
    }
    if (empty_targets.size() == known) {
      throw SchemaError("the schema at / accepts no JSON value (its recursion never ends)");
    }
  }
}

std::string SchemaConverter::ConvertBuiltinJson() {
  rules_.ReserveNamed("root");
  rules_.Define("root", AnyValue(0));
  return rules_.Print();
}

void SchemaConverter::Unsupported(const std::string& message) {
  if (!options_.lenient) throw UnsupportedSchemaError(message);
  if (warned_.insert(message).second) warnings_.push_back(message);
}

void SchemaConverter::Invalid(const std::string& message) const { throw SchemaError(message); }

bool SchemaConverter::IsIgnored(const Node& node, const std::string& keyword) const {
  // Mostly empty: then no key pair is built.
  return !ignored_keywords_.empty() && ignored_keywords_.count({node.pointer, keyword}) > 0;
}

std::optional<long long> SchemaConverter::CountKeyword(const Node& node, const char* keyword) {
  const JsonValue* value = node.schema.Find(keyword);
  if (value == nullptr || IsIgnored(node, keyword)) return std::nullopt;
  if (!value->is_integral_number() || value->number_value() < 0) {
    Invalid("keyword " + Quoted(keyword) + " at " + ShowPointer(node.pointer) +
            " must be a non-negative integer");
  }
  if (value->number_value() > static_cast<double>(kMaxRepetitionBound)) {
    Unsupported("keyword " + Quoted(keyword) + " at " + ShowPointer(node.pointer) +
                ": bound " + value->number_lexeme() + " is above " + std::to_string(kMaxRepetitionBound) +
                ", the largest count the matcher can enforce");
    ignored_keywords_.insert({node.pointer, keyword});
    return std::nullopt;
  }
  return static_cast<long long>(value->number_value());
}

// The pointer's unescaped tokens joined by '_', less the container keywords that every
// schema path repeats. Scans the pointer in place: it is called for every rule.
std::string SchemaConverter::RuleHint(const std::string& pointer) const {
  if (!pointer.empty() && pointer[0] != '/') return "node";
  std::string hint;
  std::string token;
  size_t start = 1;
  while (start <= pointer.size()) {
    size_t end = pointer.find('/', start);
    if (end == std::string::npos) end = pointer.size();
    if (!UnescapeJsonPointerToken(std::string_view(pointer).substr(start, end - start), &token)) return "node";
    if (token != "properties" && token != "$defs" && token != "definitions") {
      if (!hint.empty()) hint += "_";
      hint += token;
    }
    start = end + 1;
  }
  return hint.empty() ? "value" : hint;
}

Fragment SchemaConverter::CommonRule(const std::string& name) {
  if (rules_.IsDefined(name)) return Fragment::Atom(name);
  Fragment natural = Alt({Fragment::Literal("0"),
                          Seq({Fragment::Atom("[1-9]"), Repeat(Fragment::Atom("[0-9]"), 0, -1)})});
  Fragment body = Fragment::Never();
  if (name == "json_char") {
    body = JsonCharFragment();
  } else if (name == "json_key_char") {
    // Characters of undeclared property names: raw characters and short escapes only
    // (no \u escapes), so that each name has one spelling up to "\/" and can be compared
    // with the declared names exactly.
    body = Alt({Fragment::Atom("[^\"\\\\\\x00-\\x1F]"),
                Seq({Fragment::Literal("\\"), Fragment::Atom("[\"\\\\/bfnrt]")})});
  } else if (name == "json_string") {
    body = options_.string_excludes.empty()
               ? Seq({Fragment::Literal("\""), Repeat(CommonRule("json_char"), 0, -1), Fragment::Literal("\"")})
               : JsonStringWithout(JsonCharFragment(), options_.string_excludes, &rules_);
  } else if (name == "json_integer") {
    body = Seq({Optional(Fragment::Literal("-")), natural});
  } else if (name == "json_number") {
    body = Seq({Optional(Fragment::Literal("-")), NumberMagnitude()});
  } else {
    throw Error("internal: unknown common rule " + name);
  }
  rules_.DefineNamed(name, body);
  return Fragment::Atom(name);
}

Fragment SchemaConverter::JsonStringFragment() { return CommonRule("json_string"); }

Fragment SchemaConverter::AnyValue(int depth) {
  int layout_depth = LayoutDepth(depth);
  auto found = any_value_rules_.find(layout_depth);
  if (found != any_value_rules_.end()) return Fragment::Atom(found->second);
  std::string name = "json_value";
  if (layout_depth > 0) {
    name = rules_.Reserve("json_value_depth" + std::to_string(layout_depth));
  } else {
    rules_.ReserveNamed(name);
  }
  any_value_rules_.emplace(layout_depth, name);
  if (layout_.flexible()) {
    DefineFlexibleAnyValue(name);
    return Fragment::Atom(name);
  }
  std::vector<Fragment> choices;
  if (ContainersAllowed(depth)) {
    Fragment element = AnyValue(depth + 1);
    Fragment separator = layout_.ItemSeparator(layout_depth);
    Fragment member = Seq({JsonStringFragment(), layout_.KeySeparator(), element});
    choices.push_back(layout_.EmptyContainer('{', '}'));
    choices.push_back(Seq({layout_.Open('{', layout_depth), member,
                           Repeat(Seq({separator, member}), 0, -1),
                           layout_.Close('}', layout_depth)}));
    choices.push_back(layout_.EmptyContainer('[', ']'));
    choices.push_back(Seq({layout_.Open('[', layout_depth), element,
                           Repeat(Seq({separator, element}), 0, -1),
                           layout_.Close(']', layout_depth)}));
  }
  choices.push_back(JsonStringFragment());
  choices.push_back(CommonRule("json_number"));
  choices.push_back(Fragment::Literal("true"));
  choices.push_back(Fragment::Literal("false"));
  choices.push_back(Fragment::Literal("null"));
  rules_.Define(name, Alt(choices));
  return Fragment::Atom(name);
}

// With any whitespace, the values inside a generic value own the whitespace before them:
//   json_value    ::= "{" ws "}" | "{" member ("," member)* ws "}" | "[" ws "]"
//                   | "[" json_value_ws (ws "," json_value_ws)* ws "]" | string | number | ...
//   json_value_ws ::= ws (the same alternatives)        member ::= ws string ws ":" json_value_ws
// (the "," of objects is preceded by ws as well). The language is that of the plain layout.
// Why: a token such as ` {"` or ` "abc` that starts in the whitespace after ":" and ends inside
// the value would otherwise leave the container's rule through a rule edge, which makes it
// uncertain at that cache node (matcher/token_mask_cache.h), so every fill at a value start ran
// hundreds of such tokens through the parser (about 100 us a time on generic JSON documents).
// Inside json_value_ws the whole token stays in one rule's DFA and is classified once.
void SchemaConverter::DefineFlexibleAnyValue(const std::string& name) {
  const std::string inner = rules_.Reserve("json_value_ws");
  const Fragment ws = layout_.Whitespace();
  const Fragment element = Fragment::Atom(inner);
  const Fragment member = Seq({ws, JsonStringFragment(), ws, Fragment::Literal(":"), element});
  const Fragment comma = Seq({ws, Fragment::Literal(",")});
  const Fragment alternatives = Alt({
      layout_.EmptyContainer('{', '}'),
      Seq({Fragment::Literal("{"), member, Repeat(Seq({comma, member}), 0, -1), layout_.Close('}', 0)}),
      layout_.EmptyContainer('[', ']'),
      Seq({Fragment::Literal("["), element, Repeat(Seq({comma, element}), 0, -1), layout_.Close(']', 0)}),
      JsonStringFragment(),
      CommonRule("json_number"),
      Fragment::Literal("true"),
      Fragment::Literal("false"),
      Fragment::Literal("null"),
  });
  rules_.Define(name, alternatives);
  rules_.Define(inner, Seq({ws, alternatives}));
}

// ---------------------------------------------------------------------------------------
// Dispatch

Fragment SchemaConverter::Schema(const JsonValue& schema, const std::string& pointer, int depth) {
  if (schema.is_bool()) return schema.bool_value() ? AnyValue(depth) : Fragment::Never();
  if (!schema.is_object()) {
    Invalid("schema at " + ShowPointer(pointer) + " must be an object or a boolean");
  }
  ThrowIfCancelled();
  if (++active_depth_ > CurrentCompileLimits().max_schema_depth) {
    throw ResourceLimitError("schema nesting or $ref chain deeper than " +
                             std::to_string(CurrentCompileLimits().max_schema_depth) + " at " +
                             ShowPointer(pointer));
  }
  Fragment result = SchemaObject(Node{schema, pointer}, depth);
  --active_depth_;
  return result;
}

void SchemaConverter::CheckKeywords(const Node& node) {
  const JsonValue& schema = node.schema;
  for (const auto& [keyword_text, value] : schema.object_members()) {
    // A view compares with each literal below inline (length first).
    const std::string_view keyword = keyword_text;
    std::optional<Role> role = RoleOf(keyword_text);
    bool unsupported = role && *role == Role::kUnsupported;
    // Keywords that are no-ops in some of their forms.
    if (keyword == "uniqueItems") {
      if (!value.is_bool()) Invalid("keyword 'uniqueItems' at " + ShowPointer(node.pointer) + " must be a boolean");
      bool listed = schema.Find("enum") != nullptr || schema.Find("const") != nullptr;  // EnumValueAllowed
      unsupported = value.bool_value() && !listed && !UniqueItemsTrivial(node) && !UniqueItemDomain(node);
      if (unsupported) {
        Unsupported("unsupported keyword 'uniqueItems' at " + ShowPointer(node.pointer) +
                    ": the items are not a listed domain of at most " + std::to_string(kMaxUniqueDomain) +
                    " values (enum, const, boolean, null)");
        ignored_keywords_.insert({node.pointer, keyword_text});
        continue;
      }
    } else if (keyword == "contains") {
      std::string why = ContainsRefusal(node);
      if (!why.empty()) {
        Unsupported("unsupported keyword 'contains' at " + ShowPointer(node.pointer) + ": " + why);
        ignored_keywords_.insert({node.pointer, keyword_text});
      }
      continue;
    } else if (keyword == "not") {
      // The forms with a complement were rewritten before this point.
      unsupported = !NotReadByGenerators(node);
    } else if (keyword == "allOf") {
      unsupported = false;  // merged before this point
    } else if (keyword == "if") {
      unsupported = schema.Find("then") != nullptr || schema.Find("else") != nullptr;
    } else if (keyword == "then" || keyword == "else") {
      unsupported = false;  // reported with 'if'; without 'if' they do nothing
    } else if (keyword == "minContains" || keyword == "maxContains") {
      unsupported = false;  // without 'contains' they do nothing; with it 'contains' is reported
    } else if (keyword == "dependencies" || keyword == "dependentRequired" ||
               keyword == "dependentSchemas") {
      unsupported = false;  // rewritten into allOf before this point (or empty)
    } else if (keyword == "required" && value.is_bool()) {
      unsupported = value.bool_value();  // draft-3 form
      if (!unsupported) ignored_keywords_.insert({node.pointer, keyword_text});
    }
    if (!unsupported) continue;
    Unsupported("unsupported keyword " + Quoted(keyword_text) + " at " + ShowPointer(node.pointer));
    ignored_keywords_.insert({node.pointer, keyword_text});
  }
}

Fragment SchemaConverter::SchemaObject(const Node& node, int depth) {
  const JsonValue& schema = node.schema;
  if (schema.Find("$ref") != nullptr && legacy_ref_) return Reference(node, depth);
  // An empty type list (left by merges) accepts nothing; rewrites below need not run.
  if (const JsonValue* type = schema.Find("type");
      type != nullptr && type->is_array() && type->array_items().empty() && !IsIgnored(node, "type")) {
    return Fragment::Never();
  }
  // Listed values are checked against every sibling keyword directly (enum_siblings.cc).
  if (schema.Find("enum") != nullptr || schema.Find("const") != nullptr) return EnumOrConst(node, depth);
  if (const JsonValue* negated = schema.Find("not"); negated != nullptr && !IsIgnored(node, "not")) {
    std::optional<JsonValue> rewritten = WithoutNot(node, *negated);
    if (rewritten) {
      if (rewritten->is_bool()) return rewritten->bool_value() ? AnyValue(depth) : Fragment::Never();
      synthetic_.push_back(std::move(*rewritten));
      return Schema(synthetic_.back(), node.pointer, depth);
    }
  }
  if (const JsonValue* condition = schema.Find("if"); condition != nullptr && !IsIgnored(node, "if") &&
      (schema.Find("then") != nullptr || schema.Find("else") != nullptr)) {
    if (std::optional<JsonValue> rewritten = WithoutConditional(node)) {
      synthetic_.push_back(std::move(*rewritten));
      return Schema(synthetic_.back(), node.pointer, depth);
    }
  }
  if (HasDependencies(node)) {
    const JsonValue& rewritten = WithoutDependencies(node);
    return Schema(rewritten, node.pointer, depth);
  }
  if (NeedsMerge(node)) return MergedSchema(node, depth);
  CheckKeywords(node);
  // Invariant: past NeedsMerge, an applicator has no sibling assertions.
  if (schema.Find("$ref") != nullptr) return Reference(node, depth);
  if (schema.Find("allOf") != nullptr && !IsIgnored(node, "allOf")) {
    return Schema(schema.Find("allOf")->array_items()[0], ChildPointer(node.pointer, "allOf") + "/0", depth);
  }
  if (schema.Find("anyOf") != nullptr && !IsIgnored(node, "anyOf")) return AnyOf(node, depth);
  if (schema.Find("oneOf") != nullptr && !IsIgnored(node, "oneOf")) return OneOf(node, depth);
  if (schema.Find("enum") != nullptr || schema.Find("const") != nullptr) {
    return EnumOrConst(node, depth);
  }
  return TypedValue(node, depth);
}

// `not` where the complement of the negated schema is a schema again (Complement). The
// result replaces the node: the schema without `not`, with the complement added to its
// allOf; nullopt leaves `not` to the policy error, or to the generators that read it
// directly (a string type excluding listed strings, an enum filtered by the exclusion).
std::optional<JsonValue> SchemaConverter::WithoutNot(const Node& node, const JsonValue& negated) {
  if (NotReadByGenerators(node)) return std::nullopt;
  bool listed_node = node.schema.Find("enum") != nullptr || node.schema.Find("const") != nullptr;
  if (listed_node) {
    if (std::optional<JsonValue> filtered = ListedWithoutNot(node, negated)) return filtered;
  }
  bool declares = node.schema.Find("properties") != nullptr || node.schema.Find("patternProperties") != nullptr ||
                  node.schema.Find("additionalProperties") != nullptr;
  std::optional<JsonValue> complement = Complement(negated, node.pointer, declares, 8);
  if (!complement || (listed_node && ComplementRewritesAgain(*complement))) return std::nullopt;
  if (complement->is_bool() && !complement->bool_value()) return JsonValue::Bool(false);
  std::vector<JsonValue::Member> members;
  std::vector<JsonValue> conjuncts;
  for (const auto& [keyword, value] : node.schema.object_members()) {
    if (keyword == "not") continue;
    if (keyword == "allOf" && value.is_array()) {
      for (const JsonValue& item : value.array_items()) conjuncts.push_back(item);
      continue;
    }
    members.emplace_back(keyword, value);
  }
  conjuncts.push_back(*complement);
  members.emplace_back("allOf", JsonValue::Array(std::move(conjuncts)));
  return JsonValue::Object(std::move(members));
}

std::optional<std::vector<JsonValue>> ListedValuesOnly(const JsonValue& schema) {
  if (!schema.is_object()) return std::nullopt;
  std::optional<std::vector<JsonValue>> values;
  for (const auto& [keyword, value] : schema.object_members()) {
    if (keyword == "const") {
      values = std::vector<JsonValue>{value};
    } else if (keyword == "enum" && value.is_array()) {
      if (!values) values = value.array_items();
    } else if (!IsPassiveKeyword(keyword)) {
      return std::nullopt;
    }
  }
  if (values && schema.Find("const") != nullptr && schema.Find("enum") != nullptr) {
    const JsonValue& constant = *schema.Find("const");
    bool listed = false;
    for (const JsonValue& v : schema.Find("enum")->array_items()) listed = listed || JsonEquals(v, constant);
    if (!listed) values = std::vector<JsonValue>{};
  }
  return values;
}

namespace {

JsonValue TypeSchema(const char* type) { return JsonValue::Object({{"type", JsonValue::String(type)}}); }

JsonValue AnyOfOrSingle(std::vector<JsonValue> disjuncts) {
  if (disjuncts.empty()) return JsonValue::Bool(false);
  if (disjuncts.size() == 1) return disjuncts[0];
  return JsonValue::Object({{"anyOf", JsonValue::Array(std::move(disjuncts))}});
}

// Every JSON value except `values`, as a schema: other types whole, the remaining booleans,
// numbers as the open intervals between the excluded ones, strings as a string type with
// `not: {enum: [...]}` (read by StringValue, an automaton difference). Objects and arrays
// among the values: nullopt.
std::optional<JsonValue> ValuesComplement(const std::vector<JsonValue>& values) {
  bool has_null = false, has_true = false, has_false = false;
  std::vector<JsonValue> strings;
  std::vector<std::pair<Decimal, JsonValue>> numbers;
  for (const JsonValue& v : values) {
    switch (v.kind()) {
      case JsonKind::kNull: has_null = true; break;
      case JsonKind::kBool: (v.bool_value() ? has_true : has_false) = true; break;
      case JsonKind::kString: strings.push_back(v); break;
      case JsonKind::kNumber: {
        std::optional<Decimal> d = ParseDecimal(v.number_lexeme());
        if (!d) return std::nullopt;
        numbers.emplace_back(*d, v);
        break;
      }
      default: return std::nullopt;
    }
  }
  std::vector<JsonValue> disjuncts = {TypeSchema("object"), TypeSchema("array")};
  if (!has_null) disjuncts.push_back(TypeSchema("null"));
  if (!has_true || !has_false) {
    std::vector<JsonValue> kept;
    if (!has_true) kept.push_back(JsonValue::Bool(true));
    if (!has_false) kept.push_back(JsonValue::Bool(false));
    disjuncts.push_back(JsonValue::Object({{"enum", JsonValue::Array(std::move(kept))}}));
  }
  if (strings.empty()) {
    disjuncts.push_back(TypeSchema("string"));
  } else {
    disjuncts.push_back(JsonValue::Object({{"type", JsonValue::String("string")},
                                           {"not", JsonValue::Object({{"enum", JsonValue::Array(strings)}})}}));
  }
  std::sort(numbers.begin(), numbers.end(),
            [](const auto& x, const auto& y) { return CompareDecimal(x.first, y.first) < 0; });
  for (size_t i = 0; i <= numbers.size(); ++i) {
    if (i > 0 && i < numbers.size() && CompareDecimal(numbers[i - 1].first, numbers[i].first) == 0) continue;
    std::vector<JsonValue::Member> interval = {{"type", JsonValue::String("number")}};
    if (i > 0) interval.emplace_back("exclusiveMinimum", numbers[i - 1].second);
    if (i < numbers.size()) interval.emplace_back("exclusiveMaximum", numbers[i].second);
    disjuncts.push_back(JsonValue::Object(std::move(interval)));
  }
  return AnyOfOrSingle(std::move(disjuncts));
}

}  // namespace

// The schema whose language is exactly what `schema` rejects, for conjunctions of: type
// names (not `integer` without `number`), const / enum of scalars, required, properties
// (recursively), not, allOf / anyOf of such schemas, and the count and bound keywords.
// nullopt for other forms. A keyword that applies to one type fails only for values of
// that type, so its complement carries the type. `declares`: the object the complement
// will be merged into declares its members (else a member-free object schema gets
// additionalProperties true, which keeps strict mode from closing it).
std::optional<JsonValue> SchemaConverter::Complement(const JsonValue& schema_in, const std::string& pointer,
                                                     bool declares, int budget) {
  if (budget <= 0) return std::nullopt;
  const JsonValue& schema = Dereferenced(schema_in, pointer);
  if (schema.is_bool()) return JsonValue::Bool(!schema.bool_value());
  if (!schema.is_object()) return std::nullopt;
  std::vector<JsonValue> disjuncts;
  auto typed = [](const char* type, std::vector<JsonValue::Member> members) {
    members.insert(members.begin(), {"type", JsonValue::String(type)});
    return JsonValue::Object(std::move(members));
  };
  auto open_object = [&](std::vector<JsonValue::Member> members) {
    if (!declares) members.emplace_back("additionalProperties", JsonValue::Bool(true));
    return typed("object", std::move(members));
  };
  auto count = [](const JsonValue& value) -> std::optional<long long> {
    if (!value.is_integral_number() || value.number_value() < 0 || value.number_value() > 1e15) return std::nullopt;
    return static_cast<long long>(value.number_value());
  };
  if (std::optional<std::vector<JsonValue>> values = ListedValuesOnly(schema)) return ValuesComplement(*values);
  if (RejectsNonStrings(schema) && StringLanguage(schema, pointer, budget)) {
    // Every non-string, and the strings outside its language (read by StringValue).
    for (const char* type : kAllTypes) {
      if (std::string(type) != "string") disjuncts.push_back(TypeSchema(type));
    }
    disjuncts.push_back(JsonValue::Object({{"type", JsonValue::String("string")}, {"not", schema}}));
    return AnyOfOrSingle(std::move(disjuncts));
  }
  for (const auto& [keyword, value] : schema.object_members()) {
    if (IsPassiveKeyword(keyword) || keyword == "then" || keyword == "else" || keyword == "nullable") continue;
    if (keyword == "type") {
      std::set<std::string> named;
      for (const JsonValue& name : value.is_array() ? value.array_items() : std::vector<JsonValue>{value}) {
        if (!name.is_string() || !IsTypeName(name.string_value())) return std::nullopt;
        named.insert(name.string_value());
      }
      const JsonValue* nullable = schema.Find("nullable");
      if (nullable != nullptr && nullable->is_bool() && nullable->bool_value()) named.insert("null");
      // "integer" alone excludes integral numbers only, which no type name says.
      if (named.count("integer") > 0 && named.count("number") == 0) return std::nullopt;
      for (const char* type : kAllTypes) {
        if (named.count(type) == 0) disjuncts.push_back(TypeSchema(type));
      }
    } else if (keyword == "const" || keyword == "enum") {
      if (keyword == "enum" && schema.Find("const") != nullptr) continue;
      std::optional<JsonValue> rest = ValuesComplement(keyword == "const" ? std::vector<JsonValue>{value}
                                                       : value.is_array() ? value.array_items()
                                                                          : std::vector<JsonValue>{});
      if (!rest || !value.is_array() && keyword == "enum") return std::nullopt;
      disjuncts.push_back(*rest);
    } else if (keyword == "required") {
      if (!value.is_array()) return std::nullopt;
      for (const JsonValue& name : value.array_items()) {
        if (!name.is_string()) return std::nullopt;
        disjuncts.push_back(open_object({{"properties", JsonValue::Object({{name.string_value(), JsonValue::Bool(false)}})}}));
      }
    } else if (keyword == "properties") {
      if (!value.is_object()) return std::nullopt;
      for (const auto& [name, property] : value.object_members()) {
        std::optional<JsonValue> failing = Complement(property, ChildPointer(ChildPointer(pointer, "properties"), name),
                                                      false, budget - 1);
        if (!failing) return std::nullopt;
        if (failing->is_bool() && !failing->bool_value()) continue;
        disjuncts.push_back(open_object({{"required", JsonValue::Array({JsonValue::String(name)})},
                                         {"properties", JsonValue::Object({{name, *failing}})}}));
      }
    } else if (keyword == "not") {
      disjuncts.push_back(value);
    } else if (keyword == "pattern") {
      // The strings the pattern does not match (StringValue subtracts its language).
      disjuncts.push_back(JsonValue::Object({{"type", JsonValue::String("string")},
                                             {"not", JsonValue::Object({{"pattern", value}})}}));
    } else if (keyword == "allOf" || keyword == "anyOf") {
      if (!value.is_array() || value.array_items().empty()) return std::nullopt;
      std::vector<JsonValue> parts;
      for (const JsonValue& item : value.array_items()) {
        std::optional<JsonValue> failing = Complement(item, pointer, declares, budget - 1);
        if (!failing) return std::nullopt;
        parts.push_back(*failing);
      }
      if (keyword == "allOf") {
        for (JsonValue& part : parts) disjuncts.push_back(std::move(part));
      } else {
        disjuncts.push_back(JsonValue::Object({{"allOf", JsonValue::Array(std::move(parts))}}));
      }
    } else if (keyword == "minimum" || keyword == "maximum" || keyword == "exclusiveMinimum" ||
               keyword == "exclusiveMaximum") {
      if (!value.is_number()) return std::nullopt;  // draft-4 boolean forms: not here
      static const std::map<std::string, std::string> kOpposite = {
          {"minimum", "exclusiveMaximum"}, {"maximum", "exclusiveMinimum"},
          {"exclusiveMinimum", "maximum"}, {"exclusiveMaximum", "minimum"}};
      disjuncts.push_back(typed("number", {{kOpposite.at(keyword), value}}));
    } else if (keyword == "minLength" || keyword == "minItems" || keyword == "minProperties" ||
               keyword == "maxLength" || keyword == "maxItems" || keyword == "maxProperties") {
      std::optional<long long> n = count(value);
      if (!n) return std::nullopt;
      bool is_min = keyword.rfind("min", 0) == 0;
      if (is_min && *n == 0) continue;
      std::string opposite = (is_min ? "max" : "min") + keyword.substr(3);
      const char* type = keyword.find("Length") != std::string::npos ? "string"
                         : keyword.find("Items") != std::string::npos ? "array" : "object";
      JsonValue bound = JsonValue::Number(std::to_string(is_min ? *n - 1 : *n + 1),
                                          static_cast<double>(is_min ? *n - 1 : *n + 1));
      disjuncts.push_back(std::string(type) == "object" ? open_object({{opposite, bound}})
                                                         : typed(type, {{opposite, bound}}));
    } else {
      return std::nullopt;
    }
  }
  return AnyOfOrSingle(std::move(disjuncts));
}

// Forms of `not` the generators read themselves: next to enum / const, an excluded list
// filters the values (EnumValueAllowed); on a string-only schema, an excluded list of strings
// is an automaton difference (StringValue).
bool SchemaConverter::NotReadByGenerators(const Node& node) {
  const JsonValue* negated = node.schema.Find("not");
  if (negated == nullptr) return false;
  std::optional<std::vector<JsonValue>> excluded = ListedValuesOnly(*negated);
  bool listed_node = node.schema.Find("enum") != nullptr || node.schema.Find("const") != nullptr;
  if (!excluded) return !listed_node && NegatedStringLanguage(node).has_value();
  if (listed_node) return true;
  for (const JsonValue& value : *excluded) {
    if (!value.is_string()) return false;
  }
  if (node.schema.Find("type") == nullptr) return false;
  std::vector<std::string> types = AllowedTypes(node);
  return types.size() == 1 && types[0] == "string";
}

std::optional<std::vector<std::string>> SchemaConverter::ExcludedStrings(const Node& node) {
  if (IsIgnored(node, "not") || node.schema.Find("enum") != nullptr || node.schema.Find("const") != nullptr ||
      !NotReadByGenerators(node)) {
    return std::nullopt;
  }
  // The listed values must outlive the loop (a range over `*temporary` would dangle).
  std::optional<std::vector<JsonValue>> listed = ListedValuesOnly(*node.schema.Find("not"));
  if (!listed) return std::nullopt;  // a string language: NegatedStringLanguage
  std::vector<std::string> excluded;
  for (const JsonValue& value : *listed) excluded.push_back(value.string_value());
  return excluded;
}

// if / then / else: values that satisfy `if` must satisfy `then`, the others `else`. The
// condition is decided by the grammar: it becomes two branches, allOf [if, then] and
// allOf [complement of if, else], which no value can both match; the rewritten node keeps
// its other keywords, with the branches added to its allOf.
std::optional<JsonValue> SchemaConverter::WithoutConditional(const Node& node) {
  const JsonValue& condition = *node.schema.Find("if");
  bool declares = node.schema.Find("properties") != nullptr || node.schema.Find("patternProperties") != nullptr ||
                  node.schema.Find("additionalProperties") != nullptr;
  std::optional<JsonValue> failing = Complement(condition, ChildPointer(node.pointer, "if"), declares, 8);
  if (!failing) return std::nullopt;
  std::vector<JsonValue> when_true = {condition}, when_false = {*failing};
  if (const JsonValue* then_schema = node.schema.Find("then")) when_true.push_back(*then_schema);
  if (const JsonValue* else_schema = node.schema.Find("else")) when_false.push_back(*else_schema);
  std::vector<JsonValue::Member> members;
  std::vector<JsonValue> conjuncts;
  for (const auto& [keyword, value] : node.schema.object_members()) {
    if (keyword == "if" || keyword == "then" || keyword == "else") continue;
    if (keyword == "allOf" && value.is_array()) {
      for (const JsonValue& item : value.array_items()) conjuncts.push_back(item);
      continue;
    }
    members.emplace_back(keyword, value);
  }
  conjuncts.push_back(JsonValue::Object({{"anyOf", JsonValue::Array({
      JsonValue::Object({{"allOf", JsonValue::Array(std::move(when_true))}}),
      JsonValue::Object({{"allOf", JsonValue::Array(std::move(when_false))}})})}}));
  members.emplace_back("allOf", JsonValue::Array(std::move(conjuncts)));
  return JsonValue::Object(std::move(members));
}

bool SchemaConverter::HasDependencies(const Node& node) const {
  for (const char* keyword : {"dependentRequired", "dependentSchemas", "dependencies"}) {
    const JsonValue* value = node.schema.Find(keyword);
    if (value != nullptr && value->is_object() && !value->object_members().empty() &&
        !IsIgnored(node, keyword)) {
      return true;
    }
  }
  return false;
}

// dependentRequired / dependentSchemas / draft-7 dependencies as intersections: each
// dependency on name n is `n absent` or `n present and the dependency holds`, i.e.
// {"anyOf": [{"properties": {n: false}}, {"required": [n, ...]} or {"allOf": [S, {"required": [n]}]}]},
// added to the schema's allOf (which the merge distributes).
const JsonValue& SchemaConverter::WithoutDependencies(const Node& node) {
  constexpr size_t kMaxDependencies = 6;
  std::vector<JsonValue::Member> members;
  std::vector<JsonValue> conjuncts;
  bool declares = node.schema.Find("properties") != nullptr || node.schema.Find("patternProperties") != nullptr ||
                  node.schema.Find("additionalProperties") != nullptr;
  size_t count = 0;
  for (const auto& [keyword, value] : node.schema.object_members()) {
    bool dependency_keyword = keyword == "dependentRequired" || keyword == "dependentSchemas" || keyword == "dependencies";
    if (keyword == "allOf" && value.is_array()) {
      for (const JsonValue& item : value.array_items()) conjuncts.push_back(item);
      continue;
    }
    if (!dependency_keyword) {
      members.emplace_back(keyword, value);
      continue;
    }
    std::string where = " at " + ShowPointer(node.pointer);
    if (!value.is_object()) Invalid("keyword " + Quoted(keyword) + where + " must be an object");
    for (const auto& [name, dependency] : value.object_members()) {
      if (!dependency.is_array() && !dependency.is_object() && !dependency.is_bool()) {
        Invalid("keyword " + Quoted(keyword) + where + " must map names to arrays of names or schemas");
      }
      // A dependency on a name the objects never have always holds.
      if (NeverAMember(node, name)) continue;
      if (++count > kMaxDependencies) {
        Unsupported("unsupported keyword " + Quoted(keyword) + where + ": more than " +
                    std::to_string(kMaxDependencies) + " dependencies (each doubles the object grammar)");
        break;
      }
      // Without declared members, a strict-mode object accepts any; `properties: {n: false}`
      // must not change that.
      std::vector<JsonValue::Member> absent = {{"properties", JsonValue::Object({{name, JsonValue::Bool(false)}})}};
      if (!declares) absent.emplace_back("additionalProperties", JsonValue::Bool(true));
      JsonValue present;
      bool required_form = keyword == "dependentRequired" || (keyword == "dependencies" && dependency.is_array());
      if (required_form) {
        if (!dependency.is_array()) Invalid("keyword " + Quoted(keyword) + where + " must map names to arrays of names");
        std::vector<JsonValue> names = {JsonValue::String(name)};
        for (const JsonValue& other : dependency.array_items()) {
          if (!other.is_string()) Invalid("keyword " + Quoted(keyword) + where + " must map names to arrays of names");
          names.push_back(other);
        }
        // Members are generated in declared order; undeclared names that become required
        // only through a dependency would get an arbitrary fixed order instead.
        const JsonValue* properties = node.schema.Find("properties");
        for (const JsonValue& required_name : names) {
          if (properties == nullptr || !properties->is_object() ||
              properties->Find(required_name.string_value()) == nullptr) {
            Unsupported("unsupported keyword " + Quoted(keyword) + where + ": name '" +
                        required_name.string_value() + "' is not declared in 'properties' (its position among the members would be arbitrary)");
            break;
          }
        }
        present = JsonValue::Object({{"required", JsonValue::Array(std::move(names))}});
      } else {
        if (!dependency.is_object() && !dependency.is_bool()) {
          Invalid("keyword " + Quoted(keyword) + where + " must map names to schemas");
        }
        present = JsonValue::Object({{"allOf", JsonValue::Array({dependency,
            JsonValue::Object({{"required", JsonValue::Array({JsonValue::String(name)})}})})}});
      }
      conjuncts.push_back(JsonValue::Object({{"anyOf", JsonValue::Array({JsonValue::Object(std::move(absent)), present})}}));
    }
  }
  if (!conjuncts.empty()) members.emplace_back("allOf", JsonValue::Array(std::move(conjuncts)));
  synthetic_.push_back(JsonValue::Object(std::move(members)));
  return synthetic_.back();
}

// ---------------------------------------------------------------------------------------
// References

// `pointer` is the JSON pointer of `value`; it grows and shrinks back in place as the walk
// descends, so that only the pointers of identified subschemas are ever copied.
void SchemaConverter::IndexIdentifiers(const JsonValue& value, std::string* pointer, int depth) {
  const size_t length = pointer->size();
  if (value.is_array()) {
    for (size_t i = 0; i < value.array_items().size(); ++i) {
      pointer->push_back('/');
      pointer->append(std::to_string(i));
      IndexIdentifiers(value.array_items()[i], pointer, depth + 1);
      pointer->resize(length);
    }
    return;
  }
  if (!value.is_object()) return;
  for (const auto& [key_text, member] : value.object_members()) {
    const std::string_view key = key_text;
    if (key == "enum" || key == "const" || key == "default" || key == "examples") continue;
    if (member.is_string() && key == "$anchor") {
      identifiers_.emplace("#" + member.string_value(), std::make_pair(&value, *pointer));
    } else if (member.is_string() && (key == "$id" || key == "id")) {
      std::string id = member.string_value();
      if (!id.empty() && id.back() == '#') id.pop_back();
      if (depth == 0) {
        base_uri_ = id;
      } else if (!id.empty()) {
        identifiers_.emplace(id, std::make_pair(&value, *pointer));
      }
    }
    if (!member.is_object() && !member.is_array()) continue;
    pointer->push_back('/');
    AppendJsonPointerToken(key, pointer);
    IndexIdentifiers(member, pointer, depth + 1);
    pointer->resize(length);
  }
}

const JsonValue* SchemaConverter::ResolveReference(const std::string& ref, const Node& node,
                                                   std::string* target_pointer) {
  std::string where = " at " + ShowPointer(node.pointer);
  std::string rest = ref;
  if (!base_uri_.empty() && rest.rfind(base_uri_, 0) == 0) rest = rest.substr(base_uri_.size());
  auto identified = identifiers_.find(rest);
  if (identified != identifiers_.end()) {
    *target_pointer = identified->second.second;
    return identified->second.first;
  }
  size_t hash = rest.find('#');
  std::string document_part = rest.substr(0, hash);
  std::string fragment = hash == std::string::npos ? "" : rest.substr(hash + 1);
  const JsonValue* base = &document_;
  std::string base_pointer;
  if (!document_part.empty()) {
    auto found = identifiers_.find(document_part);
    if (found == identifiers_.end()) {
      bool remote = document_part.find("://") != std::string::npos ||
                    document_part.rfind("urn:", 0) == 0;
      Invalid(std::string(remote ? "remote" : "unresolvable") + " $ref '" + ref + "'" + where +
              (remote ? " (only references inside the schema are supported)" : ""));
    }
    base = found->second.first;
    base_pointer = found->second.second;
  }
  if (fragment.empty()) {
    *target_pointer = base_pointer;
    return base;
  }
  if (fragment[0] != '/') Invalid("unresolvable $ref '" + ref + "'" + where);
  const JsonValue* target = nullptr;
  try {
    target = ResolveJsonPointer(*base, fragment, /*uri_fragment=*/true);
    *target_pointer = base_pointer;
    for (const std::string& token : SplitJsonPointer(fragment, true)) {
      *target_pointer = ChildPointer(*target_pointer, token);
    }
  } catch (const InvalidArgumentError& e) {
    Invalid("invalid $ref '" + ref + "'" + where + ": " + e.what());
  }
  if (target == nullptr) Invalid("unresolvable $ref '" + ref + "'" + where);
  return target;
}

Fragment SchemaConverter::Reference(const Node& node, int depth) {
  const JsonValue* ref = node.schema.Find("$ref");
  if (!ref->is_string()) Invalid("keyword '$ref' at " + ShowPointer(node.pointer) + " must be a string");
  std::string target_pointer;
  const JsonValue* target = ResolveReference(ref->string_value(), node, &target_pointer);
  auto key = std::make_pair(target, LayoutDepth(depth));
  auto found = reference_rules_.find(key);
  if (found != reference_rules_.end()) {
    if (found->second.empty()) return Fragment::Never();
    references_in_progress_.erase(found->second);  // now known to be referenced recursively
    return Fragment::Atom(found->second);
  }
  std::string name = rules_.Reserve(RuleHint(target_pointer));
  reference_rules_.emplace(key, name);
  // Invariant: the name stays in references_in_progress_ until something refers to it
  // while its body is being built.
  references_in_progress_.insert(name);
  Fragment body = Schema(*target, target_pointer, depth);
  bool recursive = references_in_progress_.erase(name) == 0;
  if (body.never() && !recursive) {
    rules_.Discard(name);
    reference_rules_[key] = "";
    return Fragment::Never();
  }
  // An empty recursive target is written as `name ::= name`; Convert finds it unproductive.
  rules_.Define(name, body.never() ? Fragment::Atom(name) : body);
  return Fragment::Atom(name);
}

// ---------------------------------------------------------------------------------------
// Combinators, enum and const

Fragment SchemaConverter::AnyOf(const Node& node, int depth) {
  const JsonValue& branches = *node.schema.Find("anyOf");
  if (!branches.is_array() || branches.array_items().empty()) {
    Invalid("keyword 'anyOf' at " + ShowPointer(node.pointer) + " must be a non-empty array");
  }
  std::vector<Fragment> choices;
  std::string base = ChildPointer(node.pointer, "anyOf");
  for (size_t i = 0; i < branches.array_items().size(); ++i) {
    choices.push_back(Schema(branches.array_items()[i], base + "/" + std::to_string(i), depth));
  }
  const JsonValue* nullable = node.schema.Find("nullable");
  if (nullable != nullptr && nullable->is_bool() && nullable->bool_value()) {
    choices.push_back(Fragment::Literal("null"));
  }
  return rules_.ShareLazily(Alt(choices), [&] { return RuleHint(node.pointer); });
}

bool SchemaConverter::EnumValueAllowed(const JsonValue& value, const Node& node) {
  if (MentionsExcluded(value, options_.string_excludes)) return false;
  std::string value_type = JsonTypeOf(value);
  for (const auto& [keyword, argument] : node.schema.object_members()) {
    if (keyword == "enum" || keyword == "const" || IsPassiveKeyword(keyword) ||
        IsIgnored(node, keyword)) {
      continue;
    }
    std::string applies_to = TypeOfKeyword(keyword);
    bool applies = applies_to.empty() || applies_to == value_type ||
                   (applies_to == "number" && value_type == "integer");
    if (keyword == "type" || keyword == "nullable") {
      std::vector<std::string> allowed = AllowedTypes(node);
      bool ok = std::find(allowed.begin(), allowed.end(), value_type) != allowed.end() ||
                (value_type == "integer" &&
                 std::find(allowed.begin(), allowed.end(), "number") != allowed.end());
      if (!ok) return false;
    } else if (applies && (keyword == "minProperties" || keyword == "maxProperties")) {
      std::optional<long long> bound = CountKeyword(node, keyword.c_str());
      if (!bound) continue;
      long long size = static_cast<long long>(value.object_members().size());
      if (keyword == "minProperties" ? size < *bound : size > *bound) return false;
    } else if (applies && keyword == "uniqueItems") {
      if (!argument.is_bool() || !argument.bool_value()) continue;
      const std::vector<JsonValue>& items = value.array_items();
      for (size_t i = 0; i < items.size(); ++i) {
        for (size_t j = i + 1; j < items.size(); ++j) {
          if (JsonEquals(items[i], items[j])) return false;
        }
      }
    } else if (!applies ||
               keyword == "if" || keyword == "then" || keyword == "else" ||
               keyword == "minContains" || keyword == "maxContains") {
      continue;
    } else if (keyword == "minLength" || keyword == "maxLength") {
      std::optional<long long> bound = CountKeyword(node, keyword.c_str());
      if (!bound) continue;
      long long length = static_cast<long long>(CountCodepoints(value.string_value()));
      if (keyword == "minLength" ? length < *bound : length > *bound) return false;
    } else if (keyword == "minimum" || keyword == "maximum" || keyword == "exclusiveMinimum" ||
               keyword == "exclusiveMaximum") {
      if (!argument.is_number()) continue;  // draft-4 boolean forms are read with their bound
      double x = value.number_value(), bound = argument.number_value();
      const JsonValue* flag = node.schema.Find(keyword == "minimum" ? "exclusiveMinimum"
                                                                    : "exclusiveMaximum");
      bool exclusive = keyword.rfind("exclusive", 0) == 0 ||
                       (flag != nullptr && flag->is_bool() && flag->bool_value());
      bool is_lower = keyword == "minimum" || keyword == "exclusiveMinimum";
      bool ok = is_lower ? (exclusive ? x > bound : x >= bound) : (exclusive ? x < bound : x <= bound);
      if (!ok) return false;
    } else if (keyword == "not" && NotReadByGenerators(node)) {
      for (const JsonValue& excluded : ListedValuesOnly(argument).value_or(std::vector<JsonValue>{})) {
        if (JsonEquals(excluded, value)) return false;
      }
    } else if (keyword == "multipleOf") {
      std::optional<Decimal> divisor = MultipleOf(node);
      std::optional<Decimal> x = ParseDecimal(value.number_lexeme());
      if (divisor && x && !Divides(*divisor, *x)) return false;
    } else if (std::optional<bool> verdict = ListedValueSiblingAllows(value, node, keyword)) {
      if (!*verdict) return false;
    } else {
      Unsupported("unsupported keyword " + Quoted(keyword) + " alongside 'enum'/'const' at " +
                  ShowPointer(node.pointer));
      ignored_keywords_.insert({node.pointer, keyword});
    }
  }
  return true;
}

Fragment SchemaConverter::ConstValue(const JsonValue& value, int depth) {
  switch (value.kind()) {
    case JsonKind::kNull: return Fragment::Literal("null");
    case JsonKind::kBool: return Fragment::Literal(value.bool_value() ? "true" : "false");
    case JsonKind::kString: return Fragment::Literal(DumpJsonString(value.string_value()));
    case JsonKind::kNumber: {
      // Every spelling listed equals the value; integral values also get the forms Python
      // writes for an int and a float ("2", "2.0").
      std::vector<Fragment> spellings = {Fragment::Literal(value.number_lexeme())};
      double number = value.number_value();
      if (value.is_integral_number() && std::abs(number) < 9007199254740992.0) {
        std::string integer = std::to_string(static_cast<long long>(number));
        spellings.push_back(Fragment::Literal(integer));
        spellings.push_back(Fragment::Literal(integer + ".0"));
      }
      return Alt(spellings);
    }
    case JsonKind::kArray:
    case JsonKind::kObject: {
      bool is_array = value.is_array();
      char open = is_array ? '[' : '{', close = is_array ? ']' : '}';
      size_t size = is_array ? value.array_items().size() : value.object_members().size();
      if (size == 0) return layout_.EmptyContainer(open, close);
      if (!ContainersAllowed(depth)) return Fragment::Never();
      int layout_depth = LayoutDepth(depth);
      std::vector<Fragment> parts = {layout_.Open(open, layout_depth)};
      for (size_t i = 0; i < size; ++i) {
        if (i > 0) parts.push_back(layout_.ItemSeparator(layout_depth));
        if (is_array) {
          parts.push_back(ConstValue(value.array_items()[i], depth + 1));
        } else {
          const auto& member = value.object_members()[i];
          parts.push_back(Fragment::Literal(DumpJsonString(member.first)));
          parts.push_back(layout_.KeySeparator());
          parts.push_back(ConstValue(member.second, depth + 1));
        }
      }
      parts.push_back(layout_.Close(close, layout_depth));
      return Seq(parts);
    }
  }
  return Fragment::Never();
}

Fragment SchemaConverter::EnumOrConst(const Node& node, int depth) {
  std::vector<const JsonValue*> candidates;
  const JsonValue* constant = node.schema.Find("const");
  const JsonValue* values = node.schema.Find("enum");
  if (values != nullptr && !values->is_array()) {
    Invalid("keyword 'enum' at " + ShowPointer(node.pointer) + " must be an array");
  }
  if (constant != nullptr) {
    bool in_enum = values == nullptr;
    for (size_t i = 0; values != nullptr && i < values->array_items().size(); ++i) {
      in_enum = in_enum || JsonEquals(values->array_items()[i], *constant);
    }
    if (in_enum) candidates.push_back(constant);
  } else {
    for (const JsonValue& value : values->array_items()) candidates.push_back(&value);
  }
  // Under draft 4, `type: integer` next to the values admits only their spelling without a
  // fraction ("7", not "7.0").
  bool integer_spelling_only = false;
  if (draft4_integers_ && node.schema.Find("type") != nullptr) {
    std::vector<std::string> allowed = AllowedTypes(node);
    integer_spelling_only = std::find(allowed.begin(), allowed.end(), "integer") != allowed.end() &&
                            std::find(allowed.begin(), allowed.end(), "number") == allowed.end();
  }
  std::vector<Fragment> choices;
  for (const JsonValue* value : candidates) {
    if (!ListedValueSatisfies(*value, node.schema, node.pointer)) continue;
    if (integer_spelling_only && value->is_number()) {
      const std::string& lexeme = value->number_lexeme();
      if (lexeme.find_first_of(".eE") == std::string::npos) {
        choices.push_back(Fragment::Literal(lexeme));
      } else if (value->is_integral_number() && std::abs(value->number_value()) < 9007199254740992.0) {
        choices.push_back(Fragment::Literal(std::to_string(static_cast<long long>(value->number_value()))));
      }
      continue;
    }
    choices.push_back(ConstValue(*value, depth));
  }
  return rules_.ShareLazily(Alt(choices), [&] { return RuleHint(node.pointer); });
}

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
    if (nullable->bool_value() && std::find(types.begin(), types.end(), "null") == types.end()) {
      types.push_back("null");
    }
  }
  // Integers are numbers: with "number" allowed, "integer" adds nothing.
  if (std::find(types.begin(), types.end(), "number") != types.end()) {
    types.erase(std::remove(types.begin(), types.end(), "integer"), types.end());
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
  for (const std::string& type : AllowedTypes(node)) {
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
      CodepointDfa dfa = DfaFromExpression(part.text());
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
  if (!lower && !upper) {
    if (!MultipleOf(node)) return CommonRule("json_number");
    return NumberIntersection(node, {}, hint);
  }
  if (lower && upper) {
    int order = CompareDecimal(lower->first, upper->first);
    if (order > 0 || (order == 0 && (lower->second || upper->second))) return Fragment::Never();
  }
  std::vector<Fragment> parts;
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

Fragment SchemaConverter::StringValue(const Node& node) {
  std::string where = " at " + ShowPointer(node.pointer);
  const JsonValue* pattern = IsIgnored(node, "pattern") ? nullptr : node.schema.Find("pattern");
  const JsonValue* format = IsIgnored(node, "format") ? nullptr : node.schema.Find("format");
  if (pattern != nullptr && !pattern->is_string()) Invalid("keyword 'pattern'" + where + " must be a string");
  if (format != nullptr && !format->is_string()) Invalid("keyword 'format'" + where + " must be a string");
  std::optional<long long> min_length = CountKeyword(node, "minLength");
  std::optional<long long> max_length = CountKeyword(node, "maxLength");
  if (min_length == 0) min_length.reset();
  if (min_length && max_length && *min_length > *max_length) return Fragment::Never();
  // The languages to intersect (string bodies, JSON-escaped): a single one is written as
  // is; several are combined by the product construction (regular_language.h).
  std::vector<std::pair<std::string, std::string>> languages;  // (keyword, EBNF grammar)
  std::optional<Fragment> body, format_fragment;
  if (format != nullptr && !IsUnknownFormat(format->string_value())) {
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
      format_fragment = body = format_body;  // its rules are copied to rules_ when it is used
      languages.emplace_back("format", standalone.grammar);
    }
  }
  if (pattern != nullptr) {
    try {
      RegexOptions regex_options;
      regex_options.search = true;
      regex_options.json_string_body = true;
      std::string expression = RegexToEbnf(pattern->string_value(), regex_options);
      body = expression.empty() ? Fragment::Epsilon() : Fragment::Atom("(" + expression + ")");
      languages.emplace_back("pattern", "xg2_language_root ::= " + (expression.empty() ? std::string("\"\"") : expression) + "\n");
    } catch (const RegexError& e) {
      Unsupported("unsupported pattern" + where + ": " + e.what());
      ignored_keywords_.insert({node.pointer, "pattern"});
    }
  }
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
      first_language = DfaFromEbnf(languages[0].second, "xg2_language_root");
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
                                                    : DfaFromEbnf(languages[0].second, "xg2_language_root");
      for (size_t i = 1; i < languages.size(); ++i) {
        if (languages[i].second.empty()) continue;  // the length: last, below
        language = Product(language, DfaFromEbnf(languages[i].second, "xg2_language_root"),
                           ProductKind::kIntersection);
      }
      if (excluded) {
        language = Product(language, DfaFromExpression(StringSpellings(*excluded).text()), ProductKind::kDifference);
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

JsonSchemaConversion JsonSchemaToEbnf(std::string_view schema_json, const JsonSchemaOptions& options) {
  JsonValue document;
  try {
    document = ParseJson(schema_json);
  } catch (const JsonSyntaxError& e) {
    throw SchemaError(std::string("the schema is not valid JSON: ") + e.what());
  }
  return schema_internal::SchemaConverter(document, options).Convert();
}

std::string BuiltinJsonEbnf(const JsonSchemaOptions& options) {
  JsonValue document = JsonValue::Bool(true);
  return schema_internal::SchemaConverter(document, options).ConvertBuiltinJson();
}

}  // namespace xg2
