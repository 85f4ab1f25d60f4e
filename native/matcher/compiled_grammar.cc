#include "matcher/compiled_grammar.h"

#include "frontends/ebnf/ebnf_parser.h"
#include "grammar/inline_rules.h"
#include "grammar/sink_leading_terminals.h"
#include "support/compile_limits.h"

namespace xg2 {

std::shared_ptr<const CompiledGrammar> CompileEbnf(const std::string& ebnf,
                                                   const std::string& root_rule_name,
                                                   std::shared_ptr<const TokenizerInfo> tokenizer,
                                                   std::shared_ptr<MaskCachePool> pool,
                                                   MaskCacheOptions cache_options,
                                                   int32_t repetition_compression_threshold) {
  GrammarAst ast = ParseEbnf(ebnf, root_rule_name);
  FsmBuildLimits limits;
  limits.repetition_compression_threshold = repetition_compression_threshold;
  limits.max_token_bytes = tokenizer->max_token_bytes();
  InlineOptions inline_options;
  if (repetition_compression_threshold > 0) {
    // A compressed repetition holds about threshold + one token's reach of copies at most.
    inline_options.repetition_copies_cap = repetition_compression_threshold + limits.max_token_bytes + 2;
  }
  InlineSmallRules(&ast, inline_options);
  SinkLeadingTerminals(&ast);
  auto compiled = std::make_shared<CompiledGrammar>();
  const CompileLimits& compile_limits = CurrentCompileLimits();
  limits.max_nodes = compile_limits.max_fsm_nodes;
  compiled->fsm = std::make_shared<const GrammarFsm>(BuildGrammarFsm(ast, limits));
  compiled->earley_limits.max_items_per_step = compile_limits.max_earley_items_per_step;
  compiled->earley_limits.max_work_per_token = compile_limits.max_earley_work_per_token;
  compiled->earley_limits.max_work_per_fill = compile_limits.max_earley_work_per_fill;
  compiled->tokenizer = std::move(tokenizer);
  compiled->ebnf = ebnf;
  compiled->mask_cache = std::make_shared<GrammarMaskCache>(compiled->fsm, compiled->tokenizer,
                                                            std::move(pool), cache_options);
  GrammarMaskCache::StartPrecompute(compiled->mask_cache);
  return compiled;
}

}  // namespace xg2
