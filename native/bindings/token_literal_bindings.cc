// Compilation of EBNF that may name tokens (Token(id)): the grammar is matched against the
// derived vocabulary of tokenizer/token_literals.h. Derived vocabularies are cached in a
// Python dict owned by the caller (one per GrammarCompiler), keyed by the tuple of ids.
#include <algorithm>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <utility>

#include "bindings/compile_scope.h"
#include "bindings/registry.h"
#include "frontends/ebnf/ebnf_parser.h"
#include "matcher/compiled_grammar.h"
#include "matcher/token_mask_cache.h"
#include "grammar/token_literal.h"
#include "tokenizer/token_literals.h"

namespace py = pybind11;

namespace xg2 {
namespace {

// Grammars without Token(...) compile exactly as compile_ebnf does. A grammar naming tokens
// gets the derived vocabulary and that vocabulary's own cross-grammar pool (the base pool's
// classifications belong to the base vocabulary; grammars naming the same tokens, such as
// every Harmony tool set, share the derived one). Both are cached in `vocab_cache` under the
// tuple of ids, as (vocabulary, pool).
std::shared_ptr<CompiledGrammar> CompileWithTokenLiterals(
    std::shared_ptr<TokenizerInfo> tokenizer, const std::string& ebnf,
    const std::string& root_rule_name, py::dict vocab_cache, std::shared_ptr<MaskCachePool> pool,
    bool mask_cache, bool cross_grammar_cache, int32_t precompute_nodes,
    int32_t repetition_compression_threshold, const CompileLimits* limits,
    const CancellationToken* cancel) {
  // Installed while the GIL is held and again after each release: the scope is per thread,
  // and every step below runs on this thread.
  CompileScope scope(limits, cancel);
  MaskCacheOptions options;
  options.enabled = mask_cache;
  options.cross_grammar = cross_grammar_cache;
  options.precompute = precompute_nodes;
  std::vector<int32_t> ids;
  bool token_sets = false;  // TokenSet / ExcludeToken: markers no token may spell
  if (MayNameTokenLiterals(ebnf)) {
    py::gil_scoped_release release;
    GrammarAst ast = ParseEbnf(ebnf, root_rule_name);
    ids = TokenLiteralIds(ast);
    token_sets = !ast.token_sets.empty();
  }
  std::shared_ptr<const TokenizerInfo> vocab = tokenizer;
  if (!ids.empty() || token_sets) {
    py::tuple key = py::cast(ids);
    std::shared_ptr<MaskCachePool> derived_pool;
    if (vocab_cache.contains(key)) {
      auto cached = vocab_cache[key].cast<std::pair<std::shared_ptr<TokenizerInfo>,
                                                    std::shared_ptr<MaskCachePool>>>();
      vocab = cached.first;
      derived_pool = cached.second;
    } else {
      {
        py::gil_scoped_release release;
        vocab = WithTokenLiterals(*tokenizer, ids);
      }
      if (pool) derived_pool = std::make_shared<MaskCachePool>(pool->limit_bytes());
      vocab_cache[key] = py::make_tuple(std::const_pointer_cast<TokenizerInfo>(vocab), derived_pool);
    }
    pool = derived_pool;
    if (!pool) options.cross_grammar = false;
  }
  py::gil_scoped_release release;
  auto compiled = std::const_pointer_cast<CompiledGrammar>(
      CompileEbnf(ebnf, root_rule_name, vocab, std::move(pool), options,
                  repetition_compression_threshold));
  compiled->token_literal_ids = ids;
  for (int32_t id : tokenizer->stop_token_ids()) {
    if (std::binary_search(ids.begin(), ids.end(), id)) compiled->stop_terminal_ids.push_back(id);
  }
  std::sort(compiled->stop_terminal_ids.begin(), compiled->stop_terminal_ids.end());
  return compiled;
}

void BindTokenLiterals(py::module_& m) {
  m.def("compile_ebnf_with_token_literals", &CompileWithTokenLiterals, py::arg("tokenizer_info"),
        py::arg("ebnf"), py::arg("root_rule_name"), py::arg("vocab_cache"),
        py::arg("pool") = nullptr, py::arg("mask_cache") = true,
        py::arg("cross_grammar_cache") = true, py::arg("precompute_nodes") = 32,
        py::arg("repetition_compression_threshold") = kDefaultRepetitionCompressionThreshold,
        py::arg("limits") = nullptr, py::arg("cancel") = nullptr,
        "Like compile_ebnf; a grammar that names tokens with Token(id) is matched against a "
        "derived vocabulary (cached in vocab_cache) in which those tokens are its terminals.");
  m.def("_token_literal_bytes",
        [](int32_t id) { return py::bytes(TokenLiteralBytes(id)); }, py::arg("token_id"),
        "The byte spelling of Token(id) in grammar text (for tests and accept_string).");
}

}  // namespace
}  // namespace xg2

XG2_REGISTER_BINDINGS(45, "token_literals", xg2::BindTokenLiterals);
