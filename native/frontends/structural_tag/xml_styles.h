// The argument layouts of the XML-style json_schema styles (the language xgrammar 0.2.8's
// builders give each; xg2_plugin/structural_tag.py documents them for users).
//
// Every style writes an object's members in schema order, each after optional whitespace,
// with optional whitespace after the last. The families differ in what a value is:
// - flat (qwen, glm, minimax, deepseek, deepseek_v4_1, kimi_k3): a string member's value is
//   raw text up to the closing string; any other value is JSON with whitespace around it.
// - minimax_m3: every value is XML again (objects nest as members, arrays as <item>s);
//   scalars are bare, strings raw.
// - cohere: each value carries type="raw|json|dict|list"; dicts and lists nest as XML.
#ifndef XG2_FRONTENDS_STRUCTURAL_TAG_XML_STYLES_H_
#define XG2_FRONTENDS_STRUCTURAL_TAG_XML_STYLES_H_

#include <string>
#include <vector>

namespace xg2 {
namespace structural_tag {

enum class XmlFamily { kFlat, kMinimaxM3, kCohere };

// What a flat style writes after a member's name, besides `after_name`.
enum class XmlTypeAttribute {
  kNone,
  kStringFlag,  // DeepSeek: `" string="true">` before raw text, `" string="false">` before JSON
  kTypeName,    // Kimi-K3: `" type="T"<|sep|>`, T the JSON type (integers are "number")
};

struct XmlStyle {
  const char* name;
  XmlFamily family;
  std::string open;                     // before a member's name
  std::vector<std::string> after_name;  // between name and value; whitespace may separate them
  std::string close;                    // ends a value
  XmlTypeAttribute attribute = XmlTypeAttribute::kNone;
  bool space_around_choices = true;     // whitespace may surround a const/enum string
};

// Null for "json" (and for any name that is not an XML style).
const XmlStyle* FindXmlStyle(const std::string& style);

}  // namespace structural_tag
}  // namespace xg2

#endif  // XG2_FRONTENDS_STRUCTURAL_TAG_XML_STYLES_H_
