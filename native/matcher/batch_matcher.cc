#include "matcher/batch_matcher.h"

#include <algorithm>
#include <exception>

#include "support/error.h"
#include "support/thread_pool.h"

namespace xg2 {
namespace {

// Runs one step per matcher; when any throws, rolls back the matchers whose step was taken
// (each step is one history entry) and rethrows the first error, naming its batch index.
template <typename Step>
std::vector<uint8_t> AllOrNothing(const std::vector<GrammarMatcher*>& matchers, int num_threads, const Step& step) {
  const int64_t count = static_cast<int64_t>(matchers.size());
  std::vector<uint8_t> taken(matchers.size(), 0);
  std::vector<std::exception_ptr> errors(matchers.size());
  ParallelFor(count, num_threads, [&](int64_t i) {
    try {
      taken[i] = step(i) ? 1 : 0;
    } catch (...) {
      errors[i] = std::current_exception();
    }
  });
  const auto failed = std::find_if(errors.begin(), errors.end(), [](const auto& e) { return e != nullptr; });
  if (failed == errors.end()) return taken;
  for (int64_t i = 0; i < count; ++i) {
    if (taken[i]) matchers[i]->Rollback(1);
  }
  const size_t index = static_cast<size_t>(failed - errors.begin());
  try {
    std::rethrow_exception(*failed);
  } catch (const ResourceLimitError& e) {
    throw ResourceLimitError("matchers[" + std::to_string(index) + "]: " + e.what() +
                             " (no matcher of the batch was changed)");
  }
}

}  // namespace

void CheckBatch(const std::vector<GrammarMatcher*>& matchers, size_t count, const char* what) {
  if (count != matchers.size()) {
    throw InvalidArgumentError(std::to_string(matchers.size()) + " matchers but " + std::to_string(count) + " " +
                               what + "; give one per matcher");
  }
  for (size_t i = 0; i < matchers.size(); ++i) {
    if (matchers[i] == nullptr) throw InvalidArgumentError("matchers[" + std::to_string(i) + "] is None");
  }
  std::vector<std::pair<GrammarMatcher*, size_t>> sorted;
  sorted.reserve(matchers.size());
  for (size_t i = 0; i < matchers.size(); ++i) sorted.emplace_back(matchers[i], i);
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].first == sorted[i - 1].first) {
      throw InvalidArgumentError("matchers[" + std::to_string(sorted[i - 1].second) + "] and matchers[" +
                                 std::to_string(sorted[i].second) +
                                 "] are the same matcher; a matcher serves one thread at a time, so a batch "
                                 "names each matcher once");
    }
  }
}

std::vector<uint8_t> BatchAcceptToken(const std::vector<GrammarMatcher*>& matchers,
                                      const std::vector<int32_t>& token_ids, int num_threads) {
  CheckBatch(matchers, token_ids.size(), "token ids");
  for (size_t i = 0; i < matchers.size(); ++i) {
    const int64_t vocab_size = matchers[i]->grammar().tokenizer->vocab_size();
    if (token_ids[i] < 0 || token_ids[i] >= vocab_size) {
      throw InvalidArgumentError("tokens[" + std::to_string(i) + "]: token id " + std::to_string(token_ids[i]) +
                                 " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
    }
  }
  return AllOrNothing(matchers, num_threads, [&](int64_t i) { return matchers[i]->AcceptToken(token_ids[i]); });
}

std::vector<uint8_t> BatchAcceptString(const std::vector<GrammarMatcher*>& matchers,
                                       const std::vector<std::string>& strings, int num_threads) {
  CheckBatch(matchers, strings.size(), "strings");
  return AllOrNothing(matchers, num_threads, [&](int64_t i) { return matchers[i]->AcceptString(strings[i]); });
}

void BatchRollback(const std::vector<GrammarMatcher*>& matchers, const std::vector<int32_t>& num_tokens,
                   int num_threads) {
  CheckBatch(matchers, num_tokens.size(), "rollback counts");
  for (size_t i = 0; i < matchers.size(); ++i) {
    const int32_t steps = matchers[i]->num_accepted_steps();
    if (num_tokens[i] < 0 || num_tokens[i] > steps) {
      throw InvalidArgumentError("num_tokens[" + std::to_string(i) + "]: cannot roll back " +
                                 std::to_string(num_tokens[i]) + " tokens: only " + std::to_string(steps) +
                                 " accepted since the last reset");
    }
  }
  // Checked above, so no rollback can fail.
  ParallelFor(static_cast<int64_t>(matchers.size()), num_threads,
              [&](int64_t i) { matchers[i]->Rollback(num_tokens[i]); });
}

}  // namespace xg2
