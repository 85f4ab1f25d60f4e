#include "frontends/structural_tag/xml_styles.h"

namespace xg2 {
namespace structural_tag {

const XmlStyle* FindXmlStyle(const std::string& style) {
  // U+FF5C FULLWIDTH VERTICAL LINE, DeepSeek's DSML marker.
  static const std::string kDsml = "<\xEF\xBD\x9C" "DSML\xEF\xBD\x9C";
  static const std::string kDsmlClose = "</\xEF\xBD\x9C" "DSML\xEF\xBD\x9C";
  static const XmlStyle kStyles[] = {
      {"qwen_xml", XmlFamily::kFlat, "<parameter=", {">"}, "</parameter>"},
      {"glm_xml", XmlFamily::kFlat, "<arg_key>", {"</arg_key>", "<arg_value>"}, "</arg_value>"},
      {"minimax_xml", XmlFamily::kFlat, "<parameter name=\"", {"\">"}, "</parameter>"},
      {"deepseek_xml", XmlFamily::kFlat, kDsml + "parameter name=\"", {}, kDsmlClose + "parameter>",
       XmlTypeAttribute::kStringFlag, false},
      {"deepseek_v4_1_xml", XmlFamily::kFlat, kDsml + " parameter name=\"", {}, kDsmlClose + " parameter>",
       XmlTypeAttribute::kStringFlag, false},
      {"kimi_k3_xml", XmlFamily::kFlat, "<|open|>argument key=\"", {}, "<|close|>argument<|sep|>",
       XmlTypeAttribute::kTypeName},
      // The namespace marker opens every element; a member is MARK<key>value MARK</key>.
      {"minimax_m3_xml", XmlFamily::kMinimaxM3, "]<]minimax[>[", {}, "", XmlTypeAttribute::kNone, false},
      {"cohere_xml", XmlFamily::kCohere, "<cofl:value", {}, "</cofl:value>"},
  };
  for (const XmlStyle& candidate : kStyles) {
    if (style == candidate.name) return &candidate;
  }
  return nullptr;
}

}  // namespace structural_tag
}  // namespace xg2
