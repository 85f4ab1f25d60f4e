#include "compiler/compile_grammar.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "frontends/ebnf/ebnf_parser.h"
#include "grammar/inline_rules.h"
#include "grammar/lazy_rule_builder.h"
#include "grammar/sink_leading_terminals.h"
#include "support/compile_limits.h"
#include "tokenizer/token_literals.h"

namespace xg2 {

std::shared_ptr<CompiledGrammar> CompileGrammarAst(GrammarAst ast, TextSource ebnf, const CompileTarget& target) {
  CompiledGrammarParts parts;
  parts.tokenizer = target.tokenizer;
  parts.pool = target.pool;
  parts.cache_options = target.cache_options;
  parts.token_literal_ids = TokenLiteralIds(ast);
  if (!parts.token_literal_ids.empty() || !ast.token_sets.empty()) {
    // Token-set markers (TokenSet / ExcludeToken) are spelled so that no token of the base
    // vocabulary produces them: only the derived one matches them, even without literals.
    const DerivedVocabulary derived =
        target.derived_vocabularies
            ? target.derived_vocabularies->FindOrDerive(*target.tokenizer, parts.token_literal_ids,
                                                        target.pool.get())
            : DeriveVocabulary(*target.tokenizer, parts.token_literal_ids, target.pool.get());
    parts.tokenizer = derived.vocabulary;
    parts.pool = derived.pool;
    if (!parts.pool) parts.cache_options.cross_grammar = false;
  }
  for (int32_t id : target.tokenizer->stop_token_ids()) {
    if (std::binary_search(parts.token_literal_ids.begin(), parts.token_literal_ids.end(), id)) {
      parts.stop_terminal_ids.push_back(id);
    }
  }
  std::sort(parts.stop_terminal_ids.begin(), parts.stop_terminal_ids.end());

  FsmBuildLimits limits;
  limits.repetition_compression_threshold = target.repetition_compression_threshold;
  limits.max_token_bytes = parts.tokenizer->max_token_bytes();
  InlineOptions inline_options;
  if (target.repetition_compression_threshold > 0) {
    // A compressed repetition holds about threshold + one token's reach of copies at most.
    inline_options.repetition_copies_cap = target.repetition_compression_threshold + limits.max_token_bytes + 2;
  }
  InlineSmallRules(&ast, inline_options);
  SinkLeadingTerminals(&ast);
  const CompileLimits& compile_limits = CurrentCompileLimits();
  limits.max_nodes = compile_limits.max_fsm_nodes;
  if (target.lazy_rule_dfas) {
    LazyGrammarFsm lazy = BuildGrammarFsmLazily(std::move(ast), limits);
    parts.fsm = std::move(lazy.fsm);
    parts.rule_builder = std::move(lazy.builder);
  } else {
    parts.fsm = BuildGrammarFsm(ast, limits);
  }
  parts.earley_limits.max_items_per_step = compile_limits.max_earley_items_per_step;
  parts.earley_limits.max_work_per_token = compile_limits.max_earley_work_per_token;
  parts.earley_limits.max_work_per_fill = compile_limits.max_earley_work_per_fill;
  parts.ebnf = std::move(ebnf);
  auto compiled = std::make_shared<CompiledGrammar>(std::move(parts));
  GrammarMaskCache::StartPrecompute(compiled->mask_cache);
  return compiled;
}

std::shared_ptr<CompiledGrammar> CompileEbnfText(const std::string& ebnf, const std::string& root_rule_name,
                                                 const CompileTarget& target) {
  return CompileGrammarAst(ParseEbnf(ebnf, root_rule_name), TextSource::Known(ebnf), target);
}

}  // namespace xg2
