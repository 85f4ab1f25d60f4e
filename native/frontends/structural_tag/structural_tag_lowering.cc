// Structural-tag IR -> EBNF text. Every format becomes one rule `st_<hint>_<n>` (the root
// rule refers to the outermost one); free text becomes TagDispatch rules; embedded grammars
// (JSON Schema conversions, `grammar` formats) are added with their rules renamed
// `st_<hint>_<n>_<name>` so that names never clash.
//
// Special tokens: every string of the format is split into plain text and special-token
// text (SpecialTokenText::Split); the latter becomes `Token(id)`, which matches that token
// and only it, so free text never contains special tokens.
#include <algorithm>
#include <map>
#include <tuple>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "frontends/ebnf/ebnf_parser.h"
#include "frontends/json_schema/json_schema_converter.h"
#include "frontends/regex/regex_converter.h"
#include "frontends/structural_tag/structural_tag.h"
#include "frontends/structural_tag/structural_tag_token_forms.h"
#include "grammar/grammar_ast.h"
#include "support/error.h"

namespace xg2 {
namespace structural_tag {
namespace {

std::string Where(const std::string& path) { return "at " + (path.empty() ? std::string("/") : path) + ": "; }

// The EBNF string literal of `text` (quotes, backslashes and control bytes escaped).
void AppendLiteral(std::string_view text, std::string* out) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : text) {
    unsigned char byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (byte < 0x20 || byte == 0x7F) {
      out->append("\\x");
      out->push_back(kHex[byte >> 4]);
      out->push_back(kHex[byte & 15]);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

// Python's repr of a string, for messages ('abc').
std::string Repr(std::string_view text) { return "'" + std::string(text) + "'"; }

// A JSON value as a message shows it: strings quoted, anything else as compact JSON.
std::string Show(const JsonValue* value) {
  if (!value) return "None";
  return value->is_string() ? Repr(value->string_value()) : DumpJson(*value);
}

// Strings with an optional trailing '?' (an optional piece): the XML argument layouts.
struct XmlStyle {
  const char* name_open;                 // before a member's name
  std::vector<std::string> name_close;   // between name and value; "x?" is an optional "x"
  const char* value_close;               // ends a value
  const char* trailer;                   // optional text after a member ("" for none)
};

// Each line break of a GLM member is optional: GLM 4.5/4.6 templates write them, 4.7 does not.
const XmlStyle* FindXmlStyle(const std::string& style) {
  static const XmlStyle kQwen{"<parameter=", {">\n"}, "\n</parameter>\n", ""};
  static const XmlStyle kGlm{"<arg_key>", {"</arg_key>", "\n?", "<arg_value>"}, "</arg_value>", "\n"};
  if (style == "qwen_xml") return &kQwen;
  if (style == "glm_xml") return &kGlm;
  return nullptr;
}

class Lowering {
 public:
  explicit Lowering(const LoweringOptions& options)
      : options_(options),
        tokens_(options, {[this](const std::string& body, const char* hint,
                                 const std::string& attribute) { return Rule(body, hint, attribute); },
                          [this](const Format& format) { return Lower(format); },
                          [this](const TagFormat& tag, const std::string& begin) { return LowerTag(tag, &begin); }}) {
    static const SpecialTokenText kNone;
    specials_ = options.special_tokens ? options.special_tokens : &kNone;
  }

  std::string Grammar(const Format& format) {
    std::string root = Lower(format);
    std::string out = "root ::= " + root + "\n";
    for (const std::string& rule : rules_) {
      out += rule;
      out += '\n';
    }
    return out;
  }

 private:
  // ---- text -----------------------------------------------------------------------------

  // `value` as juxtaposed literals and Token(id) terms, the form TagDispatch strings take.
  std::string Pieces(std::string_view value, size_t* count = nullptr) const {
    if (count) *count = 0;
    if (value.empty()) return "\"\"";
    std::vector<SpecialTokenText::Piece> pieces;
    if (specials_->empty()) {
      pieces.push_back({value, -1});
    } else {
      pieces = specials_->Split(value);
    }
    if (count) *count = pieces.size();
    std::string out;
    for (const auto& piece : pieces) {
      if (!out.empty()) out.push_back(' ');
      if (piece.token_id >= 0) {
        out += "Token(" + std::to_string(piece.token_id) + ")";
      } else {
        AppendLiteral(piece.text, &out);
      }
    }
    return out;
  }

  // An expression for the text `value` (one unit: parenthesised when several pieces).
  std::string Text(std::string_view value) const {
    size_t count = 0;
    std::string pieces = Pieces(value, &count);
    return count <= 1 ? pieces : "(" + pieces + ")";
  }

  std::string StringTuple(const std::vector<std::string>& values, const std::string& path) const {
    std::string out = "(";
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i].empty()) throw StructuralTagError(Where(path) + "strings must not be empty");
      if (i) out += ", ";
      out += Pieces(values[i]);
    }
    if (values.size() == 1) out += ",";
    return out + ")";
  }

  // A special token as Token(id); an ordinary one as a one-token set (structural_tag_token_forms.h).
  std::string TokenTerm(const TokenFormat& token, const std::string& path) const {
    int32_t id = tokens_.Resolve(token.token, path + "/token");
    if (!specials_->HasId(id)) return tokens_.OrdinaryToken(id);
    return "Token(" + std::to_string(id) + ")";
  }

  std::string BeginText(const std::variant<std::string, TokenFormat>& begin, const std::string& path) const {
    if (const TokenFormat* token = std::get_if<TokenFormat>(&begin)) return TokenTerm(*token, path);
    return Text(std::get<std::string>(begin));
  }

  // ---- rules ----------------------------------------------------------------------------

  // `attribute`: a rule attribute such as "[max_tokens=8]".
  std::string Rule(const std::string& body, const char* hint, const std::string& attribute = "") {
    std::string name = "st_" + std::string(hint) + "_" + std::to_string(++counter_);
    rules_.push_back(name + attribute + " ::= " + body);
    return name;
  }

  // Adds a whole grammar with its rules renamed; returns the name of its root rule.
  std::string Embed(std::string_view ebnf, const char* hint) {
    std::string prefix = "st_" + std::string(hint) + "_" + std::to_string(++counter_) + "_";
    GrammarAst ast = ParseEbnf(ebnf, "root");
    for (RuleDef& rule : ast.rules) rule.name = prefix + rule.name;
    std::string text = PrintEbnf(ast);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    rules_.push_back(std::move(text));
    return prefix + "root";
  }

  // ---- formats --------------------------------------------------------------------------

  std::string Lower(const Format& format) {
    const std::string& where = format.path;
    return std::visit([&](const auto& body) { return LowerBody(body, where); }, format.body);
  }

  std::string LowerBody(const ConstStringFormat& format, const std::string&) { return Text(format.value); }

  std::string LowerBody(const JsonSchemaFormat& format, const std::string& where) {
    const XmlStyle* xml = FindXmlStyle(format.style);
    if (!xml && format.style != "json") {
      throw UnsupportedSchemaError(Where(where) + "json_schema style " + Repr(format.style) +
                                   " is not supported (supported: 'json', 'qwen_xml', 'glm_xml')");
    }
    if (!format.excludes.empty()) {
      throw UnsupportedSchemaError(Where(where) + "json_schema excludes are not supported");
    }
    if (format.any_order && xml) {
      throw UnsupportedSchemaError(Where(where) + "json_schema any_order is supported only with style 'json'");
    }
    const JsonValue* schema = format.schema;
    if (schema->is_bool()) {
      if (!schema->bool_value()) throw StructuralTagError(Where(where) + "the JSON schema `false` matches nothing");
      static const JsonValue kEmpty = JsonValue::Object({});
      schema = &kEmpty;
    }
    if (xml) return XmlArguments(*schema, *xml, format.max_whitespace, where);
    return JsonValueRule(*schema, format.max_whitespace, format.any_order);
  }

  // Identical schemas (one tool under several tag spellings, as Harmony has) share one
  // embedded grammar: keyed by the schema text, the whitespace bound and the member order.
  std::string JsonValueRule(const JsonValue& schema, std::optional<int64_t> max_whitespace, bool any_order = false) {
    std::string text = DumpJson(schema);
    auto key = std::make_tuple(text, max_whitespace.value_or(-1), any_order);
    auto found = json_rules_.find(key);
    if (found != json_rules_.end()) return found->second;
    JsonSchemaOptions options;
    options.any_whitespace = options_.any_whitespace;
    options.strict_mode = true;
    options.lenient = false;
    options.any_order = any_order;
    if (max_whitespace) options.max_whitespace = static_cast<int>(*max_whitespace);
    std::string name = Embed(JsonSchemaToEbnf(text, options).ebnf, "json");
    json_rules_.emplace(std::move(key), name);
    return name;
  }

  // An object's members in an XML-style argument format (xg2_plugin/structural_tag.py):
  // members in schema order, optional ones may be left out; string values are raw text.
  std::string XmlArguments(const JsonValue& schema, const XmlStyle& style, std::optional<int64_t> max_whitespace,
                           const std::string& where) {
    std::string name_close;
    for (const std::string& piece : style.name_close) {
      if (!name_close.empty()) name_close += ' ';
      if (!piece.empty() && piece.back() == '?') {
        name_close += "(" + Text(std::string_view(piece).substr(0, piece.size() - 1)) + ")?";
      } else {
        name_close += Text(piece);
      }
    }
    std::string after = *style.trailer ? " (" + Text(style.trailer) + ")?" : "";
    if (!schema.is_object()) {
      throw StructuralTagError(Where(where) + "XML-style arguments need an object schema");
    }
    const JsonValue* type = schema.Find("type");
    if (type && !(type->is_string() && type->string_value() == "object")) {
      throw UnsupportedSchemaError(Where(where) + "XML-style arguments need an object schema, got type " +
                                   Show(type));
    }
    static const char* const kUnsupported[] = {
        "$ref", "allOf", "anyOf", "dependentRequired", "dependentSchemas", "if",
        "maxProperties", "minProperties", "not", "oneOf", "patternProperties", "propertyNames",
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
      throw StructuralTagError(Where(where + "/json_schema/properties") + "properties must be an object");
    }
    std::set<std::string> required;
    if (const JsonValue* names = schema.Find("required"); names && !names->is_null()) {
      if (!names->is_array()) {
        throw StructuralTagError(Where(where + "/json_schema/required") + "required must be an array");
      }
      for (const JsonValue& name : names->array_items()) {
        if (!name.is_string()) {
          throw StructuralTagError(Where(where + "/json_schema/required") + "required must list strings");
        }
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
    std::vector<JsonValue::Member> definitions;
    for (const char* key : {"$defs", "definitions"}) {
      if (const JsonValue* value = schema.Find(key)) definitions.emplace_back(key, *value);
    }
    if (properties->object_members().empty()) {
      // Any members, raw-text values (an object schema without declared properties).
      std::string name = Rule("[^<>\\n]+", "xml_name");
      std::string value =
          Rule("TagDispatch(stop_eos=false, stop_str=(" + Pieces(style.value_close) + ",))", "xml_text");
      return Rule("(" + Text(style.name_open) + " " + name + " " + name_close + " " + value + after + ")*",
                  "xml_args");
    }
    std::string body;
    for (const auto& [key, member] : properties->object_members()) {
      std::string member_where = where + "/json_schema/properties/" + EscapeJsonPointerToken(key);
      std::string head = Text(std::string(style.name_open) + key) + " " + name_close;
      std::string value = XmlValue(member, definitions, style.value_close, max_whitespace, member_where);
      std::string item = Rule(head + " " + value + after, "xml_member");
      if (!body.empty()) body += ' ';
      body += required.count(key) ? item : "(" + item + ")?";
    }
    return Rule(body, "xml_args");
  }

  // A member's value followed by `close`: raw text for strings, JSON otherwise.
  std::string XmlValue(const JsonValue& member, const std::vector<JsonValue::Member>& definitions,
                       const std::string& close, std::optional<int64_t> max_whitespace, const std::string& where) {
    if (member.is_bool() && !member.bool_value()) {
      throw StructuralTagError(Where(where) + "the JSON schema `false` matches nothing");
    }
    const JsonValue* type = member.is_object() ? member.Find("type") : nullptr;
    if (type && type->is_string() && type->string_value() == "string") {
      static const char* const kLimits[] = {"$ref", "allOf", "anyOf", "contentEncoding", "format",
                                            "maxLength", "minLength", "not", "oneOf"};  // sorted
      std::string limits;
      for (const char* key : kLimits) {
        if (member.Find(key)) limits += (limits.empty() ? "" : ", ") + std::string(key);
      }
      if (!limits.empty()) {
        throw UnsupportedSchemaError(Where(where) + "a raw-text XML value cannot enforce " + limits);
      }
      std::string closing = Text(close);
      const JsonValue* constant = member.Find("const");
      const JsonValue* choices = member.Find("enum");
      if (constant || choices) {
        std::vector<const JsonValue*> values;
        if (constant) {
          values.push_back(constant);
        } else if (choices->is_array()) {
          for (const JsonValue& value : choices->array_items()) values.push_back(&value);
        } else {
          throw StructuralTagError(Where(where) + "enum must be an array");
        }
        std::string alternatives;
        for (const JsonValue* value : values) {
          if (!value->is_string()) continue;
          if (!alternatives.empty()) alternatives += " | ";
          alternatives += Text(value->string_value());
        }
        if (alternatives.empty()) throw StructuralTagError(Where(where) + "enum/const has no string value");
        return Rule("(" + alternatives + ") " + closing, "xml_enum");
      }
      if (const JsonValue* pattern = member.Find("pattern")) {
        if (!pattern->is_string()) throw StructuralTagError(Where(where + "/pattern") + "pattern must be a string");
        return Rule(RegexToEbnf(pattern->string_value()) + " " + closing, "xml_pattern");
      }
      // Free text up to the first occurrence of the closing string (a stop string, so the
      // value can never contain it, even overlapping the close).
      return Rule("TagDispatch(stop_eos=false, stop_str=(" + Pieces(close) + ",))", "xml_text");
    }
    // A JSON value; the object's $defs / definitions come along so that its $refs resolve
    // (the member's own keys win).
    if (member.is_bool()) {
      return Rule(JsonValueRule(JsonValue::Object({}), max_whitespace) + " " + Text(close), "xml_json");
    }
    if (!definitions.empty() && member.is_object()) {
      std::vector<JsonValue::Member> merged = definitions;
      for (const auto& [key, value] : member.object_members()) {
        auto same = std::find_if(merged.begin(), merged.end(), [&key = key](const auto& m) { return m.first == key; });
        if (same != merged.end()) {
          same->second = value;
        } else {
          merged.emplace_back(key, value);
        }
      }
      return Rule(JsonValueRule(JsonValue::Object(std::move(merged)), max_whitespace) + " " + Text(close),
                  "xml_json");
    }
    return Rule(JsonValueRule(member, max_whitespace) + " " + Text(close), "xml_json");
  }

  std::string LowerBody(const GrammarFormat& format, const std::string&) { return Embed(format.ebnf, "grammar"); }

  std::string LowerBody(const RegexFormat& format, const std::string&) {
    return Rule(RegexToEbnf(format.pattern), "regex");
  }

  std::string LowerAnyText(const AnyTextFormat& format, const std::string& where,
                           const std::vector<std::string>& ends = {}) {
    std::vector<std::string> excludes = ends;
    for (const std::string& e : format.excludes) {
      if (std::find(ends.begin(), ends.end(), e) == ends.end()) excludes.push_back(e);
    }
    if (format.max_tokens) return tokens_.BudgetedText(*format.max_tokens, format.max_chars.has_value(),
                                                       StringTuple(excludes, where), where);
    if (format.max_chars) {
      if (!excludes.empty()) {
        throw UnsupportedSchemaError(Where(where) +
                                     "any_text with both max_chars and excluded strings is not supported");
      }
      return *format.max_chars ? Rule(".{0," + std::to_string(*format.max_chars) + "}", "text") : "\"\"";
    }
    return Rule("TagDispatch(excludes=" + StringTuple(excludes, where) + ")", "text");
  }

  std::string LowerBody(const AnyTextFormat& format, const std::string& where) { return LowerAnyText(format, where); }

  std::string LowerBody(const TokenFormat& format, const std::string& where) { return TokenTerm(format, where); }

  std::string LowerBody(const TokenLevelFormat& format, const std::string& where) { return tokens_.Lower(format, where); }

  // ---- combinators ----------------------------------------------------------------------

  std::string JoinLowered(const std::vector<FormatPtr>& elements, const char* separator) {
    std::string out;
    for (const FormatPtr& element : elements) {
      if (!out.empty()) out += separator;
      out += Lower(*element);
    }
    return out;
  }

  std::string LowerBody(const SequenceFormat& format, const std::string& where) {
    if (format.elements.empty()) {
      throw StructuralTagError(Where(where + "/elements") + "a sequence needs at least one element");
    }
    return Rule(JoinLowered(format.elements, " "), "seq");
  }

  std::string LowerBody(const OrFormat& format, const std::string& where) {
    if (format.elements.empty()) {
      throw StructuralTagError(Where(where + "/elements") + "an or needs at least one element");
    }
    return Rule(JoinLowered(format.elements, " | "), "or");
  }

  std::string LowerBody(const OptionalFormat& format, const std::string&) {
    return Rule("(" + Lower(*format.content) + ")?", "opt");
  }

  std::string LowerBody(const PlusFormat& format, const std::string&) {
    return Rule("(" + Lower(*format.content) + ")+", "plus");
  }

  std::string LowerBody(const StarFormat& format, const std::string&) {
    return Rule("(" + Lower(*format.content) + ")*", "star");
  }

  std::string LowerBody(const RepeatFormat& format, const std::string& where) {
    if (format.max != -1 && format.max < format.min) {
      throw StructuralTagError(Where(where) + "repeat max " + std::to_string(format.max) + " is below min " +
                               std::to_string(format.min));
    }
    std::string bound = format.max == -1 ? "{" + std::to_string(format.min) + ",}"
                                         : "{" + std::to_string(format.min) + "," + std::to_string(format.max) + "}";
    return Rule("(" + Lower(*format.content) + ")" + bound, "repeat");
  }

  std::string LowerBody(const TagFormat& tag, const std::string&) { return LowerTag(tag, nullptr); }

  // `begin_override`: the EBNF of the begin (a triggered tag's begin after its trigger).
  std::string LowerTag(const TagFormat& tag, const std::string* begin_override) {
    const std::string& where = tag.path;
    std::string begin = begin_override ? *begin_override : BeginText(tag.begin, where + "/begin");
    std::string end;
    std::vector<std::string> end_texts;  // a special token never occurs in free text anyway
    bool every_end_is_text = false;
    if (const TokenFormat* token = std::get_if<TokenFormat>(&tag.end)) {
      end = TokenTerm(*token, where + "/end");
    } else {
      const auto& ends = std::get<std::vector<std::string>>(tag.end);
      if (ends.empty()) throw StructuralTagError(Where(where + "/end") + "a tag needs at least one end string");
      for (const std::string& e : ends) {
        if (!end.empty()) end += " | ";
        end += Text(e);
        if (!e.empty()) end_texts.push_back(e);
      }
      every_end_is_text = end_texts.size() == ends.size();
    }
    const AnyTextFormat* text = std::get_if<AnyTextFormat>(&tag.content->body);
    if (text && every_end_is_text && !end_texts.empty() && !text->max_chars && !text->max_tokens) {
      // Free text up to the first occurrence of an end string: the ends are stop strings,
      // exact even where an end overlaps itself ("\n</p>\n" after text ending in "\n</p>").
      std::vector<std::string> excludes;
      for (const std::string& e : text->excludes) {
        if (std::find(end_texts.begin(), end_texts.end(), e) == end_texts.end()) excludes.push_back(e);
      }
      std::string dispatch = Rule("TagDispatch(stop_eos=false, stop_str=" + StringTuple(end_texts, where + "/end") +
                                      ", excludes=" + StringTuple(excludes, where + "/content") + ")",
                                  "text");
      return Rule(begin + " " + dispatch, "tag");
    }
    std::string content = text ? LowerAnyText(*text, where + "/content", end_texts) : Lower(*tag.content);
    return Rule(begin + " " + content + " (" + end + ")", "tag");
  }

  std::string LowerBody(const TriggeredTagsFormat& format, const std::string& where) {
    if (format.triggers.empty()) {
      throw StructuralTagError(Where(where + "/triggers") + "at least one trigger is required");
    }
    if (format.tags.empty()) throw StructuralTagError(Where(where + "/tags") + "at least one tag is required");
    // Alternatives per distinct trigger, in the triggers' order.
    std::vector<std::pair<std::string, std::vector<std::string>>> by_trigger;
    for (const std::string& trigger : format.triggers) {
      bool seen = std::any_of(by_trigger.begin(), by_trigger.end(),
                              [&](const auto& entry) { return entry.first == trigger; });
      if (!seen) by_trigger.emplace_back(trigger, std::vector<std::string>{});
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
      std::string rest = begin->substr(trigger->size());
      std::string rest_text = rest.empty() ? "\"\"" : Text(rest);
      std::string lowered = LowerTag(tag, &rest_text);
      for (auto& [t, alternatives] : by_trigger) {
        if (t == *trigger) alternatives.push_back(std::move(lowered));
      }
    }
    std::string pairs;
    for (const auto& [trigger, alternatives] : by_trigger) {
      if (alternatives.empty()) continue;
      std::string joined;
      for (const std::string& a : alternatives) joined += (joined.empty() ? "" : " | ") + a;
      std::string rule = Rule(joined, "trigger");
      pairs += "(" + Pieces(trigger) + ", " + rule + "), ";
    }
    std::string dispatch = Rule("TagDispatch(" + pairs + "loop_after_dispatch=" +
                                    (format.stop_after_first ? "false" : "true") +
                                    ", excludes=" + StringTuple(format.excludes, where) + ")",
                                "dispatch");
    if (!format.at_least_one) return dispatch;
    std::string first;
    for (const TagFormat& tag : format.tags) first += (first.empty() ? "" : " | ") + LowerTag(tag, nullptr);
    first = Rule(first, "first");
    return format.stop_after_first ? first : Rule(first + " " + dispatch, "triggered");
  }

  std::string LowerBody(const TagsWithSeparatorFormat& format, const std::string& where) {
    if (format.tags.empty()) throw StructuralTagError(Where(where + "/tags") + "at least one tag is required");
    std::string one;
    for (const TagFormat& tag : format.tags) one += (one.empty() ? "" : " | ") + LowerTag(tag, nullptr);
    one = Rule(one, "one");
    std::string body;
    if (format.stop_after_first) {
      body = format.at_least_one ? one : one + "?";
    } else {
      std::string separator = Text(format.separator);
      std::string more = one + " (" + separator + " " + one + ")*";
      body = format.at_least_one ? more : "(" + more + ")?";
    }
    return Rule(body, "tags");
  }

  std::string LowerBody(const DispatchFormat& format, const std::string& where) {
    std::string args;
    for (size_t i = 0; i < format.rules.size(); ++i) {
      const auto& [pattern, content] = format.rules[i];
      if (pattern.empty()) {
        throw StructuralTagError(Where(where + "/rules/" + std::to_string(i)) + "the pattern must not be empty");
      }
      std::string rule = Rule(Lower(*content), "dispatched");
      args += "(" + Pieces(pattern) + ", " + rule + "), ";
    }
    args += std::string("loop_after_dispatch=") + (format.loop ? "true" : "false") +
            ", excludes=" + StringTuple(format.excludes, where);
    return Rule("TagDispatch(" + args + ")", "dispatch");
  }

  const LoweringOptions& options_;
  mutable TokenFormLowering tokens_;  // resolves token texts lazily
  const SpecialTokenText* specials_;
  std::vector<std::string> rules_;
  int counter_ = 0;
  std::map<std::tuple<std::string, int64_t, bool>, std::string> json_rules_;
};

}  // namespace

std::string LowerStructuralTag(const StructuralTag& tag, const LoweringOptions& options) {
  return Lowering(options).Grammar(*tag.format);
}

std::string StructuralTagToEbnf(std::string_view json_text, const LoweringOptions& options) {
  return LowerStructuralTag(ParseStructuralTag(json_text), options);
}

}  // namespace structural_tag
}  // namespace xg2
