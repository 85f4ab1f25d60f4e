// libFuzzer target: the structural-tag parser and lowering (both formats: the structural tag
// JSON and the legacy structures/triggers form), with the synthetic vocabulary's special
// tokens, so "<|tool|>" in the tag's strings becomes Token(1). The input's length bit 0
// picks any_whitespace. A tag that lowers is compiled and matched briefly.
#include "frontends/structural_tag/structural_tag.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xg2::fuzz;
  const std::string_view tag = AsText(data, size);
  xg2::structural_tag::LoweringOptions options;
  options.special_tokens = &Vocabulary()->special_token_text();
  options.vocab_size = Vocabulary()->vocab_size();
  options.any_whitespace = size & 1;
  std::string ebnf;
  if (!ExpectTyped([&] {
        xg2::ScopedCompileLimits scope(&Limits());
        ebnf = xg2::structural_tag::StructuralTagToEbnf(tag, options);
      })) {
    return 0;
  }
  std::shared_ptr<const xg2::CompiledGrammar> grammar;
  try {
    grammar = Compile(ebnf);
  } catch (const xg2::GrammarSyntaxError& error) {
    Fail("structural-tag lowering produced EBNF that does not parse:", error.what());
  } catch (const xg2::Error&) {
    return 0;
  }
  MatchBriefly(grammar, tag.substr(0, 64));
  return 0;
}
