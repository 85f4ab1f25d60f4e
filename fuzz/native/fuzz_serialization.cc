// libFuzzer target: reading compiled grammar blobs (matcher/grammar_serialization.h). The
// first byte picks one of a fixed set of grammars, serialized once with their built
// classifications; the next byte picks how the input damages that blob: the remaining bytes
// as (offset, value) patches, as a cut length, or as the whole blob. The checksum is not
// verified, so every damaged blob reaches the length and structural checks. The invariants:
//  * reading either fails with DeserializationError or yields a grammar that a matcher runs
//    (fills and accepts) without leaving bounds: any other outcome is a finding;
//  * the undamaged blob reads back into a grammar whose masks equal the original's.
#include "frontends/json_schema/json_schema_converter.h"
#include "fuzz_support.h"
#include "matcher/grammar_serialization.h"
#include "tokenizer/token_literals.h"

namespace {

using namespace xg2::fuzz;

constexpr const char* kVersion = "fuzz";

struct Sample {
  std::shared_ptr<const xg2::CompiledGrammar> grammar;
  std::string blob;
};

std::vector<Sample> BuildSamples() {
  const std::vector<std::string> sources = {
      xg2::JsonSchemaToEbnf(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array",)"
                            R"( "items": {"type": "string", "maxLength": 5}}}, "required": ["a"]})",
                            xg2::JsonSchemaOptions())
          .ebnf,
      // Token literals (a derived vocabulary) and a lookahead assertion.
      "root ::= item+\nitem ::= name \">\" Token(1) text\nname ::= [a-z]+ (= \">\")\ntext ::= [a-z \\n]{0,20} \"<\"",
      // A compressed repetition (counted loops).
      "root ::= \"[\" [0-9a-c]{0,300} \"]\"",
  };
  std::vector<Sample> samples;
  for (const std::string& source : sources) {
    Sample sample;
    sample.grammar = Compile(source);
    MatchBriefly(sample.grammar, "");  // builds some classifications, carried by the blob
    sample.blob = xg2::SerializeCompiledGrammar(*sample.grammar, *Vocabulary(), kVersion, true);
    samples.push_back(std::move(sample));
  }
  return samples;
}

const std::vector<Sample>& Samples() {
  static const auto samples = BuildSamples();
  return samples;
}

std::shared_ptr<const xg2::CompiledGrammar> Read(const std::string& blob) {
  xg2::GrammarBlob contents = xg2::ReadCompiledGrammarBlob(blob, *Vocabulary(), kVersion, false);
  std::shared_ptr<const xg2::TokenizerInfo> vocabulary = Vocabulary();
  if (contents.derived_vocabulary) vocabulary = xg2::WithTokenLiterals(*vocabulary, contents.token_literal_ids);
  xg2::MaskCacheOptions options;
  options.cross_grammar = false;
  options.precompute = 0;
  return xg2::AssembleCompiledGrammar(std::move(contents), vocabulary, nullptr, options);
}

// Fills and accepts a few tokens; engine errors are fine, the masks are not compared (damaged
// classifications may allow other tokens: that is content, not memory safety).
void Run(const std::shared_ptr<const xg2::CompiledGrammar>& grammar) {
  xg2::GrammarMatcher matcher(grammar, std::nullopt, false);
  std::vector<uint32_t> mask = EmptyMask(matcher);
  ExpectTyped([&] {
    for (int32_t token : {3 + '{', 3 + '"', 3 + 'a', 3 + '[', 3 + '1', kToolToken, 3 + ']', kStopToken}) {
      matcher.FillNextTokenBitmask(mask.data(), static_cast<int64_t>(mask.size()));
      matcher.FillNextTokenBitmaskReference(mask.data(), static_cast<int64_t>(mask.size()));
      matcher.AcceptToken(token);
    }
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const Sample& sample = Samples()[data[0] % Samples().size()];
  std::string blob = sample.blob;
  const uint8_t mode = data[1] % 3;
  data += 2;
  size -= 2;
  if (mode == 0) {
    for (size_t i = 0; i + 3 <= size; i += 3) {
      const size_t offset = (static_cast<size_t>(data[i]) << 8 | data[i + 1]) % blob.size();
      blob[offset] = static_cast<char>(data[i + 2]);
    }
  } else if (mode == 1) {
    size_t cut = 0;
    for (size_t i = 0; i < size && i < 4; ++i) cut = cut << 8 | data[i];
    blob.resize(cut % (blob.size() + 1));
  } else {
    blob.assign(reinterpret_cast<const char*>(data), size);
  }
  std::shared_ptr<const xg2::CompiledGrammar> grammar;
  try {
    grammar = Read(blob);
  } catch (const xg2::DeserializationError&) {
    return 0;
  }
  Run(grammar);
  if (blob == sample.blob) {
    xg2::GrammarMatcher original(sample.grammar, std::nullopt, false), restored(grammar, std::nullopt, false);
    Require(CheckedMask(original) == CheckedMask(restored), "a round trip changed the first mask");
  }
  return 0;
}
