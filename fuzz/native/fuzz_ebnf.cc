// libFuzzer target: the EBNF frontend and the FSM builder. The input is grammar text (root
// rule "root"); a grammar that compiles is matched briefly against its own first bytes, or
// against what follows a NUL byte when the input has one (grammar NUL text).
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xg2::fuzz;
  const std::string_view input = AsText(data, size);
  const size_t split = input.find('\0');
  const std::string grammar_text(input.substr(0, split));
  const std::string_view text = split == std::string_view::npos ? input.substr(0, 64) : input.substr(split + 1);
  std::shared_ptr<const xg2::CompiledGrammar> grammar;
  if (!ExpectTyped([&] { grammar = Compile(grammar_text); })) return 0;
  MatchBriefly(grammar, text);
  return 0;
}
