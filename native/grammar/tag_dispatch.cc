// TagDispatch lowering; see tag_dispatch.h for the semantics implemented here.
#include "grammar/tag_dispatch.h"

#include <unordered_map>

#include "grammar/token_literal.h"
#include "support/error.h"

namespace xg2 {
namespace {

// What ends at an automaton state. Larger values take priority when several watched strings
// end at the same position.
enum class Watch : uint8_t { kNone = 0, kTag = 1, kStop = 2, kExclude = 3 };

struct Action {
  Watch kind = Watch::kNone;
  int32_t index = -1;  // into tags / stop_strings / excludes
};

// UTF-8 decoding states: 0 is a character boundary; the others expect continuation bytes.
constexpr int kUtf8States = 8;

// The UTF-8 state after `byte` (-1 when the byte is invalid there). Follows the well-formed
// byte sequences of Unicode table 3-7, so no overlong form or surrogate gets through.
int Utf8Step(int state, uint8_t b) {
  switch (state) {
    case 0:
      if (b < 0x80) return 0;
      if (b >= 0xC2 && b <= 0xDF) return 1;
      if (b == 0xE0) return 3;
      if (b == 0xED) return 4;
      if (b >= 0xE1 && b <= 0xEF) return 2;
      if (b == 0xF0) return 6;
      if (b >= 0xF1 && b <= 0xF3) return 5;
      if (b == 0xF4) return 7;
      return -1;
    case 1: return b >= 0x80 && b <= 0xBF ? 0 : -1;
    case 2: return b >= 0x80 && b <= 0xBF ? 1 : -1;
    case 3: return b >= 0xA0 && b <= 0xBF ? 1 : -1;
    case 4: return b >= 0x80 && b <= 0x9F ? 1 : -1;
    case 5: return b >= 0x80 && b <= 0xBF ? 2 : -1;
    case 6: return b >= 0x90 && b <= 0xBF ? 2 : -1;
    case 7: return b >= 0x80 && b <= 0x8F ? 2 : -1;
    default: return -1;
  }
}

// Aho-Corasick automaton over the watched strings, as a full transition table.
// Invariant after Finish(): Next(q, b) is the state of the longest suffix of (path(q) + b)
// that is a prefix of a watched string; it is the trie child of q iff its depth is
// depth(q) + 1.
class AhoCorasick {
 public:
  AhoCorasick(const std::string& rule_name, int64_t* budget) : rule_name_(rule_name), budget_(budget) {
    AddState(0);
  }

  void Insert(const std::string& text, Watch kind, int32_t index) {
    int32_t state = 0;
    std::vector<uint8_t> mid_literal = MidLiteralPositions(text);
    for (size_t i = 0; i < text.size(); ++i) {
      uint8_t b = static_cast<uint8_t>(text[i]);
      if (next_[state * 256 + b] < 0) {
        int32_t child = AddState(depth_[state] + 1);  // grows next_: take no reference into it
        mid_literal_[child] = mid_literal[i];
        next_[state * 256 + b] = child;
      }
      state = next_[state * 256 + b];
    }
    Action& own = own_[state];
    if (own.kind == kind) {
      const char* what = kind == Watch::kTag ? "tag" : kind == Watch::kStop ? "stop string" : "excluded string";
      throw GrammarSyntaxError("rule '" + rule_name_ + "': TagDispatch lists the " + what +
                               " '" + Printable(text) + "' twice");
    }
    if (kind > own.kind) own = {kind, index};
  }

  // Computes failure transitions and the action of every state (its own, or the best one
  // inherited along the suffix chain; ties go to the longer, own string).
  void Finish() {
    action_ = own_;
    std::vector<int32_t> fail(depth_.size(), 0);
    std::vector<int32_t> queue;
    for (int b = 0; b < 256; ++b) {
      int32_t& next = next_[b];
      if (next < 0) {
        next = 0;
      } else {
        queue.push_back(next);
      }
    }
    for (size_t head = 0; head < queue.size(); ++head) {
      int32_t state = queue[head];
      for (int b = 0; b < 256; ++b) {
        int32_t& next = next_[state * 256 + b];
        int32_t fallback = next_[fail[state] * 256 + b];
        if (next < 0) {
          next = fallback;
          continue;
        }
        fail[next] = fallback;
        if (action_[fallback].kind > action_[next].kind) action_[next] = action_[fallback];
        queue.push_back(next);
      }
    }
  }

  int32_t Next(int32_t state, uint8_t b) const { return next_[state * 256 + b]; }
  bool IsChild(int32_t state, int32_t next) const { return depth_[next] == depth_[state] + 1; }
  const Action& action(int32_t state) const { return action_[state]; }
  bool mid_literal(int32_t state) const { return mid_literal_[state] != 0; }

 private:
  int32_t AddState(int32_t depth) {
    if (--*budget_ < 0) {
      throw ResourceLimitError("rule '" + rule_name_ +
                               "': TagDispatch too large for the node limit of the FSM builder");
    }
    next_.resize(next_.size() + 256, -1);
    depth_.push_back(depth);
    own_.emplace_back();
    mid_literal_.push_back(0);
    return static_cast<int32_t>(depth_.size() - 1);
  }

  // mid[i] != 0 iff byte i of `text` is inside a token literal spelling but not its last byte.
  std::vector<uint8_t> MidLiteralPositions(const std::string& text) const {
    std::vector<uint8_t> mid(text.size(), 0);
    for (size_t i = 0; i < text.size();) {
      if (!IsTokenLiteralByte(static_cast<uint8_t>(text[i]))) {
        ++i;
        continue;
      }
      if (DecodeTokenLiteral(text, i) < 0) {
        throw GrammarSyntaxError("rule '" + rule_name_ +
                                 "': a TagDispatch string contains a malformed token literal");
      }
      for (int k = 0; k + 1 < kTokenLiteralSize; ++k) mid[i + k] = 1;
      i += kTokenLiteralSize;
    }
    return mid;
  }

  static std::string Printable(const std::string& text) {
    std::string out;
    for (char c : text) out += IsTokenLiteralByte(static_cast<uint8_t>(c)) ? '?' : c;
    return out;
  }

  const std::string& rule_name_;
  int64_t* budget_;
  std::vector<int32_t> next_;  // states * 256; -1 = no trie child (before Finish)
  std::vector<int32_t> depth_;
  std::vector<Action> own_;
  std::vector<Action> action_;
  std::vector<uint8_t> mid_literal_;
};

class MachineBuilder {
 public:
  MachineBuilder(const TagDispatchDef& def, const AhoCorasick& ac, const std::string& rule_name,
                 int64_t* budget)
      : def_(def), ac_(ac), rule_name_(rule_name), budget_(budget) {}

  RuleMachine Build() {
    FreeNode(0, 0);  // node 0: the start
    for (size_t i = 0; i < work_.size(); ++i) Expand(work_[i]);
    return std::move(machine_);
  }

 private:
  // A node to fill in: free text at (ac state, utf8 state), or right after tag completion
  // at ac state `ac` (utf8 == -1).
  struct Work {
    int32_t node;
    int32_t ac;
    int32_t utf8;
  };

  int32_t NewNode() {
    if (--*budget_ < 0) {
      throw ResourceLimitError("rule '" + rule_name_ +
                               "': TagDispatch too large for the node limit of the FSM builder");
    }
    machine_.nodes.emplace_back();
    return static_cast<int32_t>(machine_.nodes.size() - 1);
  }

  int32_t FreeNode(int32_t ac, int32_t utf8) {
    int64_t key = static_cast<int64_t>(ac) * kUtf8States + utf8;
    auto found = free_nodes_.find(key);
    if (found != free_nodes_.end()) return found->second;
    int32_t node = NewNode();
    free_nodes_.emplace(key, node);
    machine_.nodes[node].accepting = def_.stop_eos && utf8 == 0 && !ac_.mid_literal(ac);
    work_.push_back({node, ac, utf8});
    return node;
  }

  int32_t EndNode() {
    if (end_node_ < 0) {
      end_node_ = NewNode();
      machine_.nodes[end_node_].accepting = true;
    }
    return end_node_;
  }

  int32_t DispatchNode(int32_t ac) {
    auto found = dispatch_nodes_.find(ac);
    if (found != dispatch_nodes_.end()) return found->second;
    int32_t node = NewNode();
    dispatch_nodes_.emplace(ac, node);
    RuleId rule = def_.tags[ac_.action(ac).index].rule;
    int32_t after = def_.loop_after_dispatch ? FreeNode(0, 0) : EndNode();
    machine_.nodes[node].rule_edges.push_back({rule, after});
    work_.push_back({node, ac, -1});
    return node;
  }

  // The node reached when the automaton enters `ac` with UTF-8 state `utf8`; -1 if the
  // byte that got there is not allowed (an excluded string ends at it).
  int32_t Enter(int32_t ac, int32_t utf8) {
    switch (ac_.action(ac).kind) {
      case Watch::kNone: return FreeNode(ac, utf8);
      case Watch::kExclude: return -1;
      case Watch::kStop: return EndNode();
      case Watch::kTag: return DispatchNode(ac);
    }
    return -1;
  }

  // The target of `b` from free text at (ac, utf8), or from a completed tag (utf8 == -1),
  // where only spelling a longer watched string may go on.
  int32_t Target(int32_t ac, int32_t utf8, uint8_t b) {
    int32_t next = ac_.Next(ac, b);
    bool child = ac_.IsChild(ac, next);
    bool literal_byte = IsTokenLiteralByte(b);
    if ((utf8 < 0 || ac_.mid_literal(ac) || literal_byte) && !child) return -1;
    if (literal_byte) return utf8 <= 0 ? Enter(next, 0) : -1;
    int32_t next_utf8 = Utf8Step(utf8 < 0 ? 0 : utf8, b);
    return next_utf8 < 0 ? -1 : Enter(next, next_utf8);
  }

  void Expand(Work work) {  // by value: Target() grows work_
    std::vector<ByteEdge> edges;
    for (int b = 0; b < 256; ++b) {
      int32_t target = Target(work.ac, work.utf8, static_cast<uint8_t>(b));
      if (target < 0) continue;
      if (!edges.empty() && edges.back().target == target && edges.back().hi + 1 == b) {
        edges.back().hi = static_cast<uint8_t>(b);
      } else {
        edges.push_back({static_cast<uint8_t>(b), static_cast<uint8_t>(b), target});
      }
    }
    machine_.nodes[work.node].byte_edges = std::move(edges);
  }

  const TagDispatchDef& def_;
  const AhoCorasick& ac_;
  const std::string& rule_name_;
  int64_t* budget_;
  RuleMachine machine_;
  std::vector<Work> work_;
  std::unordered_map<int64_t, int32_t> free_nodes_;
  std::unordered_map<int32_t, int32_t> dispatch_nodes_;
  int32_t end_node_ = -1;
};

void Validate(const TagDispatchDef& def, const std::string& rule_name) {
  auto fail = [&](const std::string& what) {
    throw GrammarSyntaxError("rule '" + rule_name + "': TagDispatch " + what);
  };
  for (const TagDispatchDef::Tag& tag : def.tags) {
    if (tag.text.empty()) fail("has an empty tag");
    if (tag.rule < 0) fail("has a tag without a rule");
  }
  for (const std::string& s : def.stop_strings) {
    if (s.empty()) fail("has an empty stop string");
  }
  for (const std::string& s : def.excludes) {
    if (s.empty()) fail("has an empty excluded string");
  }
  bool can_end = def.stop_eos || !def.stop_strings.empty() ||
                 (!def.loop_after_dispatch && !def.tags.empty());
  if (!can_end) {
    fail("can never end: set stop_eos=true, give a stop_str, or loop_after_dispatch=false");
  }
}

}  // namespace

RuleMachine BuildTagDispatchMachine(const TagDispatchDef& def, const std::string& rule_name,
                                    int64_t* node_budget) {
  Validate(def, rule_name);
  AhoCorasick ac(rule_name, node_budget);
  for (size_t i = 0; i < def.tags.size(); ++i) {
    ac.Insert(def.tags[i].text, Watch::kTag, static_cast<int32_t>(i));
  }
  for (size_t i = 0; i < def.stop_strings.size(); ++i) {
    ac.Insert(def.stop_strings[i], Watch::kStop, static_cast<int32_t>(i));
  }
  for (size_t i = 0; i < def.excludes.size(); ++i) {
    ac.Insert(def.excludes[i], Watch::kExclude, static_cast<int32_t>(i));
  }
  ac.Finish();
  return MachineBuilder(def, ac, rule_name, node_budget).Build();
}

}  // namespace xg2
