// TokenLiteralIds (tokenizer/token_literals.h): the ids spelled by token literals inside a
// grammar's byte strings, wherever a spelling starts (first, after text, back to back, last),
// sorted and unique; a lead byte without a whole spelling after it names nothing.
#include <string>
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/token_literal.h"
#include "tokenizer/token_literals.h"

namespace xg2_test {

TEST(TokenLiteralIdsFindsEverySpellingInByteStrings) {
  AstBuilder b;
  const std::string truncated = TokenLiteralBytes(9).substr(0, kTokenLiteralSize - 1);
  const ExprId first = b.Bytes(TokenLiteralBytes(5) + "abc");
  const ExprId middle = b.Bytes("xy" + TokenLiteralBytes(kMaxTokenLiteralId) + TokenLiteralBytes(0) + "z");
  const ExprId last = b.Bytes("plain text " + TokenLiteralBytes(6) + TokenLiteralBytes(200005) + TokenLiteralBytes(5));
  const ExprId broken = b.Bytes("q" + truncated);
  const ExprId none = b.Bytes("no literal here");
  b.Rule("root", b.Seq({first, middle, last, broken, none}));
  CHECK(TokenLiteralIds(b.ast) == std::vector<int32_t>({0, 5, 6, 200005, kMaxTokenLiteralId}));
}

}  // namespace xg2_test
