#include "grammar/grammar_ast_hash.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/automaton_literal.h"

namespace xg2 {
namespace {

// Accumulates values into one 64-bit hash (a multiply-xorshift step per value).
class HashMix {
 public:
  void Add(uint64_t value) {
    state_ = (state_ ^ value) * 0x9E3779B97F4A7C15ull;
    state_ ^= state_ >> 32;
  }
  void Add(std::string_view text) {
    Add(static_cast<uint64_t>(text.size()));
    Add(static_cast<uint64_t>(std::hash<std::string_view>()(text)));
  }
  void Add(const std::vector<std::string>& texts) {
    Add(static_cast<uint64_t>(texts.size()));
    for (const std::string& text : texts) Add(std::string_view(text));
  }
  size_t value() const { return static_cast<size_t>(state_); }

 private:
  uint64_t state_ = 0x243F6A8885A308D3ull;
};

uint64_t Signed(int64_t value) { return static_cast<uint64_t>(value); }

void AddNode(const ExprNode& node, HashMix* mix) {
  mix->Add(static_cast<uint64_t>(node.kind));
  mix->Add(Signed(node.rule_id));
  mix->Add(Signed(node.min_repeat));
  mix->Add(Signed(node.max_repeat));
  mix->Add(Signed(node.tag_dispatch));
  mix->Add(Signed(node.automaton));
  mix->Add(static_cast<uint64_t>(node.children.size()));
  for (ExprId child : node.children) mix->Add(Signed(child));
  mix->Add(std::string_view(node.bytes));
  mix->Add(static_cast<uint64_t>(node.ranges.size()));
  for (const CodepointRange& range : node.ranges) mix->Add((uint64_t{range.first} << 32) | range.last);
}

void AddRule(const RuleDef& rule, HashMix* mix) {
  mix->Add(std::string_view(rule.name));
  mix->Add(Signed(rule.body));
  mix->Add(Signed(rule.lookahead));
  mix->Add(Signed(rule.max_tokens));
  mix->Add(Signed(rule.min_json_chars));
  mix->Add(Signed(rule.max_json_chars));
  mix->Add(static_cast<uint64_t>(rule.unique_item) | static_cast<uint64_t>(rule.unique_items) << 1);
}

void AddTagDispatch(const TagDispatchDef& def, HashMix* mix) {
  mix->Add(static_cast<uint64_t>(def.tags.size()));
  for (const TagDispatchDef::Tag& tag : def.tags) {
    mix->Add(std::string_view(tag.text));
    mix->Add(Signed(tag.rule));
  }
  mix->Add(static_cast<uint64_t>(def.stop_eos) | static_cast<uint64_t>(def.loop_after_dispatch) << 1);
  mix->Add(def.stop_strings);
  mix->Add(def.excludes);
}

}  // namespace

size_t GrammarAstHash(const GrammarAst& grammar) {
  HashMix mix;
  mix.Add(Signed(grammar.root_rule));
  mix.Add(static_cast<uint64_t>(grammar.nodes.size()));
  for (const ExprNode& node : grammar.nodes) AddNode(node, &mix);
  mix.Add(static_cast<uint64_t>(grammar.rules.size()));
  for (const RuleDef& rule : grammar.rules) AddRule(rule, &mix);
  mix.Add(static_cast<uint64_t>(grammar.token_sets.size()));
  for (const TokenSetDef& set : grammar.token_sets) {
    mix.Add(static_cast<uint64_t>(set.excluded));
    mix.Add(static_cast<uint64_t>(set.ids.size()));
    for (int32_t id : set.ids) mix.Add(Signed(id));
  }
  mix.Add(static_cast<uint64_t>(grammar.tag_dispatches.size()));
  for (const TagDispatchDef& def : grammar.tag_dispatches) AddTagDispatch(def, &mix);
  mix.Add(static_cast<uint64_t>(grammar.automata.size()));
  for (const auto& literal : grammar.automata) mix.Add(static_cast<uint64_t>(literal->hash));
  return mix.value();
}

}  // namespace xg2
