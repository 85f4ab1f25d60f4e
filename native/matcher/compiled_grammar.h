// A grammar compiled for one tokenizer: the rule FSMs plus the vocabulary they are matched
// against. Immutable and shared by every matcher created from it.
#ifndef XG2_MATCHER_COMPILED_GRAMMAR_H_
#define XG2_MATCHER_COMPILED_GRAMMAR_H_

#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar_fsm.h"
#include "matcher/earley_parser.h"
#include "matcher/token_mask_cache.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {

struct CompiledGrammar {
  std::shared_ptr<const GrammarFsm> fsm;
  std::shared_ptr<const TokenizerInfo> tokenizer;
  // The EBNF the grammar was built from (after frontend conversion), for inspection.
  std::string ebnf;
  // Token classifications per node, filled on demand by matchers (thread-safe).
  std::shared_ptr<GrammarMaskCache> mask_cache;
  // Limits of every matcher's parser (from the compile's CompileLimits).
  EarleyLimits earley_limits;
  // Sorted ids the grammar names with Token(id) (tokenizer/token_literals.h), and those of them
  // that are stop tokens of the base vocabulary (Harmony `<|call|>`, `<|return|>`): accepting
  // one as a terminal that completes the grammar terminates the matcher.
  std::vector<int32_t> token_literal_ids;
  std::vector<int32_t> stop_terminal_ids;

  size_t MemoryBytes() const {
    return sizeof(*this) + fsm->MemoryBytes() + ebnf.capacity() + mask_cache->MemoryBytes();
  }
};

// Parses EBNF text and lowers it (the shared tail of every frontend). `pool` (may be null)
// shares token classifications with other grammars of the same tokenizer.
// `repetition_compression_threshold`: see FsmBuildLimits (<= 0 turns compression off).
std::shared_ptr<const CompiledGrammar> CompileEbnf(
    const std::string& ebnf, const std::string& root_rule_name,
    std::shared_ptr<const TokenizerInfo> tokenizer, std::shared_ptr<MaskCachePool> pool = nullptr,
    MaskCacheOptions cache_options = {},
    int32_t repetition_compression_threshold = kDefaultRepetitionCompressionThreshold);

}  // namespace xg2

#endif  // XG2_MATCHER_COMPILED_GRAMMAR_H_
