// Process-wide cache of parsed rule bodies, keyed by their exact source text.
//
// Generated grammars repeat long rule bodies request after request: the JSON Schema
// frontend writes the same 64 KB body for format "date-time" (one alternative per local
// minute, string_formats.cc) into every grammar that uses the format, and parsing it took
// about 45% of such a compile. The parser (ebnf_parser.cc) looks a rule's body up here
// before parsing it and, on a hit, appends the stored nodes instead.
//
// Soundness: an entry is the parse of `text`, a span that ran from just after a rule's
// `::=` to where the next rule's name (or the end of the grammar) started, and that ends in
// a newline. Parsing is context free at that boundary: a newline ends any comment and can
// be the last byte of no token, so a grammar whose text at a body start begins with
// `text` and continues at a rule start or the end lexes the same tokens in the span and
// parses them into the same nodes (the parser checks the continuation, ebnf_parser.cc).
// What the nodes do not hold is resolved per grammar: rule references are stored by name
// and bound to the grammar's rule ids at the end of its parse, as for a fresh parse; the
// per-compile repetition bound is checked against the largest bound the text spells.
#ifndef XG2_FRONTENDS_EBNF_PARSED_BODY_CACHE_H_
#define XG2_FRONTENDS_EBNF_PARSED_BODY_CACHE_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "grammar/grammar_ast.h"
#include "support/fork_safe_mutex.h"

namespace xg2 {

// One rule body as the parser left it. Node ids (children, body, lookahead, refs) are
// relative to the first node: a hit appends `nodes` and adds the grammar's node count.
struct ParsedBody {
  // A rule reference inside the body, bound by name when the grammar's parse ends.
  struct RuleRef {
    ExprId node;
    uint32_t name;    // index into names
    uint32_t offset;  // byte offset of the name, relative to the start of text
  };
  std::string text;              // the span; ends in '\n'
  std::vector<ExprNode> nodes;   // kRuleRef nodes carry rule_id -1
  std::vector<int> heights;      // the parser's expression heights, one per node
  std::vector<RuleRef> refs;
  std::vector<std::string> names;
  ExprId body = -1;
  ExprId lookahead = -1;
  int64_t max_repetition_bound = 0;  // the largest repetition bound the text spells
  size_t bytes = 0;                  // what the entry holds, for the cache's bound
};

// The bytes `body` holds, heap included (what ParsedBody::bytes is set to).
size_t ParsedBodyBytes(const ParsedBody& body);

struct ParsedBodyCacheStats {
  size_t entries = 0;
  size_t bytes = 0;
  size_t limit_bytes = 0;
  uint64_t hits = 0;
  uint64_t stores = 0;
  uint64_t evictions = 0;
};

class ParsedBodyCache {
 public:
  // Spans shorter than this parse faster than an entry is found and copied.
  static constexpr size_t kMinBodyBytes = 4096;
  // Entries are looked up by a hash of their first kPrefixBytes bytes.
  static constexpr size_t kPrefixBytes = 64;
  static constexpr size_t kMaxBytes = 16 << 20;

  static ParsedBodyCache& Instance();

  // The first entry whose text starts `rest` (the grammar text from a body start on) and
  // that `accept` takes, or null. `accept` runs without the cache's lock held.
  template <typename Accept>
  std::shared_ptr<const ParsedBody> Find(std::string_view rest, const Accept& accept) {
    for (std::shared_ptr<const ParsedBody>& entry : EntriesStarting(rest)) {
      if (accept(*entry)) {
        CountHit();
        return std::move(entry);
      }
    }
    return nullptr;
  }
  // Whether a span of this text is worth storing: it is admitted the second time it is
  // offered, so that a grammar seen once costs a hash rather than a copy of its nodes.
  bool Admit(std::string_view text);
  // Stores `entry`; the oldest entries go first when the cache would pass kMaxBytes.
  void Store(std::shared_ptr<const ParsedBody> entry);
  ParsedBodyCacheStats Stats();

 private:
  ParsedBodyCache() = default;
  // The entries whose text starts `rest`; empty, without taking the lock, for most bodies.
  std::vector<std::shared_ptr<const ParsedBody>> EntriesStarting(std::string_view rest);
  void CountHit();
  static uint64_t PrefixHash(std::string_view text);
  // One bit per prefix hash bucket, set while some entry has that bucket: a lookup for a
  // body no entry can start with costs a hash and an atomic load, not the lock.
  static constexpr size_t kFilterBits = 4096;
  bool MayHold(uint64_t prefix_hash) const;
  void RebuildFilterLocked();

  std::array<std::atomic<uint64_t>, kFilterBits / 64> filter_{};
  ForkSafeMutex mutex_;
  std::unordered_map<uint64_t, std::vector<std::shared_ptr<const ParsedBody>>> by_prefix_;
  std::deque<std::shared_ptr<const ParsedBody>> order_;  // oldest first
  std::unordered_set<uint64_t> offered_once_;            // full-text hashes seen once
  std::deque<uint64_t> offered_order_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0, stores_ = 0, evictions_ = 0;
};

}  // namespace xg2

#endif  // XG2_FRONTENDS_EBNF_PARSED_BODY_CACHE_H_
