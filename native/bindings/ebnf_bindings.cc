// Debugging entry points of the EBNF frontend: parse-and-print round trip and rule names.
// Errors surface as the Python exceptions that module.cc maps from support/error.h.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings/registry.h"
#include "frontends/ebnf/ebnf_parser.h"
#include "grammar/grammar_ast.h"

namespace py = pybind11;

namespace xg2 {
namespace {

std::string EbnfRoundtrip(const std::string& text, const std::string& root_rule_name) {
  return PrintEbnf(ParseEbnf(text, root_rule_name));
}

std::vector<std::string> EbnfRuleNames(const std::string& text,
                                       const std::string& root_rule_name) {
  GrammarAst ast = ParseEbnf(text, root_rule_name);
  std::vector<std::string> names;
  names.reserve(ast.rules.size());
  for (const RuleDef& rule : ast.rules) names.push_back(rule.name);
  return names;
}

// The grammar with every rule renamed to `prefix + name`, printed back; used to embed one
// grammar inside another without name clashes (structural tags).
std::string EbnfPrefixRules(const std::string& text, const std::string& root_rule_name,
                            const std::string& prefix) {
  GrammarAst ast = ParseEbnf(text, root_rule_name);
  for (RuleDef& rule : ast.rules) rule.name = prefix + rule.name;
  return PrintEbnf(ast);
}

void BindEbnf(py::module_& m) {
  m.def("_ebnf_prefix_rules", &EbnfPrefixRules, py::arg("text"), py::arg("root_rule_name"),
        py::arg("prefix"), "Renames every rule to prefix + name (for embedding grammars).");
  m.def("_ebnf_roundtrip", &EbnfRoundtrip, py::arg("text"), py::arg("root_rule_name") = "root",
        "Parses EBNF text and prints it back (debugging aid).");
  m.def("_ebnf_rule_names", &EbnfRuleNames, py::arg("text"), py::arg("root_rule_name") = "root",
        "Names of the rules of an EBNF grammar, in definition order (debugging aid).");
}

}  // namespace
}  // namespace xg2

XG2_REGISTER_BINDINGS(20, "ebnf", xg2::BindEbnf);
