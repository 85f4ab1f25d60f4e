// Python surface of native/compiler/: the per-tokenizer compiler with one entry per source kind,
// and the table of derived vocabularies its Python owner charges to its grammar cache. Each
// compile releases the GIL for the whole call.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings/json_schema_options.h"
#include "bindings/registry.h"
#include "compiler/derived_vocabularies.h"
#include "compiler/grammar_compiler.h"
#include "grammar/token_literal.h"

namespace py = pybind11;

namespace xg2 {
namespace {

using Ids = DerivedVocabularies::Ids;
py::tuple IdsTuple(const Ids& ids) { return py::tuple(py::cast(ids)); }

py::tuple EntryTuple(const DerivedVocabulary& entry) {
  return py::make_tuple(std::const_pointer_cast<TokenizerInfo>(entry.vocabulary), entry.pool);
}

void BindDerivedVocabularies(py::module_& m) {
  py::class_<DerivedVocabularies, std::shared_ptr<DerivedVocabularies>>(m, "DerivedVocabularies")
      .def(py::init<>())
      .def("__len__", &DerivedVocabularies::size)
      .def(
          "__contains__", [](const DerivedVocabularies& self, const Ids& ids) { return self.Find(ids).has_value(); },
          py::arg("ids"))
      .def("__getitem__",
           [](const DerivedVocabularies& self, const Ids& ids) {
             std::optional<DerivedVocabulary> found = self.Find(ids);
             if (!found) throw py::key_error(py::str(IdsTuple(ids)));
             return EntryTuple(*found);
           },
           py::arg("ids"))
      .def("items",
           [](const DerivedVocabularies& self) {
             py::list out;
             for (const auto& [ids, entry] : self.Entries()) out.append(py::make_tuple(IdsTuple(ids), EntryTuple(entry)));
             return out;
           },
           "(ids, (vocabulary, pool)) for each entry, oldest first.")
      .def("values",
           [](const DerivedVocabularies& self) {
             py::list out;
             for (const auto& entry : self.Entries()) out.append(EntryTuple(entry.second));
             return out;
           },
           "(vocabulary, pool) for each entry, oldest first.")
      .def("ids_of",
           [](const DerivedVocabularies& self, const TokenizerInfo& vocabulary) -> py::object {
             std::optional<Ids> ids = self.IdsOf(&vocabulary);
             return ids ? py::object(IdsTuple(*ids)) : py::object(py::none());
           },
           py::arg("vocabulary"), "The ids whose stored vocabulary is `vocabulary` (a tuple), or None.")
      .def("remove", &DerivedVocabularies::Remove, py::arg("ids"))
      .def("remove_oldest", &DerivedVocabularies::RemoveOldest)
      .def("clear", &DerivedVocabularies::Clear);
}

void BindGrammarCompiler(py::module_& m) {
  py::class_<LoweredStructuralTag, std::shared_ptr<LoweredStructuralTag>>(m, "LoweredStructuralTag")
      .def("__eq__", [](const LoweredStructuralTag& self, const LoweredStructuralTag& other) { return self == other; },
           py::arg("other"), py::is_operator())
      .def("__hash__", [](const LoweredStructuralTag& self) { return self.hash; });

  py::class_<GrammarCompiler, std::shared_ptr<GrammarCompiler>>(m, "GrammarCompiler")
      .def(py::init([](std::shared_ptr<TokenizerInfo> tokenizer_info, std::shared_ptr<MaskCachePool> pool,
                       std::shared_ptr<DerivedVocabularies> derived_vocabularies, bool mask_cache,
                       bool cross_grammar_cache, int32_t precompute_nodes,
                       int32_t repetition_compression_threshold, const CompileLimits* limits, bool lazy_rule_dfas) {
             CompileTarget target;
             target.tokenizer = std::move(tokenizer_info);
             target.pool = std::move(pool);
             target.derived_vocabularies = std::move(derived_vocabularies);
             target.cache_options.enabled = mask_cache;
             target.cache_options.cross_grammar = cross_grammar_cache;
             target.cache_options.precompute = precompute_nodes;
             target.repetition_compression_threshold = repetition_compression_threshold;
             target.lazy_rule_dfas = lazy_rule_dfas;
             return std::make_shared<GrammarCompiler>(std::move(target), limits ? *limits : CompileLimits());
           }),
           py::arg("tokenizer_info"), py::arg("pool") = nullptr, py::arg("derived_vocabularies") = nullptr,
           py::arg("mask_cache") = true, py::arg("cross_grammar_cache") = true, py::arg("precompute_nodes") = 32,
           py::arg("repetition_compression_threshold") = kDefaultRepetitionCompressionThreshold,
           py::arg("limits") = nullptr, py::arg("lazy_rule_dfas") = false)
      .def(
          "compile_json_schema",
          [](const GrammarCompiler& self, const std::string& schema, bool any_whitespace, std::optional<int> indent,
             JsonSchemaSeparators separators, bool strict_mode, std::optional<int> max_whitespace, bool lenient,
             bool any_order, bool any_key_spelling, const CancellationToken* cancel) {
            const JsonSchemaOptions options = JsonSchemaOptionsFrom(any_whitespace, indent, std::move(separators),
                                                                    strict_mode, max_whitespace, lenient, any_order,
                                                                    any_key_spelling);
            JsonSchemaCompilation result = self.CompileJsonSchema(schema, options, cancel);
            return std::make_pair(std::move(result.grammar), std::move(result.warnings));
          },
          py::arg("schema"), py::arg("any_whitespace") = true, py::arg("indent") = py::none(),
          py::arg("separators") = py::none(), py::arg("strict_mode") = true, py::arg("max_whitespace") = py::none(),
          py::arg("lenient") = false, py::arg("any_order") = false, py::arg("any_key_spelling") = false,
          py::arg("cancel") = nullptr, py::call_guard<py::gil_scoped_release>(),
          "JSON Schema text -> (compiled grammar, warnings of ignored keywords (lenient)).")
      .def("compile_builtin_json", &GrammarCompiler::CompileBuiltinJson, py::arg("cancel") = nullptr,
           py::call_guard<py::gil_scoped_release>())
      .def("compile_ebnf", &GrammarCompiler::CompileEbnf, py::arg("ebnf"), py::arg("root_rule_name") = "root",
           py::arg("cancel") = nullptr, py::call_guard<py::gil_scoped_release>())
      .def("compile_regex", &GrammarCompiler::CompileRegex, py::arg("pattern"), py::arg("cancel") = nullptr,
           py::call_guard<py::gil_scoped_release>())
      .def("compile_lark", &GrammarCompiler::CompileLark, py::arg("text"), py::arg("cancel") = nullptr,
           py::call_guard<py::gil_scoped_release>())
      .def("compile_choice", &GrammarCompiler::CompileChoice, py::arg("choices"), py::arg("cancel") = nullptr,
           py::call_guard<py::gil_scoped_release>())
      .def("lower_structural_tag", &GrammarCompiler::LowerStructuralTag, py::arg("tag"),
           py::arg("any_whitespace") = true, py::call_guard<py::gil_scoped_release>(),
           "Validates and lowers structural-tag JSON text, for compile_structural_tag.")
      .def(
          "compile_structural_tag",
          [](const GrammarCompiler& self, std::shared_ptr<LoweredStructuralTag> lowered,
             const CancellationToken* cancel) { return self.CompileStructuralTag(std::move(lowered), cancel); },
          py::arg("lowered").none(false), py::arg("cancel") = nullptr, py::call_guard<py::gil_scoped_release>());

  m.def("_token_literal_bytes", [](int32_t id) { return py::bytes(TokenLiteralBytes(id)); }, py::arg("token_id"),
        "The byte spelling of Token(id) in grammar text (for tests and accept_string).");
}

void BindCompiler(py::module_& m) {
  BindDerivedVocabularies(m);
  BindGrammarCompiler(m);
}

}  // namespace
}  // namespace xg2

XG2_REGISTER_BINDINGS(45, "compiler", xg2::BindCompiler);
