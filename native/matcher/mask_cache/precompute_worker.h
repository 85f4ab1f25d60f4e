// The process's background threads: the partial JIT's (paper section 3.2, lowest priority)
// and the tokenizer tables' (default priority; precompute_worker.cc says why).
#ifndef XG2_MATCHER_MASK_CACHE_PRECOMPUTE_WORKER_H_
#define XG2_MATCHER_MASK_CACHE_PRECOMPUTE_WORKER_H_

#include <functional>
#include <memory>
#include <vector>

#include "grammar/grammar_fsm.h"
#include "matcher/vocabulary_index.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {

class GrammarMaskCache;

// Queues building `nodes` of `cache` (held weakly), in that order; the newest grammar's job
// runs first and pre-empts an older one between two nodes.
void SubmitPrecompute(std::weak_ptr<GrammarMaskCache> cache, std::vector<NodeId> nodes);

// Queues a task that makes later classifications cheaper; tasks run before node jobs,
// oldest first. A task that throws only loses its shortcut.
void SubmitBackgroundTask(std::function<void()> task);

// Has the class's ClassPrefixes built on the tables' background thread: a matcher never
// waits for it, and classifies by the plain walk until it is there.
void RequestClassPrefixTable(const TokenizerInfo& tokenizer, const CharacterClass& cls);

}  // namespace xg2

#endif  // XG2_MATCHER_MASK_CACHE_PRECOMPUTE_WORKER_H_
