#include "matcher/token_mask_cache.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <deque>
#include <unordered_set>

#include "matcher/mask_cache/precompute_worker.h"
#include "matcher/vocabulary_index.h"
#include "support/dcheck.h"

namespace xg2 {

namespace {

bool EveryRuleBuilt(const GrammarFsm& fsm) {
  for (RuleId r = 0; r < fsm.num_rules(); ++r) {
    if (!fsm.IsBuilt(r)) return false;
  }
  return true;
}

}  // namespace

// Which leave sets (docs/lazy_rule_dfas.md, "The mask cache on partial snapshots"): a whole
// first snapshot never grows (no rule is left to build), so it keeps today's exact sets and
// the eager path classifies as before; a partial one takes every set from the AST contexts,
// the only ones a node keeps unchanged however the later builds go.
GrammarMaskCache::GrammarMaskCache(std::shared_ptr<const GrammarFsm> fsm,
                                   std::shared_ptr<const TokenizerInfo> tokenizer,
                                   std::shared_ptr<MaskCachePool> pool, MaskCacheOptions options,
                                   std::shared_ptr<const RuleByteContexts> contexts)
    : leave_from_contexts_(!EveryRuleBuilt(*fsm)),
      contexts_(leave_from_contexts_ ? std::move(contexts) : nullptr),
      tokenizer_(std::move(tokenizer)),
      pool_(std::move(pool)),
      options_(options) {
  if (leave_from_contexts_ && !contexts_) {
    ThrowInternalError(__FILE__, __LINE__, "a mask cache over a snapshot with unbuilt rules needs the AST byte contexts");
  }
  table_versions_.push_back(MakeTables(std::move(fsm), nullptr, contexts_.get()));
  tables_.store(table_versions_.back().get(), std::memory_order_release);
  slots_.store(table_versions_.back()->slots.get(), std::memory_order_release);
}

std::unique_ptr<GrammarMaskCache::NodeTables> GrammarMaskCache::MakeTables(std::shared_ptr<const GrammarFsm> fsm,
                                                                           const NodeTables* older,
                                                                           const RuleByteContexts* contexts) {
  auto t = std::make_unique<NodeTables>();
  const GrammarFsm& g = *fsm;
  t->serial = NextSerial();
  if (!contexts) {
    t->leave = ComputeLeaveBytes(g);  // throws on an unbuilt rule
  } else {
    // Only the appended nodes are new: a build appends whole rules (grammar_fsm.h, "Snapshots").
    const NodeId kept = older ? older->fsm->num_nodes() : 0;
    const auto added = LeaveBytesFromContexts(g, *contexts, kept, g.num_nodes());
    t->leave = older ? LeaveSets(older->leave, g.num_nodes(), added) : LeaveSets(g.num_nodes(), added);
  }
  t->leavable.assign(g.num_nodes(), 0);
  t->slots.reset(new Slot[g.num_nodes()]);
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    t->leavable[n] = g.node_accepting[n] || g.rule_edge_begin[n] != g.rule_edge_begin[n + 1];
    t->slots[n].store(nullptr, std::memory_order_relaxed);
  }
  t->fsm = std::move(fsm);
  return t;
}

void GrammarMaskCache::GrowTo(std::shared_ptr<const GrammarFsm> next, std::shared_ptr<const RuleByteContexts> contexts) {
  // Only GrowTo replaces the latest version and contexts_, and the build mutex serialises it:
  // both are read here without the cache's lock, which guards the slots only.
  const NodeTables& now = tables();
  const NodeId kept = now.fsm->num_nodes();
  if (next->num_nodes() < kept) ThrowInternalError(__FILE__, __LINE__, "a newer FSM snapshot has fewer nodes");
  if (!leave_from_contexts_ || !contexts) contexts = contexts_;
  if (contexts != contexts_) {
    // The older rules' contexts are what their nodes' sets were computed from.
    const RuleByteContexts& old = *contexts_;
    if (contexts->size() < old.size() ||
        !std::equal(old.nullable.begin(), old.nullable.end(), contexts->nullable.begin()) ||
        !std::equal(old.first.begin(), old.first.end(), contexts->first.begin()) ||
        !std::equal(old.follow.begin(), old.follow.end(), contexts->follow.begin())) {
      ThrowInternalError(__FILE__, __LINE__, "the AST byte contexts of a newer snapshot change an older rule's");
    }
  }
  std::unique_ptr<NodeTables> grown = MakeTables(std::move(next), &now, contexts.get());  // linear work, unlocked
  // Contexts mode copies the older sets; the exact ones are recomputed and must agree (a
  // built entry read the older set; a different one would make it inexact).
  if (!leave_from_contexts_ || XG2_DCHECKS_ENABLED) {
    for (NodeId n = 0; n < kept; ++n) {
      if (grown->leave[n] != now.leave[n]) {
        ThrowInternalError(__FILE__, __LINE__,
                           "building a rule changed the leave set of node " + std::to_string(n) +
                               ", which an older snapshot has");
      }
    }
  }
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  for (NodeId n = 0; n < kept; ++n) {
    grown->slots[n].store(now.slots[n].load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  contexts_ = std::move(contexts);
  table_versions_.push_back(std::move(grown));
  tables_.store(table_versions_.back().get(), std::memory_order_release);
  slots_.store(table_versions_.back()->slots.get(), std::memory_order_release);
}

uint64_t GrammarMaskCache::NextSerial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void GrammarMaskCache::ComputeHashes() {
  std::call_once(hashes_once_, [this]() {
    const NodeTables& t = tables();
    // ComputeFsmHashes reads every rule's DFA: on a snapshot with an unbuilt rule every node
    // keeps its truncated keys (hashes_ numbers no node) until the hashes skip unbuilt rules
    // and their callers (docs/lazy_rule_dfas.md, "The mask cache on partial snapshots").
    if (EveryRuleBuilt(*t.fsm)) hashes_ = ComputeFsmHashes(*t.fsm);
    hashed_tables_ = &t;
    lookahead_keys_.assign(t.fsm->num_rules(), std::string());
    lookahead_key_done_.assign(t.fsm->num_rules(), 0);
    hashes_ready_.store(true, std::memory_order_release);
  });
}

bool GrammarMaskCache::HierarchicalKeys(NodeId node, NodeCacheKeys* keys) {
  if (!hashes_ready_.load(std::memory_order_acquire)) {
    // With a background schedule, its task hashes the grammar (StartPrecompute): a matcher
    // neither waits for it nor hashes in its own fill (a millisecond on the largest
    // grammars, paid by their first mask); truncated keys serve the pool until then.
    if (options_.precompute > 0) return false;
    ComputeHashes();
  }
  // The hashes number the nodes of the snapshot they were computed on.
  if (static_cast<size_t>(node) >= hashes_.node_number.size()) return false;
  const RuleId rule = hashed_tables_->fsm->node_rule[node];
  if (rule < 0 || hashes_.node_number[node] < 0) return false;
  std::string fsm_only;
  fsm_only.push_back('H');
  hashes_.rule_hash[rule].AppendTo(&fsm_only);
  const int32_t number = hashes_.node_number[node];
  fsm_only.append(reinterpret_cast<const char*>(&number), sizeof number);
  std::string with_lookahead = fsm_only;
  with_lookahead.push_back('L');
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  if (!lookahead_key_done_[rule]) {
    // The lookahead is what the classification reads beyond the FSM: the leave sets of the
    // rule's nodes, in the stable numbering.
    Hash128 h;
    for (int32_t k = hashes_.rule_order_begin[rule]; k < hashes_.rule_order_begin[rule + 1]; ++k) {
      const ByteSet& set = hashed_tables_->leave[hashes_.rule_order[k]];
      for (int w = 0; w < 4; ++w) h.Combine(((set >> (64 * w)) & ByteSet(~uint64_t{0})).to_ullong());
    }
    h.AppendTo(&lookahead_keys_[rule]);
    lookahead_key_done_[rule] = 1;
  }
  with_lookahead += lookahead_keys_[rule];
  keys->fsm_only = PoolKey(std::move(fsm_only));
  keys->with_lookahead = PoolKey(std::move(with_lookahead));
  return true;
}

const TokenClassification& GrammarMaskCache::Build(NodeId node) {
  // Built outside the lock: two threads may race to build the same node; the first to
  // publish wins and both results are identical.
  const auto start = std::chrono::steady_clock::now();
  const NodeTables& t = tables();
  XG2_DCHECK(node >= 0 && node < t.fsm->num_nodes(), "a node past the mask cache's latest FSM snapshot");
  std::shared_ptr<const TokenClassification> entry;
  if (pool_ && options_.cross_grammar) {
    MaskCachePool& pool = *pool_;
    NodeCacheKeys hierarchical;
    const bool has_hierarchical = HierarchicalKeys(node, &hierarchical);
    if (has_hierarchical) entry = pool.Find(hierarchical.with_lookahead);
    bool over_budget = false;
    bool bypassed = false;
    if (entry) {
      pool.RecordPerfectHit();
    } else if (ClassificationPair cheap = ClassifyTokens(*t.fsm, t.leave, t.leavable, node, *tokenizer_, false, t.serial,
                                                         kPoolBypassWork, &over_budget);
               !over_budget) {
      pool.RecordBypass();
      bypassed = true;
      entry = std::make_shared<const TokenClassification>(std::move(cheap.with_lookahead));
    } else {
      NodeCacheKeys truncated =
          CanonicalSubFsmKeys(*t.fsm, t.leave, t.leavable, node, tokenizer_->max_token_bytes());
      entry = pool.Find(truncated.with_lookahead);
      if (entry) {
        pool.RecordPerfectHit();
      } else {
        std::shared_ptr<const TokenClassification> fsm_only;
        if (has_hierarchical) fsm_only = pool.Find(hierarchical.fsm_only);
        if (!fsm_only) fsm_only = pool.Find(truncated.fsm_only);
        if (fsm_only) {
          pool.RecordPartialHit();
          entry = std::make_shared<const TokenClassification>(
              RefineWithLookahead(*fsm_only, *t.fsm, t.leave, node, *tokenizer_, t.serial));
        } else {
          // Short-token reuse (see kShortTokenBytes): also a partial hit, with no FSM-only
          // version to store.
          PoolKey short_key;
          std::shared_ptr<const TokenClassification> short_part;
          if (tokenizer_->max_token_bytes() > kShortTokenBytes) {
            std::string bytes =
                std::move(CanonicalSubFsmKeys(*t.fsm, t.leave, t.leavable, node, kShortTokenBytes).with_lookahead.bytes);
            bytes[0] = 'S';
            short_key = PoolKey(std::move(bytes));
            short_part = pool.Find(short_key);
          }
          if (short_part) {
            pool.RecordShortTokenHit();
            const LongTokenTable& long_tokens = VocabularyIndex::Of(*tokenizer_).long_tokens();
            entry = std::make_shared<const TokenClassification>(JoinShortAndLong(
                *short_part, ClassifyLongTokens(*t.fsm, t.leave, node, *tokenizer_, long_tokens, t.serial), *tokenizer_,
                long_tokens));
          } else {
            pool.RecordMiss();
            ClassificationPair pair = ClassifyTokens(*t.fsm, t.leave, t.leavable, node, *tokenizer_, true, t.serial);
            entry = std::make_shared<const TokenClassification>(std::move(pair.with_lookahead));
            fsm_only = std::make_shared<const TokenClassification>(std::move(pair.fsm_only));
            if (!short_key.bytes.empty()) pool.Insert(std::move(short_key), entry);
          }
        }
        if (fsm_only) {
          pool.Insert(std::move(truncated.fsm_only), fsm_only);
          if (has_hierarchical) pool.Insert(std::move(hierarchical.fsm_only), fsm_only);
        }
      }
      pool.Insert(std::move(truncated.with_lookahead), entry);
    }
    if (has_hierarchical && !bypassed) pool.Insert(std::move(hierarchical.with_lookahead), entry);
  } else {
    entry = std::make_shared<const TokenClassification>(
        std::move(ClassifyTokens(*t.fsm, t.leave, t.leavable, node, *tokenizer_, false, t.serial).with_lookahead));
  }
  entry = dense_sets_.Share(std::move(entry));
  build_ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count(),
                      std::memory_order_relaxed);
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  // Under the lock slots_ is the latest version's (GrowTo swaps it under the lock too).
  Slot& slot = slots_.load(std::memory_order_relaxed)[node];
  if (const TokenClassification* raced = slot.load(std::memory_order_acquire)) return *raced;
  owned_.push_back(entry);
  slot.store(entry.get(), std::memory_order_release);
  built_.fetch_add(1);
  return *entry;
}

namespace {

// Scannable nodes (with byte edges, owned by a built rule) in the order a document is likely to
// reach them: a 0-1 breadth-first search from the root rule's start where a byte edge costs
// one byte and a call costs nothing (the callee's start is reached at once) while the node
// after a call is one byte further (its callee consumes at least one byte, usually). Ties
// keep discovery order, which follows edge order, so the first properties of an object come
// before the later ones. The nodes a matcher needs in its first tokens (object start, first
// key, string bodies, numbers) come first.
std::vector<NodeId> DocumentOrder(const GrammarFsm& fsm) {
  std::vector<int32_t> distance(fsm.num_nodes(), INT32_MAX);
  std::deque<NodeId> queue;
  std::vector<NodeId> order;
  if (fsm.root_rule < 0 || !fsm.IsBuilt(fsm.root_rule)) return order;
  const NodeId start = fsm.rule_start[fsm.root_rule];
  distance[start] = 0;
  queue.push_back(start);
  std::vector<uint8_t> emitted(fsm.num_nodes(), 0);
  auto relax = [&](NodeId to, int32_t d, bool front) {
    if (d >= distance[to]) return;
    distance[to] = d;
    if (front) {
      queue.push_front(to);
    } else {
      queue.push_back(to);
    }
  };
  while (!queue.empty()) {
    const NodeId n = queue.front();
    queue.pop_front();
    if (emitted[n]) continue;
    emitted[n] = 1;
    const int32_t d = distance[n];
    if (fsm.node_rule[n] >= 0 && fsm.byte_edges_begin(n) != fsm.byte_edges_end(n)) order.push_back(n);
    for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) {
      // An unbuilt callee has no nodes to classify yet: its nodes join the schedule of no
      // snapshot (a matcher that predicts it builds it, and classifies on its own thread).
      if (fsm.IsBuilt(e->rule)) relax(fsm.rule_start[e->rule], d, true);
    }
    for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) relax(e->target, d + 1, false);
    for (const RuleEdge* e = fsm.rule_edges_begin(n); e != fsm.rule_edges_end(n); ++e) relax(e->target, d + 1, false);
  }
  return order;
}

}  // namespace

void GrammarMaskCache::StartPrecompute(const std::shared_ptr<GrammarMaskCache>& cache) {
  const MaskCacheOptions& options = cache->options_;
  if (!options.enabled || options.precompute == 0) return;
  // Scannable nodes by estimated classification cost, highest first: how many tokens start
  // with a byte the node accepts (the trie walk skips the others at the root).
  auto nodes_by_cost = [](const GrammarMaskCache& c) {
    const GrammarFsm& fsm = c.fsm();
    // tokens_below[b]: tokens whose first byte is below b (a prefix sum, so a byte range
    // costs O(1)).
    std::vector<int64_t> tokens_below(257, 0);
    const VocabularyIndex& index = VocabularyIndex::Of(*c.tokenizer_);
    const std::vector<TokenTrieNode>& trie = index.trie();
    const std::vector<TokenTrieTokens>& trie_tokens = index.trie_tokens();
    for (size_t i = 0; i < trie.size(); i = trie[i].subtree_end) {  // the root's children
      tokens_below[trie[i].byte + 1] = trie_tokens[i].token_end - trie_tokens[i].token_begin;
    }
    for (int b = 0; b < 256; ++b) tokens_below[b + 1] += tokens_below[b];
    std::vector<std::pair<int64_t, NodeId>> costs;
    for (NodeId n = 0; n < fsm.num_nodes(); ++n) {
      if (fsm.node_rule[n] < 0) continue;  // lookahead DFA nodes are never items
      int64_t cost = 0;
      for (const ByteEdge* e = fsm.byte_edges_begin(n); e != fsm.byte_edges_end(n); ++e) {
        cost += tokens_below[e->hi + 1] - tokens_below[e->lo];
      }
      if (cost > 0) costs.emplace_back(cost, n);
    }
    std::stable_sort(costs.begin(), costs.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    return costs;
  };
  if (options.precompute < 0) {
    for (const auto& [cost, node] : nodes_by_cost(*cache)) cache->Get(node);
    return;
  }
  // The schedule: the first `precompute` nodes in document order (what a matcher needs
  // first), then the few most expensive nodes not among them (the slowest fills). Computing
  // it walks every node (a few percent of a large grammar's compile), so the background
  // thread does that too: no matcher waits for the schedule.
  std::weak_ptr<GrammarMaskCache> weak = cache;
  SubmitBackgroundTask([weak, nodes_by_cost]() {
    std::shared_ptr<GrammarMaskCache> alive = weak.lock();
    if (!alive) return;
    if (alive->pool_ && alive->options_.cross_grammar) alive->ComputeHashes();
    const GrammarFsm& fsm = alive->fsm();
    constexpr size_t kMostExpensive = 8;
    std::vector<NodeId> schedule = DocumentOrder(fsm);
    if (schedule.size() > static_cast<size_t>(alive->options_.precompute)) {
      schedule.resize(alive->options_.precompute);
    }
    std::vector<uint8_t> scheduled(fsm.num_nodes(), 0);
    for (NodeId n : schedule) scheduled[n] = 1;
    const std::vector<std::pair<int64_t, NodeId>> costs = nodes_by_cost(*alive);
    for (size_t k = 0; k < costs.size() && k < kMostExpensive; ++k) {
      if (!scheduled[costs[k].second]) schedule.push_back(costs[k].second);
    }
    if (!schedule.empty()) SubmitPrecompute(alive, std::move(schedule));
  });
}

size_t GrammarMaskCache::FixedBytes() const {
  // Slots and the per-node tables built with the cache (the FSM hashes, built on first pool
  // lookup, are left out).
  // Takes no lock: table_versions_ grows only under the grammar's build mutex, and only the
  // latest version is counted (the older ones are what a build copied).
  const NodeTables& t = tables();
  return sizeof(*this) + sizeof(void*) * t.fsm->num_nodes() + t.leave.MemoryBytes() + t.leavable.capacity();
}

size_t GrammarMaskCache::MemoryBytes() const {
  std::lock_guard<ForkSafeMutex> lock(mutex_);
  size_t bytes = FixedBytes();
  // An accepted set shared by several entries (dense_sets_, or the two versions of a node) is
  // counted once.
  std::unordered_set<const AcceptedTokens*> counted;
  for (const auto& e : owned_) {
    bytes += e->OwnBytes();
    if (counted.insert(e->accepted.get()).second) bytes += e->accepted->MemoryBytes();
  }
  return bytes;
}

}  // namespace xg2
