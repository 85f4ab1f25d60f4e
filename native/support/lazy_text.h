// A text made on first use: a printed view of something its owner keeps (a compiled grammar's
// EBNF, printed from the source it was compiled from only when someone asks for it, so the
// compile itself prints nothing). The first reader prints it and every later one reads the
// same string; concurrent first readers print once (one prints under a ForkSafeMutex while the
// others wait: a fork never leaves it held, support/fork_safe_mutex.h). A printer that throws
// leaves the text unprinted, and the next reader tries again.
#ifndef XG2_SUPPORT_LAZY_TEXT_H_
#define XG2_SUPPORT_LAZY_TEXT_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>

#include "support/fork_safe_mutex.h"

namespace xg2 {

// How a LazyText gets its text: the text itself, or a printer together with the bytes of what
// the printer keeps alive (its captured source), for memory accounting.
struct TextSource {
  static TextSource Known(std::string text) {
    TextSource source;
    source.text = std::move(text);
    return source;
  }
  static TextSource Printed(std::function<std::string()> print, size_t kept_bytes) {
    TextSource source;
    source.print = std::move(print);
    source.kept_bytes = kept_bytes;
    return source;
  }

  std::string text;  // used when print is empty
  std::function<std::string()> print;
  size_t kept_bytes = 0;
};

class LazyText {
 public:
  explicit LazyText(TextSource source);
  LazyText(const LazyText&) = delete;
  LazyText& operator=(const LazyText&) = delete;

  // The text; prints it on the first call. Thread-safe.
  const std::string& text() const;
  // Whether the text is there without printing (a known text, or printed already).
  bool printed() const { return printed_.load(std::memory_order_acquire); }
  // Bytes held: the printer's source until the text is printed, then the text alone (the
  // printer and its source are dropped once it has run). Thread-safe.
  size_t MemoryBytes() const;

 private:
  mutable ForkSafeMutex print_mutex_;
  // Written once, under print_mutex_, before printed_ is set; read only after it is.
  mutable std::string text_;
  mutable std::function<std::string()> print_;  // empty once printed
  const size_t kept_bytes_;
  mutable std::atomic<bool> printed_;
};

}  // namespace xg2

#endif  // XG2_SUPPORT_LAZY_TEXT_H_
