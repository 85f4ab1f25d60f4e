#include "matcher/compiled_grammar.h"

#include "frontends/ebnf/ebnf_parser.h"

namespace xg2 {

std::shared_ptr<const CompiledGrammar> CompileEbnf(const std::string& ebnf,
                                                   const std::string& root_rule_name,
                                                   std::shared_ptr<const TokenizerInfo> tokenizer) {
  GrammarAst ast = ParseEbnf(ebnf, root_rule_name);
  auto compiled = std::make_shared<CompiledGrammar>();
  compiled->fsm = std::make_shared<const GrammarFsm>(BuildGrammarFsm(ast));
  compiled->tokenizer = std::move(tokenizer);
  compiled->ebnf = ebnf;
  return compiled;
}

}  // namespace xg2
