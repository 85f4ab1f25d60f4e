// libFuzzer target: the regex frontend. The input is a pattern; its length picks the options
// (bit 0: search semantics, bit 1: JSON string body), so every option set sees every
// mutation. A pattern that converts is compiled and matched briefly against its own bytes.
#include "frontends/regex/regex_converter.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xg2::fuzz;
  const std::string_view pattern = AsText(data, size);
  xg2::RegexOptions options;
  options.search = size & 1;
  options.json_string_body = size & 2;
  std::string ebnf;
  if (!ExpectTyped([&] {
        xg2::ScopedCompileLimits scope(&Limits());
        ebnf = "root ::= " + xg2::RegexToEbnf(pattern, options);
      })) {
    return 0;
  }
  std::shared_ptr<const xg2::CompiledGrammar> grammar;
  // The converter's output must be valid EBNF: a syntax error here is the converter's bug.
  try {
    grammar = Compile(ebnf);
  } catch (const xg2::GrammarSyntaxError& error) {
    Fail("regex converter produced EBNF that does not parse:", error.what());
  } catch (const xg2::Error&) {
    return 0;
  }
  MatchBriefly(grammar, pattern.substr(0, 64));
  return 0;
}
