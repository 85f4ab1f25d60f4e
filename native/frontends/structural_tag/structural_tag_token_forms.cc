#include "frontends/structural_tag/structural_tag_token_forms.h"

#include <algorithm>
#include <utility>

#include "support/error.h"

namespace xg2 {
namespace structural_tag {

namespace {

std::string Where(const std::string& path) { return "at " + (path.empty() ? std::string("/") : path) + ": "; }

std::string IdList(const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

std::string ExcludeToken(const std::vector<int32_t>& ids) { return "ExcludeToken(" + IdList(ids) + ")"; }

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

std::string TokenFormLowering::BudgetedText(int64_t max_tokens, bool has_max_chars, const std::string& excludes,
                                            const std::string& where) {
  if (has_max_chars) {
    throw UnsupportedSchemaError(Where(where) + "any_text with both max_tokens and max_chars is not supported");
  }
  if (max_tokens == 0) return "\"\"";
  return host_.rule("TagDispatch(excludes=" + excludes + ")", "text", "[max_tokens=" + std::to_string(max_tokens) + "]");
}

std::string TokenFormLowering::OrdinaryToken(int32_t id) const { return "TokenSet(" + std::to_string(id) + ")"; }

// Free tokens (neither excluded nor a trigger) with dispatch on the triggers; bodies[i] is the
// EBNF that follows triggers[i].
std::string TokenFormLowering::LowerDispatch(const std::vector<int32_t>& triggers,
                                             const std::vector<std::string>& bodies,
                                             std::vector<int32_t> excluded, bool loop, bool at_least_one) {
  excluded.insert(excluded.end(), triggers.begin(), triggers.end());
  std::string dispatched;
  for (size_t i = 0; i < triggers.size(); ++i) {
    dispatched += (dispatched.empty() ? "" : " | ") + ("TokenSet(" + std::to_string(triggers[i]) + ") " + bodies[i]);
  }
  std::string one = host_.rule(dispatched, "token_tag", "");
  std::string free = ExcludeToken(excluded);
  if (at_least_one) return host_.rule(loop ? one + " (" + free + " | " + one + ")*" : one, "token_dispatch", "");
  return host_.rule(loop ? "(" + free + " | " + one + ")*" : free + "* " + one + "?", "token_dispatch", "");
}

std::string TokenFormLowering::Lower(const TokenLevelFormat& format, const std::string& where) {
  std::vector<int32_t> excluded = ResolveAll(format.exclude_tokens, where + "/exclude_tokens");
  if (format.type == "exclude_token") return ExcludeToken(excluded);
  if (format.type == "any_tokens") {
    if (!format.max_tokens) return host_.rule(ExcludeToken(excluded) + "*", "any_tokens", "");
    if (*format.max_tokens == 0) return "\"\"";
    return host_.rule(ExcludeToken(excluded) + "{0," + std::to_string(*format.max_tokens) + "}", "any_tokens", "");
  }
  if (format.type == "token_dispatch") {
    std::vector<int32_t> triggers;
    std::vector<std::string> bodies;
    for (size_t i = 0; i < format.rules.size(); ++i) {
      const std::string path = where + "/rules/" + std::to_string(i);
      int32_t id = Resolve(format.rules[i].first, path + "/0");
      if (std::find(triggers.begin(), triggers.end(), id) != triggers.end()) {
        throw StructuralTagError(Where(path + "/0") + "token " + std::to_string(id) + " is the pattern of an earlier rule");
      }
      triggers.push_back(id);
      bodies.push_back(host_.rule(host_.lower(*format.rules[i].second), "dispatched", ""));
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
  std::vector<std::string> bodies(triggers.size());
  for (const TagFormat& tag : format.tags) {
    const TokenFormat* begin = std::get_if<TokenFormat>(&tag.begin);
    if (!begin) throw StructuralTagError(Where(tag.path + "/begin") + "token-triggered tags need token begins");
    int32_t id = Resolve(begin->token, tag.path + "/begin");
    auto at = std::lower_bound(triggers.begin(), triggers.end(), id);
    if (at == triggers.end() || *at != id) {
      throw StructuralTagError(Where(tag.path + "/begin") + "token " + std::to_string(id) + " is not a trigger token");
    }
    std::string& body = bodies[at - triggers.begin()];
    body += (body.empty() ? "" : " | ") + host_.lower_tag(tag, "\"\"");
  }
  std::vector<int32_t> used;
  std::vector<std::string> used_bodies;
  for (size_t i = 0; i < triggers.size(); ++i) {
    if (bodies[i].empty()) continue;  // a trigger without tags is free text, as in triggered_tags
    used.push_back(triggers[i]);
    used_bodies.push_back(host_.rule(bodies[i], "trigger", ""));
  }
  return LowerDispatch(used, used_bodies, excluded, !format.stop_after_first, format.at_least_one);
}

}  // namespace structural_tag
}  // namespace xg2
