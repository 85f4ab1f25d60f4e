// The lowering context's cache of UTF-8 byte sequences (LoweringContext::Utf8Sequences):
// every range, asked in any order and again, gives exactly Utf8RangeSequences of that range,
// also for ranges that share a first or a last code point.
#include <vector>

#include "check.h"
#include "fsm_test_support.h"
#include "grammar/lowering_context.h"
#include "support/utf8.h"

namespace xg2_test {

TEST(CachedUtf8SequencesEqualTheDirectSplit) {
  AstBuilder b;
  b.Rule("root", b.Bytes("x"));
  LoweringContext ctx(b.ast, FsmBuildLimits{});
  const std::vector<CodepointRange> ranges = {
      {0x80, 0x7FF}, {0x80, 0xFFFF}, {0x20, 0xD7FF}, {0x800, 0xFFFF}, {0xE000, 0x10FFFF}, {0x80, 0x7FF}, {0x100, 0x7FF},
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (const CodepointRange& r : ranges) {
      const std::vector<Utf8ByteSequence> direct = Utf8RangeSequences(r.first, r.last);
      const std::vector<Utf8ByteSequence>& cached = ctx.Utf8Sequences(r.first, r.last);
      CHECK_EQ(cached.size(), direct.size());
      for (size_t k = 0; k < std::min(cached.size(), direct.size()); ++k) {
        CHECK_EQ(cached[k].length, direct[k].length);
        for (int i = 0; i < 4; ++i) {
          CHECK_EQ(static_cast<int>(cached[k].lo[i]), static_cast<int>(direct[k].lo[i]));
          CHECK_EQ(static_cast<int>(cached[k].hi[i]), static_cast<int>(direct[k].hi[i]));
        }
      }
    }
  }
}

}  // namespace xg2_test
