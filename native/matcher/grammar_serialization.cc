#include "matcher/grammar_serialization.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "grammar/fsm_invariants.h"
#include "matcher/fsm_hash.h"
#include "matcher/vocabulary_index.h"
#include "support/dcheck.h"
#include "support/fork_safe_mutex.h"

namespace xg2 {
namespace {

constexpr std::string_view kGrammarMagic = "XG2G";
constexpr std::string_view kTokenizerMagic = "XG2T";
constexpr size_t kFingerprintBytes = 16;

// A 64-bit checksum of `bytes` (Hash128's mixing, over 8-byte words and the tail).
uint64_t Checksum(std::string_view bytes) {
  Hash128 h;
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    h.Combine(word);
  }
  uint64_t tail = 0;
  for (size_t k = 0; i + k < bytes.size(); ++k) tail |= uint64_t{static_cast<uint8_t>(bytes[i + k])} << (8 * k);
  h.Combine(tail).Combine(bytes.size());
  return h.a ^ (h.b * 0x9e3779b97f4a7c15ULL);
}

std::string ComputeFingerprint(const TokenizerInfo& t) {
  Hash128 h;
  h.Combine(static_cast<uint64_t>(t.vocab_size()))
      .Combine(static_cast<uint64_t>(t.vocab_type()))
      .Combine(t.add_prefix_space());
  h.Combine(t.decoded_tokens().size());
  for (const std::string& token : t.decoded_tokens()) {
    h.Combine(token.size());
    size_t i = 0;
    for (; i + 8 <= token.size(); i += 8) {
      uint64_t word;
      std::memcpy(&word, token.data() + i, 8);
      h.Combine(word);
    }
    uint64_t tail = 0;
    for (size_t k = 0; i + k < token.size(); ++k) tail |= uint64_t{static_cast<uint8_t>(token[i + k])} << (8 * k);
    h.Combine(tail);
  }
  for (const auto* ids : {&t.stop_token_ids(), &t.special_token_ids()}) {
    h.Combine(ids->size());
    for (int32_t id : *ids) h.Combine(static_cast<uint32_t>(id));
  }
  std::string out;
  h.AppendTo(&out);
  return out;
}

// `text` for an error message: printable ASCII kept, anything else as \xNN, at most 64 bytes
// (a corrupt blob's version string may hold any bytes; messages must be valid UTF-8).
std::string Printable(std::string_view text) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < text.size() && i < 64; ++i) {
    const uint8_t c = static_cast<uint8_t>(text[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return text.size() > 64 ? out + "..." : out;
}

void WriteHeader(ByteWriter* w, std::string_view magic, const std::string& engine_version,
                 const std::string& fingerprint) {
  w->Raw(magic);
  w->Int<uint32_t>(kSerializationFormatVersion);
  w->Bytes(engine_version);
  w->Raw(fingerprint);
}

std::string Finish(ByteWriter* w) {
  const uint64_t sum = Checksum(w->text());
  w->Int<uint64_t>(sum);
  return std::move(w->text());
}

// Checks magic, checksum, format and engine version; returns the reader positioned after the
// engine version, over the blob without its checksum.
ByteReader OpenBlob(std::string_view blob, std::string_view magic, const char* what, const std::string& engine_version,
                    bool verify_checksum) {
  ByteReader header(blob, what);
  if (blob.size() < magic.size() || blob.substr(0, magic.size()) != magic) {
    const bool other = blob.size() >= 4 && (blob.substr(0, 4) == kGrammarMagic || blob.substr(0, 4) == kTokenizerMagic);
    throw DeserializationError(std::string(what) + " blob does not start with " + std::string(magic) +
                               (other ? " (it is the other kind of xg2 blob)" : " (not an xg2 blob)"));
  }
  if (blob.size() < magic.size() + 4 + 8) {
    throw DeserializationError(std::string(what) + " blob is truncated: " + std::to_string(blob.size()) +
                               " bytes, shorter than its header");
  }
  header.Raw(magic.size(), "magic");
  const uint32_t version = header.Int<uint32_t>("format version");
  if (version != kSerializationFormatVersion) {
    throw DeserializationError(std::string(what) + " blob has format version " + std::to_string(version) +
                               ", this engine reads version " + std::to_string(kSerializationFormatVersion));
  }
  const std::string_view body = blob.substr(0, blob.size() - 8);
  ByteReader tail(blob.substr(body.size()), what);
  const uint64_t stored = tail.Int<uint64_t>("checksum");
  if (verify_checksum && stored != Checksum(body)) {
    throw DeserializationError(std::string(what) + " blob is corrupt or truncated: checksum mismatch over " +
                               std::to_string(body.size()) + " bytes");
  }
  ByteReader reader(body, what);
  reader.Raw(magic.size() + 4, "header");
  const std::string stored_engine = reader.Bytes("engine version");
  if (stored_engine != engine_version) {
    throw DeserializationError(std::string(what) + " blob was written by engine version '" +
                               Printable(stored_engine) + "', this is '" + engine_version + "'");
  }
  return reader;
}

[[noreturn]] void Invalid(const std::string& message) {
  throw DeserializationError("compiled grammar blob is corrupt: its FSM violates an invariant: " + message);
}

void WriteFsm(ByteWriter* w, const GrammarFsm& f) {
  w->Int<int32_t>(f.root_rule);
  w->Int<uint64_t>(f.rule_names.size());
  for (const std::string& name : f.rule_names) w->Bytes(name);
  w->Ints(f.rule_start);
  std::vector<NodeId> block_begin, block_end;
  for (const NodeBlock& block : f.rule_nodes) {
    block_begin.push_back(block.begin);
    block_end.push_back(block.end);
  }
  w->Ints(block_begin);
  w->Ints(block_end);
  w->Ints(f.rule_nullable);
  w->Ints(f.rule_lookahead);
  w->Ints(f.rule_max_tokens);
  w->Int<uint8_t>(f.has_lookahead);
  w->Ints(f.node_rule);
  w->Ints(f.node_accepting);
  w->Ints(f.byte_edge_begin);
  w->Int<uint64_t>(f.byte_edges.size());
  for (const ByteEdge& e : f.byte_edges) {
    w->Int<uint8_t>(e.lo);
    w->Int<uint8_t>(e.hi);
    w->Int<int32_t>(e.target);
  }
  w->Ints(f.rule_edge_begin);
  w->Int<uint64_t>(f.rule_edges.size());
  for (const RuleEdge& e : f.rule_edges) {
    w->Int<int32_t>(e.rule);
    w->Int<int32_t>(e.target);
  }
  w->Int<uint64_t>(f.counted_loops.size());
  for (const CountedLoop& loop : f.counted_loops) {
    w->Int<int32_t>(loop.head);
    w->Int<int32_t>(loop.gate);
    w->Int<int32_t>(loop.limit);
  }
  w->Ints(f.node_loop);
  w->Ints(f.node_gate_loop);
  w->Int<uint64_t>(f.token_sets.size());
  for (const TokenSetDef& set : f.token_sets) {
    w->Ints(set.ids);
    w->Int<uint8_t>(set.excluded);
  }
  w->Ints(f.token_set_edge_begin);
  w->Int<uint64_t>(f.token_set_edges.size());
  for (const TokenSetEdge& e : f.token_set_edges) {
    w->Int<int32_t>(e.set);
    w->Int<int32_t>(e.target);
  }
  w->Ints(f.rule_min_json_chars);
  w->Ints(f.rule_max_json_chars);
  w->Ints(f.node_char_end);
  w->Ints(f.node_fewest_chars);
  w->Ints(f.node_most_chars);
  w->Ints(f.rule_chars_slack);
  w->Ints(f.rule_unique);
}

GrammarFsm ReadFsm(ByteReader* r) {
  GrammarFsm f;
  f.root_rule = r->Int<int32_t>("root rule");
  f.rule_names.resize(r->Count(8, "rule names"));
  for (std::string& name : f.rule_names) name = r->Bytes("rule name");
  f.rule_start = r->Ints<NodeId>("rule starts");
  const std::vector<NodeId> block_begin = r->Ints<NodeId>("rule block begins");
  const std::vector<NodeId> block_end = r->Ints<NodeId>("rule block ends");
  if (block_begin.size() != block_end.size()) Invalid("rule block begins and ends differ in number");
  for (size_t i = 0; i < block_begin.size(); ++i) f.rule_nodes.push_back({block_begin[i], block_end[i]});
  f.rule_nullable = r->Ints<uint8_t>("rule nullable flags");
  f.rule_lookahead = r->Ints<NodeId>("rule lookaheads");
  f.rule_max_tokens = r->Ints<int32_t>("rule token budgets");
  f.has_lookahead = r->Bool("lookahead flag");
  f.node_rule = r->Ints<RuleId>("node rules");
  f.node_accepting = r->Ints<uint8_t>("node accepting flags");
  f.byte_edge_begin = r->Ints<int32_t>("byte edge offsets");
  f.byte_edges.resize(r->Count(6, "byte edges"));
  for (ByteEdge& e : f.byte_edges) {
    e.lo = r->Int<uint8_t>("byte edge");
    e.hi = r->Int<uint8_t>("byte edge");
    e.target = r->Int<int32_t>("byte edge target");
  }
  f.rule_edge_begin = r->Ints<int32_t>("rule edge offsets");
  f.rule_edges.resize(r->Count(8, "rule edges"));
  for (RuleEdge& e : f.rule_edges) {
    e.rule = r->Int<int32_t>("rule edge rule");
    e.target = r->Int<int32_t>("rule edge target");
  }
  f.counted_loops.resize(r->Count(12, "counted loops"));
  for (CountedLoop& loop : f.counted_loops) {
    loop.head = r->Int<int32_t>("loop head");
    loop.gate = r->Int<int32_t>("loop gate");
    loop.limit = r->Int<int32_t>("loop limit");
  }
  f.node_loop = r->Ints<int32_t>("node loops");
  f.node_gate_loop = r->Ints<int32_t>("node gate loops");
  f.token_sets.resize(r->Count(9, "token sets"));
  for (TokenSetDef& set : f.token_sets) {
    set.ids = r->Ints<int32_t>("token set ids");
    set.excluded = r->Bool("token set exclusion flag");
  }
  f.token_set_edge_begin = r->Ints<int32_t>("token set edge offsets");
  f.token_set_edges.resize(r->Count(8, "token set edges"));
  for (TokenSetEdge& e : f.token_set_edges) {
    e.set = r->Int<int32_t>("token set edge set");
    e.target = r->Int<int32_t>("token set edge target");
  }
  f.rule_min_json_chars = r->Ints<int32_t>("rule character minimums");
  f.rule_max_json_chars = r->Ints<int32_t>("rule character maximums");
  f.node_char_end = r->Ints<uint8_t>("node character ends");
  f.node_fewest_chars = r->Ints<int32_t>("node fewest characters");
  f.node_most_chars = r->Ints<int32_t>("node most characters");
  f.rule_chars_slack = r->Ints<int32_t>("rule character slacks");
  f.rule_unique = r->Ints<uint8_t>("rule unique-item roles");
  return f;
}

void CheckSize(size_t actual, size_t expected, const char* table) {
  if (actual != expected) {
    Invalid(std::string(table) + " has " + std::to_string(actual) + " entries, expected " + std::to_string(expected));
  }
}

// A CSR offset table over `nodes` nodes into `edges` edges: starts at 0, monotone, ends at edges.
void CheckOffsets(const std::vector<int32_t>& begin, size_t nodes, size_t edges, const char* table) {
  CheckSize(begin.size(), nodes + 1, table);
  if (begin[0] != 0 || static_cast<size_t>(begin[nodes]) != edges) {
    Invalid(std::string(table) + " do not span the edge list");
  }
  for (size_t n = 0; n < nodes; ++n) {
    if (begin[n] > begin[n + 1]) Invalid(std::string(table) + " decrease at node " + std::to_string(n));
  }
}

bool SortedUnique(const std::vector<int32_t>& ids) {
  for (size_t i = 1; i < ids.size(); ++i) {
    if (ids[i - 1] >= ids[i]) return false;
  }
  return true;
}

}  // namespace

// JSON character counts (grammar/grammar_fsm.h): the tables the parser indexes, in range, and
// a counting rule without rule edges or loop nodes (its items' count field is the character
// count).
void CheckJsonCharCountTables(const GrammarFsm& f) {
  const size_t rules = f.rule_start.size(), nodes = f.node_rule.size();
  if (f.rule_min_json_chars.empty()) {
    if (!f.rule_max_json_chars.empty() || !f.node_char_end.empty() || !f.node_fewest_chars.empty() ||
        !f.node_most_chars.empty() || !f.rule_chars_slack.empty()) {
      Invalid("character-count tables without a counting rule");
    }
    return;
  }
  CheckSize(f.node_fewest_chars.size(), nodes, "node fewest characters");
  CheckSize(f.node_most_chars.size(), nodes, "node most characters");
  CheckSize(f.rule_chars_slack.size(), rules, "rule character slacks");
  CheckSize(f.rule_min_json_chars.size(), rules, "rule character minimums");
  CheckSize(f.rule_max_json_chars.size(), rules, "rule character maximums");
  CheckSize(f.node_char_end.size(), nodes, "node character ends");
  for (size_t r = 0; r < rules; ++r) {
    const int32_t least = f.rule_min_json_chars[r], most = f.rule_max_json_chars[r];
    if (least < -1 || most < -1 || (least < 0 && most != -1) || (most >= 0 && most < least)) {
      Invalid("rule " + std::to_string(r) + " has the character count " + std::to_string(least) + ".." + std::to_string(most));
    }
    if (least < 0) continue;
    if (f.rule_nullable[r] && least > 0) Invalid("rule " + std::to_string(r) + " counts characters but is nullable");
    for (NodeId n = f.rule_nodes[r].begin; n < f.rule_nodes[r].end; ++n) {
      if (f.node_fewest_chars[n] < -1 || f.node_most_chars[n] < -1 || f.node_fewest_chars[n] > f.rule_chars_slack[r] ||
          (f.node_most_chars[n] >= 0 && f.node_most_chars[n] < f.node_fewest_chars[n])) {
        Invalid("node " + std::to_string(n) + " has inconsistent completion lengths");
      }
      if (f.rule_edge_begin[n] != f.rule_edge_begin[n + 1]) Invalid("counting rule " + std::to_string(r) + " calls a rule");
      if (!f.node_loop.empty() && (f.node_loop[n] != -1 || f.node_gate_loop[n] != -1)) {
        Invalid("counting rule " + std::to_string(r) + " holds a counted-loop node");
      }
    }
  }
  for (size_t n = 0; n < nodes; ++n) {
    const RuleId rule = f.node_rule[n];
    if (f.node_char_end[n] > 1 || (f.node_char_end[n] && (rule < 0 || f.rule_min_json_chars[rule] < 0))) {
      Invalid("node " + std::to_string(n) + " ends a JSON character outside a counting rule");
    }
  }
}

// Unique items (grammar/grammar_fsm.h): roles in range; every call of a unique_item rule from
// a holder's node (the parser reads the caller's count as a value set); holders without loop
// nodes or character counts; unique_item rules not nullable.
void CheckUniqueItemTables(const GrammarFsm& f) {
  if (f.rule_unique.empty()) return;
  const size_t rules = f.rule_start.size(), nodes = f.node_rule.size();
  CheckSize(f.rule_unique.size(), rules, "rule unique-item roles");
  for (size_t r = 0; r < rules; ++r) {
    if (f.rule_unique[r] > GrammarFsm::kUniqueItemsHolder) Invalid("rule " + std::to_string(r) + " has an unknown unique-item role");
    if (f.rule_unique[r] == GrammarFsm::kUniqueItem && f.rule_nullable[r]) Invalid("a unique_item rule is nullable");
    if (f.rule_unique[r] == GrammarFsm::kUniqueItemsHolder && !f.rule_min_json_chars.empty() &&
        f.rule_min_json_chars[r] >= 0) {
      Invalid("a unique_items rule counts characters");
    }
  }
  for (size_t n = 0; n < nodes; ++n) {
    const RuleId owner = f.node_rule[n];
    const bool holder = owner >= 0 && f.rule_unique[owner] == GrammarFsm::kUniqueItemsHolder;
    if (holder && !f.node_loop.empty() && (f.node_loop[n] != -1 || f.node_gate_loop[n] != -1)) {
      Invalid("a unique_items rule holds a counted-loop node");
    }
    for (int32_t e = f.rule_edge_begin[n]; e < f.rule_edge_begin[n + 1]; ++e) {
      if (f.rule_unique[f.rule_edges[e].rule] == GrammarFsm::kUniqueItem && !holder) {
        Invalid("node " + std::to_string(n) + " calls a unique_item rule outside a unique_items rule");
      }
    }
  }
}

void CheckFsmStructure(const GrammarFsm& f, int32_t vocab_size) {
  const size_t rules = f.rule_start.size();
  const size_t nodes = f.node_rule.size();
  if (rules == 0 || rules > (size_t{1} << 30) || nodes > (size_t{1} << 30)) Invalid("no rules, or too many");
  if (f.root_rule < 0 || static_cast<size_t>(f.root_rule) >= rules) Invalid("root rule out of range");
  CheckSize(f.rule_names.size(), rules, "rule names");
  CheckSize(f.rule_nodes.size(), rules, "rule blocks");
  CheckSize(f.rule_nullable.size(), rules, "rule nullable flags");
  CheckSize(f.rule_lookahead.size(), rules, "rule lookaheads");
  if (!f.rule_max_tokens.empty()) CheckSize(f.rule_max_tokens.size(), rules, "rule token budgets");
  CheckSize(f.node_accepting.size(), nodes, "node accepting flags");
  const NodeId num_nodes = static_cast<NodeId>(nodes);
  for (NodeId n = 0; n < num_nodes; ++n) {
    if (f.node_rule[n] < -1 || f.node_rule[n] >= static_cast<RuleId>(rules)) Invalid("node " + std::to_string(n) + " names a rule out of range");
    if (f.node_accepting[n] > 1) Invalid("node accepting flag is not a boolean");
  }
  // A blob holds every rule built (serialization builds all first). Each block holds only its
  // rule's nodes, so blocks are disjoint; as many nodes in blocks as nodes with a rule means
  // every such node lies in its rule's block.
  size_t in_blocks = 0;
  for (size_t r = 0; r < rules; ++r) {
    const NodeId first = f.rule_nodes[r].begin, end = f.rule_nodes[r].end;
    if (first < 0 || first >= end || end > num_nodes) Invalid("rule " + std::to_string(r) + " has an empty, inverted or outside node block");
    if (f.rule_start[r] < first || f.rule_start[r] >= end) Invalid("rule " + std::to_string(r) + " starts outside its block");
    for (NodeId n = first; n < end; ++n) {
      if (f.node_rule[n] != static_cast<RuleId>(r)) Invalid("node " + std::to_string(n) + " has rule " + std::to_string(f.node_rule[n]) + " inside the block of rule " + std::to_string(r));
    }
    in_blocks += static_cast<size_t>(end - first);
    if (f.rule_nullable[r] > 1) Invalid("rule nullable flag is not a boolean");
    if (!f.rule_max_tokens.empty() && f.rule_max_tokens[r] < -1) Invalid("negative token budget");
    const NodeId lookahead = f.rule_lookahead[r];
    if (lookahead != -1 && (lookahead < 0 || lookahead >= num_nodes || f.node_rule[lookahead] != -1)) {
      Invalid("rule " + std::to_string(r) + " lookahead outside the lookahead nodes");
    }
  }
  if (in_blocks != static_cast<size_t>(std::count_if(f.node_rule.begin(), f.node_rule.end(), [](RuleId r) { return r >= 0; }))) {
    Invalid("a node lies outside its rule's block");
  }
  const bool any_lookahead =
      std::any_of(f.rule_lookahead.begin(), f.rule_lookahead.end(), [](NodeId n) { return n != -1; });
  if (any_lookahead != f.has_lookahead) Invalid("lookahead flag disagrees with the rules");
  // Block of each node: its rule's, or the run of lookahead nodes (no rule) it lies in.
  std::vector<NodeId> run_begin(nodes), run_end(nodes);
  for (NodeId n = 0; n < num_nodes;) {
    NodeId end = n + 1;
    if (f.node_rule[n] < 0) {
      while (end < num_nodes && f.node_rule[end] < 0) ++end;
    }
    std::fill(run_begin.begin() + n, run_begin.begin() + end, n);
    std::fill(run_end.begin() + n, run_end.begin() + end, end);
    n = end;
  }
  auto block_of = [&](NodeId n, NodeId* first, NodeId* end) {
    const RuleId r = f.node_rule[n];
    *first = r >= 0 ? f.rule_nodes[r].begin : run_begin[n];
    *end = r >= 0 ? f.rule_nodes[r].end : run_end[n];
  };
  CheckOffsets(f.byte_edge_begin, nodes, f.byte_edges.size(), "byte edge offsets");
  CheckOffsets(f.rule_edge_begin, nodes, f.rule_edges.size(), "rule edge offsets");
  for (NodeId n = 0; n < num_nodes; ++n) {
    NodeId first, end;
    block_of(n, &first, &end);
    int32_t previous_hi = -1;
    for (const ByteEdge* e = f.byte_edges_begin(n); e != f.byte_edges_end(n); ++e) {
      if (e->lo > e->hi || e->lo <= previous_hi) Invalid("byte edges of node " + std::to_string(n) + " unsorted or overlapping");
      if (e->target < first || e->target >= end) Invalid("byte edge of node " + std::to_string(n) + " leaves its block");
      previous_hi = e->hi;
    }
    if (f.node_rule[n] < 0 && f.rule_edges_begin(n) != f.rule_edges_end(n)) Invalid("lookahead node with a rule edge");
    for (const RuleEdge* e = f.rule_edges_begin(n); e != f.rule_edges_end(n); ++e) {
      if (e->rule < 0 || static_cast<size_t>(e->rule) >= rules) Invalid("rule edge names rule " + std::to_string(e->rule));
      if (e->target < first || e->target >= end) Invalid("rule edge of node " + std::to_string(n) + " leaves its block");
    }
  }
  if (f.counted_loops.empty()) {
    if (!f.node_loop.empty() || !f.node_gate_loop.empty()) Invalid("loop tables without loops");
  } else {
    CheckSize(f.node_loop.size(), nodes, "node loops");
    CheckSize(f.node_gate_loop.size(), nodes, "node gate loops");
    const int32_t loops = static_cast<int32_t>(f.counted_loops.size());
    for (const CountedLoop& loop : f.counted_loops) {
      if (loop.head < 0 || loop.head >= num_nodes || loop.gate < 0 || loop.gate >= num_nodes || loop.limit < 0) {
        Invalid("counted loop out of range");
      }
    }
    for (NodeId n = 0; n < num_nodes; ++n) {
      if (f.node_loop[n] < -1 || f.node_loop[n] >= loops || f.node_gate_loop[n] < -1 || f.node_gate_loop[n] >= loops) {
        Invalid("node " + std::to_string(n) + " names a loop out of range");
      }
    }
  }
  CheckJsonCharCountTables(f);
  CheckUniqueItemTables(f);
  if (f.token_sets.empty()) {
    if (!f.token_set_edge_begin.empty() || !f.token_set_edges.empty()) Invalid("token set edges without token sets");
  } else {
    for (const TokenSetDef& set : f.token_sets) {
      if (!SortedUnique(set.ids) || (!set.ids.empty() && (set.ids.front() < 0 || set.ids.back() >= vocab_size))) {
        Invalid("token set ids unsorted or outside the vocabulary");
      }
    }
    CheckOffsets(f.token_set_edge_begin, nodes, f.token_set_edges.size(), "token set edge offsets");
    for (NodeId n = 0; n < num_nodes; ++n) {
      NodeId first, end;
      block_of(n, &first, &end);
      for (const TokenSetEdge* e = f.token_set_edges_begin(n); e != f.token_set_edges_end(n); ++e) {
        if (e->set < 0 || static_cast<size_t>(e->set) >= f.token_sets.size() || e->target < first || e->target >= end) {
          Invalid("token set edge of node " + std::to_string(n) + " out of range");
        }
      }
    }
  }
}

std::string TokenizerFingerprint(const TokenizerInfo& tokenizer) {
  // Tables are immutable: the fingerprint is computed once per table (a pass over the whole
  // vocabulary) and kept while the table lives.
  static ForkSafeMutex mutex;
  static std::vector<std::pair<std::weak_ptr<const TokenizerInfo>, std::string>> known;
  std::weak_ptr<const TokenizerInfo> self = tokenizer.weak_from_this();
  {
    std::lock_guard<ForkSafeMutex> lock(mutex);
    for (const auto& [table, fingerprint] : known) {
      if (!table.owner_before(self) && !self.owner_before(table) && !table.expired()) return fingerprint;
    }
  }
  std::string fingerprint = ComputeFingerprint(tokenizer);
  if (!self.expired()) {
    std::lock_guard<ForkSafeMutex> lock(mutex);
    known.erase(std::remove_if(known.begin(), known.end(), [](const auto& entry) { return entry.first.expired(); }),
                known.end());
    known.emplace_back(self, fingerprint);
  }
  return fingerprint;
}

std::string SerializeTokenizerInfo(const TokenizerInfo& t, const std::string& engine_version) {
  ByteWriter w;
  WriteHeader(&w, kTokenizerMagic, engine_version, TokenizerFingerprint(t));
  w.Int<int32_t>(static_cast<int32_t>(t.vocab_type()));
  w.Int<int32_t>(t.vocab_size());
  w.Int<uint8_t>(t.add_prefix_space());
  w.Int<uint64_t>(t.decoded_tokens().size());
  for (const std::string& token : t.decoded_tokens()) w.Bytes(token);
  w.Ints(t.stop_token_ids());
  w.Ints(t.special_token_ids());
  return Finish(&w);
}

std::shared_ptr<const TokenizerInfo> DeserializeTokenizerInfo(std::string_view blob, const std::string& engine_version) {
  ByteReader r = OpenBlob(blob, kTokenizerMagic, "tokenizer info", engine_version, true);
  const std::string fingerprint(r.Raw(kFingerprintBytes, "tokenizer fingerprint"));
  const int32_t vocab_type = r.Int<int32_t>("vocab type");
  if (vocab_type < 0 || vocab_type > 2) r.Fail("vocab type " + std::to_string(vocab_type) + " is unknown");
  const int32_t vocab_size = r.Int<int32_t>("vocab size");
  const bool add_prefix_space = r.Bool("prefix space flag");
  std::vector<std::string> tokens(r.Count(8, "decoded tokens"));
  for (std::string& token : tokens) token = r.Bytes("decoded token");
  std::vector<int32_t> stop = r.Ints<int32_t>("stop token ids");
  std::vector<int32_t> special = r.Ints<int32_t>("special token ids");
  if (r.left() != 0) r.Fail(std::to_string(r.left()) + " bytes after the last field");
  std::shared_ptr<const TokenizerInfo> info;
  try {
    info = std::make_shared<const TokenizerInfo>(std::move(tokens), static_cast<VocabType>(vocab_type), vocab_size,
                                                 std::move(stop), std::move(special), add_prefix_space);
  } catch (const InvalidArgumentError& error) {
    throw DeserializationError(std::string("tokenizer info blob is corrupt: ") + error.what());
  }
  if (TokenizerFingerprint(*info) != fingerprint) {
    throw DeserializationError("tokenizer info blob is corrupt: the table read back has another fingerprint");
  }
  VocabularyIndex::Of(*info);
  return info;
}

std::string SerializeCompiledGrammar(const CompiledGrammar& g, const TokenizerInfo& base,
                                     const std::string& engine_version, bool with_classifications) {
  ByteWriter w;
  WriteHeader(&w, kGrammarMagic, engine_version, TokenizerFingerprint(base));
  w.Int<uint8_t>(g.tokenizer.get() != &base);
  WriteFsm(&w, *g.WholeFsm());
  w.Bytes(g.ebnf.text());
  w.Int<int32_t>(g.earley_limits.max_items_per_step);
  w.Int<int64_t>(g.earley_limits.max_work_per_token);
  w.Int<int64_t>(g.earley_limits.max_work_per_fill);
  w.Ints(g.token_literal_ids);
  w.Ints(g.stop_terminal_ids);
  std::vector<std::pair<NodeId, std::shared_ptr<const TokenClassification>>> built;
  if (with_classifications) built = g.mask_cache->ExportBuilt();
  // Accepted sets are shared between nodes: each is stored once and named by index.
  std::vector<const AcceptedTokens*> sets;
  std::unordered_map<const AcceptedTokens*, int32_t> set_index;
  for (const auto& [node, entry] : built) {
    if (set_index.emplace(entry->accepted.get(), static_cast<int32_t>(sets.size())).second) {
      sets.push_back(entry->accepted.get());
    }
  }
  w.Int<uint64_t>(sets.size());
  for (const AcceptedTokens* set : sets) {
    w.Int<uint8_t>(set->as_bits());
    if (set->as_bits()) {
      w.Ints(set->bits);
    } else {
      w.Ints(set->ids);
    }
  }
  w.Int<uint64_t>(built.size());
  for (const auto& [node, entry] : built) {
    w.Int<int32_t>(node);
    w.Int<int32_t>(set_index.at(entry->accepted.get()));
    w.Ints(entry->uncertain_positions);
  }
  return Finish(&w);
}

GrammarBlob ReadCompiledGrammarBlob(std::string_view data, const TokenizerInfo& base, const std::string& engine_version,
                                    bool verify_checksum) {
  ByteReader r = OpenBlob(data, kGrammarMagic, "compiled grammar", engine_version, verify_checksum);
  const std::string_view fingerprint = r.Raw(kFingerprintBytes, "tokenizer fingerprint");
  if (fingerprint != TokenizerFingerprint(base)) {
    throw DeserializationError(
        "compiled grammar blob was made for another tokenizer (its vocabulary, vocab size, stop or special ids "
        "differ from this TokenizerInfo's: vocab_size " + std::to_string(base.vocab_size()) + ")");
  }
  GrammarBlob blob;
  blob.derived_vocabulary = r.Bool("derived vocabulary flag");
  blob.fsm = ReadFsm(&r);
  CheckFsmStructure(blob.fsm, base.vocab_size());
  // In range is not yet consistent: the parser also relies on the tables' semantic invariants
  // (grammar_fsm.h: rule_nullable the fixpoint of the rule FSMs, lookaheads never nullable...),
  // so a blob that breaks one is as unreadable as a cut one. Every index is in range here.
  try {
    CheckGrammarFsmInvariants(blob.fsm, "a deserialized compiled grammar");
  } catch (const InternalError& broken) {
    Invalid(broken.what());
  }
  blob.ebnf = r.Bytes("ebnf");
  blob.earley_limits.max_items_per_step = r.Int<int32_t>("Earley item limit");
  blob.earley_limits.max_work_per_token = r.Int<int64_t>("Earley token budget");
  blob.earley_limits.max_work_per_fill = r.Int<int64_t>("Earley fill budget");
  if (blob.earley_limits.max_items_per_step < 1 || blob.earley_limits.max_work_per_token < 1 ||
      blob.earley_limits.max_work_per_fill < 1) {
    r.Fail("Earley limits are not positive");
  }
  blob.token_literal_ids = r.Ints<int32_t>("token literal ids");
  blob.stop_terminal_ids = r.Ints<int32_t>("stop terminal ids");
  for (const auto* ids : {&blob.token_literal_ids, &blob.stop_terminal_ids}) {
    if (!SortedUnique(*ids) || (!ids->empty() && (ids->front() < 0 || ids->back() >= base.vocab_size()))) {
      r.Fail("token ids unsorted or outside the vocabulary");
    }
  }
  if (!blob.derived_vocabulary && (!blob.token_literal_ids.empty() || !blob.fsm.token_sets.empty())) {
    r.Fail("a grammar naming tokens without its derived vocabulary");
  }
  blob.accepted_sets.resize(r.Count(9, "accepted sets"));
  for (auto& set : blob.accepted_sets) {
    auto accepted = std::make_shared<AcceptedTokens>();
    if (r.Bool("accepted set kind")) {
      accepted->bits = r.Ints<uint32_t>("accepted bits");
      if (accepted->bits.empty()) r.Fail("an empty accepted bitset");
    } else {
      accepted->ids = r.Ints<int32_t>("accepted ids");
    }
    set = std::move(accepted);
  }
  blob.classifications.resize(r.Count(16, "classifications"));
  NodeId previous = -1;
  for (StoredClassification& c : blob.classifications) {
    c.node = r.Int<int32_t>("classified node");
    if (c.node <= previous || c.node >= blob.fsm.num_nodes() || blob.fsm.node_rule[c.node] < 0) {
      r.Fail("classified node " + std::to_string(c.node) + " out of order or not a rule node");
    }
    previous = c.node;
    c.accepted_set = r.Int<int32_t>("accepted set index");
    if (c.accepted_set < 0 || static_cast<size_t>(c.accepted_set) >= blob.accepted_sets.size()) {
      r.Fail("accepted set index out of range");
    }
    c.uncertain_positions = r.Ints<int32_t>("uncertain positions");
  }
  if (r.left() != 0) r.Fail(std::to_string(r.left()) + " bytes after the last field");
  return blob;
}

std::shared_ptr<CompiledGrammar> AssembleCompiledGrammar(GrammarBlob blob, std::shared_ptr<const TokenizerInfo> vocab,
                                                         std::shared_ptr<MaskCachePool> pool,
                                                         MaskCacheOptions cache_options) {
  const TokenizerInfo& t = *vocab;
  const size_t words = (static_cast<size_t>(t.vocab_size()) + 31) / 32;
  const int32_t positions = static_cast<int32_t>(t.sorted_text_tokens().size());
  for (const auto& set : blob.accepted_sets) {
    if (set->as_bits() ? set->bits.size() != words
                       : !SortedUnique(set->ids) ||
                             (!set->ids.empty() && (set->ids.front() < 0 || set->ids.back() >= t.vocab_size()))) {
      throw DeserializationError("compiled grammar blob is corrupt: an accepted token set does not fit the vocabulary");
    }
  }
  CompiledGrammarParts parts;
  parts.fsm = std::move(blob.fsm);
  parts.tokenizer = std::move(vocab);
  parts.ebnf = TextSource::Known(std::move(blob.ebnf));
  parts.earley_limits = blob.earley_limits;
  parts.token_literal_ids = std::move(blob.token_literal_ids);
  parts.stop_terminal_ids = std::move(blob.stop_terminal_ids);
  parts.pool = std::move(pool);
  parts.cache_options = cache_options;
  auto compiled = std::make_shared<CompiledGrammar>(std::move(parts));
  for (StoredClassification& stored : blob.classifications) {
    if (!SortedUnique(stored.uncertain_positions) ||
        (!stored.uncertain_positions.empty() &&
         (stored.uncertain_positions.front() < 0 || stored.uncertain_positions.back() >= positions))) {
      throw DeserializationError("compiled grammar blob is corrupt: uncertain tokens of node " +
                                 std::to_string(stored.node) + " do not fit the vocabulary");
    }
    auto entry = std::make_shared<TokenClassification>();
    entry->accepted = blob.accepted_sets[stored.accepted_set];
    entry->uncertain_positions = std::move(stored.uncertain_positions);
    // Prefix lengths from the vocabulary itself (the parser walk reuses states by them).
    entry->uncertain_lcp.assign(entry->uncertain_positions.size(), 0);
    const auto& sorted = t.sorted_text_tokens();
    for (size_t k = 1; k < entry->uncertain_positions.size(); ++k) {
      const std::string& a = t.decoded_tokens()[sorted[entry->uncertain_positions[k - 1]]];
      const std::string& b = t.decoded_tokens()[sorted[entry->uncertain_positions[k]]];
      const size_t limit = std::min(a.size(), b.size());
      entry->uncertain_lcp[k] = static_cast<int32_t>(std::mismatch(a.begin(), a.begin() + limit, b.begin()).first - a.begin());
    }
    compiled->mask_cache->ImportBuilt(stored.node, std::move(entry));
  }
  GrammarMaskCache::StartPrecompute(compiled->mask_cache);
  return compiled;
}

}  // namespace xg2
