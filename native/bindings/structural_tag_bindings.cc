// Python surface of the structural-tag frontend (registered at order 20, with the frontends).
// The tag arrives as JSON text (str or bytes): the Python layer serialises dicts and pydantic
// models, so no Python object walk happens on the compile path.
#include <pybind11/pybind11.h>

#include <string>

#include "compiler/compile_scope.h"
#include "bindings/registry.h"
#include "frontends/ebnf/ebnf_parser.h"
#include "frontends/structural_tag/structural_tag.h"
#include "grammar/grammar_ast_equality.h"
#include "tokenizer/tokenizer_info.h"

namespace py = pybind11;

namespace xg2 {
namespace {

// The bytes of a str (as UTF-8) or bytes-like object.
std::string TextArgument(py::handle value, const char* what) {
  const char* data = nullptr;
  Py_ssize_t length = 0;
  if (PyUnicode_Check(value.ptr())) {
    data = PyUnicode_AsUTF8AndSize(value.ptr(), &length);
    if (data == nullptr) throw py::error_already_set();
  } else if (PyBytes_Check(value.ptr())) {
    data = PyBytes_AS_STRING(value.ptr());
    length = PyBytes_GET_SIZE(value.ptr());
  } else if (PyByteArray_Check(value.ptr())) {
    data = PyByteArray_AS_STRING(value.ptr());
    length = PyByteArray_GET_SIZE(value.ptr());
  } else {
    throw py::type_error(std::string(what) + " must be str or bytes, not " +
                         std::string(py::str(py::type::handle_of(value).attr("__name__"))));
  }
  return std::string(data, static_cast<size_t>(length));
}

// Lowering options of the debugging entry points (the compiler builds its own).
structural_tag::LoweringOptions Options(const TokenizerInfo* tokenizer_info, bool any_whitespace) {
  structural_tag::LoweringOptions options;
  if (tokenizer_info != nullptr) {
    options.special_tokens = &tokenizer_info->special_token_text();
    options.vocab_size = tokenizer_info->vocab_size();
    options.tokenizer = tokenizer_info;
  }
  options.any_whitespace = any_whitespace;
  return options;
}

void BindStructuralTag(py::module_& m) {
  m.def(
      "_structural_tag_to_ebnf",
      [](py::handle tag, const TokenizerInfo* tokenizer_info, bool any_whitespace,
         const CompileLimits* limits, const CancellationToken* cancel) {
        std::string text = TextArgument(tag, "structural tag");
        py::gil_scoped_release release;
        CompileScope scope(limits, cancel);
        const structural_tag::LoweringOptions options = Options(tokenizer_info, any_whitespace);
        return structural_tag::StructuralTagToEbnf(text, options);
      },
      py::arg("tag"), py::arg("tokenizer_info") = nullptr, py::arg("any_whitespace") = true,
      py::arg("limits") = nullptr, py::arg("cancel") = nullptr,
      "Structural-tag JSON text (str or bytes; also the legacy structures/triggers form) -> "
      "EBNF text with root rule 'root'. With tokenizer_info, special-token text in the tag's "
      "strings becomes Token(id). Raises StructuralTagError (naming the JSON path) for a "
      "malformed tag, UnsupportedSchemaError for what xg2 cannot express, ResourceLimitError "
      "for nesting past the bounds.");
  m.def(
      "_structural_tag_grammar_matches_parse",
      [](py::handle tag, const TokenizerInfo* tokenizer_info, bool any_whitespace) {
        std::string text = TextArgument(tag, "structural tag");
        py::gil_scoped_release release;
        const structural_tag::LoweringOptions options = Options(tokenizer_info, any_whitespace);
        const GrammarAst built = structural_tag::StructuralTagToGrammar(text, options);
        return SameGrammarAst(built, ParseEbnf(PrintEbnf(built), "root"));
      },
      py::arg("tag"), py::arg("tokenizer_info") = nullptr, py::arg("any_whitespace") = true,
      "Test hook: whether the grammar a structural tag lowers to (built directly, its JSON "
      "schemas embedded as built) is node for node the parse of the EBNF it prints.");
  m.def(
      "_split_special_tokens",
      [](const TokenizerInfo& tokenizer_info, const std::string& text) {
        py::list pieces;
        for (const SpecialTokenText::Piece& piece : tokenizer_info.special_token_text().Split(text)) {
          if (piece.token_id >= 0) {
            pieces.append(piece.token_id);
          } else {
            pieces.append(py::str(piece.text.data(), piece.text.size()));
          }
        }
        return pieces;
      },
      py::arg("tokenizer_info"), py::arg("text"),
      "`text` as plain strings and special-token ids, as structural tags split it (longest "
      "special-token text first); debugging aid.");
}

}  // namespace
}  // namespace xg2

XG2_REGISTER_BINDINGS(20, "structural_tag", xg2::BindStructuralTag);
