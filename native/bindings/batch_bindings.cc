// Python surface of the batch matcher and the draft-tree traversal. xg2_plugin/batch_matcher.py
// and xg2_plugin/matcher.py check the arguments' Python types and the bitmask layout and pass
// raw rows here; the native side checks what guards memory (sizes, links, distinct matchers)
// and runs each call without the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings/registry.h"
#include "matcher/batch_matcher.h"
#include "matcher/draft_tree.h"
#include "support/error.h"

namespace py = pybind11;

namespace xg2 {
namespace {

using Int64Array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

const int64_t* Links(const Int64Array& array, const char* name, int64_t num_nodes) {
  if (array.ndim() != 1 || array.shape(0) != num_nodes) {
    throw InvalidArgumentError(std::string(name) + " must be 1-D with one entry per node (" +
                               std::to_string(num_nodes) + ", as retrieve_next_token), got " +
                               std::to_string(array.ndim() == 1 ? array.shape(0) : -1) + " entries");
  }
  return array.data();
}

void BindBatch(py::module_& m) {
  m.def(
      "batch_accept_token",
      [](const std::vector<GrammarMatcher*>& matchers, const std::vector<int32_t>& tokens, int num_threads) {
        py::gil_scoped_release release;
        std::vector<uint8_t> accepted = BatchAcceptToken(matchers, tokens, num_threads);
        return std::vector<bool>(accepted.begin(), accepted.end());
      },
      py::arg("matchers"), py::arg("tokens"), py::arg("num_threads"));

  m.def(
      "batch_accept_string",
      [](const std::vector<GrammarMatcher*>& matchers, const std::vector<py::bytes>& strings, int num_threads) {
        std::vector<std::string> texts(strings.begin(), strings.end());
        py::gil_scoped_release release;
        std::vector<uint8_t> accepted = BatchAcceptString(matchers, texts, num_threads);
        return std::vector<bool>(accepted.begin(), accepted.end());
      },
      py::arg("matchers"), py::arg("strings"), py::arg("num_threads"));

  m.def(
      "batch_rollback",
      [](const std::vector<GrammarMatcher*>& matchers, const std::vector<int32_t>& num_tokens, int num_threads) {
        py::gil_scoped_release release;
        BatchRollback(matchers, num_tokens, num_threads);
      },
      py::arg("matchers"), py::arg("num_tokens"), py::arg("num_threads"));

  // Fills rows [0, num_nodes) of the bitmask at `address` (validated by the caller:
  // `rows` rows of `num_words` words, `row_stride_words` apart).
  m.def(
      "traverse_draft_tree",
      [](GrammarMatcher& matcher, const Int64Array& next_token, const Int64Array& next_sibling,
         const Int64Array& draft_tokens, uintptr_t address, int64_t rows, int64_t row_stride_words,
         int64_t num_words, double time_threshold, bool clear_skipped_rows) {
        DraftTree tree;
        tree.num_nodes = next_token.ndim() == 1 ? next_token.shape(0) : -1;
        if (tree.num_nodes < 0) throw InvalidArgumentError("retrieve_next_token must be 1-D");
        tree.next_token = next_token.data();
        tree.next_sibling = Links(next_sibling, "retrieve_next_sibling", tree.num_nodes);
        tree.tokens = Links(draft_tokens, "draft_tokens", tree.num_nodes);
        if (rows != tree.num_nodes) {
          throw InvalidArgumentError("bitmask must have one row per node (" + std::to_string(tree.num_nodes) +
                                     "), got " + std::to_string(rows) + " rows");
        }
        const int64_t needed = BitmaskWords(matcher.grammar().tokenizer->vocab_size());
        if (num_words < needed) {
          throw InvalidArgumentError("bitmask rows have " + std::to_string(num_words) + " words; the vocabulary needs " +
                                     std::to_string(needed));
        }
        if (rows > 1 && row_stride_words < num_words) throw InvalidArgumentError("bitmask rows overlap in memory");
        py::gil_scoped_release release;
        ValidateDraftTree(tree);
        return TraverseDraftTree(matcher, tree, reinterpret_cast<uint32_t*>(address), row_stride_words, num_words,
                                 time_threshold, clear_skipped_rows);
      },
      py::arg("matcher"), py::arg("retrieve_next_token"), py::arg("retrieve_next_sibling"),
      py::arg("draft_tokens"), py::arg("address"), py::arg("rows"), py::arg("row_stride_words"),
      py::arg("num_words"), py::arg("time_threshold"), py::arg("clear_skipped_rows") = true);
}

}  // namespace

XG2_REGISTER_BINDINGS(41, "batch", BindBatch);

}  // namespace xg2
