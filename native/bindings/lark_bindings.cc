// Python surface of the Lark frontend.
#include <pybind11/pybind11.h>

#include <string>

#include "compiler/compile_scope.h"
#include "bindings/registry.h"
#include "frontends/lark/lark_lowering.h"
#include "tokenizer/tokenizer_info.h"

namespace py = pybind11;

namespace xg2 {
namespace {

void BindLark(py::module_& m) {
  m.def(
      "_lark_to_ebnf",
      [](const std::string& text, const TokenizerInfo* tokenizer_info, const CompileLimits* limits,
         const CancellationToken* cancel) {
        py::gil_scoped_release release;
        CompileScope scope(limits, cancel);
        LarkOptions options;
        if (tokenizer_info != nullptr) {
          options.special_tokens = &tokenizer_info->special_token_text();
          options.vocab_size = tokenizer_info->vocab_size();
        }
        return LarkToEbnf(text, options);
      },
      py::arg("text"), py::arg("tokenizer_info") = nullptr, py::arg("limits") = nullptr,
      py::arg("cancel") = nullptr,
      "Lark grammar text -> EBNF text with root rule 'root' (docs/lark.md). With tokenizer_info, "
      "<|name|> special tokens and <[id]> token ids become Token(id). Raises GrammarSyntaxError "
      "(RegexError for a regex) naming the construct, line and column, SchemaError for a bad "
      "%json schema.");
}

}  // namespace

XG2_REGISTER_BINDINGS(20, "lark", BindLark);

}  // namespace xg2
