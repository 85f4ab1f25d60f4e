// Regular expression frontend: translates the regex subset used by JSON Schema `pattern`
// and serving APIs into a grammar expression, built directly (RegexToGrammar) or printed as
// an EBNF expression (no rule definitions) in the dialect that frontends/ebnf/ebnf_parser.h
// reads (RegexToEbnf). The two agree: the nodes built are those a parse of the text gives.
#ifndef XG2_FRONTENDS_REGEX_REGEX_CONVERTER_H_
#define XG2_FRONTENDS_REGEX_REGEX_CONVERTER_H_

#include <string>
#include <string_view>

#include "grammar/grammar_ast.h"
#include "grammar/grammar_builder.h"

namespace xg2 {

struct RegexOptions {
  // false: the whole output must match the pattern (compile_regex semantics; ^ and $ at
  // the ends are accepted and redundant). true: search semantics as in JSON Schema
  // `pattern` (ECMA-262): the pattern may match anywhere unless anchored with ^ / $.
  bool search = false;
  // true: the language is the *JSON string body* encoding of matching strings (without the
  // surrounding quotes): `"` and `\` and control characters are emitted as JSON escapes.
  bool json_string_body = false;
};

// The result is a sequence of terms with every alternation parenthesised, so it can be placed
// inside a larger sequence as is (e.g. `"\"" <expr> "\""`); wrap it in parentheses before
// applying a postfix operator. Dialect choices are listed in regex_converter.cc.
// Throws RegexError (naming the offset) on malformed input or on constructs that a regular
// grammar cannot express exactly (back-references, look-around, ...), and
// ResourceLimitError on repetition bounds above 100000 or groups nested deeper than 256.
std::string RegexToEbnf(std::string_view pattern, const RegexOptions& options = {});

// Adds the expression RegexToEbnf prints to `builder` and returns its id: node for node what
// ParseEbnf gives for that text, in the same order. `ebnf`, when not null, receives the text.
// Throws as RegexToEbnf does, and as GrammarBuilder does for a repetition bound above the
// compile limits installed on the calling thread.
ExprId RegexToGrammar(std::string_view pattern, const RegexOptions& options, GrammarBuilder* builder,
                      std::string* ebnf = nullptr);

}  // namespace xg2

#endif  // XG2_FRONTENDS_REGEX_REGEX_CONVERTER_H_
