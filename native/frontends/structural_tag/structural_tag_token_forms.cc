#include "frontends/structural_tag/structural_tag_token_forms.h"

#include <algorithm>
#include <utility>

#include "support/error.h"

namespace xg2 {
namespace structural_tag {

namespace {

std::string Where(const std::string& path) { return "at " + (path.empty() ? std::string("/") : path) + ": "; }

TagExpr ExcludeToken(const std::vector<int32_t>& ids) { return TagExpr::TokenSet(ids, true); }

}  // namespace

TokenFormLowering::TokenFormLowering(const LoweringOptions& options, Host host)
    : options_(options), host_(std::move(host)) {}

int32_t TokenFormLowering::Resolve(const TokenRef& token, const std::string& path) {
  if (const int64_t* id = std::get_if<int64_t>(&token)) {
    if (*id < 0 || *id >= options_.vocab_size) {
      throw StructuralTagError(Where(path) + "token id " + std::to_string(*id) + " is outside the vocabulary [0, " +
                               std::to_string(options_.vocab_size) + ")");
    }
    return static_cast<int32_t>(*id);
  }
  const std::string& text = std::get<std::string>(token);
  if (options_.special_tokens) {
    int32_t id = options_.special_tokens->IdOfText(text);
    if (id >= 0) return id;
  }
  if (options_.tokenizer && !by_text_built_) {
    const std::vector<std::string>& decoded = options_.tokenizer->decoded_tokens();
    for (size_t id = 0; id < decoded.size(); ++id) {
      if (decoded[id].empty()) continue;
      auto [at, added] = by_text_.emplace(decoded[id], static_cast<int32_t>(id));
      if (!added) at->second = kAmbiguous;
    }
    by_text_built_ = true;
  }
  auto found = by_text_.find(text);
  if (found == by_text_.end()) {
    throw StructuralTagError(Where(path) + "'" + text + "' is not the text of a token of this tokenizer");
  }
  if (found->second == kAmbiguous) {
    throw StructuralTagError(Where(path) + "'" + text + "' is the text of more than one token; name the token by id");
  }
  return found->second;
}

std::vector<int32_t> TokenFormLowering::ResolveAll(const std::vector<TokenRef>& tokens, const std::string& path) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens.size(); ++i) ids.push_back(Resolve(tokens[i], path + "/" + std::to_string(i)));
  return ids;
}

TagExpr TokenFormLowering::BudgetedText(int64_t max_tokens, bool has_max_chars, std::vector<std::string> excludes,
                                        const std::string& where) {
  if (has_max_chars) {
    throw UnsupportedSchemaError(Where(where) + "any_text with both max_tokens and max_chars is not supported");
  }
  if (max_tokens == 0) return TagExpr::EmptyString();
  TagDispatchDef free_text;
  free_text.excludes = std::move(excludes);
  return host_.rule(TagExpr::Dispatch(std::move(free_text)), "text", static_cast<int32_t>(max_tokens));
}

TagExpr TokenFormLowering::OrdinaryToken(int32_t id) const { return TagExpr::TokenSet({id}, false); }

// Free tokens (neither excluded nor a trigger) with dispatch on the triggers; bodies[i] is what
// follows triggers[i].
TagExpr TokenFormLowering::LowerDispatch(const std::vector<int32_t>& triggers, const std::vector<TagExpr>& bodies,
                                         std::vector<int32_t> excluded, bool loop, bool at_least_one) {
  excluded.insert(excluded.end(), triggers.begin(), triggers.end());
  std::vector<TagExpr> dispatched;
  for (size_t i = 0; i < triggers.size(); ++i) {
    dispatched.push_back(TagExpr::Cat({TagExpr::TokenSet({triggers[i]}, false), bodies[i]}));
  }
  const TagExpr one = host_.rule(TagExpr::Or(std::move(dispatched)), "token_tag", -1);
  const TagExpr free = ExcludeToken(excluded);
  const TagExpr free_or_one = TagExpr::Repeat(TagExpr::Group(TagExpr::Or({free, one})), 0, -1);
  if (at_least_one) return host_.rule(loop ? TagExpr::Cat({one, free_or_one}) : one, "token_dispatch", -1);
  TagExpr once = TagExpr::Cat({TagExpr::Repeat(free, 0, -1), TagExpr::Repeat(one, 0, 1)});
  return host_.rule(loop ? free_or_one : once, "token_dispatch", -1);
}

TagExpr TokenFormLowering::Lower(const TokenLevelFormat& format, const std::string& where) {
  std::vector<int32_t> excluded = ResolveAll(format.exclude_tokens, where + "/exclude_tokens");
  if (format.type == "exclude_token") return ExcludeToken(excluded);
  if (format.type == "any_tokens") {
    if (!format.max_tokens) return host_.rule(TagExpr::Repeat(ExcludeToken(excluded), 0, -1), "any_tokens", -1);
    if (*format.max_tokens == 0) return TagExpr::EmptyString();
    const int32_t most = static_cast<int32_t>(*format.max_tokens);  // at most 2^31 - 1 (the parser checks)
    return host_.rule(TagExpr::Repeat(ExcludeToken(excluded), 0, most), "any_tokens", -1);
  }
  if (format.type == "token_dispatch") {
    std::vector<int32_t> triggers;
    std::vector<TagExpr> bodies;
    for (size_t i = 0; i < format.rules.size(); ++i) {
      const std::string path = where + "/rules/" + std::to_string(i);
      int32_t id = Resolve(format.rules[i].first, path + "/0");
      if (std::find(triggers.begin(), triggers.end(), id) != triggers.end()) {
        throw StructuralTagError(Where(path + "/0") + "token " + std::to_string(id) + " is the pattern of an earlier rule");
      }
      triggers.push_back(id);
      bodies.push_back(host_.rule(host_.lower(*format.rules[i].second), "dispatched", -1));
    }
    return LowerDispatch(triggers, bodies, excluded, format.loop, false);
  }
  // token_triggered_tags: each tag's begin is one of the trigger tokens; the tags of a trigger
  // are alternatives after it.
  std::vector<int32_t> triggers = ResolveAll(format.trigger_tokens, where + "/trigger_tokens");
  if (triggers.empty()) throw StructuralTagError(Where(where + "/trigger_tokens") + "at least one trigger is required");
  if (format.tags.empty()) throw StructuralTagError(Where(where + "/tags") + "at least one tag is required");
  std::sort(triggers.begin(), triggers.end());
  triggers.erase(std::unique(triggers.begin(), triggers.end()), triggers.end());
  std::vector<std::vector<TagExpr>> bodies(triggers.size());
  for (const TagFormat& tag : format.tags) {
    const TokenFormat* begin = std::get_if<TokenFormat>(&tag.begin);
    if (!begin) throw StructuralTagError(Where(tag.path + "/begin") + "token-triggered tags need token begins");
    int32_t id = Resolve(begin->token, tag.path + "/begin");
    auto at = std::lower_bound(triggers.begin(), triggers.end(), id);
    if (at == triggers.end() || *at != id) {
      throw StructuralTagError(Where(tag.path + "/begin") + "token " + std::to_string(id) + " is not a trigger token");
    }
    bodies[at - triggers.begin()].push_back(host_.lower_tag(tag, TagExpr::EmptyString()));
  }
  std::vector<int32_t> used;
  std::vector<TagExpr> used_bodies;
  for (size_t i = 0; i < triggers.size(); ++i) {
    if (bodies[i].empty()) continue;  // a trigger without tags is free text, as in triggered_tags
    used.push_back(triggers[i]);
    used_bodies.push_back(host_.rule(TagExpr::Or(std::move(bodies[i])), "trigger", -1));
  }
  return LowerDispatch(used, used_bodies, excluded, !format.stop_after_first, format.at_least_one);
}

}  // namespace structural_tag
}  // namespace xg2
