// Python surface of the Lark frontend.
#include <pybind11/pybind11.h>

#include <string>

#include "compiler/compile_scope.h"
#include "bindings/registry.h"
#include "frontends/ebnf/ebnf_parser.h"
#include "frontends/lark/lark_lowering.h"
#include "grammar/grammar_ast_equality.h"
#include "tokenizer/tokenizer_info.h"

namespace py = pybind11;

namespace xg2 {
namespace {

LarkOptions OptionsFor(const TokenizerInfo* tokenizer_info) {
  LarkOptions options;
  if (tokenizer_info != nullptr) {
    options.special_tokens = &tokenizer_info->special_token_text();
    options.vocab_size = tokenizer_info->vocab_size();
  }
  return options;
}

void BindLark(py::module_& m) {
  m.def(
      "_lark_to_ebnf",
      [](const std::string& text, const TokenizerInfo* tokenizer_info, const CompileLimits* limits,
         const CancellationToken* cancel) {
        py::gil_scoped_release release;
        CompileScope scope(limits, cancel);
        return PrintEbnf(LarkToGrammar(text, OptionsFor(tokenizer_info)));
      },
      py::arg("text"), py::arg("tokenizer_info") = nullptr, py::arg("limits") = nullptr,
      py::arg("cancel") = nullptr,
      "Lark grammar text -> the printed EBNF of its grammar, root rule 'root' (docs/lark.md). With "
      "tokenizer_info, <|name|> special tokens and <[id]> token ids become Token(id). Raises "
      "GrammarSyntaxError (RegexError for a regex) naming the construct, line and column, "
      "SchemaError for a bad %json schema.");
  m.def(
      "_lark_grammar_matches_parse",
      [](const std::string& text, const TokenizerInfo* tokenizer_info) {
        py::gil_scoped_release release;
        CompileScope scope(nullptr, nullptr);
        const GrammarAst built = LarkToGrammar(text, OptionsFor(tokenizer_info));
        return SameGrammarAst(built, ParseEbnf(PrintEbnf(built), "root"));
      },
      py::arg("text"), py::arg("tokenizer_info") = nullptr,
      "Test hook: whether the grammar the Lark frontend builds directly is node for node the "
      "parse of the EBNF it prints.");
}

}  // namespace

XG2_REGISTER_BINDINGS(20, "lark", BindLark);

}  // namespace xg2
