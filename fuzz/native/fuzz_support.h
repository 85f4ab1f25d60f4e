// Shared pieces of the libFuzzer targets (fuzz/native/fuzz_*.cc).
//
// Every target feeds bytes to one native entry point of the engine, with no Python in
// between. A typed engine error (xg2::Error, support/error.h) is the expected answer to bad
// input and is swallowed; anything else is a finding: a crash or sanitizer report, an
// uncaught exception of another type (std::terminate), a broken invariant (Require), an
// input that runs past libFuzzer's -timeout or -rss_limit_mb.
//
// Grammars are compiled as the Python compiler compiles them (token literals included,
// compiler/compile_grammar.h), against a tiny vocabulary built here, under tight
// compile limits so that each input stays short. No cancellation token is installed: a
// compile that does not finish is a timeout finding, not a typed error.
#ifndef XG2_FUZZ_NATIVE_FUZZ_SUPPORT_H_
#define XG2_FUZZ_NATIVE_FUZZ_SUPPORT_H_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/compile_grammar.h"
#include "compiler/compile_scope.h"
#include "frontends/ebnf/ebnf_parser.h"
#include "matcher/compiled_grammar.h"
#include "matcher/grammar_matcher.h"
#include "support/compile_limits.h"
#include "support/error.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2::fuzz {

// A broken invariant: print it and abort, which libFuzzer reports as a crash with the input.
[[noreturn]] inline void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "xg2 fuzz invariant broken: %s %s\n", what, detail.c_str());
  std::abort();
}

inline void Require(bool condition, const char* what, const std::string& detail = "") {
  if (!condition) Fail(what, detail);
}

// Runs `body`; an engine error is the expected answer to bad input.
template <typename Body>
bool ExpectTyped(Body&& body) {
  try {
    body();
    return true;
  } catch (const Error&) {
    return false;
  }
}

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// Ids of the synthetic vocabulary's special tokens.
constexpr int32_t kStopToken = 0;
constexpr int32_t kToolToken = 1;

// A small vocabulary with what real ones have: every single byte (so any text is reachable,
// including partial UTF-8 and the token-literal bytes 0xF8-0xFF), multi-byte pieces of JSON
// and EBNF-like text that cross grammar boundaries, whole and partial UTF-8 characters, a
// stop token, a non-stop special token, an empty token, and padding ids past the table.
inline std::shared_ptr<const TokenizerInfo> BuildVocabulary() {
  std::vector<std::string> tokens = {"</s>", "<|tool|>", ""};
  for (int byte = 0; byte < 256; ++byte) tokens.push_back(std::string(1, static_cast<char>(byte)));
  const char* pieces[] = {
      "{\"", "\":", "\",", "\"}", "\": \"", ", \"", "\":\"", "true", "false", "null", "  ",
      "    ", "\n", "\n  ", " \"", "00", "12", "123", "-1", ".5", "e+", "E-", "0.", "ab", "abc",
      "hello", " world", "\\n", "\\u00", "\\\"", "\"\\", "]}", "[{", "[]", "{}", "},{", "</",
      "<|", "|>", "<tool>", "</tool>", "<function=", ">{", "\t", "\r\n", "::=", " ::= ", "( ",
      " )", "+-", "*/", "x@y.", ".com", "\xc3\xa9", "\xe4\xb8\xad\xe6\x96\x87",
      "\xf0\x9f\x98\x80", "\xe4\xb8", "\xa0\x80", "a\xc3", "<|tool|>x",
  };
  for (const char* piece : pieces) tokens.push_back(piece);
  const int32_t vocab_size = static_cast<int32_t>(tokens.size()) + 3;
  return std::make_shared<const TokenizerInfo>(std::move(tokens), VocabType::kRaw, vocab_size,
                                               std::vector<int32_t>{kStopToken},
                                               std::vector<int32_t>{kStopToken, kToolToken},
                                               false);
}

inline const std::shared_ptr<const TokenizerInfo>& Vocabulary() {
  static const std::shared_ptr<const TokenizerInfo> vocabulary = BuildVocabulary();
  return vocabulary;
}

// Tight limits (as the atheris harnesses used) so that one input compiles in milliseconds.
inline const CompileLimits& Limits() {
  static const CompileLimits limits = [] {
    CompileLimits l;
    l.max_fsm_nodes = 200000;
    l.max_repetition_bound = 2000;
    l.max_earley_items_per_step = 20000;
    l.max_generated_grammar_bytes = int64_t{1} << 20;
    l.max_schema_depth = 200;
    return l;
  }();
  return limits;
}

// The compile of the Python compiler (compiler/compile_grammar.h), without its table of
// derived vocabularies: JIT mask cache (no background precompute), no cross-grammar pool.
inline std::shared_ptr<const CompiledGrammar> Compile(const std::string& ebnf,
                                                      const std::string& root_rule_name = "root") {
  CompileScope scope(&Limits(), nullptr);
  CompileTarget target;
  target.tokenizer = Vocabulary();
  target.cache_options.cross_grammar = false;
  target.cache_options.precompute = 0;
  return CompileEbnfText(ebnf, root_rule_name, target);
}

inline std::vector<uint32_t> EmptyMask(const GrammarMatcher& matcher) {
  return std::vector<uint32_t>(static_cast<size_t>(BitmaskWords(matcher.grammar().tokenizer->vocab_size())));
}

inline bool Bit(const std::vector<uint32_t>& mask, int32_t token) {
  return (mask[static_cast<size_t>(token) / 32] >> (token % 32)) & 1u;
}

// The cached fill, checked against the reference fill (the oracle).
inline std::vector<uint32_t> CheckedMask(GrammarMatcher& matcher) {
  std::vector<uint32_t> fast = EmptyMask(matcher);
  std::vector<uint32_t> reference = EmptyMask(matcher);
  const bool fast_partial = matcher.FillNextTokenBitmask(fast.data(), static_cast<int64_t>(fast.size()));
  const bool reference_partial =
      matcher.FillNextTokenBitmaskReference(reference.data(), static_cast<int64_t>(reference.size()));
  if (fast != reference) {
    for (size_t word = 0; word < fast.size(); ++word) {
      if (fast[word] != reference[word]) {
        const uint32_t differ = fast[word] ^ reference[word];
        const int32_t token = static_cast<int32_t>(word * 32) + __builtin_ctz(differ);
        Fail("cached mask differs from the reference mask at token",
             std::to_string(token) + " (cached " + std::to_string(Bit(fast, token)) + ")");
      }
    }
  }
  Require(fast_partial == reference_partial, "fills disagree on whether the mask is partial");
  return fast;
}

// Accepting `token` agrees with its bit in `mask` (the mask of the current state); a token
// that was accepted is rolled back, so the state is unchanged.
inline void CheckAcceptAgreesWithMask(GrammarMatcher& matcher, const std::vector<uint32_t>& mask,
                                      int32_t token) {
  if (matcher.IsTerminated()) return;
  const int32_t before = matcher.num_accepted_steps();
  const bool accepted = matcher.AcceptToken(token);
  Require(accepted == Bit(mask, token), "AcceptToken disagrees with the mask for token", std::to_string(token));
  if (accepted) matcher.Rollback(matcher.num_accepted_steps() - before);
}

// A compiled grammar's short smoke run: accept `text`, then check the mask against the
// reference fill and against acceptance of a few tokens.
inline void MatchBriefly(const std::shared_ptr<const CompiledGrammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar, std::nullopt, false);
  ExpectTyped([&] {
    matcher.AcceptString(std::string(text));
    const std::vector<uint32_t> mask = CheckedMask(matcher);
    const int32_t vocab_size = grammar->tokenizer->vocab_size();
    for (int32_t token : {kStopToken, kToolToken, 3 + 'a', 3 + '"', 3 + '{', vocab_size - 1}) {
      CheckAcceptAgreesWithMask(matcher, mask, token);
    }
  });
}

}  // namespace xg2::fuzz

#endif  // XG2_FUZZ_NATIVE_FUZZ_SUPPORT_H_
