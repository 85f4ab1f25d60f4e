#include "matcher/compiled_grammar.h"

#include <algorithm>
#include <utility>

#include "support/dcheck.h"

namespace xg2 {

CompiledGrammar::CompiledGrammar(CompiledGrammarParts parts)
    : fsm(std::make_shared<const GrammarFsm>(std::move(parts.fsm))),
      tokenizer(std::move(parts.tokenizer)),
      // A copy, so the text holds no spare capacity (MemoryBytes counts capacity).
      ebnf(parts.ebnf.data(), parts.ebnf.size()),
      mask_cache(std::make_shared<GrammarMaskCache>(fsm, tokenizer, std::move(parts.pool), parts.cache_options)),
      earley_limits(parts.earley_limits),
      token_literal_ids(std::move(parts.token_literal_ids)),
      stop_terminal_ids(std::move(parts.stop_terminal_ids)) {
  XG2_DCHECK(std::is_sorted(token_literal_ids.begin(), token_literal_ids.end()), "token literal ids are not sorted");
  XG2_DCHECK(std::is_sorted(stop_terminal_ids.begin(), stop_terminal_ids.end()), "stop terminal ids are not sorted");
}

}  // namespace xg2
