#include "matcher/mask_cache/token_classification.h"

#include <algorithm>
#include <array>
#include <climits>
#include <string>

#include "matcher/mask_cache/classification_lists.h"
#include "matcher/mask_cache/classify_scratch.h"
#include "matcher/mask_cache/dense_stepper.h"
#include "matcher/mask_cache/precompute_worker.h"
#include "matcher/mask_cache/region_tails.h"
#include "tokenizer/utf8_decoder.h"

namespace xg2 {

namespace {

// A classification by tails counts this many tails per work unit of a budgeted walk.
constexpr int64_t kRegionTailsPerWorkUnit = 4;
// A budgeted walk from a node stepping on this many first bytes is over budget at once.
constexpr int kDenseFirstBytes = 64;
// An accepted id list is sorted rather than read back from the bits when the words it spans
// number more than this many per id.
constexpr int64_t kScanWordsPerListedId = 16;

// The state of one ClassifyTokens walk over the token trie from `node`.
// Invariants, at every trie node the walk stands on (depth d, its prefix the first d bytes):
//  * path[j] (j <= d) is the DFA node after the prefix's first j bytes, path_row[j] its
//    dense row; left_fsm[j] / left_lookahead[j]: whether the parser could have left the rule
//    before byte j with that byte next (at some path[i], 1 <= i < j); pure_state[j]: the
//    decoder state after j bytes while the prefix stays inside the shared region set's
//    language, else -1. Leaving at path[0] needs no check: the parser's closure has already
//    put the resulting items (resumed callers, predicted callees) into the same set, where
//    they are classified in their own right.
//  * scratch accepted_bits holds the accepted ids, all within words [words_lo, words_hi);
//    it is all zero again once the walk is destroyed (ClearAccepted). accepted_list holds
//    every accepted id while `listed` and accepted_count <= kListedAccepts.
//  * shared_fsm / shared_lookahead: the common prefix of the next uncertain token with its
//    list's last one, the minimum over the trie nodes passed since of their parent's depth.
struct TrieWalk {
  TrieWalk(const GrammarFsm& fsm, const LeaveSets& leave, const std::vector<uint8_t>& leavable, NodeId node,
           const TokenizerInfo& tokenizer, bool want_fsm_only, uint64_t rows_owner, int64_t work_budget);
  ~TrieWalk() { ClearAccepted(); }
  TrieWalk(const TrieWalk&) = delete;
  TrieWalk& operator=(const TrieWalk&) = delete;

  ClassificationPair Run(bool* over_budget);

 private:
  // The root shortcuts, tried in this order before any trie walk.
  bool ClassifyLongChainByTails(ClassificationPair* result);
  void FindSharedStartSet();
  bool ClassifySingleBoundaryRegionByTails(ClassificationPair* result);
  bool TailsWithinBudget(const RegionOutsiders& outsiders) const {
    return work_budget < 0 || static_cast<int64_t>(outsiders.tails.size()) <= kRegionTailsPerWorkUnit * work_budget;
  }
  void StartFromSharedSet(const TokenIdSet& set);
  ByteMask FirstBytes();
  void AcceptClassMembers();
  // The walks proper; false when the budget runs out.
  bool WalkRootChildren(const ByteMask& first_bytes);
  bool WalkSubtrees(int32_t begin, int32_t end);
  bool WalkChildList(const TokenTrieTokens& tokens, NodeId next, const NodeId* next_row);
  void DecideFailingSubtree(const TokenTrieTokens& tokens, bool left_lookahead, bool left_fsm);
  bool ConsumesSubtree(const TokenTrieNode& t, const TokenTrieTokens& tokens, NodeId next);
  bool WalkClassPrefixTails();
  ByteMask ClassTailFirstBytes();
  void SeedPath(int32_t d, NodeId at);
  void ResortUncertainLists();
  ClassificationPair Finish();

  void Accept(int32_t id) {
    const size_t w = static_cast<size_t>(id >> 5);
    words_lo = std::min(words_lo, w);
    words_hi = std::max(words_hi, w + 1);
    uint32_t& word = s.accepted_bits[w];
    const uint32_t bit = 1u << (id & 31);
    if (word & bit) return;
    word |= bit;
    s.accepted_summary[w >> 6] |= uint64_t{1} << (w & 63);
    if (++accepted_count <= kListedAccepts) s.accepted_list.push_back(id);
  }
  void ClearAccepted();

  const LeaveSets& leave;
  const std::vector<uint8_t>& leavable;
  const NodeId node;
  const TokenizerInfo& tokenizer;
  const VocabularyIndex& index;
  const bool want_fsm_only;
  const int64_t work_budget;
  const TokenTrieNode* const trie;
  const TokenTrieTokens* const trie_tokens;
  const std::vector<ByteMask>& suffix_bytes;
  const std::vector<uint16_t>& suffix_max_length;
  const std::vector<int32_t>& sorted;
  const std::vector<int32_t>& lcp;
  const std::vector<int32_t>& child_begin;
  const TrieChild* const children;
  ClassifyScratch& s;
  DenseStepper stepper;
  // The arrays indexed by depth, as plain pointers (the walk is bound by loads).
  NodeId* path = nullptr;
  const NodeId** path_row = nullptr;
  uint8_t* left_fsm_at = nullptr;
  uint8_t* left_lookahead_at = nullptr;
  int8_t* pure_state = nullptr;
  size_t words = 0;
  size_t words_lo = 0;
  size_t words_hi = 0;
  int64_t accepted_count = 0;
  bool listed = true;
  int64_t work_left = INT64_MAX;  // budget left (a budgeted walk only)
  int32_t shared_fsm = INT32_MAX;
  int32_t shared_lookahead = INT32_MAX;
  // The shared start set of a region or chain root, with its ASCII bytes, and the copies
  // left at a chain root (0 elsewhere).
  ByteMask region_ascii;
  std::shared_ptr<const TokenIdSet> region_tokens;
  int32_t chain_copies = 0;
  // At a class root: its chain, the class's prefix table, and the first bytes of class
  // characters (the trie walk skips them; their tokens are decided by their tails).
  ClassChain class_chain;
  std::shared_ptr<const ClassPrefixes> class_prefixes;
  ByteMask class_first_bytes;
  ClassificationPair out;
};

TrieWalk::TrieWalk(const GrammarFsm& fsm, const LeaveSets& leave, const std::vector<uint8_t>& leavable,
                   NodeId node, const TokenizerInfo& tokenizer, bool want_fsm_only, uint64_t rows_owner,
                   int64_t work_budget)
    : leave(leave),
      leavable(leavable),
      node(node),
      tokenizer(tokenizer),
      index(VocabularyIndex::Of(tokenizer)),
      want_fsm_only(want_fsm_only),
      work_budget(work_budget),
      trie(index.trie().data()),
      trie_tokens(index.trie_tokens().data()),
      suffix_bytes(index.trie_suffix_bytes()),
      suffix_max_length(index.trie_suffix_max_length()),
      sorted(tokenizer.sorted_text_tokens()),
      lcp(tokenizer.lcp()),
      child_begin(index.trie_child_begin()),
      children(index.trie_children().data()),
      s(Scratch()),
      stepper((s.EnsureDepth(static_cast<size_t>(tokenizer.max_token_bytes()) + 1), fsm), s, rows_owner) {
  words = (static_cast<size_t>(tokenizer.vocab_size()) + 31) / 32;
  // accepted_bits is all zero between walks; a walk touches words [words_lo, words_hi) only
  // (a few, on most nodes), and packing and clearing stay within them.
  if (s.accepted_bits.size() != words) s.accepted_bits.assign(words, 0);
  if (s.accepted_summary.size() != (words + 63) / 64) s.accepted_summary.assign((words + 63) / 64, 0);
  words_lo = words;
  s.accepted_list.clear();
  s.path[0] = node;
  s.left_fsm[0] = 0;
  s.left_lookahead[0] = 0;
  path = s.path.data();
  path_row = s.path_row.data();
  left_fsm_at = s.left_fsm.data();
  left_lookahead_at = s.left_lookahead.data();
  pure_state = s.pure_state.data();
}

void TrieWalk::ClearAccepted() {
  if (listed && accepted_count <= kListedAccepts) {
    for (int32_t id : s.accepted_list) s.accepted_bits[id >> 5] = 0;
  } else if (words_lo < words_hi) {
    std::fill(s.accepted_bits.begin() + words_lo, s.accepted_bits.begin() + words_hi, 0);
  }
  if (words_lo < words_hi) {
    std::fill(s.accepted_summary.begin() + words_lo / 64, s.accepted_summary.begin() + (words_hi + 63) / 64, 0);
  }
}

ClassificationPair TrieWalk::Run(bool* over_budget) {
  ClassificationPair by_tails;
  if (ClassifyLongChainByTails(&by_tails)) return by_tails;
  FindSharedStartSet();
  if (ClassifySingleBoundaryRegionByTails(&by_tails)) return by_tails;
  // Any other region or chain root accepts a shared dense set: never within a budgeted
  // walk's reach.
  if (region_tokens && work_budget >= 0) {
    *over_budget = true;
    return ClassificationPair();
  }
  if (work_budget >= 0) work_left = work_budget;
  if (region_tokens) StartFromSharedSet(*region_tokens);
  pure_state[0] = region_tokens ? kUtf8Boundary : -1;
  const ByteMask first_bytes = FirstBytes();
  // A budgeted walk from a node that steps on most bytes (a copy of a bounded string body
  // far from its bound, a wide character class) accepts most of the vocabulary, in bulk or
  // token by token, and both count against the budget: it would run to the budget (a few
  // hundred microseconds on a bounded string's copies) only to be thrown away.
  if (work_budget >= 0 && first_bytes.Count() >= kDenseFirstBytes) {
    *over_budget = true;
    return ClassificationPair();
  }
  if (class_prefixes) AcceptClassMembers();
  if (!WalkRootChildren(first_bytes) || (class_prefixes && !WalkClassPrefixTails())) {
    *over_budget = true;
    return ClassificationPair();
  }
  if (class_prefixes) ResortUncertainLists();
  return Finish();
}

// Long chain root: the loop head of a compressed bounded string body, far from its bound
// whatever the count (DenseStepper::LongChainRoot), is classified by the tails of the
// tokens outside its class, its class tokens all accepted. Its pool keys would run over a
// hundred copies. (Tried first: a chain is no region, and a region root's search for its
// region is what the chain would pay otherwise.) A classification by tails is a few
// thousand short walks, within a budgeted walk's reach when the tails are
// (kRegionTailsPerWorkUnit tails per work unit).
bool TrieWalk::ClassifyLongChainByTails(ClassificationPair* result) {
  if (!stepper.LongChainRoot(node, leave, leavable, tokenizer.max_token_bytes(), &region_ascii)) return false;
  std::shared_ptr<const TokenIdSet> class_tokens = index.Utf8RegionTokens(region_ascii);
  std::shared_ptr<const RegionOutsiders> outsiders = index.Utf8RegionOutsiders(region_ascii);
  if (!class_tokens || !outsiders || !TailsWithinBudget(*outsiders)) return false;
  *result = ClassifyRegionOutsiders(*class_tokens, *outsiders, leave, leavable, node, tokenizer, want_fsm_only,
                                    stepper, s);
  return true;
}

// Region root: when `node` is a boundary node of a UTF-8 region (a JSON string body), the
// tokenizer's shared set of tokens that region consumes wholesale (all accepted) starts
// the accepted set, and the walk skips every subtree inside that set.
// Chain root: when `node` is one of the last copies of a bounded string body (the slowest
// classifications otherwise: nearly every trie node of depth up to the copies left holds
// a longer token and is visited), the tokenizer's set of class tokens that fit in the
// copies left starts the accepted set the same way, and a subtree of class tokens is
// skipped the same way: those that do not fit are rejected (Utf8ChainRoot).
// Class root (DenseStepper::ClassRoot): the tokens in the class's language that fit the
// chain start the accepted set, the trie is walked only under the first bytes that begin
// no class character, and the tokens with a class prefix are decided by their tails
// (VocabularyIndex::FindClassPrefixTable) after the walk.
void TrieWalk::FindSharedStartSet() {
  if (stepper.Utf8RegionBoundary(node, &region_ascii)) region_tokens = index.Utf8RegionTokens(region_ascii);
  if (!region_tokens &&
      stepper.ClassRoot(node, leave, leavable, VocabularyIndex::kMaxUtf8ChainCharacters, &class_chain)) {
    bool first_request = false;
    class_prefixes = index.FindClassPrefixTable(class_chain.cls, &first_request);
    if (first_request) RequestClassPrefixTable(tokenizer, class_chain.cls);
  }
  if (!region_tokens && !class_prefixes && stepper.Utf8ChainRoot(node, leave, leavable, &region_ascii, &chain_copies)) {
    region_tokens = index.Utf8ChainTokens(region_ascii, chain_copies);
  }
}

// A region root whose region has one boundary node is classified by its outsiders' tails
// (cheaper than the pool's keys for it: its canonical sub-DFA within one token's reach runs
// over the rest of the rule).
bool TrieWalk::ClassifySingleBoundaryRegionByTails(ClassificationPair* result) {
  if (!region_tokens || chain_copies != 0 || !stepper.SingleBoundaryRegion(node, region_ascii, leave, leavable)) {
    return false;
  }
  std::shared_ptr<const RegionOutsiders> outsiders = index.Utf8RegionOutsiders(region_ascii);
  if (!outsiders || !TailsWithinBudget(*outsiders)) return false;
  *result = ClassifyRegionOutsiders(*region_tokens, *outsiders, leave, leavable, node, tokenizer, want_fsm_only,
                                    stepper, s);
  return true;
}

void TrieWalk::StartFromSharedSet(const TokenIdSet& set) {
  std::copy(set.bits.begin(), set.bits.end(), s.accepted_bits.begin());
  accepted_count = set.count;
  listed = false;
  words_lo = 0;
  words_hi = words;
}

// Only the depth-1 subtrees of the bytes `node` steps on are visited: a token whose first
// byte fails is rejected (the parser cannot have left the rule before its first byte), and
// skipping those subtrees saves loading their depth-1 nodes, scattered over the trie. At a
// class root the trie holds only the tokens without a class prefix.
ByteMask TrieWalk::FirstBytes() {
  ByteMask first_bytes;
  path_row[0] = stepper.Row(node);
  for (int b = 0; b < 256; ++b) {
    if (path_row[0][b] >= 0) first_bytes.Set(static_cast<uint8_t>(b));
  }
  if (class_prefixes) {
    class_first_bytes = class_chain.cls.ascii;
    if (class_chain.cls.multibyte) {
      for (int b = 0xC2; b <= 0xF4; ++b) class_first_bytes.Set(static_cast<uint8_t>(b));
    }
    for (int w = 0; w < 4; ++w) first_bytes.words[w] &= ~class_first_bytes.words[w];
  }
  return first_bytes;
}

// The class's tokens that fit the chain are accepted.
void TrieWalk::AcceptClassMembers() {
  if (class_chain.loops) {
    std::copy(class_prefixes->all_members.bits.begin(), class_prefixes->all_members.bits.end(),
              s.accepted_bits.begin());
    accepted_count = class_prefixes->all_members.count;
  } else {
    for (const auto& [characters, id] : class_prefixes->members) {
      if (characters > class_chain.max_characters()) break;
      s.accepted_bits[id >> 5] |= 1u << (id & 31);
      ++accepted_count;
    }
  }
  listed = false;
  words_lo = 0;
  words_hi = words;
}

bool TrieWalk::WalkRootChildren(const ByteMask& first_bytes) {
  const std::array<int32_t, 256>& root_child = index.trie_root_child();
  for (int w = 0; w < 4; ++w) {
    for (uint64_t bits = first_bytes.words[w]; bits; bits &= bits - 1) {
      const int32_t begin = root_child[w * 64 + __builtin_ctzll(bits)];
      if (begin >= 0 && !WalkSubtrees(begin, trie[begin].subtree_end)) return false;
    }
  }
  return true;
}

// Walks the trie nodes [begin, end) (whole subtrees, whose parents' path entries are set),
// classifying each.
bool TrieWalk::WalkSubtrees(int32_t begin, int32_t end) {
  for (int32_t i = begin; i < end;) {
    if (--work_left < 0) return false;
    const TokenTrieNode t = trie[i];
    const int32_t d = t.depth;
    const NodeId from = path[d - 1];
    shared_fsm = std::min(shared_fsm, d - 1);
    shared_lookahead = std::min(shared_lookahead, d - 1);
    int8_t pure = -1;
    if (pure_state[d - 1] >= 0 && (t.byte >= 0x80 || AsciiIn(region_ascii, t.byte))) {
      pure = Utf8DecoderStep(pure_state[d - 1], t.byte);
      if (pure >= 0 && t.utf8_state != kUtf8Malformed && trie_tokens[i].suffix_bytes >= 0 &&
          AsciiSubset(suffix_bytes[trie_tokens[i].suffix_bytes], region_ascii)) {
        i = t.subtree_end;  // every token below is in region_tokens: accepted already
        continue;
      }
    }
    const NodeId next = path_row[d - 1][t.byte];
    const bool inner = d > 1;
    const bool left_lookahead = left_lookahead_at[d - 1] || (inner && leave[from].test(t.byte));
    const bool left_fsm = left_fsm_at[d - 1] || (inner && leavable[from]);
    if (next < 0) {
      DecideFailingSubtree(trie_tokens[i], left_lookahead, left_fsm);
      i = t.subtree_end;
      continue;
    }
    const TokenTrieTokens tokens = trie_tokens[i];
    // A leaf's DFA node needs no row (no child steps from it), nor the shortcuts below:
    // its tokens (several, where the vocabulary spells some the same) are its exact
    // tokens, accepted below.
    const bool has_children = t.subtree_end > i + 1;
    const NodeId* next_row = has_children ? stepper.Row(next) : nullptr;
    if (has_children && tokens.suffix_bytes >= 0 && ConsumesSubtree(t, tokens, next)) {
      work_left -= tokens.token_end - tokens.token_begin;
      for (int32_t p = tokens.token_begin; p < tokens.token_end; ++p) Accept(sorted[p]);
      i = t.subtree_end;
      continue;
    }
    path[d] = next;
    path_row[d] = next_row;
    left_lookahead_at[d] = left_lookahead;
    left_fsm_at[d] = left_fsm;
    pure_state[d] = pure;
    for (int32_t p = tokens.token_begin; p < tokens.exact_end; ++p) Accept(sorted[p]);
    // Through a child list, only the children that `next` steps on or may leave the rule
    // on are visited. Any other child fails at its byte with no way out, which rejects its
    // whole subtree (what visiting it would decide), so it is never loaded. Skipping
    // nodes leaves the prefix lengths kept for the uncertain lists as they were: the next
    // node visited is a later sibling or shallower.
    if (has_children && tokens.suffix_bytes >= 0 && !left_lookahead &&
        !(want_fsm_only && (left_fsm || leavable[next])) &&
        child_begin[tokens.suffix_bytes] < child_begin[tokens.suffix_bytes + 1]) {
      if (!WalkChildList(tokens, next, next_row)) return false;
      i = t.subtree_end;
      continue;
    }
    ++i;
  }
  return true;
}

bool TrieWalk::WalkChildList(const TokenTrieTokens& tokens, NodeId next, const NodeId* next_row) {
  const int32_t list_begin = child_begin[tokens.suffix_bytes];
  const int32_t list_end = child_begin[tokens.suffix_bytes + 1];
  const ByteSet& next_leave = leave[next];
  for (int32_t k = list_begin; k < list_end; ++k) {
    const TrieChild child = children[k];
    if (next_row[child.byte()] < 0 && !next_leave.test(child.byte())) continue;
    if (!WalkSubtrees(child.node(), trie[child.node()].subtree_end)) return false;
  }
  return true;
}

// Every token below shares the failing byte: one decision for the whole subtree.
void TrieWalk::DecideFailingSubtree(const TokenTrieTokens& tokens, bool left_lookahead, bool left_fsm) {
  if (left_lookahead) {
    AppendUncertainRange(&out.with_lookahead, tokens.token_begin, tokens.token_end, shared_lookahead, lcp);
    shared_lookahead = INT32_MAX;
  }
  if (want_fsm_only && left_fsm) {
    AppendUncertainRange(&out.fsm_only, tokens.token_begin, tokens.token_end, shared_fsm, lcp);
    shared_fsm = INT32_MAX;
  }
}

// Dense shortcuts: if `next` loops on every byte that follows in the subtree (directly,
// inside a UTF-8 region, or along a repetition chain), every token below is consumed to its
// end: all accepted, no need to visit them.
bool TrieWalk::ConsumesSubtree(const TokenTrieNode& t, const TokenTrieTokens& tokens, NodeId next) {
  const ByteMask& below = suffix_bytes[tokens.suffix_bytes];
  const int32_t steps = suffix_max_length[tokens.suffix_bytes] - t.depth;
  return below.SubsetOf(stepper.Loop(next)) || stepper.Utf8RegionConsumes(next, t.utf8_state, below) ||
         stepper.ChainConsumes(next, below, steps) ||
         ((t.utf8_state != kUtf8Boundary || below.words[2] | below.words[3]) &&
          stepper.Utf8ChainConsumes(next, t.utf8_state, below, steps));
}

// The tokens with a class prefix, subtree by subtree (ClassPrefixes::entries): each walks
// from the chain's node after its prefix, through the bytes of a character it breaks off,
// then as in the trie walk.
bool TrieWalk::WalkClassPrefixTails() {
  const ByteMask tail_first_bytes = ClassTailFirstBytes();
  const std::vector<std::string>& decoded = tokenizer.decoded_tokens();
  for (int b = 0; b < 256; ++b) {
    if (!((tail_first_bytes.words[b >> 6] >> (b & 63)) & 1)) continue;
    for (int32_t k = class_prefixes->first_byte_begin[b]; k < class_prefixes->first_byte_begin[b + 1]; ++k) {
      const ClassPrefixes::Entry& entry = class_prefixes->entries[k];
      if (--work_left < 0) return false;
      const NodeId start = entry.prefix_characters == 0 ? node : class_chain.After(entry.prefix_characters);
      if (start < 0) continue;  // more characters than the chain holds: the one past it fails
      const int32_t depth = trie[entry.trie_node].depth;  // of the subtree's byte
      // The path down to the subtree's parent: the chain's node, then the bytes of the
      // character the subtree breaks off (none when the tail starts at a boundary). Those
      // nodes cannot leave (ClassRoot), so a failing step rejects the subtree.
      SeedPath(entry.tail_start, start);
      const std::string& token = decoded[sorted[trie_tokens[entry.trie_node].token_begin]];
      bool alive = true;
      for (int32_t d = entry.tail_start; d + 1 < depth && alive; ++d) {
        const NodeId next = path_row[d][static_cast<uint8_t>(token[d])];
        alive = next >= 0;
        if (alive) SeedPath(d + 1, next);
      }
      if (alive && !WalkSubtrees(entry.trie_node, trie[entry.trie_node].subtree_end)) return false;
    }
  }
  return true;
}

// Only tails that start with a byte some chain node steps on are walked: the chain's nodes
// after the root cannot leave the rule, so any other tail fails at once with nothing left
// to the parser.
ByteMask TrieWalk::ClassTailFirstBytes() {
  ByteMask tail_first_bytes = class_first_bytes;
  auto add_row = [&](NodeId x) {
    const NodeId* row = stepper.Row(x);
    for (int b = 0; b < 256; ++b) {
      if (row[b] >= 0) tail_first_bytes.Set(static_cast<uint8_t>(b));
    }
  };
  for (size_t p = 1; p < class_chain.nodes.size(); ++p) add_row(class_chain.nodes[p]);
  if (class_chain.loops) add_row(class_chain.nodes.back());
  return tail_first_bytes;
}

void TrieWalk::SeedPath(int32_t d, NodeId at) {
  path[d] = at;
  path_row[d] = stepper.Row(at);
  left_lookahead_at[d] = 0;
  left_fsm_at[d] = 0;
  pure_state[d] = -1;
}

// The class-prefix entries were walked out of sorted order, and the prefix lengths the walk
// kept assume sorted order: sort the uncertain lists again and recompute them.
void TrieWalk::ResortUncertainLists() {
  for (TokenClassification* c : {&out.with_lookahead, &out.fsm_only}) {
    std::vector<int32_t>& positions = c->uncertain_positions;
    std::sort(positions.begin(), positions.end());
    c->uncertain_lcp.assign(positions.size(), 0);
    for (size_t k = 1; k < positions.size(); ++k) {
      c->uncertain_lcp[k] = SharedPrefixOfPositions(tokenizer, positions[k - 1], positions[k]);
    }
  }
}

// Packs the accepted set. A short list is sorted; a longer one is read back in id order
// from the bits it set, when the words they span cost less to scan than the sort (a few
// hundred ids: a tenth of a large walk went to sorting them).
ClassificationPair TrieWalk::Finish() {
  if (listed && accepted_count <= kListedAccepts && !AcceptedAsBits(accepted_count, words) &&
      static_cast<int64_t>(words_hi - words_lo) > kScanWordsPerListedId * accepted_count) {
    auto accepted = std::make_shared<AcceptedTokens>();
    accepted->ids = s.accepted_list;
    std::sort(accepted->ids.begin(), accepted->ids.end());
    out.with_lookahead.accepted = std::move(accepted);
  } else {
    // A listed walk set every accepted word through Accept(), so its summary is complete (the
    // whitespace tokens a JSON separator accepts lie in a few hundred of their span's
    // thousands of words).
    out.with_lookahead.accepted = PackAccepted(s.accepted_bits, words, words_lo, words_hi, accepted_count,
                                               listed ? &s.accepted_summary : nullptr);
  }
  out.fsm_only.accepted = out.with_lookahead.accepted;
  Shrink(&out.with_lookahead);
  Shrink(&out.fsm_only);
  return std::move(out);
}

}  // namespace

ClassificationPair ClassifyTokens(const GrammarFsm& fsm, const LeaveSets& leave,
                                  const std::vector<uint8_t>& leavable, NodeId node,
                                  const TokenizerInfo& tokenizer, bool want_fsm_only, uint64_t rows_owner,
                                  int64_t work_budget, bool* over_budget) {
  TrieWalk walk(fsm, leave, leavable, node, tokenizer, want_fsm_only, rows_owner, work_budget);
  return walk.Run(over_budget);
}

}  // namespace xg2
