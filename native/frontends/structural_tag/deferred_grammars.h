// The grammars a structural tag embeds whole and lists after its own rules (JSON Schema
// conversions, regexes, user grammars without token sets or tag dispatches). The printed grammar
// lists each of them last, rule for rule in its own order, and a grammar a frontend built is
// already numbered as a parse of its printed text numbers it; so its nodes need no renumbering,
// only a shift. They are kept out of the builder until the tag's own rules are finished
// (GrammarBuilder::FinishInPrintedOrder renumbers those) and then appended once, instead of being
// moved into the builder and moved again by the renumbering.
#ifndef XG2_FRONTENDS_STRUCTURAL_TAG_DEFERRED_GRAMMARS_H_
#define XG2_FRONTENDS_STRUCTURAL_TAG_DEFERRED_GRAMMARS_H_

#include <string>
#include <vector>

#include "grammar/grammar_ast.h"
#include "grammar/grammar_builder.h"

namespace xg2 {
namespace structural_tag {

class DeferredGrammars {
 public:
  // Adds `source`'s rules to `builder`, named `prefix + name`, each with a placeholder body (one
  // empty node), keeps `source`, and returns the ids its rules get, in source order. `source`
  // names no token set or tag dispatch, and its node table lists children before parents.
  std::vector<RuleId> Reserve(GrammarAst source, const std::string& prefix, GrammarBuilder* builder);

  // `grammar` is the builder's FinishInPrintedOrder with every reserved rule listed last, in the
  // order reserved: the placeholders are then the last nodes of its table. Replaces them with
  // the kept grammars' nodes, shifted, and gives the reserved rules their bodies, lookaheads and
  // attributes; the result is numbered as a parse of its printed EBNF numbers it.
  void AppendTo(GrammarAst* grammar);

 private:
  std::vector<GrammarAst> kept_;
  size_t reserved_rules_ = 0;
};

}  // namespace structural_tag
}  // namespace xg2

#endif  // XG2_FRONTENDS_STRUCTURAL_TAG_DEFERRED_GRAMMARS_H_
