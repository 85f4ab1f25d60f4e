// The vocabulary a grammar with token literals (grammar/token_literal.h) is matched against.
//
// A special token is never grammar text in the base vocabulary. A grammar that names tokens
// with Token(id) gets a derived vocabulary in which
//  * each named token decodes to its literal spelling, is not special and not a stop token
//    (a stop token named by the grammar, such as Harmony `<|call|>`, is a terminal there;
//    the remaining stop tokens still end generation where the grammar is complete);
//  * every other token whose text contains a token-literal byte (bytes 0xF8-0xFF, invalid in
//    UTF-8 and so never allowed by any grammar anyway) decodes to nothing, so no sequence of
//    ordinary tokens can spell a literal.
// Everything else is unchanged, so the matcher needs no change: token literals are just text
// that only one token can produce.
#ifndef XG2_TOKENIZER_TOKEN_LITERALS_H_
#define XG2_TOKENIZER_TOKEN_LITERALS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "grammar/grammar_ast.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {

// Ids named by token literals anywhere in `ast` (literals and TagDispatch strings), sorted
// and unique.
std::vector<int32_t> TokenLiteralIds(const GrammarAst& ast);

// The derived vocabulary described above. Throws InvalidArgumentError for an id outside the
// tokenizer's vocabulary.
std::shared_ptr<const TokenizerInfo> WithTokenLiterals(const TokenizerInfo& base,
                                                       const std::vector<int32_t>& ids);

}  // namespace xg2

#endif  // XG2_TOKENIZER_TOKEN_LITERALS_H_
