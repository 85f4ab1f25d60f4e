// Runs the registered native unit tests (check.h): all of them, or those whose names contain
// argv[1]. Prints one line per failure and a summary; exits 1 if any test failed.
#include <cstdio>
#include <cstring>
#include <exception>

#include "check.h"

int main(int argc, char** argv) {
  const char* filter = argc > 1 ? argv[1] : "";
  int run = 0, failed = 0;
  for (const xg2_test::TestCase& test : xg2_test::Registry()) {
    if (std::strstr(test.name, filter) == nullptr) continue;
    ++run;
    xg2_test::Failures().clear();
    try {
      test.run();
    } catch (const std::exception& e) {
      xg2_test::Failures().push_back(std::string("uncaught exception: ") + e.what());
    }
    if (xg2_test::Failures().empty()) continue;
    ++failed;
    std::printf("FAILED %s\n", test.name);
    for (const std::string& failure : xg2_test::Failures()) std::printf("  %s\n", failure.c_str());
  }
  std::printf("%d tests, %d failed\n", run, failed);
  return failed == 0 && run > 0 ? 0 : 1;
}
