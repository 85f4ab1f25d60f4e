// JSON Schema -> grammar: entry points, keyword policy, references and combinators. The
// rewrites of not / if-then-else / dependencies are in schema_rewrites.cc, types and scalars in
// scalar_values.cc, objects and arrays in json_schema_objects.cc (uniqueItems and contains in
// array_uniqueness.cc), string formats in string_formats.cc, integer ranges in integer_range.cc.
#include "frontends/json_schema/json_schema_converter.h"

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

namespace {

// What the converter does with a keyword. Keywords absent from the table are unknown and
// ignored: JSON Schema gives them no validation meaning, so ignoring them is exact.
enum class Role {
  kAnnotation,   // no validation meaning (or a container such as $defs): ignored
  kHandled,      // enforced by the generators
  kUnsupported,  // an assertion the converter cannot enforce (yet): the policy error
};

// The table is asked about every member of every schema object, and its keys differ in
// length, first or last byte almost everywhere: that is all it hashes (std::hash would read
// every byte of the name).
struct KeywordHash {
  size_t operator()(const std::string& keyword) const {
    return keyword.empty() ? 0 : keyword.size() * 961 + static_cast<unsigned char>(keyword.front()) * 31 +
                                     static_cast<unsigned char>(keyword.back());
  }
};

const std::unordered_map<std::string, Role, KeywordHash>& KeywordRoles() {
  static const auto* roles = [] {
    auto* map = new std::unordered_map<std::string, Role, KeywordHash>();
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
  if (keyword.size() >= 2 && keyword[0] == 'x' && keyword[1] == '-') return Role::kAnnotation;  // an extension
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

bool IsTypeName(std::string_view name) {
  return name == "integer" || std::find(std::begin(kAllTypes), std::end(kAllTypes), name) !=
                                  std::end(kAllTypes);
}

std::string Quoted(const std::string& keyword) { return "'" + keyword + "'"; }

namespace {

size_t CountCodepoints(const std::string& utf8) {
  size_t count = 0;
  for (char c : utf8) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

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
  static const CodepointDfa* dfa = new CodepointDfa(DfaFromFragment(JsonCharFragment()));
  return *dfa;
}

// Format names that the schema's draft does not define (e.g. "path", "byte", "int64"; and
// draft 3's own names outside draft 3): they have no validation meaning (the draft's
// FormatChecker in jsonschema accepts every string for them), so the converter treats them
// as annotations.
bool IsUnknownFormat(const std::string& format, bool draft3) {
  static const std::set<std::string> kDefinedFormats = {
      "date-time", "date", "time", "duration", "email", "idn-email", "hostname",
      "idn-hostname", "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uuid",
      "uri-template", "json-pointer", "relative-json-pointer", "regex"};
  // Draft 3 only: draft 4 renamed ip-address and host-name and dropped the rest.
  static const std::set<std::string> kDraft3Formats = {"utc-millisec", "color", "style", "phone", "ip-address",
                                                       "host-name"};
  return kDefinedFormats.count(format) == 0 && (!draft3 || kDraft3Formats.count(format) == 0);
}

bool IsPassiveKeyword(const std::string& keyword) {
  std::optional<Role> role = RoleOf(keyword);
  return !role || *role == Role::kAnnotation;
}

std::string ChildPointer(const std::string& pointer, const std::string& token) {
  std::string child;
  child.reserve(pointer.size() + 1 + token.size());
  child += pointer;
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
    draft3_ = uri.find("draft-03") != std::string::npos;
    draft4_integers_ = draft3_ || uri.find("draft-04") != std::string::npos;
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
  undeclared_keys_.clear();
  active_depth_ = 0;
  merge_targets_.clear();
  merges_in_progress_.clear();
}

// Converts, then checks that every rule derives some finite string. A $ref target whose
// rule does not (its recursion never bottoms out) accepts no value; the conversion is
// redone with such targets known to be empty, until all rules are productive.
JsonSchemaConversion SchemaConverter::Convert(const CompileLimits* grammar_limits) {
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
    if (unproductive.empty()) {
      JsonSchemaConversion conversion;
      conversion.warnings = warnings_;
      if (grammar_limits != nullptr) {
        ScopedCompileLimits scope(grammar_limits);
        conversion.grammar = rules_.Lower("root");
      } else {
        conversion.ebnf = rules_.Print();
      }
      return conversion;
    }
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

JsonSchemaConversion SchemaConverter::ConvertBuiltinJson(bool build_grammar) {
  rules_.ReserveNamed("root");
  rules_.Define("root", AnyValue(0));
  JsonSchemaConversion conversion;
  if (build_grammar) {
    conversion.grammar = rules_.Lower("root");
  } else {
    conversion.ebnf = rules_.Print();
  }
  return conversion;
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
// A token without '~' is its own unescaped text: appended from the pointer in place.
std::string SchemaConverter::RuleHint(const std::string& pointer) const {
  if (!pointer.empty() && pointer[0] != '/') return "node";
  const std::string_view view(pointer);
  std::string hint;
  hint.reserve(pointer.size());
  std::string unescaped;
  size_t start = 1;
  while (start <= view.size()) {
    size_t end = view.find('/', start);
    if (end == std::string_view::npos) end = view.size();
    std::string_view token = view.substr(start, end - start);
    if (token.find('~') != std::string_view::npos) {
      if (!UnescapeJsonPointerToken(token, &unescaped)) return "node";
      token = unescaped;
    }
    if (token != "properties" && token != "$defs" && token != "definitions") {
      if (!hint.empty()) hint += '_';
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
      unsupported = value.bool_value() && !listed && !UniqueItemsTrivial(node) && !UniqueItemDomain(node) &&
                    !UniqueItemsByMatcher(node);
      if (unsupported) {
        Unsupported("unsupported keyword 'uniqueItems' at " + ShowPointer(node.pointer) +
                    ": the items are not a listed domain of at most " + std::to_string(kMaxUniqueDomain) +
                    " values (enum, const, boolean, null), nor strings, numbers or objects the matcher keeps distinct (" +
                    UniqueItemsByMatcherRefusal(node) + ")");
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
  if (auto known = resolved_references_.find(ref); known != resolved_references_.end()) {
    *target_pointer = known->second.second;
    return known->second.first;
  }
  auto resolved = [&](const JsonValue* target, const std::string& pointer) {
    *target_pointer = pointer;
    resolved_references_.emplace(ref, std::make_pair(target, pointer));
    return target;
  };
  auto where = [&] { return " at " + ShowPointer(node.pointer); };
  std::string rest = ref;
  if (!base_uri_.empty() && rest.rfind(base_uri_, 0) == 0) rest = rest.substr(base_uri_.size());
  auto identified = identifiers_.find(rest);
  if (identified != identifiers_.end()) return resolved(identified->second.first, identified->second.second);
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
      Invalid(std::string(remote ? "remote" : "unresolvable") + " $ref '" + ref + "'" + where() +
              (remote ? " (only references inside the schema are supported)" : ""));
    }
    base = found->second.first;
    base_pointer = found->second.second;
  }
  if (fragment.empty()) return resolved(base, base_pointer);
  if (fragment[0] != '/') Invalid("unresolvable $ref '" + ref + "'" + where());
  const JsonValue* target = nullptr;
  std::string pointer = base_pointer;
  try {
    target = ResolveJsonPointer(*base, fragment, /*uri_fragment=*/true);
    for (const std::string& token : SplitJsonPointer(fragment, true)) pointer = ChildPointer(pointer, token);
  } catch (const InvalidArgumentError& e) {
    Invalid("invalid $ref '" + ref + "'" + where() + ": " + e.what());
  }
  if (target == nullptr) Invalid("unresolvable $ref '" + ref + "'" + where());
  return resolved(target, pointer);
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
    // A view compares with each literal below inline (length first).
    const std::string_view name = keyword;
    if (name == "enum" || name == "const" || IsPassiveKeyword(keyword) ||
        IsIgnored(node, keyword)) {
      continue;
    }
    std::string applies_to = TypeOfKeyword(keyword);
    bool applies = applies_to.empty() || applies_to == value_type ||
                   (applies_to == "number" && value_type == "integer");
    if (name == "type" || name == "nullable") {
      std::vector<std::string> allowed = AllowedTypes(node);
      bool ok = std::find(allowed.begin(), allowed.end(), value_type) != allowed.end() ||
                (value_type == "integer" &&
                 std::find(allowed.begin(), allowed.end(), "number") != allowed.end());
      if (!ok) return false;
    } else if (applies && (name == "minProperties" || name == "maxProperties")) {
      std::optional<long long> bound = CountKeyword(node, keyword.c_str());
      if (!bound) continue;
      long long size = static_cast<long long>(value.object_members().size());
      if (name == "minProperties" ? size < *bound : size > *bound) return false;
    } else if (applies && name == "uniqueItems") {
      if (!argument.is_bool() || !argument.bool_value()) continue;
      const std::vector<JsonValue>& items = value.array_items();
      for (size_t i = 0; i < items.size(); ++i) {
        for (size_t j = i + 1; j < items.size(); ++j) {
          if (JsonEquals(items[i], items[j])) return false;
        }
      }
    } else if (!applies ||
               name == "if" || name == "then" || name == "else" ||
               name == "minContains" || name == "maxContains") {
      continue;
    } else if (name == "minLength" || name == "maxLength") {
      std::optional<long long> bound = CountKeyword(node, keyword.c_str());
      if (!bound) continue;
      long long length = static_cast<long long>(CountCodepoints(value.string_value()));
      if (name == "minLength" ? length < *bound : length > *bound) return false;
    } else if (name == "minimum" || name == "maximum" || name == "exclusiveMinimum" ||
               name == "exclusiveMaximum") {
      if (!argument.is_number()) continue;  // draft-4 boolean forms are read with their bound
      double x = value.number_value(), bound = argument.number_value();
      const JsonValue* flag = node.schema.Find(name == "minimum" ? "exclusiveMinimum"
                                                                    : "exclusiveMaximum");
      bool exclusive = keyword.rfind("exclusive", 0) == 0 ||
                       (flag != nullptr && flag->is_bool() && flag->bool_value());
      bool is_lower = name == "minimum" || name == "exclusiveMinimum";
      bool ok = is_lower ? (exclusive ? x > bound : x >= bound) : (exclusive ? x < bound : x <= bound);
      if (!ok) return false;
    } else if (name == "not" && NotReadByGenerators(node)) {
      for (const JsonValue& excluded : ListedValuesOnly(argument).value_or(std::vector<JsonValue>{})) {
        if (JsonEquals(excluded, value)) return false;
      }
    } else if (name == "multipleOf") {
      std::optional<Decimal> divisor = MultipleOf(node);
      std::optional<Decimal> x = ParseDecimal(value.number_lexeme());
      if (divisor && x && !Divides(*divisor, *x)) return false;
    } else if (name == "format" && argument.is_string() && IsUnknownFormat(argument.string_value(), draft3_)) {
      continue;  // an annotation (see IsUnknownFormat)
    } else if (std::optional<bool> verdict = name == "format" ? ListedStringHasFormat(value, argument)
                                                                  : ListedValueSiblingAllows(value, node, keyword)) {
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


}  // namespace schema_internal

namespace {

JsonSchemaConversion ConvertSchema(std::string_view schema_json, const JsonSchemaOptions& options,
                                   const CompileLimits* grammar_limits) {
  JsonValue document;
  try {
    document = ParseJson(schema_json);
  } catch (const JsonSyntaxError& e) {
    throw SchemaError(std::string("the schema is not valid JSON: ") + e.what());
  }
  return schema_internal::SchemaConverter(document, options).Convert(grammar_limits);
}

}  // namespace

JsonSchemaConversion JsonSchemaToEbnf(std::string_view schema_json, const JsonSchemaOptions& options) {
  return ConvertSchema(schema_json, options, nullptr);
}

JsonSchemaConversion JsonSchemaToGrammar(std::string_view schema_json, const JsonSchemaOptions& options,
                                         const CompileLimits& grammar_limits) {
  return ConvertSchema(schema_json, options, &grammar_limits);
}

std::string BuiltinJsonEbnf(const JsonSchemaOptions& options) {
  JsonValue document = JsonValue::Bool(true);
  return schema_internal::SchemaConverter(document, options).ConvertBuiltinJson(false).ebnf;
}

JsonSchemaConversion BuiltinJsonGrammar(const JsonSchemaOptions& options) {
  JsonValue document = JsonValue::Bool(true);
  return schema_internal::SchemaConverter(document, options).ConvertBuiltinJson(true);
}

}  // namespace xg2
