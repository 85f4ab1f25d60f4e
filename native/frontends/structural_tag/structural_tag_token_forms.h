// Lowering of the structural-tag token-level forms (token on an ordinary token, exclude_token,
// any_tokens, token_triggered_tags, token_dispatch) into rules over token sets (docs/ebnf.md,
// TokenSet / ExcludeToken; grammar/grammar_fsm.h "Token sets"), as TagExpr bodies (tag_expr.h). The semantics are xgrammar
// 0.2.8's, as observed with its GrammarMatcher:
//  * a token set consumes one whole token, at a token boundary only (a token that straddles
//    into the region is not taken), and never a plain stop token (stop tokens end the output
//    where the grammar is complete, as everywhere);
//  * exclude_token: one token not in exclude_tokens (special tokens included);
//  * any_tokens: zero or more such tokens, at most max_tokens of them;
//  * token_dispatch: free tokens (not excluded, not a pattern token) until a pattern token,
//    after which its format follows; loop: back to free tokens, else the dispatch ends;
//  * token_triggered_tags: the same with tags whose begin is a trigger token; at_least_one
//    starts with a tag (no free tokens before it), stop_after_first ends after one tag;
//  * any_text.max_tokens: at most max_tokens tokens BEGIN inside the text (one that runs into
//    it from before does not count, one that runs on past its end does); xgrammar enforces it
//    in the mask only, xg2 in accept_token too (a mask allows exactly what is accepted).
//    accept_string counts as one token, as it does in xgrammar.
// A token is named by id (checked against the vocabulary) or by its text (a special token's
// text, else the only token that decodes to exactly that text); anything else is a
// StructuralTagError naming the JSON path.
#ifndef XG2_FRONTENDS_STRUCTURAL_TAG_STRUCTURAL_TAG_TOKEN_FORMS_H_
#define XG2_FRONTENDS_STRUCTURAL_TAG_STRUCTURAL_TAG_TOKEN_FORMS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "frontends/structural_tag/structural_tag.h"
#include "frontends/structural_tag/tag_expr.h"

namespace xg2 {
namespace structural_tag {

class TokenFormLowering {
 public:
  // What the token forms need from the main lowering (structural_tag_lowering.cc).
  struct Host {
    // Adds a rule (with a token budget when max_tokens >= 0); returns a reference to it.
    std::function<TagExpr(const TagExpr& body, const char* hint, int32_t max_tokens)> rule;
    std::function<TagExpr(const Format& format)> lower;
    // A tag with its begin replaced by `begin`.
    std::function<TagExpr(const TagFormat& tag, const TagExpr& begin)> lower_tag;
  };

  TokenFormLowering(const LoweringOptions& options, Host host);

  // The id a token reference names (see the file comment).
  int32_t Resolve(const TokenRef& token, const std::string& path);
  // The `token` format on an ordinary (non-special) token.
  TagExpr OrdinaryToken(int32_t id) const;
  TagExpr Lower(const TokenLevelFormat& format, const std::string& where);
  // any_text with max_tokens: free text (TagDispatch excluding `excludes`, as dispatch strings)
  // in a rule with a token budget (grammar/grammar_fsm.h, "Token budgets").
  TagExpr BudgetedText(int64_t max_tokens, bool has_max_chars, std::vector<std::string> excludes,
                       const std::string& where);

 private:
  std::vector<int32_t> ResolveAll(const std::vector<TokenRef>& tokens, const std::string& path);
  TagExpr LowerDispatch(const std::vector<int32_t>& triggers, const std::vector<TagExpr>& bodies,
                        std::vector<int32_t> excluded, bool loop, bool at_least_one);

  const LoweringOptions& options_;
  Host host_;
  static constexpr int32_t kAmbiguous = -1;
  std::unordered_map<std::string, int32_t> by_text_;  // decoded text -> id (or kAmbiguous), built on first use
  bool by_text_built_ = false;
};

}  // namespace structural_tag
}  // namespace xg2

#endif  // XG2_FRONTENDS_STRUCTURAL_TAG_STRUCTURAL_TAG_TOKEN_FORMS_H_
