// A set of byte values, as the grammar analyses (FIRST/FOLLOW, leave sets) use it.
#ifndef XG2_GRAMMAR_BYTE_SET_H_
#define XG2_GRAMMAR_BYTE_SET_H_

#include <bitset>

namespace xg2 {

using ByteSet = std::bitset<256>;

// The bytes lo..hi (0 <= lo <= hi <= 255), from a table of prefix sets: one lookup instead
// of setting the bits one by one or two 256-bit shifts.
ByteSet ByteSpan(int lo, int hi);

}  // namespace xg2

#endif  // XG2_GRAMMAR_BYTE_SET_H_
