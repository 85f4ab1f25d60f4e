#include "frontends/structural_tag/tag_expr.h"

#include <utility>

#include "support/dcheck.h"

namespace xg2 {
namespace structural_tag {

TagExpr TagExpr::Literal(std::string bytes) {
  if (bytes.empty()) return EmptyString();
  TagExpr e(Kind::kBytes);
  e.bytes_ = std::move(bytes);
  return e;
}

TagExpr TagExpr::CharClass(std::vector<CodepointRange> ranges) {
  XG2_DCHECK(!ranges.empty(), "a character class matches at least one code point");
  TagExpr e(Kind::kCharClass);
  e.ranges_ = std::move(ranges);
  return e;
}

TagExpr TagExpr::Rule(RuleId rule) {
  TagExpr e(Kind::kRule);
  e.number_ = rule;
  return e;
}

TagExpr TagExpr::TokenLiteral(int32_t id) {
  TagExpr e(Kind::kTokenLiteral);
  e.number_ = id;
  return e;
}

TagExpr TagExpr::TokenSet(std::vector<int32_t> ids, bool excluded) {
  TagExpr e(Kind::kTokenSet);
  e.ids_ = std::move(ids);
  e.excluded_ = excluded;
  return e;
}

TagExpr TagExpr::Dispatch(TagDispatchDef def) {
  TagExpr e(Kind::kDispatch);
  e.dispatch_ = std::make_shared<const TagDispatchDef>(std::move(def));
  return e;
}

TagExpr TagExpr::Repeat(TagExpr child, int32_t min, int32_t max) {
  TagExpr e(Kind::kRepeat);
  e.number_ = min;
  e.max_ = max;
  e.parts_.push_back(std::move(child));
  return e;
}

TagExpr TagExpr::Cat(std::vector<TagExpr> parts) {
  TagExpr e(Kind::kSequence);
  for (TagExpr& part : parts) {
    XG2_DCHECK(part.kind_ != Kind::kChoice || part.grouped_, "a choice juxtaposed with more is grouped");
    if (part.kind_ == Kind::kSequence && !part.grouped_) {
      for (TagExpr& inner : part.parts_) e.parts_.push_back(std::move(inner));
    } else {
      e.parts_.push_back(std::move(part));
    }
  }
  return e;
}

TagExpr TagExpr::Or(std::vector<TagExpr> alternatives) {
  XG2_DCHECK(!alternatives.empty(), "a choice has at least one alternative");
  TagExpr e(Kind::kChoice);
  for (TagExpr& alternative : alternatives) {
    if (alternative.kind_ == Kind::kChoice && !alternative.grouped_) {
      for (TagExpr& inner : alternative.parts_) e.parts_.push_back(std::move(inner));
    } else {
      e.parts_.push_back(std::move(alternative));
    }
  }
  return e;
}

TagExpr TagExpr::Group(TagExpr inner) {
  inner.grouped_ = true;
  return inner;
}

// Emits a rule body's nodes, lifting the dispatches inside it into rules of their own.
class TagExpr::Emitter {
 public:
  Emitter(GrammarBuilder* builder, const std::string& owner, std::vector<RuleId>* printed_order)
      : builder_(*builder), owner_(owner), printed_order_(*printed_order) {}

  ExprId Emit(const TagExpr& e) {
    switch (e.kind_) {
      case Kind::kSequence:
      case Kind::kChoice: {
        std::vector<ExprId> children;
        children.reserve(e.parts_.size());
        for (const TagExpr& part : e.parts_) children.push_back(Emit(part));
        return e.kind_ == Kind::kSequence ? builder_.Sequence(children.data(), children.size())
                                          : builder_.Choice(children.data(), children.size());
      }
      case Kind::kEmpty: return builder_.Empty();
      case Kind::kBytes: return builder_.Bytes(e.bytes_);
      case Kind::kCharClass: return builder_.CharClass(e.ranges_);
      case Kind::kRule: return builder_.RuleRef(e.number_);
      case Kind::kTokenLiteral: return builder_.TokenLiteral(e.number_);
      case Kind::kTokenSet: return builder_.TokenSet(e.ids_, e.excluded_);
      case Kind::kRepeat: return builder_.Repeat(Emit(e.parts_[0]), e.number_, e.max_);
      case Kind::kDispatch: return builder_.RuleRef(Lift(*e.dispatch_));
    }
    XG2_DCHECK(false, "every expression kind is emitted");
    return -1;
  }

 private:
  RuleId Lift(const TagDispatchDef& def) {
    std::string name;
    do {
      name = owner_ + "_tag_dispatch_" + std::to_string(++lifted_);
    } while (builder_.FindRule(name) >= 0);
    const RuleId rule = builder_.AddRule(name);
    builder_.DefineTagDispatchRule(rule, def);
    printed_order_.push_back(rule);
    return rule;
  }

  GrammarBuilder& builder_;
  const std::string& owner_;
  std::vector<RuleId>& printed_order_;
  int lifted_ = 0;
};

void TagExpr::DefineTagRule(GrammarBuilder* builder, RuleId rule, const std::string& name, const TagExpr& body,
                            std::vector<RuleId>* printed_order) {
  printed_order->push_back(rule);
  // A sequence or choice of one part is that part (the parser returns it as is), so a
  // dispatch alone in one is the whole body.
  const TagExpr* whole = &body;
  while ((whole->kind_ == Kind::kSequence || whole->kind_ == Kind::kChoice) && whole->parts_.size() == 1) {
    whole = &whole->parts_[0];
  }
  if (whole->kind_ == Kind::kDispatch) {
    builder->DefineTagDispatchRule(rule, *whole->dispatch_);
    return;
  }
  Emitter emitter(builder, name, printed_order);
  builder->DefineRule(rule, emitter.Emit(body));
}

}  // namespace structural_tag
}  // namespace xg2
