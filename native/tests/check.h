// A minimal test harness for the native unit tests (no external framework): TEST(name)
// defines and registers a test; CHECK(condition) and CHECK_EQ(a, b) record a failure with
// its file and line and let the test go on; CHECK_THROWS(statement, Type, fragment) expects
// `statement` to throw a `Type` whose message contains `fragment`. test_main.cc runs every
// registered test (or those whose names contain argv[1]) and exits non-zero on any failure.
#ifndef XG2_NATIVE_TESTS_CHECK_H_
#define XG2_NATIVE_TESTS_CHECK_H_

#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace xg2_test {

struct TestCase {
  const char* name;
  std::function<void()> run;
};

inline std::vector<TestCase>& Registry() {
  static std::vector<TestCase> tests;
  return tests;
}

struct Registration {
  Registration(const char* name, std::function<void()> run) { Registry().push_back({name, std::move(run)}); }
};

// Failures of the test running now.
inline std::vector<std::string>& Failures() {
  static std::vector<std::string> failures;
  return failures;
}

inline void Fail(const char* file, int line, const std::string& what) {
  std::ostringstream os;
  os << file << ":" << line << ": " << what;
  Failures().push_back(os.str());
}

}  // namespace xg2_test

#define XG2_TEST_CONCAT2(a, b) a##b
#define XG2_TEST_CONCAT(a, b) XG2_TEST_CONCAT2(a, b)

#define TEST(name)                                                                   \
  static void name();                                                                \
  static ::xg2_test::Registration XG2_TEST_CONCAT(registration_, name)(#name, name); \
  static void name()

#define CHECK(condition)                                                            \
  do {                                                                              \
    if (!(condition)) ::xg2_test::Fail(__FILE__, __LINE__, "CHECK(" #condition ")"); \
  } while (0)

#define CHECK_EQ(a, b)                                                                       \
  do {                                                                                       \
    const auto& check_a_ = (a);                                                              \
    const auto& check_b_ = (b);                                                              \
    if (!(check_a_ == check_b_)) {                                                           \
      std::ostringstream check_os_;                                                          \
      check_os_ << "CHECK_EQ(" #a ", " #b "): " << check_a_ << " != " << check_b_;           \
      ::xg2_test::Fail(__FILE__, __LINE__, check_os_.str());                                 \
    }                                                                                        \
  } while (0)

#define CHECK_THROWS(statement, Type, fragment)                                                     \
  do {                                                                                              \
    bool check_thrown_ = false;                                                                     \
    try {                                                                                           \
      statement;                                                                                    \
    } catch (const Type& e) {                                                                       \
      check_thrown_ = true;                                                                         \
      if (std::string(e.what()).find(fragment) == std::string::npos) {                              \
        ::xg2_test::Fail(__FILE__, __LINE__, std::string("message lacks '") + (fragment) + "': " + e.what()); \
      }                                                                                             \
    }                                                                                               \
    if (!check_thrown_) ::xg2_test::Fail(__FILE__, __LINE__, "no " #Type " from " #statement);     \
  } while (0)

#endif  // XG2_NATIVE_TESTS_CHECK_H_
