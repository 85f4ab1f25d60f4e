// grammar/expr_payloads.h: a leaf payload reads back exactly what it was given, inline, owned
// or borrowed, and keeps it through copies, moves and assignments; a borrowed one points at
// its lender, an owned copy never at its source.
#include <string>
#include <utility>
#include <vector>

#include "check.h"
#include "grammar/expr_payloads.h"

namespace xg2_test {
namespace {

using xg2::CodepointRange;
using xg2::ExprBytes;
using xg2::ExprRanges;

TEST(ExprBytesKeepsItsTextThroughCopiesAndMoves) {
  // Sizes around the inline capacity, and text with NUL and high bytes.
  for (size_t size : {0, 1, 14, 15, 16, 17, 100}) {
    std::string text;
    for (size_t i = 0; i < size; ++i) text.push_back(static_cast<char>((i * 37) % 256));
    const ExprBytes original(text);
    CHECK_EQ(original.size(), size);
    CHECK(original == text);
    ExprBytes copy = original;
    CHECK(copy == original);
    CHECK(size <= 15 || copy.data() != original.data());  // an owned copy has its own block
    ExprBytes moved = std::move(copy);
    CHECK(moved == text);
    CHECK(copy.empty());  // NOLINT(bugprone-use-after-move): a moved-from payload is empty
    ExprBytes assigned("x");
    assigned = moved;
    CHECK(assigned == text);
    assigned = ExprBytes("y");
    CHECK(assigned == "y");
    CHECK_EQ(original.owned_heap_bytes(), size > 15 ? size : 0);
  }
}

TEST(ExprBytesBorrowsLongTextInPlace) {
  static const std::string lender(40, 'q');
  const ExprBytes borrowed = ExprBytes::Borrow(lender);
  CHECK(borrowed.data() == lender.data());
  CHECK_EQ(borrowed.owned_heap_bytes(), size_t{0});
  const ExprBytes copy = borrowed;  // still the lender's text, not a copy of it
  CHECK(copy.data() == lender.data());
  CHECK(copy == lender);
  CHECK(ExprBytes::Borrow("short") == "short");
}

TEST(ExprRangesKeepsItsRangesThroughCopiesAndMoves) {
  for (size_t count : {0, 1, 2, 7}) {
    std::vector<CodepointRange> ranges;
    for (uint32_t i = 0; i < count; ++i) ranges.push_back({10 * i, 10 * i + 3});
    const ExprRanges original(ranges);
    CHECK_EQ(original.size(), count);
    CHECK(original.to_vector() == ranges);
    ExprRanges copy = original;
    CHECK(copy == original);
    CHECK(count <= 1 || copy.data() != original.data());
    ExprRanges moved = std::move(copy);
    CHECK(moved.to_vector() == ranges);
    CHECK(copy.empty());  // NOLINT(bugprone-use-after-move)
    ExprRanges assigned = {{1, 2}};
    assigned = moved;
    CHECK(assigned == original);
    CHECK_EQ(original.owned_heap_bytes(), count > 1 ? count * sizeof(CodepointRange) : 0);
  }
  CHECK(ExprRanges({{1, 2}, {4, 5}}) != ExprRanges({{1, 2}, {4, 6}}));
  CHECK(ExprRanges({{1, 2}}) != ExprRanges({{1, 2}, {4, 5}}));
}

TEST(ExprRangesBorrowsInPlace) {
  static const std::vector<CodepointRange> lender = {{'0', '9'}, {'a', 'f'}, {'A', 'F'}};
  const ExprRanges borrowed = ExprRanges::Borrow(lender);
  CHECK(borrowed.data() == lender.data());
  const ExprRanges copy = borrowed;
  CHECK(copy.data() == lender.data());
  CHECK(copy.to_vector() == lender);
  CHECK_EQ(copy.owned_heap_bytes(), size_t{0});
}

}  // namespace
}  // namespace xg2_test
