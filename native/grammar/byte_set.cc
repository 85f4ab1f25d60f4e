#include "grammar/byte_set.h"

#include <vector>

#include "support/dcheck.h"

namespace xg2 {

ByteSet ByteSpan(int lo, int hi) {
  XG2_DCHECK(0 <= lo && lo <= hi && hi <= 255, "a byte span lies in 0..255 and is not empty");
  // below[k] holds the bytes < k.
  static const std::vector<ByteSet> kBelow = [] {
    std::vector<ByteSet> below(257);
    for (int k = 1; k <= 256; ++k) {
      below[k] = below[k - 1];
      below[k].set(k - 1);
    }
    return below;
  }();
  return kBelow[hi + 1] ^ kBelow[lo];
}

}  // namespace xg2
