// CountJsonChars (json_char_count.h): a breadth-first product over (body node, phase).
#include "grammar/json_char_count.h"

#include <deque>
#include <unordered_map>

#include "support/completion_lengths.h"
#include "support/dcheck.h"
#include "support/error.h"

namespace xg2 {
namespace fsm_build {
namespace {

// Where the reader stands inside one JSON string character. The three boundary phases differ
// only in what arriving there means: kBoundary completes a character, kAfterHigh completes
// a high-surrogate escape (one character, unless a low-surrogate escape follows, which then
// completes the same code point and arrives at kPairEnd, completing nothing new).
enum Phase : int8_t {
  kBoundary,
  kAfterHigh,
  kPairEnd,
  kUtf8Need1,
  kUtf8Need2,
  kUtf8Need3,
  kEscape,         // after `\`
  kEscapeU,        // after `\u`
  kEscapeD,        // after `\ud`
  kHex2,           // two hex digits left, then a character ends
  kHex1,
  kHex3,
  kHighHex2,       // `\ud[89ab]`: two hex digits left of a high surrogate
  kHighHex1,
  kEscapeAfterHigh,   // `\` right after a high surrogate
  kEscapeUAfterHigh,  // `\u` right after a high surrogate
  kEscapeDAfterHigh,  // `\ud` right after a high surrogate
  kLowHex2,        // `\ud[c-f]` after a high surrogate: the pair's last two hex digits
  kLowHex1,
  kPhases
};

constexpr Phase kNoPhase = static_cast<Phase>(-1);

bool IsHex(uint8_t b) { return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'); }
bool IsBoundary(int8_t p) { return p == kBoundary || p == kAfterHigh || p == kPairEnd; }
bool CompletesChar(int8_t p) { return p == kBoundary || p == kAfterHigh; }

// The phase after `byte`, or kNoPhase where no JSON string character continues so.
int8_t Step(int8_t phase, uint8_t b) {
  const bool after_high = phase == kAfterHigh || phase == kEscapeAfterHigh || phase == kEscapeUAfterHigh ||
                          phase == kEscapeDAfterHigh;
  switch (phase) {
    case kBoundary:
    case kAfterHigh:
    case kPairEnd:
      if (b == '\\') return phase == kAfterHigh ? kEscapeAfterHigh : kEscape;
      if (b < 0x20 || b == '"') return kNoPhase;
      if (b < 0x80) return kBoundary;
      if (b >= 0xC2 && b <= 0xDF) return kUtf8Need1;
      if (b >= 0xE0 && b <= 0xEF) return kUtf8Need2;
      if (b >= 0xF0 && b <= 0xF4) return kUtf8Need3;
      return kNoPhase;
    case kUtf8Need3: return b >= 0x80 && b <= 0xBF ? kUtf8Need2 : kNoPhase;
    case kUtf8Need2: return b >= 0x80 && b <= 0xBF ? kUtf8Need1 : kNoPhase;
    case kUtf8Need1: return b >= 0x80 && b <= 0xBF ? kBoundary : kNoPhase;
    case kEscape:
    case kEscapeAfterHigh:
      if (b == '"' || b == '\\' || b == '/' || b == 'b' || b == 'f' || b == 'n' || b == 'r' || b == 't') return kBoundary;
      if (b == 'u') return after_high ? kEscapeUAfterHigh : kEscapeU;
      return kNoPhase;
    case kEscapeU:
    case kEscapeUAfterHigh:
      if (b == 'd' || b == 'D') return after_high ? kEscapeDAfterHigh : kEscapeD;
      return IsHex(b) ? kHex3 : kNoPhase;
    case kEscapeD:
    case kEscapeDAfterHigh:
      if (b >= '0' && b <= '7') return kHex2;
      if (b == '8' || b == '9' || b == 'a' || b == 'b' || b == 'A' || b == 'B') return kHighHex2;
      if ((b >= 'c' && b <= 'f') || (b >= 'C' && b <= 'F')) return after_high ? kLowHex2 : kHex2;
      return kNoPhase;
    case kHex3: return IsHex(b) ? kHex2 : kNoPhase;
    case kHex2: return IsHex(b) ? kHex1 : kNoPhase;
    case kHex1: return IsHex(b) ? kBoundary : kNoPhase;
    case kHighHex2: return IsHex(b) ? kHighHex1 : kNoPhase;
    case kHighHex1: return IsHex(b) ? kAfterHigh : kNoPhase;
    case kLowHex2: return IsHex(b) ? kLowHex1 : kNoPhase;
    case kLowHex1: return IsHex(b) ? kPairEnd : kNoPhase;
    default: return kNoPhase;
  }
}

}  // namespace

CharCountedDfa CountJsonChars(const Dfa& body, const std::string& rule, int32_t min_chars, int32_t max_chars) {
  XG2_DCHECK(body.loops.empty() && body.rule_edges.empty(),
             "a counting rule's body DFA has byte edges only (the builder inlines its references)");
  auto fail = [&](const std::string& what) {
    throw GrammarSyntaxError("rule '" + rule + "': [json_chars=M..N] needs a body of JSON string characters, but " + what);
  };
  CharCountedDfa out;
  std::unordered_map<int64_t, int32_t> id_of;  // body node * kPhases + phase -> product node
  std::vector<std::pair<int32_t, int8_t>> states;
  auto node_of = [&](int32_t n, int8_t phase) {
    const int64_t key = int64_t{n} * kPhases + phase;
    auto [it, added] = id_of.emplace(key, static_cast<int32_t>(states.size()));
    if (added) states.emplace_back(n, phase);
    return it->second;
  };
  node_of(0, kBoundary);
  // Nodes are added in discovery order, and each node's edges right after it (Dfa's layout):
  // the product's targets are numbered before their own edges are written.
  for (size_t i = 0; i < states.size(); ++i) {
    const auto [n, phase] = states[i];
    const bool accepting = body.nodes[n].accepting;
    if (accepting && !IsBoundary(phase)) fail("it accepts a string that ends inside an escape or a UTF-8 character");
    out.dfa.AddNode(accepting);
    // The start is (0, kBoundary): the parser starts its items there with count 0, and any
    // later arrival there completes a character like every other kBoundary node.
    out.char_end.push_back(CompletesChar(phase) ? 1 : 0);
    for (const ByteEdge& e : body.BytesOf(n)) {
      int32_t run_target = -1;
      uint8_t run_lo = 0;
      for (int b = e.lo; b <= e.hi + 1; ++b) {
        int32_t target = -1;
        if (b <= e.hi) {
          const int8_t next = Step(phase, static_cast<uint8_t>(b));
          if (next == kNoPhase) fail("byte " + std::to_string(b) + " may follow where no JSON string character continues");
          target = node_of(e.target, next);
        }
        if (target != run_target) {
          if (run_target >= 0) out.dfa.AddByteEdge({run_lo, static_cast<uint8_t>(b - 1), run_target});
          run_target = target;
          run_lo = static_cast<uint8_t>(b);
        }
      }
    }
  }
  // Where a count can still be met (grammar_fsm.h): exact only without gaps.
  constexpr int32_t kMaxLengthLayers = 4096;
  std::vector<WeightedEdge> edges;
  std::vector<uint8_t> accepting(out.dfa.size());
  for (int32_t n = 0; n < out.dfa.size(); ++n) {
    accepting[n] = out.dfa.nodes[n].accepting;
    for (const ByteEdge& e : out.dfa.BytesOf(n)) edges.push_back({n, e.target, out.char_end[e.target]});
  }
  CompletionLengths lengths = ComputeCompletionLengths(out.dfa.size(), accepting, edges, kMaxLengthLayers);
  if (!CountWindowIsDecided(min_chars, max_chars, lengths.max_gap)) {
    fail("the lengths of its strings have gaps of " + std::to_string(lengths.max_gap) +
         ", wider than the count's window (the parser could not tell whether a count can be met)");
  }
  const int32_t fewest = lengths.fewest[0], most = lengths.most[0];
  if (fewest < 0 || (max_chars >= 0 && fewest > max_chars) || (most >= 0 && most < min_chars)) {
    throw GrammarSyntaxError("rule '" + rule + "': no string of its body has between " + std::to_string(min_chars) +
                             " and " + (max_chars >= 0 ? std::to_string(max_chars) : std::string("any number of")) +
                             " JSON characters");
  }
  out.fewest = std::move(lengths.fewest);
  out.most = std::move(lengths.most);
  return out;
}

}  // namespace fsm_build
}  // namespace xg2
