// The grammars a structural tag embeds whole (JSON Schema conversions), kept as the rule ASTs
// their frontend built, with their rules renamed, and joined to the tag's own rules without
// printing and parsing them again (issue 39: no EBNF text round trip).
#ifndef XG2_FRONTENDS_STRUCTURAL_TAG_EMBEDDED_GRAMMARS_H_
#define XG2_FRONTENDS_STRUCTURAL_TAG_EMBEDDED_GRAMMARS_H_

#include <string>
#include <vector>

#include "grammar/grammar_ast.h"

namespace xg2 {
namespace structural_tag {

// A lowered grammar: its rule AST and the EBNF it prints as, which parses to exactly that AST.
struct LoweredGrammar {
  std::string ebnf;  // root rule "root"
  GrammarAst grammar;
};

class EmbeddedGrammars {
 public:
  // Adds `grammar` (which holds no tag dispatch and no token set) with every rule renamed
  // `prefix + name`, and returns the new name of its root rule. No rule of the tag's own text
  // may have one of those names.
  std::string Add(GrammarAst grammar, const std::string& prefix);

  // The grammar whose text is `own_text` (rules rooted at "root", whose references may name the
  // added grammars' rules) followed by the added grammars' printed rules, in the order added:
  // the own text is parsed, the added rules are moved in as built. Leaves the set empty.
  LoweredGrammar Join(const std::string& own_text);

 private:
  std::vector<GrammarAst> parts_;
};

}  // namespace structural_tag
}  // namespace xg2

#endif  // XG2_FRONTENDS_STRUCTURAL_TAG_EMBEDDED_GRAMMARS_H_
