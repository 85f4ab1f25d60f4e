// Compilation of EBNF that may name tokens (Token(id)): the grammar is matched against the
// derived vocabulary of tokenizer/token_literals.h. Derived vocabularies are cached in a
// Python dict owned by the caller (one per GrammarCompiler), keyed by the tuple of ids.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/registry.h"
#include "frontends/ebnf/ebnf_parser.h"
#include "matcher/compiled_grammar.h"
#include "grammar/token_literal.h"
#include "tokenizer/token_literals.h"

namespace py = pybind11;

namespace xg2 {
namespace {

std::shared_ptr<CompiledGrammar> CompileWithTokenLiterals(std::shared_ptr<TokenizerInfo> tokenizer,
                                                          const std::string& ebnf,
                                                          const std::string& root_rule_name,
                                                          py::dict vocab_cache) {
  auto compiled = std::make_shared<CompiledGrammar>();
  std::vector<int32_t> ids;
  {
    py::gil_scoped_release release;
    GrammarAst ast = ParseEbnf(ebnf, root_rule_name);
    compiled->fsm = std::make_shared<const GrammarFsm>(BuildGrammarFsm(ast));
    compiled->ebnf = ebnf;
    ids = TokenLiteralIds(ast);
  }
  if (ids.empty()) {
    compiled->tokenizer = tokenizer;
    return compiled;
  }
  py::tuple key = py::cast(ids);
  if (vocab_cache.contains(key)) {
    compiled->tokenizer = vocab_cache[key].cast<std::shared_ptr<TokenizerInfo>>();
    return compiled;
  }
  std::shared_ptr<const TokenizerInfo> derived;
  {
    py::gil_scoped_release release;
    derived = WithTokenLiterals(*tokenizer, ids);
  }
  vocab_cache[key] = std::const_pointer_cast<TokenizerInfo>(derived);
  compiled->tokenizer = derived;
  return compiled;
}

void BindTokenLiterals(py::module_& m) {
  m.def("compile_ebnf_with_token_literals", &CompileWithTokenLiterals, py::arg("tokenizer_info"),
        py::arg("ebnf"), py::arg("root_rule_name"), py::arg("vocab_cache"),
        "Like compile_ebnf; a grammar that names tokens with Token(id) is matched against a "
        "derived vocabulary (cached in vocab_cache) in which those tokens are its terminals.");
  m.def("_token_literal_bytes",
        [](int32_t id) { return py::bytes(TokenLiteralBytes(id)); }, py::arg("token_id"),
        "The byte spelling of Token(id) in grammar text (for tests and accept_string).");
}

}  // namespace
}  // namespace xg2

XG2_REGISTER_BINDINGS(45, "token_literals", xg2::BindTokenLiterals);
