// The shared tail of every compile: a grammar's rule AST to a CompiledGrammar for one
// tokenizer. A grammar that names tokens (Token(id), token sets) is matched against the
// vocabulary derived for those ids (compiler/derived_vocabularies.h).
//
// Runs under the compile limits and cancellation token installed on the calling thread
// (compiler/compile_scope.h).
#ifndef XG2_COMPILER_COMPILE_GRAMMAR_H_
#define XG2_COMPILER_COMPILE_GRAMMAR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "compiler/derived_vocabularies.h"
#include "grammar/grammar_ast.h"
#include "grammar/grammar_fsm.h"
#include "matcher/compiled_grammar.h"
#include "matcher/token_mask_cache.h"
#include "support/lazy_text.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {

// The tokenizer a grammar is compiled for, and how its token classifications are shared.
struct CompileTarget {
  std::shared_ptr<const TokenizerInfo> tokenizer;
  // Shares token classifications with other grammars of `tokenizer` (may be null).
  std::shared_ptr<MaskCachePool> pool;
  // Where derived vocabularies are kept for reuse (may be null: each compile derives its own).
  std::shared_ptr<DerivedVocabularies> derived_vocabularies;
  MaskCacheOptions cache_options;
  // See FsmBuildLimits (<= 0 turns repetition compression off).
  int32_t repetition_compression_threshold = kDefaultRepetitionCompressionThreshold;
  // Internal, off by default: leave unbuilt the rule DFAs that may wait for their first
  // prediction (grammar/lazy_rule_builder.h); a matcher builds each when it first predicts it,
  // and the mask cache grows with the snapshots (docs/lazy_rule_dfas.md).
  bool lazy_rule_dfas = false;
};

// Lowers `ast` (inlining, leading-terminal sinking, rule FSMs) and builds the grammar, then
// starts its background precompute. `ebnf` is the text the AST was parsed from, or how to
// print it when asked (for inspection and serialization; CompiledGrammar::ebnf).
std::shared_ptr<CompiledGrammar> CompileGrammarAst(GrammarAst ast, TextSource ebnf, const CompileTarget& target);

// ParseEbnf, then CompileGrammarAst.
std::shared_ptr<CompiledGrammar> CompileEbnfText(const std::string& ebnf, const std::string& root_rule_name,
                                                 const CompileTarget& target);

}  // namespace xg2

#endif  // XG2_COMPILER_COMPILE_GRAMMAR_H_
