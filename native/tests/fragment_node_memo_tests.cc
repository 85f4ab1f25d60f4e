// frontends/json_schema/fragment_node_memo.h: a value per node address, found again after the
// table grows, and none for an address never added.
#include <cstdint>
#include <vector>

#include "check.h"
#include "frontends/json_schema/fragment_node_memo.h"

namespace xg2_test {
namespace {

using xg2::FragmentNode;
using xg2::FragmentNodeMemo;

TEST(FragmentNodeMemoKeepsOneValuePerNode) {
  // Addresses spaced as arena nodes are (only compared and hashed, never read).
  std::vector<uint64_t> storage(2 * 1000 * 16);
  auto node = [&](size_t i) { return reinterpret_cast<const FragmentNode*>(&storage[i * 16]); };
  FragmentNodeMemo<int32_t> memo;
  for (size_t i = 0; i < 1000; i += 2) {
    CHECK(memo.Find(node(i)) == nullptr);
    memo.Add(node(i), static_cast<int32_t>(3 * i));
  }
  for (size_t i = 0; i < 1000; ++i) {  // the table grew several times along the way
    const int32_t* found = memo.Find(node(i));
    if (i % 2 == 0) {
      CHECK(found != nullptr && *found == static_cast<int32_t>(3 * i));
    } else {
      CHECK(found == nullptr);
    }
  }
}

}  // namespace
}  // namespace xg2_test
