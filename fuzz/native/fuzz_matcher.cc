// libFuzzer target: the matcher. The first byte picks one of a fixed set of grammars
// (compiled once, against the synthetic vocabulary); the remaining bytes are a stream of
// operations on a matcher: accept an allowed token, accept any token, accept raw bytes,
// roll back, fork, reset, validate tokens, jump forward. After every step the invariants are
// checked:
//  * the cached fill equals the reference fill (CheckedMask);
//  * accepting a token succeeds exactly when its mask bit is set;
//  * rolling back k steps restores the mask of k steps ago; reset restores the initial one;
//  * a fork starts with its parent's mask and advancing it leaves the parent unchanged;
//  * validate_tokens leaves the state unchanged, and so does a rolled-back jump forward,
//    whose string must be accepted.
#include <optional>

#include "frontends/json_schema/json_schema_converter.h"
#include "frontends/regex/regex_converter.h"
#include "fuzz_support.h"

namespace {

using namespace xg2::fuzz;
using Mask = std::vector<uint32_t>;

std::vector<std::shared_ptr<const xg2::CompiledGrammar>> BuildGrammars() {
  const xg2::JsonSchemaOptions json_options;
  const std::vector<std::string> sources = {
      xg2::JsonSchemaToEbnf(
          R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array",)"
          R"( "items": {"type": "string", "maxLength": 5}}}, "required": ["a"]})",
          json_options)
          .ebnf,
      "root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= [0-9]+ | \"(\" expr \")\"",
      "root ::= " + xg2::RegexToEbnf("(ab|a)*c{2,4}[x-z]?"),
      xg2::BuiltinJsonEbnf(json_options),
      // Token literals (a special token as a terminal) and a lookahead assertion.
      "root ::= item+\nitem ::= name \">\" Token(1) text\nname ::= [a-z]+ (= \">\")\n"
      "text ::= [a-z \\n]{0,20} \"<\"",
      "root ::= TagDispatch((\"<function=\", call), stop_str=(\"</s>\"), excludes=(\"<tool>\"))\n"
      "call ::= [a-z]+ \">{\" [0-9,]* \"}\"",
      // A bounded repetition long enough to be compressed.
      "root ::= \"[\" [0-9a-c]{0,300} \"]\"",
      // UTF-8 classes and an empty alternative.
      "root ::= ([\\u00e9\\u4e2d-\\u4e2f] | \"\\U0001F600\" | \"\")+ \"!\"",
  };
  std::vector<std::shared_ptr<const xg2::CompiledGrammar>> grammars;
  for (const std::string& source : sources) grammars.push_back(Compile(source));
  return grammars;
}

const std::vector<std::shared_ptr<const xg2::CompiledGrammar>>& Grammars() {
  static const auto grammars = BuildGrammars();
  return grammars;
}

// Reads the operation stream; past its end every read is 0.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return offset_ >= size_; }
  uint8_t Byte() { return offset_ < size_ ? data_[offset_++] : 0; }
  uint32_t Below(uint32_t bound) {  // in [0, bound), bound > 0
    const uint32_t value = Byte() | (uint32_t{Byte()} << 8);
    return value % bound;
  }
  std::string Bytes(size_t count) {
    count = std::min(count, size_ - std::min(offset_, size_));
    std::string bytes(reinterpret_cast<const char*>(data_ + offset_), count);
    offset_ += count;
    return bytes;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t offset_ = 0;
};

std::vector<int32_t> AllowedTokens(const Mask& mask, int32_t vocab_size) {
  std::vector<int32_t> allowed;
  for (int32_t token = 0; token < vocab_size; ++token) {
    if (Bit(mask, token)) allowed.push_back(token);
  }
  return allowed;
}

class Session {
 public:
  explicit Session(std::shared_ptr<const xg2::CompiledGrammar> grammar)
      : vocab_size_(grammar->tokenizer->vocab_size()), matcher_(grammar, std::nullopt, false) {
    history_.push_back(CheckedMask(matcher_));
  }

  void Step(Reader& in) {
    switch (in.Byte() % 9) {
      case 0:
      case 1: AcceptAllowed(in); break;
      case 2: AcceptAny(static_cast<int32_t>(in.Below(static_cast<uint32_t>(vocab_size_)))); break;
      case 3: AcceptBytes(in.Bytes(in.Byte() % 8)); break;
      case 4: RollBack(in.Byte()); break;
      case 5: Fork(in); break;
      case 6: ResetMatcher(); break;
      case 7: Validate(in); break;
      default: JumpForward(); break;
    }
  }

 private:
  const Mask& current() const { return history_.back(); }

  void RequireMask(const Mask& expected, const char* what) {
    Require(CheckedMask(matcher_) == expected, what);
  }

  // After a successful step: one more history entry, the new state's mask.
  void Advanced() {
    Require(matcher_.num_accepted_steps() == static_cast<int32_t>(history_.size()),
            "an accepted step did not add exactly one history step");
    history_.push_back(CheckedMask(matcher_));
  }

  void AcceptAllowed(Reader& in) {
    const std::vector<int32_t> allowed = AllowedTokens(current(), vocab_size_);
    if (allowed.empty() || matcher_.IsTerminated()) return;
    const int32_t token = allowed[in.Below(static_cast<uint32_t>(allowed.size()))];
    Require(matcher_.AcceptToken(token), "an allowed token was rejected:", std::to_string(token));
    Advanced();
  }

  void AcceptAny(int32_t token) {
    if (matcher_.IsTerminated()) return;
    const bool accepted = matcher_.AcceptToken(token);
    Require(accepted == Bit(current(), token), "AcceptToken disagrees with the mask for token",
            std::to_string(token));
    if (accepted) {
      Advanced();
    } else {
      RequireMask(current(), "a rejected token changed the state");
    }
  }

  void AcceptBytes(const std::string& bytes) {
    if (matcher_.IsTerminated()) return;
    if (matcher_.AcceptString(bytes)) {
      Advanced();
    } else {
      RequireMask(current(), "rejected bytes changed the state");
    }
  }

  void RollBack(uint8_t amount) {
    const int32_t steps = matcher_.num_accepted_steps();
    const int32_t count = amount % (steps + 1);
    matcher_.Rollback(count);
    history_.resize(history_.size() - static_cast<size_t>(count));
    RequireMask(current(), "rollback did not restore the earlier mask");
  }

  void Fork(Reader& in) {
    xg2::GrammarMatcher fork(matcher_);
    Require(CheckedMask(fork) == current(), "a fork's mask differs from its parent's");
    const std::vector<int32_t> allowed = AllowedTokens(current(), vocab_size_);
    if (!allowed.empty() && !fork.IsTerminated()) {
      Require(fork.AcceptToken(allowed[in.Below(static_cast<uint32_t>(allowed.size()))]),
              "a fork rejected an allowed token");
    }
    RequireMask(current(), "advancing a fork changed its parent");
    if (in.Byte() & 1) {  // go on with the fork; its history is the parent's plus one step
      const Mask parent_mask = current();
      const int32_t fork_steps = fork.num_accepted_steps();
      matcher_ = std::move(fork);
      if (fork_steps == static_cast<int32_t>(history_.size())) {
        history_.push_back(CheckedMask(matcher_));
      } else {
        RequireMask(parent_mask, "a fork that accepted nothing changed");
      }
    }
  }

  void ResetMatcher() {
    matcher_.Reset();
    history_.resize(1);
    RequireMask(current(), "reset did not restore the initial mask");
  }

  void Validate(Reader& in) {
    std::vector<int32_t> tokens(in.Byte() % 4);
    for (int32_t& token : tokens) token = static_cast<int32_t>(in.Below(static_cast<uint32_t>(vocab_size_)));
    const int32_t steps = matcher_.num_accepted_steps();
    const int32_t valid = matcher_.ValidateTokens(tokens);
    Require(valid >= 0 && valid <= static_cast<int32_t>(tokens.size()), "validate_tokens out of range");
    Require(matcher_.num_accepted_steps() == steps, "validate_tokens changed the history");
    RequireMask(current(), "validate_tokens changed the state");
    if (!tokens.empty() && !matcher_.IsTerminated()) {
      Require((valid > 0) == Bit(current(), tokens[0]), "validate_tokens disagrees with the mask");
    }
  }

  void JumpForward() {
    if (matcher_.IsTerminated()) return;
    const std::string jump = matcher_.FindJumpForwardString();
    if (jump.empty()) return;
    Require(matcher_.AcceptString(jump), "the jump-forward string was rejected");
    matcher_.Rollback(1);
    RequireMask(current(), "a rolled-back jump forward changed the state");
  }

  int32_t vocab_size_;
  xg2::GrammarMatcher matcher_;
  // history_[i]: the mask after i accepted steps (history_.size() == steps + 1).
  std::vector<Mask> history_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& grammars = Grammars();
  Reader in(data + 1, size - 1);
  ExpectTyped([&] {
    Session session(grammars[data[0] % grammars.size()]);
    for (int op = 0; op < 64 && !in.empty(); ++op) session.Step(in);
  });
  return 0;
}
