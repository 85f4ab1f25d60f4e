// Structural-tag JSON -> IR, with the checks the pydantic models of
// xg2_plugin/structural_tag.py make: the "type" discriminator picks the format, every field
// has its JSON type, unknown fields are errors, defaults fill the optional ones. The first
// problem found is reported as "invalid structural tag: at <JSON path>: <what>".
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>

#include "frontends/structural_tag/structural_tag.h"
#include "support/error.h"

namespace xg2 {
namespace structural_tag {
namespace {

[[noreturn]] void ShapeError(const std::string& path, const std::string& message) {
  throw StructuralTagError("invalid structural tag: at " + (path.empty() ? "/" : path) + ": " +
                           message);
}

const char* KindName(const JsonValue& value) {
  switch (value.kind()) {
    case JsonKind::kNull: return "null";
    case JsonKind::kBool: return "a boolean";
    case JsonKind::kNumber: return "a number";
    case JsonKind::kString: return "a string";
    case JsonKind::kArray: return "an array";
    case JsonKind::kObject: return "an object";
  }
  return "a value";
}

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

std::string Join(std::initializer_list<const char*> names) {
  std::string out;
  for (const char* name : names) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

std::string ChildPath(const std::string& path, std::string_view key) {
  return path + "/" + EscapeJsonPointerToken(key);
}

std::string ChildPath(const std::string& path, size_t index) {
  return path + "/" + std::to_string(index);
}

// The members of one JSON object, checked against the fields a model declares.
class Fields {
 public:
  // `object` must be an object whose keys are all in `allowed` (else a ShapeError naming
  // the first unknown key and the fields `what` takes).
  Fields(const JsonValue& object, std::string path, const char* what,
         std::initializer_list<const char*> allowed)
      : object_(object), path_(std::move(path)) {
    if (!object.is_object()) ShapeError(path_, std::string(what) + " must be an object, got " + KindName(object));
    for (const auto& member : object.object_members()) {
      bool known = std::any_of(allowed.begin(), allowed.end(),
                               [&](const char* name) { return member.first == name; });
      if (!known) {
        ShapeError(ChildPath(path_, member.first),
                   "unknown field (" + std::string(what) + " takes " + Join(allowed) + ")");
      }
    }
  }

  const std::string& path() const { return path_; }
  std::string PathOf(std::string_view key) const { return ChildPath(path_, key); }

  // The member `key`, or null when absent.
  const JsonValue* Find(const char* key) const { return object_.Find(key); }
  // The member `key`, or null when absent or JSON null (an optional field left unset).
  const JsonValue* FindSet(const char* key) const {
    const JsonValue* value = object_.Find(key);
    return value && !value->is_null() ? value : nullptr;
  }
  const JsonValue& Required(const char* key) const {
    const JsonValue* value = object_.Find(key);
    if (!value) ShapeError(PathOf(key), "missing required field");
    return *value;
  }

 private:
  const JsonValue& object_;
  std::string path_;
};

std::string ReadString(const JsonValue& value, const std::string& path) {
  if (!value.is_string()) ShapeError(path, std::string("expected a string, got ") + KindName(value));
  return value.string_value();
}

bool ReadBool(const JsonValue& value, const std::string& path) {
  if (!value.is_bool()) ShapeError(path, std::string("expected a boolean, got ") + KindName(value));
  return value.bool_value();
}

// An integral JSON number (1 and 1.0 alike) within [min, max].
int64_t ReadInt(const JsonValue& value, const std::string& path, int64_t min, int64_t max) {
  if (!value.is_number() || !value.is_integral_number()) {
    ShapeError(path, std::string("expected an integer, got ") +
                         (value.is_number() ? "a number with a fraction" : KindName(value)));
  }
  double number = value.number_value();
  if (!(number >= static_cast<double>(min) && number <= static_cast<double>(max))) {
    ShapeError(path, "integer " + value.number_lexeme() + " is outside [" + std::to_string(min) +
                         ", " + std::to_string(max) + "]");
  }
  return static_cast<int64_t>(number);
}

constexpr int64_t kInt32Max = 2147483647;
// Token ids beyond this are outside every vocabulary; they still parse (the lowering says so).
constexpr int64_t kTokenIdBound = int64_t{1} << 53;

std::vector<std::string> ReadStrings(const JsonValue& value, const std::string& path) {
  if (!value.is_array()) ShapeError(path, std::string("expected an array of strings, got ") + KindName(value));
  std::vector<std::string> strings;
  strings.reserve(value.array_items().size());
  for (size_t i = 0; i < value.array_items().size(); ++i) {
    strings.push_back(ReadString(value.array_items()[i], ChildPath(path, i)));
  }
  return strings;
}

TokenRef ReadTokenRef(const JsonValue& value, const std::string& path) {
  if (value.is_string()) return value.string_value();
  if (value.is_number()) return ReadInt(value, path, -kTokenIdBound, kTokenIdBound);
  ShapeError(path, std::string("expected a token id or a token's text, got ") + KindName(value));
}

std::vector<TokenRef> ReadTokenRefs(const JsonValue& value, const std::string& path) {
  if (!value.is_array()) ShapeError(path, std::string("expected an array of tokens, got ") + KindName(value));
  std::vector<TokenRef> refs;
  for (size_t i = 0; i < value.array_items().size(); ++i) {
    refs.push_back(ReadTokenRef(value.array_items()[i], ChildPath(path, i)));
  }
  return refs;
}

const JsonValue& RequiredArray(const Fields& fields, const char* key) {
  const JsonValue& value = fields.Required(key);
  if (!value.is_array()) ShapeError(fields.PathOf(key), std::string("expected an array, got ") + KindName(value));
  return value;
}

// Optional members with defaults.
bool OptionalBool(const Fields& fields, const char* key, bool fallback) {
  const JsonValue* value = fields.Find(key);
  return value ? ReadBool(*value, fields.PathOf(key)) : fallback;
}

std::vector<std::string> OptionalStrings(const Fields& fields, const char* key) {
  const JsonValue* value = fields.Find(key);
  return value ? ReadStrings(*value, fields.PathOf(key)) : std::vector<std::string>{};
}

std::optional<int64_t> OptionalInt(const Fields& fields, const char* key, int64_t min, int64_t max) {
  const JsonValue* value = fields.FindSet(key);
  if (!value) return std::nullopt;
  return ReadInt(*value, fields.PathOf(key), min, max);
}

const char* const kJsonSchemaStyles[] = {
    "json", "qwen_xml", "minimax_xml", "minimax_m3_xml", "deepseek_xml", "glm_xml",
    "cohere_xml", "kimi_k3_xml", "deepseek_v4_1_xml",
};

class Parser {
 public:
  explicit Parser(StructuralTag* tag) : tag_(tag) {}

  FormatPtr ParseTop(const JsonValue& root) {
    if (!root.is_object()) {
      throw StructuralTagError(std::string("structural tag must be a JSON object, got ") + KindName(root));
    }
    if (root.Find("structures") && !root.Find("format")) return ParseLegacy(root);
    Fields fields(root, "", "a structural tag", {"type", "format"});
    if (const JsonValue* type = fields.Find("type")) {
      std::string name = ReadString(*type, "/type");
      if (name != "structural_tag") ShapeError("/type", "expected 'structural_tag', got " + Quoted(name));
    }
    return ParseFormat(fields.Required("format"), "/format", 1);
  }

 private:
  // {"structures": [{"begin", "schema", "end"}], "triggers": [...]}: triggered tags of JSON.
  FormatPtr ParseLegacy(const JsonValue& root) {
    Fields fields(root, "", "a legacy structural tag", {"structures", "triggers"});
    TriggeredTagsFormat triggered;
    const JsonValue& structures = RequiredArray(fields, "structures");
    for (size_t i = 0; i < structures.array_items().size(); ++i) {
      std::string path = ChildPath("/structures", i);
      Fields item(structures.array_items()[i], path, "a structure", {"begin", "schema", "end"});
      TagFormat tag;
      tag.path = path;
      tag.begin = ReadString(item.Required("begin"), item.PathOf("begin"));
      const JsonValue* schema = &item.Required("schema");
      if (schema->is_string()) {
        try {
          tag_->documents.push_back(std::make_unique<JsonValue>(ParseJson(schema->string_value(), kMaxJsonDepth)));
        } catch (const JsonSyntaxError& error) {
          ShapeError(item.PathOf("schema"), std::string("the schema text is not valid JSON: ") + error.what());
        }
        schema = tag_->documents.back().get();
      }
      if (!schema->is_object() && !schema->is_bool()) {
        ShapeError(item.PathOf("schema"), std::string("expected a JSON Schema (an object or a boolean), got ") +
                                              KindName(*schema));
      }
      tag.content = std::make_unique<Format>();
      tag.content->path = item.PathOf("schema");
      JsonSchemaFormat json;
      json.schema = schema;
      tag.content->body = std::move(json);
      tag.end = std::vector<std::string>{ReadString(item.Required("end"), item.PathOf("end"))};
      triggered.tags.push_back(std::move(tag));
    }
    triggered.triggers = ReadStrings(fields.Required("triggers"), "/triggers");
    auto format = std::make_unique<Format>();
    format->body = std::move(triggered);
    return format;
  }

  FormatPtr ParseFormat(const JsonValue& value, const std::string& path, int depth) {
    if (depth > kMaxFormatDepth) {
      throw ResourceLimitError("structural tag: at " + path + ": formats nest deeper than " +
                               std::to_string(kMaxFormatDepth) + " levels");
    }
    if (!value.is_object()) ShapeError(path, std::string("a format must be an object, got ") + KindName(value));
    const JsonValue* type_value = value.Find("type");
    if (!type_value) ShapeError(path + "/type", "missing format type");
    std::string type = ReadString(*type_value, path + "/type");
    auto format = std::make_unique<Format>();
    format->path = path;
    format->body = ParseBody(type, value, path, depth);
    return format;
  }

  decltype(Format::body) ParseBody(const std::string& type, const JsonValue& value, const std::string& path,
                                   int depth) {
    if (type == "const_string") {
      Fields fields(value, path, "const_string", {"type", "value"});
      return ConstStringFormat{ReadString(fields.Required("value"), fields.PathOf("value"))};
    }
    if (type == "json_schema" || type == "qwen_xml_parameter") return ParseJsonSchema(type, value, path);
    if (type == "grammar") {
      Fields fields(value, path, "grammar", {"type", "grammar"});
      return GrammarFormat{ReadString(fields.Required("grammar"), fields.PathOf("grammar"))};
    }
    if (type == "regex") {
      Fields fields(value, path, "regex", {"type", "pattern"});
      return RegexFormat{ReadString(fields.Required("pattern"), fields.PathOf("pattern"))};
    }
    if (type == "any_text") {
      Fields fields(value, path, "any_text", {"type", "excludes", "max_tokens", "max_chars"});
      AnyTextFormat text;
      text.excludes = OptionalStrings(fields, "excludes");
      text.max_tokens = OptionalInt(fields, "max_tokens", 0, kInt32Max);
      text.max_chars = OptionalInt(fields, "max_chars", 0, kInt32Max);
      return text;
    }
    if (type == "token") return ParseToken(value, path, /*type_required=*/true);
    if (type == "sequence" || type == "or") {
      Fields fields(value, path, type.c_str(), {"type", "elements"});
      const JsonValue& elements = RequiredArray(fields, "elements");
      std::vector<FormatPtr> parsed;
      for (size_t i = 0; i < elements.array_items().size(); ++i) {
        parsed.push_back(ParseFormat(elements.array_items()[i], ChildPath(fields.PathOf("elements"), i), depth + 1));
      }
      if (type == "sequence") return SequenceFormat{std::move(parsed)};
      return OrFormat{std::move(parsed)};
    }
    if (type == "optional" || type == "plus" || type == "star") {
      Fields fields(value, path, type.c_str(), {"type", "content"});
      FormatPtr content = ParseFormat(fields.Required("content"), fields.PathOf("content"), depth + 1);
      if (type == "optional") return OptionalFormat{std::move(content)};
      if (type == "plus") return PlusFormat{std::move(content)};
      return StarFormat{std::move(content)};
    }
    if (type == "repeat") {
      Fields fields(value, path, "repeat", {"type", "min", "max", "content"});
      RepeatFormat repeat;
      repeat.min = ReadInt(fields.Required("min"), fields.PathOf("min"), 0, INT64_MAX >> 11);
      repeat.max = ReadInt(fields.Required("max"), fields.PathOf("max"), -1, INT64_MAX >> 11);
      repeat.content = ParseFormat(fields.Required("content"), fields.PathOf("content"), depth + 1);
      return repeat;
    }
    if (type == "tag") return ParseTag(value, path, depth);
    if (type == "triggered_tags") {
      Fields fields(value, path, "triggered_tags",
                    {"type", "triggers", "tags", "at_least_one", "stop_after_first", "excludes"});
      TriggeredTagsFormat triggered;
      triggered.triggers = ReadStrings(fields.Required("triggers"), fields.PathOf("triggers"));
      triggered.tags = ParseTags(fields, depth);
      triggered.at_least_one = OptionalBool(fields, "at_least_one", false);
      triggered.stop_after_first = OptionalBool(fields, "stop_after_first", false);
      triggered.excludes = OptionalStrings(fields, "excludes");
      return triggered;
    }
    if (type == "tags_with_separator") {
      Fields fields(value, path, "tags_with_separator",
                    {"type", "tags", "separator", "at_least_one", "stop_after_first"});
      TagsWithSeparatorFormat tags;
      tags.tags = ParseTags(fields, depth);
      tags.separator = ReadString(fields.Required("separator"), fields.PathOf("separator"));
      tags.at_least_one = OptionalBool(fields, "at_least_one", false);
      tags.stop_after_first = OptionalBool(fields, "stop_after_first", false);
      return tags;
    }
    if (type == "dispatch") return ParseDispatch(value, path, depth);
    // Token-level forms (lowered by structural_tag_token_forms.cc).
    if (type == "exclude_token" || type == "any_tokens" || type == "token_triggered_tags" ||
        type == "token_dispatch") {
      return ParseTokenLevel(type, value, path, depth);
    }
    ShapeError(path + "/type",
               "unknown format " + Quoted(type) +
                   " (expected one of const_string, json_schema, qwen_xml_parameter, grammar, regex, "
                   "any_text, token, exclude_token, any_tokens, sequence, or, optional, plus, star, "
                   "repeat, tag, triggered_tags, token_triggered_tags, tags_with_separator, dispatch, "
                   "token_dispatch)");
  }

  JsonSchemaFormat ParseJsonSchema(const std::string& type, const JsonValue& value, const std::string& path) {
    bool deprecated = type == "qwen_xml_parameter";
    Fields fields = deprecated
        ? Fields(value, path, "qwen_xml_parameter", {"type", "json_schema"})
        : Fields(value, path, "json_schema",
                 {"type", "json_schema", "style", "any_order", "max_whitespace_cnt", "excludes"});
    JsonSchemaFormat json;
    json.schema = &fields.Required("json_schema");
    if (!json.schema->is_object() && !json.schema->is_bool()) {
      ShapeError(fields.PathOf("json_schema"),
                 std::string("expected a JSON Schema (an object or a boolean), got ") + KindName(*json.schema));
    }
    if (deprecated) {
      json.style = "qwen_xml";
      return json;
    }
    if (const JsonValue* style = fields.Find("style")) {
      json.style = ReadString(*style, fields.PathOf("style"));
      if (std::none_of(std::begin(kJsonSchemaStyles), std::end(kJsonSchemaStyles),
                       [&](const char* known) { return json.style == known; })) {
        ShapeError(fields.PathOf("style"), "unknown json_schema style " + Quoted(json.style));
      }
    }
    json.any_order = OptionalBool(fields, "any_order", false);
    json.max_whitespace = OptionalInt(fields, "max_whitespace_cnt", 0, kInt32Max);
    json.excludes = OptionalStrings(fields, "excludes");
    return json;
  }

  DispatchFormat ParseDispatch(const JsonValue& value, const std::string& path, int depth) {
    Fields fields(value, path, "dispatch", {"type", "rules", "loop", "excludes"});
    DispatchFormat dispatch;
    const JsonValue& rules = RequiredArray(fields, "rules");
    for (size_t i = 0; i < rules.array_items().size(); ++i) {
      const JsonValue& rule = rules.array_items()[i];
      std::string rule_path = ChildPath(fields.PathOf("rules"), i);
      if (!rule.is_array() || rule.array_items().size() != 2) {
        ShapeError(rule_path, "expected a [pattern, format] pair");
      }
      std::string pattern = ReadString(rule.array_items()[0], rule_path + "/0");
      dispatch.rules.emplace_back(std::move(pattern),
                                  ParseFormat(rule.array_items()[1], rule_path + "/1", depth + 1));
    }
    dispatch.loop = OptionalBool(fields, "loop", true);
    dispatch.excludes = OptionalStrings(fields, "excludes");
    return dispatch;
  }

  TokenLevelFormat ParseTokenLevel(const std::string& type, const JsonValue& value, const std::string& path,
                                   int depth) {
    TokenLevelFormat token_level;
    token_level.type = type;
    const bool any = type == "any_tokens", triggered = type == "token_triggered_tags";
    Fields fields(value, path, type.c_str(),
                  triggered ? std::initializer_list<const char*>{"type", "trigger_tokens", "tags", "exclude_tokens",
                                                                 "at_least_one", "stop_after_first"}
                  : type == "token_dispatch" ? std::initializer_list<const char*>{"type", "rules", "loop", "exclude_tokens"}
                  : any ? std::initializer_list<const char*>{"type", "exclude_tokens", "max_tokens"}
                        : std::initializer_list<const char*>{"type", "exclude_tokens"});
    if (const JsonValue* ids = fields.Find("exclude_tokens")) {
      token_level.exclude_tokens = ReadTokenRefs(*ids, fields.PathOf("exclude_tokens"));
    }
    if (any) token_level.max_tokens = OptionalInt(fields, "max_tokens", 0, kInt32Max);
    if (triggered) {
      token_level.trigger_tokens = ReadTokenRefs(fields.Required("trigger_tokens"), fields.PathOf("trigger_tokens"));
      token_level.tags = ParseTags(fields, depth);
      token_level.at_least_one = OptionalBool(fields, "at_least_one", false);
      token_level.stop_after_first = OptionalBool(fields, "stop_after_first", false);
    }
    if (type == "token_dispatch") {
      const JsonValue& rules = RequiredArray(fields, "rules");
      for (size_t i = 0; i < rules.array_items().size(); ++i) {
        const JsonValue& rule = rules.array_items()[i];
        std::string rule_path = ChildPath(fields.PathOf("rules"), i);
        if (!rule.is_array() || rule.array_items().size() != 2) {
          ShapeError(rule_path, "expected a [token, format] pair");
        }
        token_level.rules.emplace_back(ReadTokenRef(rule.array_items()[0], rule_path + "/0"),
                                       ParseFormat(rule.array_items()[1], rule_path + "/1", depth + 1));
      }
      token_level.loop = OptionalBool(fields, "loop", true);
    }
    return token_level;
  }

  // A token format; inside a tag's begin / end the "type" may be left out.
  TokenFormat ParseToken(const JsonValue& value, const std::string& path, bool type_required) {
    Fields fields(value, path, "token", {"type", "token"});
    if (!type_required) {
      if (const JsonValue* type = fields.Find("type")) {
        std::string name = ReadString(*type, fields.PathOf("type"));
        if (name != "token") ShapeError(fields.PathOf("type"), "expected 'token', got " + Quoted(name));
      }
    }
    return TokenFormat{ReadTokenRef(fields.Required("token"), fields.PathOf("token"))};
  }

  std::vector<TagFormat> ParseTags(const Fields& fields, int depth) {
    const JsonValue& tags = RequiredArray(fields, "tags");
    std::vector<TagFormat> parsed;
    parsed.reserve(tags.array_items().size());
    for (size_t i = 0; i < tags.array_items().size(); ++i) {
      parsed.push_back(ParseTag(tags.array_items()[i], ChildPath(fields.PathOf("tags"), i), depth + 1));
    }
    return parsed;
  }

  // A tag; as a list item its "type" may be left out (it can only be a tag there).
  TagFormat ParseTag(const JsonValue& value, const std::string& path, int depth) {
    Fields fields(value, path, "tag", {"type", "begin", "content", "end"});
    if (const JsonValue* type = fields.Find("type")) {
      std::string name = ReadString(*type, fields.PathOf("type"));
      if (name != "tag") ShapeError(fields.PathOf("type"), "expected 'tag', got " + Quoted(name));
    }
    TagFormat tag;
    tag.path = path;
    const JsonValue& begin = fields.Required("begin");
    if (begin.is_string()) {
      tag.begin = begin.string_value();
    } else if (begin.is_object()) {
      tag.begin = ParseToken(begin, fields.PathOf("begin"), /*type_required=*/false);
    } else {
      ShapeError(fields.PathOf("begin"), std::string("expected a string or a token format, got ") + KindName(begin));
    }
    tag.content = ParseFormat(fields.Required("content"), fields.PathOf("content"), depth + 1);
    const JsonValue& end = fields.Required("end");
    if (end.is_string()) {
      tag.end = std::vector<std::string>{end.string_value()};
    } else if (end.is_array()) {
      tag.end = ReadStrings(end, fields.PathOf("end"));
    } else if (end.is_object()) {
      tag.end = ParseToken(end, fields.PathOf("end"), /*type_required=*/false);
    } else {
      ShapeError(fields.PathOf("end"),
                 std::string("expected a string, a list of strings or a token format, got ") + KindName(end));
    }
    return tag;
  }

  StructuralTag* tag_;
};

}  // namespace

StructuralTag ParseStructuralTag(std::string_view json_text) {
  StructuralTag tag;
  try {
    tag.documents.push_back(std::make_unique<JsonValue>(ParseJson(json_text, kMaxJsonDepth)));
  } catch (const JsonSyntaxError& error) {
    throw StructuralTagError(std::string("structural tag is not valid JSON: ") + error.what());
  } catch (const ResourceLimitError& error) {
    throw ResourceLimitError(std::string("structural tag: ") + error.what());
  }
  Parser parser(&tag);
  tag.format = parser.ParseTop(*tag.documents.front());
  return tag;
}

}  // namespace structural_tag
}  // namespace xg2
