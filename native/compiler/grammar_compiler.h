// One entry per source kind, each from the source to a CompiledGrammar in one call: the
// frontend, then compiler/compile_grammar.h. A GrammarCompiler belongs to one tokenizer (the
// Python GrammarCompiler owns one, and keeps the compiled-grammar cache, the sharing of
// identical in-flight compiles, timeouts and futures above it).
//
// Every entry runs under the compiler's limits and the caller's cancellation token (null:
// none), installed on the calling thread for the call; it may run on any thread and on several
// at once.
#ifndef XG2_COMPILER_GRAMMAR_COMPILER_H_
#define XG2_COMPILER_GRAMMAR_COMPILER_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/compile_grammar.h"
#include "frontends/json_schema/json_schema_converter.h"
#include "frontends/structural_tag/structural_tag.h"
#include "grammar/grammar_ast_equality.h"
#include "grammar/grammar_ast_hash.h"
#include "matcher/compiled_grammar.h"
#include "support/cancellation.h"
#include "support/compile_limits.h"

namespace xg2 {

struct JsonSchemaCompilation {
  std::shared_ptr<CompiledGrammar> grammar;
  std::vector<std::string> warnings;  // keywords ignored (lenient only)
};

// A structural tag validated and lowered, ready to compile (GrammarCompiler::LowerStructuralTag).
// Lowering is separate from compiling so that a malformed tag fails when it is submitted,
// before any asynchronous compile starts. Equal when their grammars are, node for node
// (SameGrammarAst), so tags spelled differently share one cached grammar; the hash reads the
// same structure (GrammarAstHash). The grammar is numbered as a parse of its printed EBNF numbers
// it (structural_tag.h), so equal grammars are exactly equal printed texts: keying by structure
// keys as the text did, without printing a grammar that a cached one already serves.
struct LoweredStructuralTag {
  explicit LoweredStructuralTag(GrammarAst lowered)
      : grammar(std::move(lowered)), hash(GrammarAstHash(grammar)), memory_bytes(GrammarAstMemoryBytes(grammar)) {}
  bool operator==(const LoweredStructuralTag& other) const {
    return hash == other.hash && SameGrammarAst(grammar, other.grammar);
  }

  const GrammarAst grammar;
  const size_t hash;
  const size_t memory_bytes;  // GrammarAstMemoryBytes(grammar)
};

class GrammarCompiler {
 public:
  // `target.cache_options.precompute` is the default of every grammar; see CompileStructuralTag.
  GrammarCompiler(CompileTarget target, const CompileLimits& limits);

  // Schema JSON text. The conversion runs under the compiler's limits; the grammar under the
  // same limits but with no bound on repetitions (the frontend's counts are counted loops with
  // a bound of their own).
  JsonSchemaCompilation CompileJsonSchema(const std::string& schema, const JsonSchemaOptions& options,
                                          const CancellationToken* cancel) const;
  // Any JSON value, with the default formatting.
  std::shared_ptr<CompiledGrammar> CompileBuiltinJson(const CancellationToken* cancel) const;
  std::shared_ptr<CompiledGrammar> CompileEbnf(const std::string& ebnf, const std::string& root_rule_name,
                                               const CancellationToken* cancel) const;
  // The whole output matches `pattern` (the regex frontend runs under the default limits).
  std::shared_ptr<CompiledGrammar> CompileRegex(const std::string& pattern, const CancellationToken* cancel) const;
  std::shared_ptr<CompiledGrammar> CompileLark(const std::string& text, const CancellationToken* cancel) const;
  // Exactly one of `choices` (non-empty).
  std::shared_ptr<CompiledGrammar> CompileChoice(const std::vector<std::string>& choices,
                                                 const CancellationToken* cancel) const;
  // Structural-tag JSON text (or the legacy structures/triggers form); throws what
  // structural_tag::ParseStructuralTag and LowerStructuralTag throw.
  std::shared_ptr<LoweredStructuralTag> LowerStructuralTag(const std::string& tag_json,
                                                                 bool any_whitespace) const;
  // A structural tag's call starts after free text, and its first tokens meet states no
  // earlier fill built: every state is classified during the compile (tool schemas share most
  // of them, so the pool answers most) unless the compiler is pure JIT (precompute 0). The
  // grammar keeps `lowered` to print its EBNF from when asked.
  std::shared_ptr<CompiledGrammar> CompileStructuralTag(std::shared_ptr<const LoweredStructuralTag> lowered,
                                                        const CancellationToken* cancel) const;

  const CompileTarget& target() const { return target_; }

 private:
  std::shared_ptr<CompiledGrammar> Compile(const std::string& ebnf, const std::string& root_rule_name,
                                           const CompileLimits& limits, const CancellationToken* cancel) const;

  // How a grammar compiled from `source` prints its EBNF when asked: `print(source)` under the
  // compiler's limits (the frontends check the limits installed on the calling thread, and
  // the printing conversion must meet the ones the compile met).
  template <typename Source, typename Print>
  TextSource PrintedLater(Source source, size_t source_bytes, Print print) const;

  CompileTarget target_;
  CompileLimits limits_;
  CompileLimits schema_limits_;  // limits_ without a repetition bound
};

}  // namespace xg2

#endif  // XG2_COMPILER_GRAMMAR_COMPILER_H_
