// Python surface of the JSON Schema frontend (registered at order 20, with the frontends).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/compile_scope.h"
#include "bindings/json_schema_options.h"
#include "bindings/registry.h"
#include "frontends/ebnf/ebnf_parser.h"
#include "frontends/json_schema/json_schema_converter.h"
#include "grammar/grammar_ast_equality.h"
#include "support/compile_limits.h"

namespace py = pybind11;

namespace xg2 {
namespace {

void BindJsonSchema(py::module_& m) {
  m.def(
      "_json_schema_to_ebnf",
      [](const std::string& schema, bool any_whitespace, std::optional<int> indent,
         JsonSchemaSeparators separators, bool strict_mode, std::optional<int> max_whitespace,
         bool lenient, const CompileLimits* limits, const CancellationToken* cancel, bool any_order,
         bool any_key_spelling) {
        const JsonSchemaOptions options = JsonSchemaOptionsFrom(
            any_whitespace, indent, std::move(separators), strict_mode, max_whitespace, lenient, any_order,
            any_key_spelling);
        JsonSchemaConversion result;
        {
          py::gil_scoped_release release;
          CompileScope scope(limits, cancel);
          result = JsonSchemaToEbnf(schema, options);
        }
        return py::make_tuple(result.ebnf, result.warnings);
      },
      py::arg("schema"), py::arg("any_whitespace") = true, py::arg("indent") = py::none(),
      py::arg("separators") = py::none(), py::arg("strict_mode") = true,
      py::arg("max_whitespace") = py::none(), py::arg("lenient") = false,
      py::arg("limits") = nullptr, py::arg("cancel") = nullptr, py::arg("any_order") = false,
      py::arg("any_key_spelling") = false,
      "JSON Schema text -> (EBNF text with root rule 'root', warnings).");
  m.def(
      "_json_schema_grammar_matches_parse",
      [](const std::string& schema, bool any_whitespace, bool strict_mode, bool lenient, bool any_order,
         bool any_key_spelling) {
        const JsonSchemaOptions options = JsonSchemaOptionsFrom(
            any_whitespace, std::nullopt, std::nullopt, strict_mode, std::nullopt, lenient, any_order,
            any_key_spelling);
        py::gil_scoped_release release;
        CompileLimits unbounded;
        unbounded.max_repetition_bound = std::numeric_limits<int32_t>::max();
        JsonSchemaConversion built = JsonSchemaToGrammar(schema, options, unbounded);
        const std::string printed = JsonSchemaToEbnf(schema, options).ebnf;
        ScopedCompileLimits scope(&unbounded);
        const GrammarAst parsed = ParseEbnf(printed, "root");
        if (built.grammar.automata.empty()) return SameGrammarAst(built.grammar, parsed);
        // An automaton literal prints as right-linear rules (grammar/automaton_literal.h), which
        // parse to rules, not to the literal: the built grammar's own print parses alike.
        return SameGrammarAst(ParseEbnf(PrintEbnf(built.grammar), "root"), parsed);
      },
      py::arg("schema"), py::arg("any_whitespace") = true, py::arg("strict_mode") = true,
      py::arg("lenient") = false, py::arg("any_order") = false, py::arg("any_key_spelling") = false,
      "Test hook: whether the grammar the JSON Schema frontend builds directly is node for node "
      "the parse of the EBNF the same conversion prints (the text a compiled grammar shows).");
  m.def(
      "_json_schema_keyword_table",
      [] {
        py::list rows;
        for (const KeywordSupport& entry : JsonSchemaKeywordTable()) {
          rows.append(py::make_tuple(entry.keyword, entry.level, entry.note));
        }
        return rows;
      },
      "The converter's keyword table: (keyword, level, note) with level one of supported, "
      "limited, error, annotation.");
  m.def(
      "_builtin_json_ebnf",
      [](bool any_whitespace, std::optional<int> indent, JsonSchemaSeparators separators,
         std::optional<int> max_whitespace) {
        JsonSchemaOptions options;
        options.any_whitespace = any_whitespace;
        options.indent = indent;
        options.separators = std::move(separators);
        options.max_whitespace = max_whitespace;
        return BuiltinJsonEbnf(options);
      },
      py::arg("any_whitespace") = true, py::arg("indent") = py::none(),
      py::arg("separators") = py::none(), py::arg("max_whitespace") = py::none(),
      "EBNF text for any JSON value.");
}

}  // namespace
}  // namespace xg2

XG2_REGISTER_BINDINGS(20, "json_schema", xg2::BindJsonSchema);
