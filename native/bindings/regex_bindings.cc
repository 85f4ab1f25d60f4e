// Python surface of the regex frontend.
#include <pybind11/pybind11.h>

#include <string>

#include "compiler/compile_scope.h"
#include "bindings/registry.h"
#include "frontends/ebnf/ebnf_parser.h"
#include "frontends/regex/regex_converter.h"
#include "grammar/grammar_ast_equality.h"
#include "grammar/grammar_builder.h"

namespace py = pybind11;

namespace xg2 {
namespace {

void BindRegex(py::module_& m) {
  m.def(
      "_regex_to_ebnf",
      [](const std::string& pattern, bool search, bool json_string_body,
         const CancellationToken* cancel) {
        CompileScope scope(nullptr, cancel);
        RegexOptions options;
        options.search = search;
        options.json_string_body = json_string_body;
        return RegexToEbnf(pattern, options);
      },
      py::arg("pattern"), py::arg("search") = false, py::arg("json_string_body") = false,
      py::arg("cancel") = nullptr,
      "Translates a regex into an EBNF expression (the body of a rule). search=True: the "
      "pattern may match anywhere unless anchored (JSON Schema `pattern`). "
      "json_string_body=True: the language is the JSON string encoding of matching strings, "
      "without the quotes. Raises RegexError (with the offset) on malformed or unsupported "
      "patterns and ResourceLimitError on repetition bounds above 100000 or deep nesting.");
  m.def(
      "_regex_grammar_matches_parse",
      [](const std::string& pattern, bool search, bool json_string_body) {
        RegexOptions options;
        options.search = search;
        options.json_string_body = json_string_body;
        py::gil_scoped_release release;
        GrammarBuilder builder;
        const RuleId root = builder.AddRule("root");
        std::string body;
        builder.DefineRule(root, RegexToGrammar(pattern, options, &builder, &body));
        const GrammarAst built = builder.Finish(root);
        return SameGrammarAst(built, ParseEbnf("root ::= " + body, "root"));
      },
      py::arg("pattern"), py::arg("search") = false, py::arg("json_string_body") = false,
      "Test hook: whether the grammar the regex frontend builds directly is node for node the "
      "parse of the EBNF it prints.");
}

}  // namespace

XG2_REGISTER_BINDINGS(20, "regex", BindRegex);

}  // namespace xg2
