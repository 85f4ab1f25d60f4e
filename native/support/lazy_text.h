// Text made on first request and kept: a view that most users never read, such as a compiled
// grammar's printed EBNF (a frontend builds the grammar directly; the text is for inspection
// and serialization). Thread-safe: the first Get() makes the text once, every caller then
// reads the same string, which never changes again.
#ifndef XG2_SUPPORT_LAZY_TEXT_H_
#define XG2_SUPPORT_LAZY_TEXT_H_

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <utility>

namespace xg2 {

class LazyText {
 public:
  // Text that is already made.
  explicit LazyText(std::string text) : size_estimate_(text.size()), text_(std::move(text)) {
    std::call_once(made_, [] {});
  }
  // Text that `make` returns on first request, about `size_estimate` bytes long. `make`
  // must not depend on anything its closure does not own (it may run on any thread, late);
  // it is dropped once it has run.
  LazyText(std::function<std::string()> make, size_t size_estimate)
      : size_estimate_(size_estimate), make_(std::move(make)) {}

  LazyText(const LazyText&) = delete;
  LazyText& operator=(const LazyText&) = delete;

  const std::string& Get() const {
    std::call_once(made_, [this] {
      text_ = make_();
      make_ = nullptr;
    });
    return text_;
  }

  // What the text holds or will hold, in bytes, without making it (a constant, so that memory
  // accounting reads the same before and after the first Get()).
  size_t MemoryBytes() const { return size_estimate_; }

 private:
  const size_t size_estimate_;
  mutable std::once_flag made_;
  mutable std::string text_;
  mutable std::function<std::string()> make_;
};

}  // namespace xg2

#endif  // XG2_SUPPORT_LAZY_TEXT_H_
