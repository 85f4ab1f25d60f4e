// Batch operations over many matchers in one native call (xgrammar's BatchGrammarMatcher):
// accept a token or a string, or roll back, for every matcher of a batch on up to
// `num_threads` threads (support/thread_pool.h).
//
// Each matcher serves one thread at a time (support/exclusive_use.h), so a batch that names
// one matcher twice is refused (InvalidArgumentError) before anything runs. Bad input (a
// token id outside a matcher's vocabulary, a rollback deeper than its history) is refused
// before any matcher changes. A step that fails while the batch runs (ResourceLimitError)
// is undone in every matcher of the batch, then rethrown: a batch changes all or nothing.
#ifndef XG2_MATCHER_BATCH_MATCHER_H_
#define XG2_MATCHER_BATCH_MATCHER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "matcher/grammar_matcher.h"

namespace xg2 {

// Throws InvalidArgumentError when a matcher is null or appears twice, or when `count`
// (the size of the per-matcher argument named `what`) differs from the number of matchers.
void CheckBatch(const std::vector<GrammarMatcher*>& matchers, size_t count, const char* what);

// Per matcher: whether it accepted its token (false leaves it unchanged).
std::vector<uint8_t> BatchAcceptToken(const std::vector<GrammarMatcher*>& matchers,
                                      const std::vector<int32_t>& token_ids, int num_threads);
std::vector<uint8_t> BatchAcceptString(const std::vector<GrammarMatcher*>& matchers,
                                       const std::vector<std::string>& strings, int num_threads);
void BatchRollback(const std::vector<GrammarMatcher*>& matchers, const std::vector<int32_t>& num_tokens,
                   int num_threads);

}  // namespace xg2

#endif  // XG2_MATCHER_BATCH_MATCHER_H_
