#include "compiler/grammar_compiler.h"

#include <cstdint>
#include <limits>
#include <utility>

#include "compiler/choice_grammar.h"
#include "compiler/compile_scope.h"
#include "frontends/lark/lark_lowering.h"
#include "frontends/regex/regex_converter.h"
#include "frontends/structural_tag/structural_tag.h"
#include "grammar/grammar_builder.h"

namespace xg2 {

GrammarCompiler::GrammarCompiler(CompileTarget target, const CompileLimits& limits)
    : target_(std::move(target)), limits_(limits), schema_limits_(limits) {
  schema_limits_.max_repetition_bound = std::numeric_limits<int32_t>::max();
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::Compile(const std::string& ebnf,
                                                          const std::string& root_rule_name,
                                                          const CompileLimits& limits,
                                                          const CancellationToken* cancel) const {
  CompileScope scope(&limits, cancel);
  return CompileEbnfText(ebnf, root_rule_name, target_);
}

JsonSchemaCompilation GrammarCompiler::CompileJsonSchema(const std::string& schema,
                                                         const JsonSchemaOptions& options,
                                                         const CancellationToken* cancel) const {
  // The frontend builds the grammar directly (frontends/json_schema/ebnf_builder.h); the
  // printed EBNF is kept for inspection.
  JsonSchemaConversion conversion;
  {
    CompileScope scope(&limits_, cancel);
    conversion = JsonSchemaToGrammar(schema, options, schema_limits_);
  }
  JsonSchemaCompilation result;
  CompileScope scope(&schema_limits_, cancel);
  result.grammar = CompileGrammarAst(std::move(conversion.grammar), conversion.ebnf, target_);
  result.warnings = std::move(conversion.warnings);
  return result;
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::CompileBuiltinJson(const CancellationToken* cancel) const {
  CompileScope scope(&limits_, cancel);
  JsonSchemaConversion conversion = BuiltinJsonGrammar(JsonSchemaOptions());
  return CompileGrammarAst(std::move(conversion.grammar), conversion.ebnf, target_);
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::CompileEbnf(const std::string& ebnf,
                                                              const std::string& root_rule_name,
                                                              const CancellationToken* cancel) const {
  return Compile(ebnf, root_rule_name, limits_, cancel);
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::CompileRegex(const std::string& pattern,
                                                               const CancellationToken* cancel) const {
  // The frontend builds the grammar directly; the printed EBNF is kept for inspection.
  CompileScope scope(&limits_, cancel);
  GrammarBuilder builder;
  const RuleId root = builder.AddRule("root");
  std::string body;
  builder.DefineRule(root, RegexToGrammar(pattern, RegexOptions(), &builder, &body));
  return CompileGrammarAst(builder.Finish(root), "root ::= " + body, target_);
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::CompileLark(const std::string& text,
                                                              const CancellationToken* cancel) const {
  // The frontend builds the grammar directly; the printed EBNF is kept for inspection.
  LarkOptions options;
  options.special_tokens = &target_.tokenizer->special_token_text();
  options.vocab_size = target_.tokenizer->vocab_size();
  CompileScope scope(&limits_, cancel);
  GrammarAst grammar = LarkToGrammar(text, options);
  std::string ebnf = PrintEbnf(grammar);
  return CompileGrammarAst(std::move(grammar), ebnf, target_);
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::CompileChoice(const std::vector<std::string>& choices,
                                                                const CancellationToken* cancel) const {
  CompileScope scope(&limits_, cancel);
  return CompileGrammarAst(ChoiceGrammar(choices), ChoiceEbnf(choices), target_);
}

std::shared_ptr<LoweredStructuralTag> GrammarCompiler::LowerStructuralTag(const std::string& tag_json,
                                                                               bool any_whitespace) const {
  CompileScope scope(&limits_, nullptr);
  structural_tag::LoweringOptions options;
  options.special_tokens = &target_.tokenizer->special_token_text();
  options.vocab_size = target_.tokenizer->vocab_size();
  options.tokenizer = target_.tokenizer.get();
  options.any_whitespace = any_whitespace;
  return std::make_shared<LoweredStructuralTag>(structural_tag::StructuralTagToGrammar(tag_json, options));
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::CompileStructuralTag(const LoweredStructuralTag& lowered,
                                                                       const CancellationToken* cancel) const {
  CompileTarget target = target_;
  if (target.cache_options.precompute > 0) target.cache_options.precompute = -1;
  CompileScope scope(&limits_, cancel);
  return CompileGrammarAst(lowered.grammar, PrintEbnf(lowered.grammar), target);
}

}  // namespace xg2
