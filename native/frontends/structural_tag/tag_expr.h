// The expressions the structural-tag lowering composes before they become grammar nodes: a
// small value tree with EBNF's shape (juxtaposition, alternation, grouping, repetition), so
// that a piece built once (a whitespace run, a member, the rest of an object) can be used in
// several places -- a grammar node has one parent -- and GrammarBuilder receives exactly the
// nodes that a parse of the rule's printed EBNF gives (grammar/grammar_builder.h).
//
// Shape rules, as in EBNF text: Cat splices the parts of a sequence it is given unless that
// sequence was grouped, Or splices the alternatives of a choice unless it was grouped, and
// an ungrouped choice is never a part of a sequence (XG2_DCHECKed: "a | b" juxtaposed with
// "c" would read as "a | b c").
#ifndef XG2_FRONTENDS_STRUCTURAL_TAG_TAG_EXPR_H_
#define XG2_FRONTENDS_STRUCTURAL_TAG_TAG_EXPR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar_ast.h"
#include "grammar/grammar_builder.h"

namespace xg2 {
namespace structural_tag {

class TagExpr {
 public:
  // Juxtaposed with anything, nothing: Cat(Nothing(), x) is x. Alone, the empty string.
  static TagExpr Nothing() { return TagExpr(Kind::kSequence); }
  // The literal `""`: an element of its own (Cat(EmptyString(), x) has two parts).
  static TagExpr EmptyString() { return TagExpr(Kind::kEmpty); }
  // A non-empty byte literal (an empty one is EmptyString()).
  static TagExpr Literal(std::string bytes);
  static TagExpr CharClass(std::vector<CodepointRange> ranges);  // normalised, non-empty
  static TagExpr Rule(RuleId rule);
  static TagExpr TokenLiteral(int32_t id);  // Token(id)
  static TagExpr TokenSet(std::vector<int32_t> ids, bool excluded);
  // A TagDispatch. As a whole rule body it is that rule; inside an expression it is lifted
  // into a rule of its own when emitted (DefineTagRule).
  static TagExpr Dispatch(TagDispatchDef def);
  static TagExpr Repeat(TagExpr child, int32_t min, int32_t max);  // max -1: unbounded
  static TagExpr Cat(std::vector<TagExpr> parts);
  static TagExpr Or(std::vector<TagExpr> alternatives);
  // `(inner)`: a sequence or choice that Cat and Or keep whole.
  static TagExpr Group(TagExpr inner);

  bool is_nothing() const { return kind_ == Kind::kSequence && !grouped_ && parts_.empty(); }

  // Defines `rule` (named `name`) as `body` through `builder`, and appends to `printed_order`
  // the rules this defines in the order the printed grammar lists them: `rule`, then the
  // dispatches lifted out of its body, named `name_tag_dispatch_<k>` as the EBNF parser names
  // them (frontends/ebnf/ebnf_parser.cc, LiftTagDispatches).
  static void DefineTagRule(GrammarBuilder* builder, RuleId rule, const std::string& name, const TagExpr& body,
                            std::vector<RuleId>* printed_order);

 private:
  enum class Kind : uint8_t {
    kSequence, kChoice, kEmpty, kBytes, kCharClass, kRule, kTokenLiteral, kTokenSet, kRepeat, kDispatch
  };
  class Emitter;

  explicit TagExpr(Kind kind) : kind_(kind) {}

  Kind kind_;
  bool grouped_ = false;    // kSequence, kChoice: written in parentheses
  bool excluded_ = false;   // kTokenSet
  int32_t number_ = -1;     // kRule: rule id; kTokenLiteral: token id; kRepeat: min
  int32_t max_ = -1;        // kRepeat
  std::vector<TagExpr> parts_;  // kSequence, kChoice; kRepeat: its one child
  std::string bytes_;           // kBytes
  std::vector<CodepointRange> ranges_;  // kCharClass
  std::vector<int32_t> ids_;            // kTokenSet
  std::shared_ptr<const TagDispatchDef> dispatch_;  // kDispatch (shared: copies are cheap)
};

}  // namespace structural_tag
}  // namespace xg2

#endif  // XG2_FRONTENDS_STRUCTURAL_TAG_TAG_EXPR_H_
