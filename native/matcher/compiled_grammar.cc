#include "matcher/compiled_grammar.h"

#include "frontends/ebnf/ebnf_parser.h"
#include "grammar/inline_rules.h"
#include "support/compile_limits.h"

namespace xg2 {

std::shared_ptr<const CompiledGrammar> CompileEbnf(const std::string& ebnf,
                                                   const std::string& root_rule_name,
                                                   std::shared_ptr<const TokenizerInfo> tokenizer,
                                                   std::shared_ptr<MaskCachePool> pool,
                                                   MaskCacheOptions cache_options) {
  GrammarAst ast = ParseEbnf(ebnf, root_rule_name);
  InlineSmallRules(&ast);
  auto compiled = std::make_shared<CompiledGrammar>();
  const CompileLimits& limits = CurrentCompileLimits();
  compiled->fsm = std::make_shared<const GrammarFsm>(BuildGrammarFsm(ast, {limits.max_fsm_nodes}));
  compiled->earley_limits.max_items_per_step = limits.max_earley_items_per_step;
  compiled->tokenizer = std::move(tokenizer);
  compiled->ebnf = ebnf;
  compiled->mask_cache = std::make_shared<GrammarMaskCache>(compiled->fsm, compiled->tokenizer,
                                                            std::move(pool), cache_options);
  GrammarMaskCache::StartPrecompute(compiled->mask_cache);
  return compiled;
}

}  // namespace xg2
