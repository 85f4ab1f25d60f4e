// Python surface of the compiled grammar and the matcher. Buffers (bitmasks) arrive as raw
// addresses plus sizes that the Python layer has already validated (xg2_plugin/bitmask.py);
// every long-running call releases the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/registry.h"
#include "frontends/ebnf/ebnf_parser.h"
#include "matcher/compiled_grammar.h"
#include "matcher/grammar_matcher.h"
#include "support/error.h"
#include "support/thread_pool.h"

namespace py = pybind11;

namespace xg2 {
namespace {

uint32_t* RowPointer(uintptr_t address, int64_t row_stride_words, int64_t row) {
  return reinterpret_cast<uint32_t*>(address) + row * row_stride_words;
}

void BindMatcher(py::module_& m) {
  py::class_<CompiledGrammar, std::shared_ptr<CompiledGrammar>>(m, "CompiledGrammar")
      .def_property_readonly("ebnf", [](const CompiledGrammar& g) { return g.ebnf; })
      .def_property_readonly("memory_bytes", &CompiledGrammar::MemoryBytes)
      .def_property_readonly("tokenizer_info",
                             [](const CompiledGrammar& g) {
                               return std::const_pointer_cast<TokenizerInfo>(g.tokenizer);
                             })
      .def_property_readonly("num_rules", [](const CompiledGrammar& g) { return g.fsm->num_rules(); })
      .def_property_readonly("num_nodes", [](const CompiledGrammar& g) { return g.fsm->num_nodes(); })
      .def_property_readonly("cached_nodes",
                             [](const CompiledGrammar& g) { return g.mask_cache->built_nodes(); })
      .def_property_readonly("mask_build_ns",
                             [](const CompiledGrammar& g) { return g.mask_cache->build_nanoseconds(); })
      .def("fsm_dump", [](const CompiledGrammar& g) { return g.fsm->ToString(); });

  py::class_<MaskCachePool, std::shared_ptr<MaskCachePool>>(m, "MaskCachePool")
      .def(py::init<int64_t>(), py::arg("limit_bytes") = -1)
      .def_property_readonly("bytes", &MaskCachePool::bytes)
      .def_property_readonly("hits", &MaskCachePool::hits)
      .def_property_readonly("perfect_hits", &MaskCachePool::perfect_hits)
      .def_property_readonly("partial_hits", &MaskCachePool::partial_hits)
      .def_property_readonly("misses", &MaskCachePool::misses)
      .def("__len__", &MaskCachePool::size)
      .def("clear", &MaskCachePool::Clear);

  m.def(
      "compile_ebnf",
      [](std::shared_ptr<TokenizerInfo> tokenizer, const std::string& ebnf,
         const std::string& root_rule_name, std::shared_ptr<MaskCachePool> pool, bool mask_cache,
         bool cross_grammar_cache, int32_t precompute_nodes, int32_t repetition_compression_threshold) {
        py::gil_scoped_release release;
        MaskCacheOptions options;
        options.enabled = mask_cache;
        options.cross_grammar = cross_grammar_cache;
        options.precompute = precompute_nodes;
        return std::const_pointer_cast<CompiledGrammar>(CompileEbnf(
            ebnf, root_rule_name, tokenizer, std::move(pool), options, repetition_compression_threshold));
      },
      py::arg("tokenizer_info"), py::arg("ebnf"), py::arg("root_rule_name") = "root",
      py::arg("pool") = nullptr, py::arg("mask_cache") = true, py::arg("cross_grammar_cache") = true,
      py::arg("precompute_nodes") = 8,
      py::arg("repetition_compression_threshold") = kDefaultRepetitionCompressionThreshold);

  // String-level acceptance without a tokenizer: the test oracle for frontends.
  m.def(
      "ebnf_accepts",
      [](const std::string& ebnf, const py::bytes& text, const std::string& root_rule_name,
         int32_t repetition_compression_threshold, int32_t max_token_bytes) {
        std::string bytes = text;
        py::gil_scoped_release release;
        FsmBuildLimits limits;
        limits.repetition_compression_threshold = repetition_compression_threshold;
        limits.max_token_bytes = max_token_bytes;
        auto fsm = std::make_shared<const GrammarFsm>(BuildGrammarFsm(ParseEbnf(ebnf, root_rule_name), limits));
        EarleyParser parser(fsm);
        return parser.AdvanceString(bytes.data(), static_cast<int32_t>(bytes.size())) ==
                   static_cast<int32_t>(bytes.size()) &&
               parser.CanEnd();
      },
      py::arg("ebnf"), py::arg("text"), py::arg("root_rule_name") = "root",
      py::arg("repetition_compression_threshold") = 0, py::arg("max_token_bytes") = 0);

  py::class_<GrammarMatcher>(m, "GrammarMatcher")
      .def(py::init([](std::shared_ptr<CompiledGrammar> grammar,
                       std::optional<std::vector<int32_t>> stop_token_ids,
                       bool terminate_without_stop_token) {
             return GrammarMatcher(grammar, stop_token_ids, terminate_without_stop_token);
           }),
           py::arg("compiled_grammar"), py::arg("stop_token_ids") = py::none(),
           py::arg("terminate_without_stop_token") = false)
      .def("accept_token", &GrammarMatcher::AcceptToken, py::arg("token_id"),
           py::call_guard<py::gil_scoped_release>())
      .def(
          "accept_string",
          [](GrammarMatcher& self, const py::bytes& text) {
            std::string bytes = text;
            py::gil_scoped_release release;
            return self.AcceptString(bytes);
          },
          py::arg("text"))
      .def("validate_tokens", &GrammarMatcher::ValidateTokens, py::arg("tokens"),
           py::call_guard<py::gil_scoped_release>())
      .def("rollback", &GrammarMatcher::Rollback, py::arg("num_tokens"))
      .def("reset", &GrammarMatcher::Reset)
      .def(
          "fill_next_token_bitmask",
          [](GrammarMatcher& self, uintptr_t address, int64_t num_words) {
            py::gil_scoped_release release;
            return self.FillNextTokenBitmask(reinterpret_cast<uint32_t*>(address), num_words);
          },
          py::arg("address"), py::arg("num_words"))
      .def(
          "fill_next_token_bitmask_reference",
          [](GrammarMatcher& self, uintptr_t address, int64_t num_words) {
            py::gil_scoped_release release;
            return self.FillNextTokenBitmaskReference(reinterpret_cast<uint32_t*>(address), num_words);
          },
          py::arg("address"), py::arg("num_words"))
      .def("is_terminated", &GrammarMatcher::IsTerminated)
      .def("is_completed", &GrammarMatcher::IsCompleted)
      .def("find_jump_forward_string",
           [](GrammarMatcher& self) { return py::bytes(self.FindJumpForwardString()); })
      .def("fork", [](const GrammarMatcher& self) { return GrammarMatcher(self); })
      .def_property_readonly("num_accepted_steps", &GrammarMatcher::num_accepted_steps)
      .def_property_readonly("stop_token_ids", &GrammarMatcher::stop_token_ids);

  // Fills row indices[i] of the bitmask at `address` for matchers[i], on `num_threads`
  // threads without the GIL. Matchers must be distinct objects.
  m.def(
      "batch_fill_next_token_bitmask",
      [](std::vector<GrammarMatcher*> matchers, uintptr_t address, int64_t row_stride_words,
         int64_t num_words, std::vector<int64_t> rows, int num_threads) {
        if (rows.size() != matchers.size()) {
          throw InvalidArgumentError("batch fill: " + std::to_string(matchers.size()) +
                                     " matchers but " + std::to_string(rows.size()) + " rows");
        }
        py::gil_scoped_release release;
        std::vector<uint8_t> need_apply(matchers.size());
        ParallelFor(static_cast<int64_t>(matchers.size()), num_threads, [&](int64_t i) {
          need_apply[i] = matchers[i]->FillNextTokenBitmask(
              RowPointer(address, row_stride_words, rows[i]), num_words);
        });
        return std::vector<bool>(need_apply.begin(), need_apply.end());
      },
      py::arg("matchers"), py::arg("address"), py::arg("row_stride_words"), py::arg("num_words"),
      py::arg("rows"), py::arg("num_threads"));
}

}  // namespace

XG2_REGISTER_BINDINGS(40, "matcher", BindMatcher);

}  // namespace xg2
