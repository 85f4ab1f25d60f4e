// support/lazy_text.h: a text printed on first use, once, by concurrent first readers too; a
// printer that throws leaves it unprinted; memory counts the printer's source, then the text.
#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "support/lazy_text.h"

namespace xg2_test {
namespace {

using xg2::LazyText;
using xg2::TextSource;

TEST(LazyTextKnownTextNeedsNoPrinter) {
  LazyText text(TextSource::Known("root ::= \"a\""));
  CHECK(text.printed());
  CHECK_EQ(text.text(), std::string("root ::= \"a\""));
  CHECK_EQ(text.MemoryBytes(), text.text().capacity());
}

TEST(LazyTextPrintsOnceOnFirstRead) {
  std::atomic<int> calls{0};
  LazyText text(TextSource::Printed(
      [&calls] {
        ++calls;
        return std::string(1000, 'x');
      },
      17));
  CHECK(!text.printed());
  CHECK_EQ(calls.load(), 0);
  CHECK_EQ(text.MemoryBytes(), size_t{17});
  std::vector<std::thread> readers;
  std::vector<const std::string*> seen(8, nullptr);
  for (size_t i = 0; i < seen.size(); ++i) {
    readers.emplace_back([&text, &seen, i] { seen[i] = &text.text(); });
  }
  for (std::thread& reader : readers) reader.join();
  CHECK_EQ(calls.load(), 1);
  for (const std::string* s : seen) CHECK(s == &text.text());
  CHECK(text.printed());
  CHECK_EQ(text.text(), std::string(1000, 'x'));
  CHECK(text.MemoryBytes() >= size_t{1000});
}

TEST(LazyTextPrinterThatThrowsIsTriedAgain) {
  int calls = 0;
  LazyText text(TextSource::Printed(
      [&calls]() -> std::string {
        if (++calls == 1) throw std::runtime_error("first try fails");
        return "ok";
      },
      5));
  CHECK_THROWS(text.text(), std::runtime_error, "first try fails");
  CHECK(!text.printed());
  CHECK_EQ(text.MemoryBytes(), size_t{5});
  CHECK_EQ(text.text(), std::string("ok"));
  CHECK_EQ(calls, 2);
}

}  // namespace
}  // namespace xg2_test
