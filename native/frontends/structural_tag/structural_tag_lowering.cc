// Structural-tag IR -> grammar, built through GrammarBuilder (issue 39: no EBNF text round
// trip). Every format becomes one rule `st_<hint>_<n>` (the root rule refers to the outermost
// one); free text becomes TagDispatch rules; embedded grammars (JSON Schema conversions,
// regexes, `grammar` formats) keep the rules their frontend built, renamed
// `st_<hint>_<n>_<name>` so that names never clash. The lowering composes each rule body as a
// TagExpr (tag_expr.h) and defines the rule when the body is complete; the printed grammar lists
// the root, then the tag's own rules in the order they were completed, then the embedded
// grammars in the order they were added. GrammarBuilder::FinishInPrintedOrder numbers the tag's
// own rules; the embedded grammars, already numbered so by their frontends, are appended after
// them without renumbering (deferred_grammars.h).
//
// Special tokens: every string of the format is split into plain text and special-token
// text (SpecialTokenText::Split); the latter becomes `Token(id)`, which matches that token
// and only it, so free text never contains special tokens.
#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <tuple>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frontends/ebnf/ebnf_parser.h"
#include "frontends/json_schema/json_schema_converter.h"
#include "frontends/regex/regex_converter.h"
#include "frontends/structural_tag/deferred_grammars.h"
#include "frontends/structural_tag/structural_tag.h"
#include "frontends/structural_tag/structural_tag_token_forms.h"
#include "frontends/structural_tag/tag_expr.h"
#include "frontends/structural_tag/xml_styles.h"
#include "grammar/grammar_ast.h"
#include "grammar/grammar_builder.h"
#include "grammar/token_literal.h"
#include "support/compile_limits.h"
#include "support/error.h"

namespace xg2 {
namespace structural_tag {
namespace {

// Keywords without validation meaning: a parameter schema made of these alone accepts any value.
bool IsAnnotationKeyword(std::string_view keyword) {
  static const char* const kAnnotations[] = {"description", "title",      "default",  "examples",
                                             "$comment",    "deprecated", "readOnly", "writeOnly"};
  return std::any_of(std::begin(kAnnotations), std::end(kAnnotations),
                     [&](const char* annotation) { return keyword == annotation; });
}

std::string Where(const std::string& path) { return "at " + (path.empty() ? std::string("/") : path) + ": "; }

// Python's repr of a string, for messages ('abc').
std::string Repr(std::string_view text) { return "'" + std::string(text) + "'"; }

// A JSON value as a message shows it: strings quoted, anything else as compact JSON.
std::string Show(const JsonValue* value) {
  if (!value) return "None";
  return value->is_string() ? Repr(value->string_value()) : DumpJson(*value);
}

using E = TagExpr;

// A count of the format (at most 2^63 - 1) as a repetition bound; one past the int32 range
// stays past every repetition limit (GrammarBuilder::Repeat reports it).
int32_t Bound(int64_t count) { return static_cast<int32_t>(std::min<int64_t>(count, INT32_MAX)); }

// The classes the XML styles spell: JSON whitespace, a name's first and later characters,
// a cohere key's plain characters (anything but NUL, '"', '&', '<', '>'), and any character.
std::vector<CodepointRange> Chars(std::initializer_list<CodepointRange> ranges, bool negate = false) {
  return NormalizeRanges(std::vector<CodepointRange>(ranges), negate);
}
const std::vector<CodepointRange>& JsonSpaceChars() {
  static const std::vector<CodepointRange> kChars = Chars({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}});
  return kChars;
}

class Lowering {
 public:
  explicit Lowering(const LoweringOptions& options)
      : options_(options),
        tokens_(options, {[this](const E& body, const char* hint, int32_t max_tokens) {
                            return Rule(body, hint, max_tokens);
                          },
                          [this](const Format& format) { return Lower(format); },
                          [this](const TagFormat& tag, const E& begin) { return LowerTag(tag, &begin); }}),
        root_(builder_.AddRule("root")) {
    static const SpecialTokenText kNone;
    specials_ = options.special_tokens ? options.special_tokens : &kNone;
  }

  GrammarAst Grammar(const Format& format) {
    const E root = Lower(format);
    std::vector<RuleId> order;
    E::DefineTagRule(&builder_, root_, "root", root, &order);
    order.insert(order.end(), own_rules_.begin(), own_rules_.end());
    order.insert(order.end(), embedded_rules_.begin(), embedded_rules_.end());
    GrammarAst grammar = builder_.FinishInPrintedOrder(root_, order);
    deferred_.AppendTo(&grammar);
    return grammar;
  }

 private:
  // ---- text -----------------------------------------------------------------------------

  // `value` as juxtaposed literals and Token(id) terms, the form TagDispatch strings take
  // (the empty string: the literal "").
  std::vector<E> Pieces(std::string_view value) const {
    std::vector<E> out;
    if (value.empty()) {
      out.push_back(E::EmptyString());
      return out;
    }
    if (specials_->empty()) {
      out.push_back(E::Literal(std::string(value)));
      return out;
    }
    for (const auto& piece : specials_->Split(value)) {
      out.push_back(piece.token_id >= 0 ? E::TokenLiteral(piece.token_id) : E::Literal(std::string(piece.text)));
    }
    return out;
  }

  // An expression for the text `value` (one unit: grouped when several pieces).
  E Text(std::string_view value) const {
    std::vector<E> pieces = Pieces(value);
    return pieces.size() == 1 ? std::move(pieces[0]) : E::Group(E::Cat(std::move(pieces)));
  }

  // `value` as a TagDispatch string: its plain text, with each special token's literal spelling.
  std::string DispatchString(std::string_view value) const {
    if (specials_->empty()) return std::string(value);
    std::string out;
    for (const auto& piece : specials_->Split(value)) {
      out += piece.token_id >= 0 ? TokenLiteralBytes(piece.token_id) : std::string(piece.text);
    }
    return out;
  }

  std::vector<std::string> StringTuple(const std::vector<std::string>& values, const std::string& path) const {
    std::vector<std::string> out;
    for (const std::string& value : values) {
      if (value.empty()) throw StructuralTagError(Where(path) + "strings must not be empty");
      out.push_back(DispatchString(value));
    }
    return out;
  }

  // A special token as Token(id); an ordinary one as a one-token set (structural_tag_token_forms.h).
  E TokenTerm(const TokenFormat& token, const std::string& path) const {
    int32_t id = tokens_.Resolve(token.token, path + "/token");
    if (!specials_->HasId(id)) return tokens_.OrdinaryToken(id);
    return E::TokenLiteral(id);
  }

  E BeginText(const std::variant<std::string, TokenFormat>& begin, const std::string& path) const {
    if (const TokenFormat* token = std::get_if<TokenFormat>(&begin)) return TokenTerm(*token, path);
    return Text(std::get<std::string>(begin));
  }

  // TagDispatch(excludes=...), or with stop strings TagDispatch(stop_eos=false, stop_str=...).
  static E FreeText(std::vector<std::string> excludes, std::vector<std::string> stops = {}) {
    TagDispatchDef def;
    def.stop_eos = stops.empty();
    def.stop_strings = std::move(stops);
    def.excludes = std::move(excludes);
    return E::Dispatch(std::move(def));
  }

  // ---- rules ----------------------------------------------------------------------------

  std::string NextName(const char* hint) { return "st_" + std::string(hint) + "_" + std::to_string(++counter_); }

  // A rule of the tag's own whose body is `body` (`max_tokens` >= 0: its token budget).
  RuleId NewRule(const E& body, const char* hint, int32_t max_tokens = -1) {
    const std::string name = NextName(hint);
    const RuleId rule = builder_.AddRule(name);
    if (max_tokens >= 0) builder_.SetMaxTokens(rule, max_tokens);
    E::DefineTagRule(&builder_, rule, name, body, &own_rules_);
    return rule;
  }
  E Rule(const E& body, const char* hint, int32_t max_tokens = -1) { return E::Rule(NewRule(body, hint, max_tokens)); }

  // A rule added now and defined later (for recursive rules): DefineOwn gives it its body.
  struct Reserved {
    RuleId rule;
    std::string name;
  };
  Reserved Reserve(const char* hint) {
    std::string name = NextName(hint);
    return {builder_.AddRule(name), std::move(name)};
  }
  void DefineOwn(const Reserved& reserved, const E& body) {
    E::DefineTagRule(&builder_, reserved.rule, reserved.name, body, &own_rules_);
  }

  // Adds `grammar` with its rules renamed `prefix + name`, listed with the tag's own rules
  // (`own`) or after them (kept aside until the end, deferred_grammars.h); returns its root rule.
  E EmbedGrammar(GrammarAst grammar, const std::string& prefix, bool own) {
    const RuleId root = grammar.root_rule;
    std::vector<RuleId> rules =
        own ? builder_.Embed(std::move(grammar), prefix) : deferred_.Reserve(std::move(grammar), prefix, &builder_);
    std::vector<RuleId>& order = own ? own_rules_ : embedded_rules_;
    order.insert(order.end(), rules.begin(), rules.end());
    return E::Rule(rules[root]);
  }

  // A rule whose body is the regex `pattern` (compile_regex semantics), as the nodes the regex
  // frontend builds (RegexToGrammar), embedded like a JSON schema's grammar.
  E RegexRule(const std::string& pattern, const char* hint) {
    GrammarBuilder builder;
    const ExprId body = RegexToGrammar(pattern, RegexOptions{}, &builder);
    const RuleId root = builder.AddRule("root");
    builder.DefineRule(root, body);
    GrammarAst grammar = builder.Finish(root);
    return EmbedGrammar(std::move(grammar), NextName(hint) + "_", false);
  }

  // Adds a user's whole grammar (EBNF text: the user's input, parsed once) with its rules
  // renamed; returns its root rule. One that holds tag dispatches or token sets is listed
  // with the tag's own rules, any other after them (as the JSON Schema conversions are).
  E EmbedUserGrammar(std::string_view ebnf, const char* hint) {
    std::string prefix = NextName(hint) + "_";
    GrammarAst ast = ParseEbnf(ebnf, "root");
    const bool own = !ast.tag_dispatches.empty() || !ast.token_sets.empty();
    return EmbedGrammar(std::move(ast), prefix, own);
  }

  // ---- formats --------------------------------------------------------------------------

  E Lower(const Format& format) {
    const std::string& where = format.path;
    return std::visit([&](const auto& body) { return LowerBody(body, where); }, format.body);
  }

  E LowerBody(const ConstStringFormat& format, const std::string&) { return Text(format.value); }

  E LowerBody(const JsonSchemaFormat& format, const std::string& where) {
    const XmlStyle* xml = FindXmlStyle(format.style);
    const JsonValue* schema = format.schema;
    if (schema->is_bool()) {
      if (!schema->bool_value()) throw StructuralTagError(Where(where) + "the JSON schema `false` matches nothing");
      static const JsonValue kEmpty = JsonValue::Object({});
      schema = &kEmpty;
    }
    if (!xml) {
      for (const std::string& excluded : format.excludes) {
        if (excluded.empty()) {
          throw StructuralTagError(Where(where + "/excludes") + "excluded strings must not be empty");
        }
      }
      try {
        return JsonValueRule(*schema, format.max_whitespace, format.any_order, format.excludes);
      } catch (const SchemaError& error) {
        RethrowLocated(error, *schema);
      }
    }
    Xml xml_state{xml, Whitespace(format.max_whitespace), format.max_whitespace, format.any_order, {}, {}};
    for (const std::string& excluded : format.excludes) {
      if (excluded.empty()) throw StructuralTagError(Where(where + "/excludes") + "excluded strings must not be empty");
      if (xml->family != XmlFamily::kFlat) {
        throw StructuralTagError(Where(where + "/excludes") + "style " + Repr(xml->name) + " takes no excludes");
      }
      if (IsJsonSpace(excluded.front()) || IsJsonSpace(excluded.back())) {
        throw StructuralTagError(Where(where + "/excludes") + "an XML style's excluded string " + Repr(excluded) +
                                 " must not start or end with whitespace");
      }
    }
    xml_state.excludes = format.excludes;
    if (!schema->is_object()) throw StructuralTagError(Where(where) + "XML-style arguments need an object schema");
    for (const char* key : {"$defs", "definitions"}) {
      if (const JsonValue* value = schema->Find(key)) xml_state.definitions.emplace_back(key, *value);
    }
    const JsonValue* type = schema->Find("type");
    if (type && !(type->is_string() && type->string_value() == "object")) {
      if (xml->family == XmlFamily::kFlat) return XmlRootValue(xml_state, *schema, where);
      throw UnsupportedSchemaError(Where(where) + "XML-style arguments need an object schema, got type " + Show(type));
    }
    return XmlObject(xml_state, *schema, "", where);
  }

  // ---- schema errors a tool author can act on ---------------------------------------------

  // Rethrows a JSON Schema error (same type) with its pointers placed under `pointer` (where the
  // converted schema sits in the arguments schema). "accepts no JSON value" at the root names
  // the deepest property or items schema that accepts nothing by itself.
  [[noreturn]] void RethrowLocated(const SchemaError& error, const JsonValue& schema, const std::string& pointer = "") {
    std::string message = error.what();
    static const std::string kEmptyRoot = "the schema at / accepts no JSON value";
    if (message.compare(0, kEmptyRoot.size(), kEmptyRoot) == 0) {
      std::string located = LocateEmpty(schema, Definitions(schema), 0);
      std::string inner = pointer + located;
      static const size_t kPrefix = std::string("the schema at /").size();
      message = "the schema at " + (inner.empty() ? std::string("/") : inner) + message.substr(kPrefix);
      const JsonValue* culprit = located.empty() ? &schema : ResolveJsonPointer(schema, located);
      if (culprit && culprit->is_object() && (culprit->Find("enum") || culprit->Find("const"))) {
        message += " (no value its enum/const lists satisfies its other keywords)";
      }
    } else if (!pointer.empty()) {
      std::string rebased;
      size_t from = 0;
      for (size_t at = message.find(" at /"); at != std::string::npos; at = message.find(" at /", from)) {
        rebased.append(message, from, at + 4 - from);
        char next = at + 5 < message.size() ? message[at + 5] : ' ';
        bool root = next == ' ' || next == ':' || next == ',' || next == ')';
        rebased += pointer;
        from = root ? at + 5 : at + 4;
      }
      message = rebased + message.substr(from);
    }
    Rethrow(error, message);
  }

  [[noreturn]] static void Rethrow(const SchemaError& error, const std::string& message) {
    if (dynamic_cast<const UnsupportedSchemaError*>(&error)) throw UnsupportedSchemaError(message);
    if (dynamic_cast<const StructuralTagError*>(&error)) throw StructuralTagError(message);
    throw SchemaError(message);
  }

  static std::vector<JsonValue::Member> Definitions(const JsonValue& schema) {
    std::vector<JsonValue::Member> definitions;
    if (!schema.is_object()) return definitions;
    for (const char* key : {"$defs", "definitions"}) {
      if (const JsonValue* value = schema.Find(key)) definitions.emplace_back(key, *value);
    }
    return definitions;
  }

  bool AcceptsNothing(const JsonValue& schema) const {
    JsonSchemaOptions options;
    options.strict_mode = true;
    options.lenient = false;
    try {
      JsonSchemaToEbnf(DumpJson(schema), options);
      return false;
    } catch (const SchemaError& error) {
      return std::string(error.what()).find("accepts no JSON value") != std::string::npos;
    }
  }

  // The pointer (relative to `schema`) of the deepest property/items schema that accepts no
  // value by itself; empty when no such child exists.
  std::string LocateEmpty(const JsonValue& schema, const std::vector<JsonValue::Member>& definitions, int depth) {
    if (!schema.is_object() || depth > 32) return "";
    Xml scope{nullptr, E::Nothing(), std::nullopt, false, {}, definitions};
    std::vector<std::pair<std::string, const JsonValue*>> children;
    if (const JsonValue* properties = schema.Find("properties"); properties && properties->is_object()) {
      for (const auto& [key, child] : properties->object_members()) {
        children.emplace_back("/properties/" + EscapeJsonPointerToken(key), &child);
      }
    }
    if (const JsonValue* items = schema.Find("items"); items && items->is_object()) {
      children.emplace_back("/items", items);
    }
    for (const auto& [step, child] : children) {
      if (AcceptsNothing(WithDefinitions(scope, *child))) return step + LocateEmpty(*child, definitions, depth + 1);
    }
    return "";
  }

  // The tool a tag calls, as its begin string spells it (empty when it does not).
  static std::string ToolName(const std::string& begin) {
    struct Marker {
      const char* before;
      const char* stops;  // the name ends at the first of these
    };
    static const Marker kMarkers[] = {
        {"\"name\": \"", "\""}, {"\"name\":\"", "\""}, {"name=\"", "\""}, {"tool=\"", "\""},
        {"<function=", ">"},    {"functions.", ":<| "}, {"\xEF\xBD\x9Ctool\xE2\x96\x81sep\xEF\xBD\x9C>", "\n<"},
        {"<tool_call>", "\n<{ "},
    };
    for (const Marker& marker : kMarkers) {
      size_t at = begin.find(marker.before);
      if (at == std::string::npos) continue;
      size_t start = at + std::strlen(marker.before);
      std::string name = begin.substr(start, begin.find_first_of(marker.stops, start) - start);
      if (!name.empty()) return name;
    }
    return "";
  }

  [[noreturn]] static void RethrowForTool(const SchemaError& error, const TagFormat& tag) {
    const std::string* begin = std::get_if<std::string>(&tag.begin);
    std::string name = begin ? ToolName(*begin) : "";
    if (const SequenceFormat* sequence = std::get_if<SequenceFormat>(&tag.content->body); name.empty() && sequence) {
      // Cohere names the tool in constant text after a call id.
      std::string constants;
      for (const FormatPtr& element : sequence->elements) {
        if (const auto* text = std::get_if<ConstStringFormat>(&element->body)) constants += text->value;
      }
      name = ToolName(constants);
    }
    std::string who = name.empty() ? "tag " + Repr(begin ? *begin : std::string("<token>")) : "tool " + Repr(name);
    Rethrow(error, who + " (structural tag at " + tag.path + "/content): " + error.what());
  }

  // ---- XML-style arguments (xml_styles.h) --------------------------------------------------

  struct Xml {
    const XmlStyle* style;
    E space;  // one whitespace run
    std::optional<int64_t> max_whitespace;
    bool any_order;
    std::vector<std::string> excludes;  // flat styles only
    std::vector<JsonValue::Member> definitions;
  };

  static bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

  // [ \t\n\r]{0,N}, or [ \t\n\r]* without a bound.
  static E Whitespace(std::optional<int64_t> max_whitespace) {
    const int32_t most = max_whitespace ? static_cast<int32_t>(*max_whitespace) : -1;
    return E::Repeat(E::CharClass(JsonSpaceChars()), 0, most);
  }

  // Raw text up to (and including) the first `close`; `excludes` may not occur in it.
  // With excludes the close is outside the free text, where no excluded string is looked for
  // (the XML wrappers are never part of a match).
  E RawText(const std::string& close, const std::vector<std::string>& excludes) {
    if (excludes.empty()) return Rule(FreeText({}, {DispatchString(close)}), "xml_text");
    std::vector<std::string> forbidden = excludes;
    forbidden.push_back(close);
    return Rule(E::Cat({FreeText(StringTuple(forbidden, "")), Text(close)}), "xml_text");
  }

  // The member's schema with the argument object's $defs / definitions (its own keys win).
  JsonValue WithDefinitions(const Xml& xml, const JsonValue& member) const {
    if (xml.definitions.empty() || !member.is_object()) return member;
    std::vector<JsonValue::Member> merged = xml.definitions;
    for (const auto& [key, value] : member.object_members()) {
      auto same = std::find_if(merged.begin(), merged.end(), [&key = key](const auto& m) { return m.first == key; });
      if (same != merged.end()) {
        same->second = value;
      } else {
        merged.emplace_back(key, value);
      }
    }
    return JsonValue::Object(std::move(merged));
  }

  // A JSON value of `member`; schema errors name the member's pointer (`pointer`).
  E MemberJson(const Xml& xml, const JsonValue& member, const std::string& pointer) {
    JsonValue schema = WithDefinitions(xml, member);
    try {
      return JsonValueRule(schema, xml.max_whitespace, false, xml.excludes);
    } catch (const SchemaError& error) {
      RethrowLocated(error, schema, pointer);
    }
  }

  // A JSON value of one of the JSON types `types`, without further constraint.
  E AnyJsonOf(const std::vector<const char*>& types, std::optional<int64_t> max_whitespace,
              const std::vector<std::string>& excludes = {}) {
    std::vector<JsonValue> names;
    for (const char* t : types) names.push_back(JsonValue::String(t));
    return JsonValueRule(JsonValue::Object({{"type", JsonValue::Array(std::move(names))}}), max_whitespace, false,
                         excludes);
  }

  // The kind of a member's schema, as the XML styles tell values apart.
  // A flat style's schema that is not an object: one parameter value on its own, spelled as
  // inside a member but without the member's wrapper (SGLang's Kimi-K3 tags give qwen_xml a
  // string schema per argument this way). As xgrammar 0.2.8: no whitespace around it; raw
  // text may not contain the style's value close or an excluded string.
  E XmlRootValue(const Xml& xml, const JsonValue& schema, const std::string& where) {
    switch (KindOf(schema)) {
      case ValueKind::kRawString: {
        RejectStringLimits(schema, where);
        std::vector<std::string> forbidden = xml.excludes;
        forbidden.push_back(xml.style->close);
        return Rule(FreeText(StringTuple(forbidden, "")), "xml_text");
      }
      case ValueKind::kStringChoices:
        return Alternatives(StringChoices(schema, xml.excludes, where));
      case ValueKind::kPatternString: {
        RejectStringLimits(schema, where);
        const JsonValue* pattern = schema.Find("pattern");
        if (!pattern->is_string()) throw StructuralTagError(Where(where + "/pattern") + "pattern must be a string");
        return RegexRule(pattern->string_value(), "xml_pattern");
      }
      case ValueKind::kUntyped:
      case ValueKind::kJson:
        break;
    }
    try {
      return JsonValueRule(schema, xml.max_whitespace, false, xml.excludes);
    } catch (const SchemaError& error) {
      RethrowLocated(error, schema);
    }
  }

  enum class ValueKind { kRawString, kStringChoices, kPatternString, kUntyped, kJson };

  static ValueKind KindOf(const JsonValue& member) {
    if (member.is_bool()) return ValueKind::kUntyped;
    bool annotated_only = std::all_of(member.object_members().begin(), member.object_members().end(),
                                      [](const auto& m) { return IsAnnotationKeyword(m.first); });
    if (annotated_only) return ValueKind::kUntyped;
    const JsonValue* type = member.Find("type");
    bool string_typed = type && type->is_string() && type->string_value() == "string";
    const JsonValue* choices = member.Find("enum");
    const JsonValue* constant = member.Find("const");
    if ((string_typed || !type) && (choices || constant)) {
      bool all_strings = constant ? constant->is_string() : choices->is_array();
      if (choices && choices->is_array()) {
        for (const JsonValue& v : choices->array_items()) all_strings = all_strings && v.is_string();
      }
      if (all_strings) return ValueKind::kStringChoices;
    }
    if (!string_typed) return ValueKind::kJson;
    if (member.Find("pattern")) return ValueKind::kPatternString;
    return ValueKind::kRawString;
  }

  // The const/enum strings of `member` without those containing an excluded string.
  std::vector<std::string> StringChoices(const JsonValue& member, const std::vector<std::string>& excludes,
                                         const std::string& where) const {
    std::vector<std::string> values;
    if (const JsonValue* constant = member.Find("const")) {
      values.push_back(constant->string_value());
    } else {
      for (const JsonValue& v : member.Find("enum")->array_items()) values.push_back(v.string_value());
    }
    std::vector<std::string> kept;
    for (const std::string& v : values) {
      bool excluded = std::any_of(excludes.begin(), excludes.end(),
                                  [&](const std::string& e) { return v.find(e) != std::string::npos; });
      if (!excluded) kept.push_back(v);
    }
    if (kept.empty()) throw SchemaError(Where(where) + "no const/enum string is left to choose");
    return kept;
  }

  E Alternatives(const std::vector<std::string>& values) const {
    std::vector<E> texts;
    for (const std::string& v : values) texts.push_back(Text(v));
    return E::Group(E::Or(std::move(texts)));
  }

  static void RejectStringLimits(const JsonValue& member, const std::string& where) {
    static const char* const kLimits[] = {"contentEncoding", "format", "maxLength", "minLength"};  // sorted
    std::string limits;
    for (const char* key : kLimits) {
      if (member.Find(key)) limits += (limits.empty() ? "" : ", ") + std::string(key);
    }
    if (!limits.empty()) throw UnsupportedSchemaError(Where(where) + "an XML string value cannot enforce " + limits);
  }

  // ("string" | "number" | "integer" | "boolean" | "object" | "array" | "null")
  static E AnyJsonTypeName() {
    std::vector<E> names;
    for (const char* name : {"string", "number", "integer", "boolean", "object", "array", "null"}) {
      names.push_back(E::Literal(name));
    }
    return E::Group(E::Or(std::move(names)));
  }

  // A flat style's member: `name` is the member's name (a literal or a name rule).
  E FlatMember(const Xml& xml, const E& name, const JsonValue& member, const std::string& pointer,
               const std::string& where) {
    const XmlStyle& style = *xml.style;
    const E& ws = xml.space;
    std::vector<E> after_name;
    for (const std::string& piece : style.after_name) {
      if (!after_name.empty()) after_name.push_back(ws);
      after_name.push_back(Text(piece));
    }
    auto head = [&](const E& attribute) {
      return E::Cat({Text(style.open), name, E::Cat(after_name), attribute});
    };
    auto type_name = [&](const std::string& t) { return Text("\" type=\"" + t + "\"<|sep|>"); };
    auto string_attr = [&](bool is_string) {
      if (style.attribute == XmlTypeAttribute::kStringFlag) {
        return Text(std::string("\" string=\"") + (is_string ? "true" : "false") + "\">");
      }
      if (style.attribute == XmlTypeAttribute::kTypeName) return type_name("string");
      return E::Nothing();
    };
    const E close = Text(style.close);
    if (member.is_bool() && !member.bool_value()) {
      throw StructuralTagError(Where(where) + "the JSON schema `false` matches nothing");
    }
    switch (KindOf(member)) {
      case ValueKind::kRawString:
        RejectStringLimits(member, where);
        return Rule(E::Cat({head(string_attr(true)), RawText(style.close, xml.excludes)}), "xml_member");
      case ValueKind::kStringChoices: {
        E choices = Alternatives(StringChoices(member, xml.excludes, where));
        if (style.space_around_choices) choices = E::Cat({ws, choices, ws});
        return Rule(E::Cat({head(string_attr(true)), choices, close}), "xml_member");
      }
      case ValueKind::kPatternString: {
        RejectStringLimits(member, where);
        const JsonValue* pattern = member.Find("pattern");
        if (!pattern->is_string()) throw StructuralTagError(Where(where + "/pattern") + "pattern must be a string");
        E value = RegexRule(pattern->string_value(), "xml_pattern");
        return Rule(E::Cat({head(string_attr(true)), ws, value, ws, close}), "xml_member");
      }
      case ValueKind::kUntyped: {
        E raw = RawText(style.close, xml.excludes);
        if (style.attribute == XmlTypeAttribute::kStringFlag) {
          E json = AnyJsonOf({"number", "boolean", "null", "array", "object"}, xml.max_whitespace, xml.excludes);
          E value = E::Group(E::Or({E::Cat({string_attr(true), raw}), E::Cat({string_attr(false), ws, json, ws, close})}));
          return Rule(E::Cat({head(E::Nothing()), value}), "xml_member");
        }
        E attribute = E::Nothing();
        if (style.attribute == XmlTypeAttribute::kTypeName) {
          attribute = E::Cat({Text("\" type=\""), AnyJsonTypeName(), Text("\"<|sep|>")});
        }
        E json = AnyJsonOf({"array", "object"}, xml.max_whitespace, xml.excludes);
        return Rule(E::Cat({head(attribute), E::Group(E::Or({raw, E::Cat({ws, json, ws, close})}))}), "xml_member");
      }
      case ValueKind::kJson:
        break;
    }
    E attribute = E::Nothing();
    if (style.attribute == XmlTypeAttribute::kStringFlag) attribute = string_attr(false);
    if (style.attribute == XmlTypeAttribute::kTypeName) {
      const JsonValue* type = member.Find("type");
      std::string t = type && type->is_string() ? type->string_value() : "";
      if (t == "integer") t = "number";
      attribute = t.empty() ? E::Cat({Text("\" type=\""), AnyJsonTypeName(), Text("\"<|sep|>")}) : type_name(t);
    }
    E json = MemberJson(xml, member, pointer);
    return Rule(E::Cat({head(attribute), ws, json, ws, close}), "xml_member");
  }

  // minimax_m3: MARK<key>value MARK</key>, the value XML again.
  E M3Member(const Xml& xml, const std::string& key, const JsonValue& member, const std::string& pointer,
             const std::string& where) {
    const std::string& mark = xml.style->open;
    const E open = Text(mark + "<" + key + ">");
    const E close = Text(mark + "</" + key + ">");
    if (member.is_bool()) throw UnsupportedSchemaError(Where(where) + "minimax_m3_xml needs a typed schema");
    ValueKind kind = KindOf(member);
    if (kind == ValueKind::kUntyped) throw UnsupportedSchemaError(Where(where) + "minimax_m3_xml needs a typed schema");
    if (kind == ValueKind::kRawString) {
      RejectStringLimits(member, where);
      E raw = RawText(mark, {});
      return Rule(E::Cat({open, raw, Text("</" + key + ">")}), "xml_member");
    }
    if (kind == ValueKind::kStringChoices) {
      return Rule(E::Cat({open, Alternatives(StringChoices(member, {}, where)), close}), "xml_member");
    }
    if (kind == ValueKind::kPatternString) {
      throw UnsupportedSchemaError(Where(where) + "minimax_m3_xml string patterns are not supported");
    }
    const JsonValue* type = member.Find("type");
    std::string t = type && type->is_string() ? type->string_value() : "";
    if (t == "object") return Rule(E::Cat({open, XmlObject(xml, member, pointer, where), close}), "xml_member");
    if (t == "array") return Rule(E::Cat({open, M3Array(xml, member, pointer, where), close}), "xml_member");
    if (t == "integer" || t == "number" || t == "boolean" || t == "null") {
      return Rule(E::Cat({open, MemberJson(xml, member, pointer), close}), "xml_member");
    }
    throw UnsupportedSchemaError(Where(where) + "minimax_m3_xml supports typed values (string, integer, number, "
                                                "boolean, null, object, array), got " + Show(&member));
  }

  E M3Array(const Xml& xml, const JsonValue& array, const std::string& pointer, const std::string& where) {
    RejectArrayLimits(array, where);
    const JsonValue* items = array.Find("items");
    if (!items || !items->is_object()) throw UnsupportedSchemaError(Where(where) + "minimax_m3_xml arrays need items");
    const E item = M3Member(xml, "item", *items, pointer + "/items", where + "/items");
    const E& ws = xml.space;
    E more = E::Repeat(E::Group(E::Cat({ws, item})), 0, -1);
    return Rule(E::Or({E::EmptyString(), E::Cat({ws, item, more, ws})}), "xml_array");
  }

  static void RejectArrayLimits(const JsonValue& array, const std::string& where) {
    for (const char* key : {"contains", "maxItems", "minItems", "prefixItems", "uniqueItems"}) {
      if (array.Find(key)) {
        throw UnsupportedSchemaError(Where(where) + "XML arrays cannot enforce " + std::string(key));
      }
    }
  }

  // cohere: ` type="K">` and the value with its close; a member puts `<cofl:value name="KEY"` before.
  E CohereTyped(const Xml& xml, const JsonValue& member, const std::string& pointer, const std::string& where) {
    const E& ws = xml.space;
    const E close = Text(xml.style->close);
    auto typed = [&](const char* kind) { return Text(std::string(" type=\"") + kind + "\">"); };
    if (member.is_bool() && !member.bool_value()) {
      throw StructuralTagError(Where(where) + "the JSON schema `false` matches nothing");
    }
    ValueKind kind = KindOf(member);
    if (kind == ValueKind::kUntyped) return CohereAnyValue(xml);
    if (kind == ValueKind::kRawString) {
      RejectStringLimits(member, where);
      return Rule(E::Cat({typed("raw"), RawText(xml.style->close, {})}), "xml_value");
    }
    if (kind == ValueKind::kPatternString) {
      throw UnsupportedSchemaError(Where(where) + "cohere_xml string patterns are not supported");
    }
    const JsonValue* choices = member.Find("enum");
    const JsonValue* constant = member.Find("const");
    const JsonValue* type = member.Find("type");
    std::string t = type && type->is_string() ? type->string_value() : "";
    // Typed choices other than strings are JSON values of that type (the converter checks them).
    if ((choices || constant) && (!type || t == "string")) {
      std::vector<const JsonValue*> values;
      if (constant) values.push_back(constant);
      if (choices && choices->is_array()) {
        for (const JsonValue& v : choices->array_items()) values.push_back(&v);
      }
      std::vector<E> raw;
      std::vector<E> json;
      for (const JsonValue* v : values) {
        (v->is_string() ? raw : json).push_back(Text(v->is_string() ? v->string_value() : DumpJson(*v)));
      }
      std::vector<E> out;
      if (!raw.empty()) out.push_back(E::Cat({typed("raw"), ws, E::Group(E::Or(std::move(raw))), ws, close}));
      if (!json.empty()) out.push_back(E::Cat({typed("json"), ws, E::Group(E::Or(std::move(json))), ws, close}));
      if (out.empty()) throw SchemaError(Where(where) + "enum must list values");
      return Rule(E::Or(std::move(out)), "xml_value");
    }
    if (t == "object") {
      const JsonValue* properties = member.Find("properties");
      E body = properties && properties->is_object() && !properties->object_members().empty()
                   ? XmlObject(xml, member, pointer, where)
                   : CohereAnyObject(xml);
      return Rule(E::Cat({typed("dict"), ws, body, ws, close}), "xml_value");
    }
    if (t == "array") {
      RejectArrayLimits(member, where);
      const JsonValue* items = member.Find("items");
      E item = items && items->is_object() ? CohereTyped(xml, *items, pointer + "/items", where + "/items")
                                           : CohereAnyValue(xml);
      E list = Rule(E::Repeat(E::Group(E::Cat({Text(xml.style->open), item})), 0, -1), "xml_list");
      return Rule(E::Cat({typed("list"), ws, list, ws, close}), "xml_value");
    }
    if (t == "integer" || t == "number" || t == "boolean" || t == "null") {
      return Rule(E::Cat({typed("json"), ws, MemberJson(xml, member, pointer), ws, close}), "xml_value");
    }
    throw UnsupportedSchemaError(Where(where) + "cohere_xml supports typed values (string, integer, number, "
                                                "boolean, null, object, array) or untyped ones, got " + Show(&member));
  }

  // Any cohere value, any dict and any list: three mutually recursive rules, written once.
  E CohereAnyValue(const Xml& xml) {
    if (cohere_any_value_ >= 0) return E::Rule(cohere_any_value_);
    const E& ws = xml.space;
    const E close = Text(xml.style->close);
    const Reserved value = Reserve("xml_any_value");
    const Reserved object = Reserve("xml_any_dict");
    const Reserved list = Reserve("xml_any_list");
    cohere_any_value_ = value.rule;
    std::vector<E> key_chars = {E::CharClass(Chars({{0, 0}, {'"', '"'}, {'&', '&'}, {'<', '<'}, {'>', '>'}}, true))};
    for (const char* escape : {"&amp;", "&lt;", "&gt;", "&quot;"}) key_chars.push_back(E::Literal(escape));
    const E key = Rule(E::Repeat(E::Group(E::Or(std::move(key_chars))), 1, -1), "xml_key");
    const E scalar = AnyJsonOf({"number", "boolean", "null"}, xml.max_whitespace);
    const E raw = RawText(xml.style->close, {});
    DefineOwn(value, E::Or({E::Cat({Text(" type=\"raw\">"), raw}),
                            E::Cat({Text(" type=\"json\">"), ws, scalar, ws, close}),
                            E::Cat({Text(" type=\"dict\">"), ws, E::Rule(object.rule), ws, close}),
                            E::Cat({Text(" type=\"list\">"), ws, E::Rule(list.rule), ws, close})}));
    const E member = E::Cat({Text(xml.style->open + " name=\""), key, E::Literal("\""), E::Rule(value.rule)});
    DefineOwn(object, E::Or({E::Cat({ws, member, E::Repeat(E::Group(E::Cat({ws, member})), 0, -1), ws}), ws}));
    DefineOwn(list, E::Repeat(E::Group(E::Cat({Text(xml.style->open), E::Rule(value.rule)})), 0, -1));
    cohere_any_object_ = object.rule;
    return E::Rule(value.rule);
  }

  E CohereAnyObject(const Xml& xml) {
    CohereAnyValue(xml);
    return E::Rule(cohere_any_object_);
  }

  static std::string XmlEscapeAttribute(const std::string& text) {
    std::string out;
    for (char c : text) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        default: out.push_back(c);
      }
    }
    return out;
  }

  // Any members of a flat style (an object schema that declares no properties).
  E FlatAnyMember(const Xml& xml, const std::string& where) {
    static const std::vector<CodepointRange> kFirst = Chars({{'a', 'z'}, {'A', 'Z'}, {'_', '_'}});
    static const std::vector<CodepointRange> kLater = Chars({{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {'_', '_'}});
    E name = Rule(E::Cat({E::CharClass(kFirst), E::Repeat(E::CharClass(kLater), 0, -1)}), "xml_name");
    static const JsonValue kUntyped = JsonValue::Object({});
    return FlatMember(xml, name, kUntyped, "", where);
  }

  // The alternatives `items`; none: nothing (an empty group).
  static E AnyOf(std::vector<E> items) { return items.empty() ? E::Nothing() : E::Or(std::move(items)); }

  // An argument object: its members in schema order (any order with any_order), each after a
  // whitespace run, then a whitespace run. With no member required it may be empty: only
  // whitespace, or nothing at all in minimax_m3.
  E XmlObject(const Xml& xml, const JsonValue& schema, const std::string& pointer, const std::string& where) {
    const XmlStyle& style = *xml.style;
    const E& ws = xml.space;
    const E empty = style.family == XmlFamily::kMinimaxM3 ? E::EmptyString() : ws;
    static const char* const kUnsupported[] = {
        "$ref", "allOf", "anyOf", "dependentRequired", "dependentSchemas", "if", "not", "oneOf",
        "patternProperties", "propertyNames",
    };  // sorted, as the message lists them
    std::string unsupported;
    for (const char* key : kUnsupported) {
      if (schema.Find(key)) unsupported += (unsupported.empty() ? "" : ", ") + std::string(key);
    }
    if (!unsupported.empty()) {
      throw UnsupportedSchemaError(Where(where) + "XML-style arguments do not support " + unsupported +
                                   " on the object");
    }
    static const JsonValue kNoMembers = JsonValue::Object({});
    const JsonValue* properties = schema.Find("properties");
    if (!properties || properties->is_null()) properties = &kNoMembers;
    if (!properties->is_object()) {
      throw StructuralTagError(Where(where + "/properties") + "properties must be an object");
    }
    std::set<std::string> required;
    if (const JsonValue* names = schema.Find("required"); names && !names->is_null()) {
      if (!names->is_array()) throw StructuralTagError(Where(where + "/required") + "required must be an array");
      for (const JsonValue& name : names->array_items()) {
        if (!name.is_string()) throw StructuralTagError(Where(where + "/required") + "required must list strings");
        required.insert(name.string_value());
      }
    }
    std::string missing;
    for (const std::string& name : required) {
      if (!properties->Find(name)) missing += (missing.empty() ? "" : ", ") + Repr(name);
    }
    if (!missing.empty()) {
      throw UnsupportedSchemaError(Where(where) + "required members [" + missing + "] have no schema in properties");
    }
    if (properties->object_members().empty()) {
      if (style.family == XmlFamily::kMinimaxM3) {
        throw UnsupportedSchemaError(Where(where) + "minimax_m3_xml needs declared properties");
      }
      E member = style.family == XmlFamily::kCohere ? CohereAnyObject(xml) : FlatAnyMember(xml, where);
      if (style.family == XmlFamily::kCohere) return member;
      return Rule(E::Or({E::Cat({ws, member, E::Repeat(E::Group(E::Cat({ws, member})), 0, -1), ws}), ws}), "xml_args");
    }
    std::vector<E> items;
    std::vector<bool> is_required;
    for (const auto& [key, member] : properties->object_members()) {
      std::string member_pointer = pointer + "/properties/" + EscapeJsonPointerToken(key);
      std::string member_where = where + "/properties/" + EscapeJsonPointerToken(key);
      E item = E::Nothing();
      try {
        if (style.family == XmlFamily::kFlat) {
          item = FlatMember(xml, Text(key), member, member_pointer, member_where);
        } else if (style.family == XmlFamily::kMinimaxM3) {
          item = M3Member(xml, key, member, member_pointer, member_where);
        } else {
          E name = Text(style.open + " name=\"" + XmlEscapeAttribute(key) + "\"");
          item = Rule(E::Cat({name, CohereTyped(xml, member, member_pointer, member_where)}), "xml_member");
        }
      } catch (const SchemaError& error) {
        // An optional member no value can fill is never written (excludes can do that).
        bool empty = std::string(error.what()).find("accepts no JSON value") != std::string::npos;
        if (empty && !required.count(key) && !dynamic_cast<const UnsupportedSchemaError*>(&error)) continue;
        throw;
      }
      items.push_back(std::move(item));
      is_required.push_back(required.count(key) > 0);
    }
    if (xml.any_order) {
      int64_t least = static_cast<int64_t>(required.size());
      if (const JsonValue* min = schema.Find("minProperties"); min && min->is_number()) {
        least = std::max<int64_t>(least, static_cast<int64_t>(min->number_value()));
      }
      std::optional<int64_t> most;
      if (const JsonValue* max = schema.Find("maxProperties"); max && max->is_number()) {
        most = static_cast<int64_t>(max->number_value());
      }
      const E any = Rule(AnyOf(items), "xml_item");
      const int32_t more_min = Bound(std::max<int64_t>(least - 1, 0));
      const int32_t more_max = most ? Bound(std::max<int64_t>(*most - 1, 0)) : -1;
      if (most && *most < std::max<int64_t>(least, 1)) {
        if (least > 0) throw SchemaError(Where(where) + "the object needs more members than maxProperties allows");
        return Rule(empty, "xml_args");
      }
      E body = E::Cat({ws, any, E::Repeat(E::Group(E::Cat({ws, any})), more_min, more_max), ws});
      return Rule(least > 0 ? body : E::Or({body, empty}), "xml_args");
    }
    bool any_required = std::find(is_required.begin(), is_required.end(), true) != is_required.end();
    // rest[i]: the members after i, each optional unless required.
    std::vector<E> rest(items.size() + 1, E::Nothing());
    for (size_t i = items.size(); i-- > 0;) {
      E piece = E::Cat({ws, items[i]});
      if (!is_required[i]) piece = E::Repeat(E::Group(piece), 0, 1);
      rest[i] = E::Cat({piece, rest[i + 1]});
    }
    if (any_required) return Rule(E::Cat({rest[0], ws}), "xml_args");
    std::vector<E> first;  // the first member present, then the rest
    for (size_t i = 0; i < items.size(); ++i) first.push_back(E::Cat({items[i], rest[i + 1]}));
    return Rule(E::Or({E::Cat({ws, E::Group(AnyOf(std::move(first))), ws}), empty}), "xml_args");
  }

  // Identical schemas (one tool under several tag spellings, as Harmony has) share one
  // embedded grammar: keyed by the schema text, the whitespace bound and the member order.
  E JsonValueRule(const JsonValue& schema, std::optional<int64_t> max_whitespace, bool any_order = false,
                  const std::vector<std::string>& excludes = {}) {
    std::string text = DumpJson(schema);
    std::string excluded_key;
    for (const std::string& e : excludes) excluded_key += DumpJsonString(e);
    auto key = std::make_tuple(text, max_whitespace.value_or(-1), any_order, excluded_key);
    auto found = json_rules_.find(key);
    if (found != json_rules_.end()) return found->second;
    JsonSchemaOptions options;
    options.any_whitespace = options_.any_whitespace;
    options.strict_mode = true;
    options.lenient = false;
    options.any_order = any_order;
    options.string_excludes = excludes;
    if (max_whitespace) options.max_whitespace = static_cast<int>(*max_whitespace);
    // The grammar is checked against the limits the tag's own rules are built under.
    const CompileLimits limits = CurrentCompileLimits();
    JsonSchemaConversion conversion = JsonSchemaToGrammar(text, options, limits);
    E root = EmbedGrammar(std::move(conversion.grammar), NextName("json") + "_", false);
    json_rules_.emplace(std::move(key), root);
    return root;
  }

  E LowerBody(const GrammarFormat& format, const std::string&) { return EmbedUserGrammar(format.ebnf, "grammar"); }

  E LowerBody(const RegexFormat& format, const std::string&) { return RegexRule(format.pattern, "regex"); }

  // True when an excluded string of a tag's free text occurs inside one of its end strings
  // without being that end (Kimi-K3 excludes "<|close|>" before "<|close|>response<|sep|>").
  // As stop strings the ends would lose to the exclusion (tag_dispatch.h: an excluded string
  // ends first), so such text is lowered as "text without excludes or ends, then an end". That
  // is the first-occurrence language only for ends that do not overlap themselves (no proper
  // prefix equal to a suffix); an overlapping end is refused here instead of approximated.
  static bool ExcludeInsideEnd(const std::vector<std::string>& excludes, const std::vector<std::string>& ends,
                               const std::string& where) {
    bool inside = false;
    for (const std::string& e : excludes) {
      for (const std::string& end : ends) {
        if (e != end && end.find(e) != std::string::npos) inside = true;
      }
    }
    if (!inside) return false;
    for (const std::string& end : ends) {
      for (size_t border = 1; border < end.size(); ++border) {
        if (end.compare(0, border, end, end.size() - border, border) == 0) {
          throw UnsupportedSchemaError(Where(where + "/end") + "the end string " + Repr(end) +
                                       " overlaps itself and contains an excluded string of the content; "
                                       "where its first occurrence ends is not expressible exactly here");
        }
      }
    }
    return true;
  }

  E LowerAnyText(const AnyTextFormat& format, const std::string& where, const std::vector<std::string>& ends = {}) {
    std::vector<std::string> excludes = ends;
    for (const std::string& e : format.excludes) {
      if (std::find(ends.begin(), ends.end(), e) == ends.end()) excludes.push_back(e);
    }
    if (format.max_tokens) {
      return tokens_.BudgetedText(*format.max_tokens, format.max_chars.has_value(), StringTuple(excludes, where), where);
    }
    if (format.max_chars) {
      if (!excludes.empty()) {
        throw UnsupportedSchemaError(Where(where) +
                                     "any_text with both max_chars and excluded strings is not supported");
      }
      if (*format.max_chars == 0) return E::EmptyString();
      return Rule(E::Repeat(E::CharClass(NormalizeRanges({}, /*negate=*/true)), 0, Bound(*format.max_chars)), "text");
    }
    return Rule(FreeText(StringTuple(excludes, where)), "text");
  }

  E LowerBody(const AnyTextFormat& format, const std::string& where) { return LowerAnyText(format, where); }

  E LowerBody(const TokenFormat& format, const std::string& where) { return TokenTerm(format, where); }

  E LowerBody(const TokenLevelFormat& format, const std::string& where) { return tokens_.Lower(format, where); }

  // ---- combinators ----------------------------------------------------------------------

  std::vector<E> LowerAll(const std::vector<FormatPtr>& elements) {
    std::vector<E> lowered;
    for (const FormatPtr& element : elements) lowered.push_back(Lower(*element));
    return lowered;
  }

  E LowerBody(const SequenceFormat& format, const std::string& where) {
    if (format.elements.empty()) {
      throw StructuralTagError(Where(where + "/elements") + "a sequence needs at least one element");
    }
    return Rule(E::Cat(LowerAll(format.elements)), "seq");
  }

  E LowerBody(const OrFormat& format, const std::string& where) {
    if (format.elements.empty()) {
      throw StructuralTagError(Where(where + "/elements") + "an or needs at least one element");
    }
    return Rule(E::Or(LowerAll(format.elements)), "or");
  }

  E LowerBody(const OptionalFormat& format, const std::string&) {
    return Rule(E::Repeat(E::Group(Lower(*format.content)), 0, 1), "opt");
  }

  E LowerBody(const PlusFormat& format, const std::string&) {
    return Rule(E::Repeat(E::Group(Lower(*format.content)), 1, -1), "plus");
  }

  E LowerBody(const StarFormat& format, const std::string&) {
    return Rule(E::Repeat(E::Group(Lower(*format.content)), 0, -1), "star");
  }

  E LowerBody(const RepeatFormat& format, const std::string& where) {
    if (format.max != -1 && format.max < format.min) {
      throw StructuralTagError(Where(where) + "repeat max " + std::to_string(format.max) + " is below min " +
                               std::to_string(format.min));
    }
    const int32_t max = format.max == -1 ? -1 : Bound(format.max);
    return Rule(E::Repeat(E::Group(Lower(*format.content)), Bound(format.min), max), "repeat");
  }

  E LowerBody(const TagFormat& tag, const std::string&) { return LowerTag(tag, nullptr); }

  // `begin_override`: the begin to use (a triggered tag's begin after its trigger).
  E LowerTag(const TagFormat& tag, const E* begin_override) {
    const std::string& where = tag.path;
    const E begin = begin_override ? *begin_override : BeginText(tag.begin, where + "/begin");
    E end = E::Nothing();
    std::vector<std::string> end_texts;  // a special token never occurs in free text anyway
    bool every_end_is_text = false;
    if (const TokenFormat* token = std::get_if<TokenFormat>(&tag.end)) {
      end = TokenTerm(*token, where + "/end");
    } else {
      const auto& ends = std::get<std::vector<std::string>>(tag.end);
      if (ends.empty()) throw StructuralTagError(Where(where + "/end") + "a tag needs at least one end string");
      std::vector<E> alternatives;
      for (const std::string& e : ends) {
        alternatives.push_back(Text(e));
        if (!e.empty()) end_texts.push_back(e);
      }
      end = E::Group(E::Or(std::move(alternatives)));
      every_end_is_text = end_texts.size() == ends.size();
    }
    const AnyTextFormat* text = std::get_if<AnyTextFormat>(&tag.content->body);
    if (text && every_end_is_text && !end_texts.empty() && !text->max_chars && !text->max_tokens &&
        !ExcludeInsideEnd(text->excludes, end_texts, where)) {
      // Free text up to the first occurrence of an end string: the ends are stop strings,
      // exact even where an end overlaps itself ("\n</p>\n" after text ending in "\n</p>").
      std::vector<std::string> excludes;
      for (const std::string& e : text->excludes) {
        if (std::find(end_texts.begin(), end_texts.end(), e) == end_texts.end()) excludes.push_back(e);
      }
      std::vector<std::string> stops = StringTuple(end_texts, where + "/end");
      E dispatch = Rule(FreeText(StringTuple(excludes, where + "/content"), std::move(stops)), "text");
      return Rule(E::Cat({begin, dispatch}), "tag");
    }
    E content = E::Nothing();
    if (text) {
      content = LowerAnyText(*text, where + "/content", end_texts);
    } else {
      try {
        content = Lower(*tag.content);
      } catch (const SchemaError& error) {
        if (std::string(error.what()).compare(0, 5, "tool ") == 0 ||
            std::string(error.what()).compare(0, 4, "tag ") == 0) {
          throw;
        }
        RethrowForTool(error, tag);
      }
    }
    return Rule(E::Cat({begin, content, end}), "tag");
  }

  E LowerBody(const TriggeredTagsFormat& format, const std::string& where) {
    if (format.triggers.empty()) {
      throw StructuralTagError(Where(where + "/triggers") + "at least one trigger is required");
    }
    for (size_t i = 0; i < format.triggers.size(); ++i) {
      if (format.triggers[i].empty()) {
        throw StructuralTagError(Where(where + "/triggers/" + std::to_string(i)) + "a trigger must not be empty");
      }
    }
    if (format.tags.empty()) throw StructuralTagError(Where(where + "/tags") + "at least one tag is required");
    // Alternatives per distinct trigger, in the triggers' order.
    std::vector<std::pair<std::string, std::vector<E>>> by_trigger;
    for (const std::string& trigger : format.triggers) {
      bool seen = std::any_of(by_trigger.begin(), by_trigger.end(),
                              [&](const auto& entry) { return entry.first == trigger; });
      if (!seen) by_trigger.emplace_back(trigger, std::vector<E>{});
    }
    for (size_t i = 0; i < format.tags.size(); ++i) {
      const TagFormat& tag = format.tags[i];
      const std::string* begin = std::get_if<std::string>(&tag.begin);
      if (!begin) throw StructuralTagError(Where(tag.path + "/begin") + "triggered tags need string begins");
      const std::string* trigger = nullptr;
      size_t matching = 0;
      for (const std::string& t : format.triggers) {
        if (begin->compare(0, t.size(), t) == 0) {
          ++matching;
          trigger = &t;
        }
      }
      if (matching != 1) {
        throw StructuralTagError(Where(tag.path) + "begin " + Repr(*begin) +
                                 " must start with exactly one trigger, found " + std::to_string(matching));
      }
      const E rest = Text(begin->substr(trigger->size()));
      E lowered = LowerTag(tag, &rest);
      for (auto& [t, alternatives] : by_trigger) {
        if (t == *trigger) alternatives.push_back(std::move(lowered));
      }
    }
    TagDispatchDef def;
    for (auto& [trigger, alternatives] : by_trigger) {
      if (alternatives.empty()) continue;
      def.tags.push_back({DispatchString(trigger), NewRule(E::Or(std::move(alternatives)), "trigger")});
    }
    def.loop_after_dispatch = !format.stop_after_first;
    def.excludes = StringTuple(format.excludes, where);
    const E dispatch = Rule(E::Dispatch(std::move(def)), "dispatch");
    if (!format.at_least_one) return dispatch;
    std::vector<E> tags;
    for (const TagFormat& tag : format.tags) tags.push_back(LowerTag(tag, nullptr));
    const E first = Rule(E::Or(std::move(tags)), "first");
    return format.stop_after_first ? first : Rule(E::Cat({first, dispatch}), "triggered");
  }

  E LowerBody(const TagsWithSeparatorFormat& format, const std::string& where) {
    if (format.tags.empty()) throw StructuralTagError(Where(where + "/tags") + "at least one tag is required");
    std::vector<E> tags;
    for (const TagFormat& tag : format.tags) tags.push_back(LowerTag(tag, nullptr));
    const E one = Rule(E::Or(std::move(tags)), "one");
    E body = E::Nothing();
    if (format.stop_after_first) {
      body = format.at_least_one ? one : E::Repeat(one, 0, 1);
    } else {
      E more = E::Cat({one, E::Repeat(E::Group(E::Cat({Text(format.separator), one})), 0, -1)});
      body = format.at_least_one ? more : E::Repeat(E::Group(more), 0, 1);
    }
    return Rule(body, "tags");
  }

  E LowerBody(const DispatchFormat& format, const std::string& where) {
    TagDispatchDef def;
    for (size_t i = 0; i < format.rules.size(); ++i) {
      const auto& [pattern, content] = format.rules[i];
      if (pattern.empty()) {
        throw StructuralTagError(Where(where + "/rules/" + std::to_string(i)) + "the pattern must not be empty");
      }
      def.tags.push_back({DispatchString(pattern), NewRule(Lower(*content), "dispatched")});
    }
    def.loop_after_dispatch = format.loop;
    def.excludes = StringTuple(format.excludes, where);
    return Rule(E::Dispatch(std::move(def)), "dispatch");
  }

  const LoweringOptions& options_;
  GrammarBuilder builder_;
  mutable TokenFormLowering tokens_;  // resolves token texts lazily
  const SpecialTokenText* specials_;
  const RuleId root_;
  std::vector<RuleId> own_rules_;       // the tag's own rules, as the printed grammar lists them
  std::vector<RuleId> embedded_rules_;  // the embedded grammars' rules, listed after them
  DeferredGrammars deferred_;           // their nodes, until the end
  int counter_ = 0;
  std::map<std::tuple<std::string, int64_t, bool, std::string>, E> json_rules_;
  RuleId cohere_any_value_ = -1;  // CohereAnyValue's rules, once defined
  RuleId cohere_any_object_ = -1;
};

}  // namespace

GrammarAst LowerStructuralTag(const StructuralTag& tag, const LoweringOptions& options) {
  return Lowering(options).Grammar(*tag.format);
}

GrammarAst StructuralTagToGrammar(std::string_view json_text, const LoweringOptions& options) {
  return LowerStructuralTag(ParseStructuralTag(json_text), options);
}

std::string StructuralTagToEbnf(std::string_view json_text, const LoweringOptions& options) {
  return PrintEbnf(StructuralTagToGrammar(json_text, options));
}

}  // namespace structural_tag
}  // namespace xg2
