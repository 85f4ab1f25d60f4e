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

template <typename Source, typename Print>
TextSource GrammarCompiler::PrintedLater(Source source, size_t source_bytes, Print print) const {
  return TextSource::Printed(
      [limits = limits_, source = std::move(source), print = std::move(print)] {
        CompileScope scope(&limits, nullptr);
        return print(source);
      },
      sizeof(CompileLimits) + source_bytes);
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
  // The frontend builds the grammar directly (frontends/json_schema/ebnf_builder.h); its EBNF
  // is printed by the same conversion when asked.
  JsonSchemaConversion conversion;
  {
    CompileScope scope(&limits_, cancel);
    conversion = JsonSchemaToGrammar(schema, options, schema_limits_);
  }
  JsonSchemaCompilation result;
  CompileScope scope(&schema_limits_, cancel);
  TextSource ebnf = PrintedLater(std::make_pair(schema, options), schema.size() + sizeof(options),
                                 [](const std::pair<std::string, JsonSchemaOptions>& source) {
                                   return JsonSchemaToEbnf(source.first, source.second).ebnf;
                                 });
  result.grammar = CompileGrammarAst(std::move(conversion.grammar), std::move(ebnf), target_);
  result.warnings = std::move(conversion.warnings);
  return result;
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::CompileBuiltinJson(const CancellationToken* cancel) const {
  CompileScope scope(&limits_, cancel);
  JsonSchemaConversion conversion = BuiltinJsonGrammar(JsonSchemaOptions());
  TextSource ebnf = PrintedLater(nullptr, 0, [](std::nullptr_t) { return BuiltinJsonEbnf(JsonSchemaOptions()); });
  return CompileGrammarAst(std::move(conversion.grammar), std::move(ebnf), target_);
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::CompileEbnf(const std::string& ebnf,
                                                              const std::string& root_rule_name,
                                                              const CancellationToken* cancel) const {
  return Compile(ebnf, root_rule_name, limits_, cancel);
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::CompileRegex(const std::string& pattern,
                                                               const CancellationToken* cancel) const {
  // The frontend builds the grammar directly; its EBNF is printed when asked.
  CompileScope scope(&limits_, cancel);
  GrammarBuilder builder;
  const RuleId root = builder.AddRule("root");
  builder.DefineRule(root, RegexToGrammar(pattern, RegexOptions(), &builder));
  TextSource ebnf = PrintedLater(pattern, pattern.size(), [](const std::string& source) {
    GrammarBuilder printing;
    printing.AddRule("root");
    std::string body;
    RegexToGrammar(source, RegexOptions(), &printing, &body);
    return "root ::= " + body;
  });
  return CompileGrammarAst(builder.Finish(root), std::move(ebnf), target_);
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::CompileLark(const std::string& text,
                                                              const CancellationToken* cancel) const {
  // The frontend builds the grammar directly; its EBNF is printed from a second lowering when
  // asked (the lowering is deterministic).
  auto options_for = [](const TokenizerInfo& tokenizer) {
    LarkOptions options;
    options.special_tokens = &tokenizer.special_token_text();
    options.vocab_size = tokenizer.vocab_size();
    return options;
  };
  CompileScope scope(&limits_, cancel);
  GrammarAst grammar = LarkToGrammar(text, options_for(*target_.tokenizer));
  TextSource ebnf =
      PrintedLater(std::make_pair(text, target_.tokenizer), text.size(),
                   [options_for](const std::pair<std::string, std::shared_ptr<const TokenizerInfo>>& source) {
                     return PrintEbnf(LarkToGrammar(source.first, options_for(*source.second)));
                   });
  return CompileGrammarAst(std::move(grammar), std::move(ebnf), target_);
}

std::shared_ptr<CompiledGrammar> GrammarCompiler::CompileChoice(const std::vector<std::string>& choices,
                                                                const CancellationToken* cancel) const {
  CompileScope scope(&limits_, cancel);
  size_t bytes = choices.capacity() * sizeof(std::string);
  for (const std::string& choice : choices) bytes += choice.size();
  TextSource ebnf = PrintedLater(choices, bytes, [](const std::vector<std::string>& source) { return ChoiceEbnf(source); });
  return CompileGrammarAst(ChoiceGrammar(choices), std::move(ebnf), target_);
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

std::shared_ptr<CompiledGrammar> GrammarCompiler::CompileStructuralTag(std::shared_ptr<const LoweredStructuralTag> lowered,
                                                                       const CancellationToken* cancel) const {
  CompileTarget target = target_;
  if (target.cache_options.precompute > 0) target.cache_options.precompute = -1;
  CompileScope scope(&limits_, cancel);
  GrammarAst grammar = lowered->grammar;
  const size_t bytes = lowered->memory_bytes;
  TextSource ebnf = PrintedLater(std::move(lowered), bytes, [](const std::shared_ptr<const LoweredStructuralTag>& source) {
    return PrintEbnf(source->grammar);
  });
  return CompileGrammarAst(std::move(grammar), std::move(ebnf), target);
}

}  // namespace xg2
