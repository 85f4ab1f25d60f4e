#include "support/lazy_text.h"

#include <mutex>

namespace xg2 {

LazyText::LazyText(TextSource source)
    : print_(std::move(source.print)), kept_bytes_(source.kept_bytes), printed_(!print_) {
  if (!print_) {
    // A copy, so the text holds no spare capacity (MemoryBytes counts capacity).
    text_.assign(source.text.data(), source.text.size());
  }
}

const std::string& LazyText::text() const {
  if (printed_.load(std::memory_order_acquire)) return text_;
  std::lock_guard<ForkSafeMutex> lock(print_mutex_);
  if (!printed_.load(std::memory_order_relaxed)) {
    std::string printed = print_();
    text_.assign(printed.data(), printed.size());
    print_ = nullptr;  // the source it kept is no longer needed
    printed_.store(true, std::memory_order_release);
  }
  return text_;
}

size_t LazyText::MemoryBytes() const {
  return printed_.load(std::memory_order_acquire) ? text_.capacity() : kept_bytes_;
}

}  // namespace xg2
