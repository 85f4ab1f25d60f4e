// grammar/automaton_literal.h: the UTF-8 expansion of a code-point DFA (exact and minimal, the
// same automaton the lowering of the equal expression gives), its invariant checks, and an
// automaton rule through the grammar: the FSM builder's copy, the AST analyses, hashing and
// equality.
#include <string>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/ast_rule_analyses.h"
#include "grammar/automaton_literal.h"
#include "grammar/grammar_ast_equality.h"
#include "grammar/grammar_ast_hash.h"
#include "grammar/grammar_builder.h"
#include "support/dcheck.h"
#include "support/utf8.h"

namespace xg2_test {
namespace {

using Edge = AutomatonLiteral::CodepointEdge;

// A code-point DFA given state by state.
struct CodepointStates {
  std::vector<uint8_t> accepting;
  std::vector<std::vector<Edge>> edges;

  std::shared_ptr<const AutomatonLiteral> Literal() const {
    std::vector<int32_t> begin{0};
    std::vector<Edge> flat;
    for (const auto& state : edges) {
      flat.insert(flat.end(), state.begin(), state.end());
      begin.push_back(static_cast<int32_t>(flat.size()));
    }
    return MakeAutomatonLiteral(accepting, begin, flat);
  }
  bool Accepts(const std::vector<uint32_t>& text) const {
    int32_t s = 0;
    for (uint32_t cp : text) {
      int32_t next = -1;
      for (const Edge& e : edges[s]) {
        if (e.lo <= cp && cp <= e.hi) next = e.target;
      }
      if ((s = next) < 0) return false;
    }
    return accepting[s] != 0;
  }
};

// Ranges that cross every UTF-8 length boundary and split lead and continuation bytes:
// start -(a-c, U+07F0-U+0810, U+4E40-U+9FFF)-> word, -(U+4E00-U+4E3F, U+1F600-U+1F64F)-> end;
// word (accepting) -(a-c, U+00E9-U+0101)-> word, -(!)-> end; end accepting, no edges.
CodepointStates Sample() {
  CodepointStates dfa;
  dfa.accepting = {0, 1, 1};
  dfa.edges = {
      {{'a', 'c', 1}, {0x7F0, 0x810, 1}, {0x4E00, 0x4E3F, 2}, {0x4E40, 0x9FFF, 1}, {0x1F600, 0x1F64F, 2}},
      {{'!', '!', 2}, {'a', 'c', 1}, {0xE9, 0x101, 1}},
      {},
  };
  return dfa;
}

// The same language as an expression: the path every other grammar takes.
ExprId SampleExpression(AstBuilder* b) {
  const ExprId first_word = b->Class({{'a', 'c'}, {0x7F0, 0x810}, {0x4E40, 0x9FFF}});
  const ExprId first_end = b->Class({{0x4E00, 0x4E3F}, {0x1F600, 0x1F64F}});
  const ExprId word = b->Repeat(b->Class({{'a', 'c'}, {0xE9, 0x101}}), 0, -1);
  return b->Choice({b->Seq({first_word, word, b->Repeat(b->Bytes("!"), 0, 1)}), first_end});
}

std::string Utf8(const std::vector<uint32_t>& text) {
  std::string out;
  for (uint32_t cp : text) AppendUtf8(cp, &out);
  return out;
}

// Code points at and around every range end of Sample() and of the encodings.
std::vector<uint32_t> ProbeCodepoints() {
  std::vector<uint32_t> out;
  for (uint32_t cp : {0x21u, 0x61u, 0x63u, 0x7Fu, 0x80u, 0xE9u, 0x101u, 0x7F0u, 0x7FFu, 0x800u, 0x810u, 0x4E00u,
                      0x4E3Fu, 0x4E40u, 0x9FFFu, 0xD7FFu, 0xE000u, 0xFFFFu, 0x10000u, 0x1F600u, 0x1F64Fu, 0x10FFFFu}) {
    for (uint32_t near : {cp - 1, cp, cp + 1}) {
      if (near <= 0x10FFFF && (near < 0xD800 || near > 0xDFFF)) out.push_back(near);
    }
  }
  return out;
}

TEST(AutomatonLiteralBytesAcceptExactlyTheUtf8OfItsStrings) {
  const CodepointStates sample = Sample();
  const auto literal = sample.Literal();
  int64_t budget = 1 << 20;
  const Dfa bytes = AutomatonRuleDfa(*literal, &budget);
  const std::vector<uint32_t> probes = ProbeCodepoints();
  int accepted = 0;
  for (uint32_t a : probes) {
    CHECK_EQ(DfaAccepts(bytes, Utf8({a})), sample.Accepts({a}));
    for (uint32_t b : probes) {
      const bool in = sample.Accepts({a, b});
      CHECK_EQ(DfaAccepts(bytes, Utf8({a, b})), in);
      accepted += in;
    }
  }
  CHECK(accepted > 0);
  CHECK(!DfaAccepts(bytes, ""));
  // Spellings that are not UTF-8 of an accepted code point: overlong, surrogate, past
  // U+10FFFF, a lone lead or continuation byte.
  for (const std::string bad : {"\xC1\xA1", "\xE0\x81\xA1", "\xE0\x9F\xB0", "\xED\xA0\x80", "\xF4\x90\x80\x80",
                                "\xE4", "\xB8\x80", "\xF0\x9F\x98"}) {
    CHECK(!DfaAccepts(bytes, bad));
  }
}

TEST(AutomatonLiteralBytesAreTheMinimalDfaOfTheEqualExpression) {
  AstBuilder b;
  const ExprId body = SampleExpression(&b);
  b.Rule("root", body);
  const Stages stages = RunStages(b.ast, body);
  const auto literal = Sample().Literal();
  CHECK_EQ(literal->num_byte_nodes(), stages.minimal.size());
  int64_t budget = 1 << 20;
  const Dfa bytes = AutomatonRuleDfa(*literal, &budget);
  for (uint32_t a : ProbeCodepoints()) {
    for (uint32_t c : ProbeCodepoints()) {
      CHECK_EQ(DfaAccepts(bytes, Utf8({a, c})), DfaAccepts(stages.minimal, Utf8({a, c})));
    }
  }
}

// A chain of 12 states whose classes need every escape of the printer (quotes, brackets, a
// dash, control characters, DEL) and every UTF-8 length; each state also reaches the end
// directly, so states name two targets, and state numbers reach two digits.
CodepointStates EscapedChain() {
  CodepointStates dfa;
  const int32_t end = 11;
  for (int32_t s = 0; s <= end; ++s) {
    dfa.accepting.push_back(s == end ? 1 : 0);
    if (s == end) {
      dfa.edges.push_back({});
      continue;
    }
    const int32_t next = s + 1;
    dfa.edges.push_back({{0x01, 0x01, next}, {'"', '"', next}, {'-', '-', next}, {'[', ']', next},
                         {'^', '^', end}, {'a', 'b', end}, {0x7F, 0x80, next}, {0xE9, 0xE9, end},
                         {0x4E00, 0x4E3F, next}, {0x1F600, 0x1F600, next}, {0x10FFFF, 0x10FFFF, end}});
  }
  return dfa;
}

TEST(AutomatonRulesPrintedSizeIsTheSizeOfTheirText) {
  for (const CodepointStates& dfa : {Sample(), EscapedChain()}) {
    const auto literal = dfa.Literal();
    for (const std::string name : {"p", "name_with_digits_10"}) {
      const std::string printed = PrintAutomatonRules(*literal, name);
      CHECK_EQ(AutomatonRulesPrintedSize(*literal, name), printed.size());
      std::string appended = "x";
      AppendAutomatonRules(*literal, name, &appended);
      CHECK(appended == "x" + printed);
    }
  }
  const std::string chain = PrintAutomatonRules(*EscapedChain().Literal(), "p");
  CHECK(chain.find("\np__s10 ::= [\\x01\\\"\\-\\[-\\]\\^ab\\x7F") != std::string::npos);
  CHECK(chain.find("] p__s11") == std::string::npos);  // the end has no edges: no rule
}

TEST(AutomatonLiteralChecksRefuseRedundantOrUnreachableStates) {
  CodepointStates twins;  // 1 and 2 accept the same strings
  twins.accepting = {0, 1, 1};
  twins.edges = {{{'a', 'a', 1}, {'b', 'b', 2}}, {}, {}};
  CHECK_THROWS(twins.Literal(), InternalError, "not minimal");
  CodepointStates unreachable;
  unreachable.accepting = {1, 1};
  unreachable.edges = {{}, {{'a', 'a', 0}}};
  CHECK_THROWS(unreachable.Literal(), InternalError, "unreachable");
  CodepointStates surrogate;
  surrogate.accepting = {0, 1};
  surrogate.edges = {{{0xD000, 0xD900, 1}}, {}};
  CHECK_THROWS(surrogate.Literal(), InternalError, "non-character");
}

// root ::= "x" word "y" ; word ::= <Sample()>.
GrammarAst SampleGrammar(std::shared_ptr<const AutomatonLiteral> literal) {
  GrammarBuilder b;
  const RuleId root = b.AddRule("root");
  const RuleId word = b.AddRule("word");
  const ExprId parts[] = {b.Bytes("x"), b.RuleRef(word), b.Bytes("y")};
  b.DefineRule(root, b.Sequence(parts, 3));
  b.DefineAutomatonRule(word, std::move(literal));
  return b.Finish(root);
}

TEST(AutomatonRuleIsCopiedIntoTheGrammarFsm) {
  const auto literal = Sample().Literal();
  const GrammarAst ast = SampleGrammar(literal);
  const GrammarFsm fsm = BuildGrammarFsm(ast);  // with the AST analyses checked against it
  const RuleId word = 1;
  CHECK_EQ(fsm.rule_nodes[word].end - fsm.rule_nodes[word].begin, literal->num_byte_nodes());
  CHECK(!fsm.rule_nullable[word]);
  const CodepointStates sample = Sample();
  for (uint32_t a : ProbeCodepoints()) {
    for (uint32_t c : ProbeCodepoints()) CHECK_EQ(RuleAccepts(fsm, word, Utf8({a, c})), sample.Accepts({a, c}));
  }
  // Printed as right-linear rules: one per state with edges, classes grouped by target.
  const std::string printed = PrintEbnf(ast);
  const std::string state1 = "\nword__s1 ::= \"\" | [a-c" + Utf8({0xE9}) + "-" + Utf8({0x101}) + "] word__s1 | [!]\n";
  CHECK(printed.find("\nword ::= [a-c") != std::string::npos);
  CHECK(printed.find(state1) != std::string::npos);
  CHECK(printed.find("word__s2") == std::string::npos);  // no edges: written where entered
}

TEST(AutomatonRuleAnalysesReadItsStart) {
  const GrammarAst ast = SampleGrammar(Sample().Literal());
  const RuleBodyOrder order = ComputeRuleBodyOrder(ast);
  const AstNullability nullable = AstRuleNullable(ast, order);
  const AstByteSets sets = ComputeAstByteSets(ast, order, nullable);
  CHECK(!nullable.rule[1]);
  ByteSet first;
  for (int byte : {int{'a'}, int{'b'}, int{'c'}, 0xDF, 0xE0, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xF0}) first.set(byte);
  CHECK(sets.rule_first[1] == first);
  CHECK(sets.rule_follow[1] == ByteSet().set('y'));
  CodepointStates optional = Sample();
  optional.accepting[0] = 1;
  const GrammarAst nullable_ast = SampleGrammar(optional.Literal());
  const RuleBodyOrder nullable_order = ComputeRuleBodyOrder(nullable_ast);
  CHECK(AstRuleNullable(nullable_ast, nullable_order).rule[1]);
  BuildGrammarFsm(nullable_ast);
}

TEST(AutomatonRulesHashAndCompareByTheirAutomata) {
  const GrammarAst a = SampleGrammar(Sample().Literal());
  const GrammarAst same = SampleGrammar(Sample().Literal());  // another literal, equal automata
  CodepointStates changed = Sample();
  changed.edges[1][1].hi = 'd';
  const GrammarAst other = SampleGrammar(changed.Literal());
  CHECK(SameGrammarAst(a, same));
  CHECK_EQ(GrammarAstHash(a), GrammarAstHash(same));
  CHECK(!SameGrammarAst(a, other));
  CHECK(GrammarAstHash(a) != GrammarAstHash(other));
}

}  // namespace
}  // namespace xg2_test
