#include "matcher/mask_cache/classify_scratch.h"

namespace xg2 {

// Out of line on purpose (see the declaration).
__attribute__((noinline)) ClassifyScratch& Scratch() {
  thread_local ClassifyScratch scratch;
  return scratch;
}

}  // namespace xg2
