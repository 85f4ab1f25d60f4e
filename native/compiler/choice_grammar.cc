#include "compiler/choice_grammar.h"

#include "grammar/grammar_builder.h"
#include "support/error.h"

namespace xg2 {

std::string EbnfStringLiteral(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (byte < 0x20 || byte == 0x7F) {
      out += "\\x";
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xF]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

std::string ChoiceEbnf(const std::vector<std::string>& choices) {
  if (choices.empty()) throw InvalidArgumentError("choices must not be empty");
  std::string out = "root ::= ";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += " | ";
    out += EbnfStringLiteral(choices[i]);
  }
  return out;
}

GrammarAst ChoiceGrammar(const std::vector<std::string>& choices) {
  if (choices.empty()) throw InvalidArgumentError("choices must not be empty");
  GrammarBuilder builder;
  const RuleId root = builder.AddRule("root");
  std::vector<ExprId> alternatives;
  alternatives.reserve(choices.size());
  for (const std::string& choice : choices) alternatives.push_back(builder.Bytes(choice));
  builder.DefineRule(root, builder.Choice(alternatives.data(), alternatives.size()));
  return builder.Finish(root);
}

}  // namespace xg2
