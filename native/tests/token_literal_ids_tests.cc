// TokenLiteralIds (tokenizer/token_literals.h): the ids spelled by token literals inside a
// grammar's byte strings, wherever a spelling starts (first, after text, back to back, last),
// sorted and unique; a lead byte without a whole spelling after it names nothing, and neither
// does a token-set marker.
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

// A marker's second lead byte and digits spell a literal of the set's index; only the literals
// outside markers are ids (set 3 here, beside the literal 7 and a marker right after it).
TEST(TokenLiteralIdsStepOverTokenSetMarkers) {
  AstBuilder b;
  const ExprId marked = b.Bytes(TokenSetMarkerBytes(3));
  const ExprId mixed = b.Bytes("a" + TokenLiteralBytes(7) + TokenSetMarkerBytes(0) + TokenSetMarkerBytes(5) + "b");
  b.Rule("root", b.Seq({marked, mixed}));
  CHECK(TokenLiteralIds(b.ast) == std::vector<int32_t>({7}));
}

}  // namespace xg2_test
