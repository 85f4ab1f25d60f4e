#include "tokenizer/token_literals.h"

#include <algorithm>
#include <cstring>

#include "grammar/token_literal.h"
#include "support/error.h"

namespace xg2 {
namespace {

// Jumps from one lead byte to the next (memchr): a spelling starts only at a lead byte, and
// most terminals have none. A token-set marker (two lead bytes, then a set index in the same
// digits) is stepped over whole: read from its second byte it would look like a literal, and
// naming that id would respell an ordinary token of the vocabulary.
void CollectIds(std::string_view bytes, std::vector<int32_t>* ids) {
  const char* const data = bytes.data();
  for (size_t i = 0; i < bytes.size(); ++i) {
    const void* lead = std::memchr(data + i, kTokenLiteralLead, bytes.size() - i);
    if (lead == nullptr) return;
    i = static_cast<size_t>(static_cast<const char*>(lead) - data);
    if (DecodeTokenSetMarker(bytes, i) >= 0) {
      i += kTokenSetMarkerSize - 1;
      continue;
    }
    int32_t id = DecodeTokenLiteral(bytes, i);
    if (id >= 0) {
      ids->push_back(id);
      i += kTokenLiteralSize - 1;
    }
  }
}

}  // namespace

std::vector<int32_t> TokenLiteralIds(const GrammarAst& ast) {
  std::vector<int32_t> ids;
  for (const ExprNode& node : ast.nodes) {
    if (node.kind == ExprKind::kBytes) CollectIds(node.bytes, &ids);
  }
  for (const TagDispatchDef& def : ast.tag_dispatches) {
    for (const TagDispatchDef::Tag& tag : def.tags) CollectIds(tag.text, &ids);
    for (const std::string& s : def.stop_strings) CollectIds(s, &ids);
    for (const std::string& s : def.excludes) CollectIds(s, &ids);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::shared_ptr<const TokenizerInfo> WithTokenLiterals(const TokenizerInfo& base,
                                                       const std::vector<int32_t>& ids) {
  std::vector<std::string> decoded = base.decoded_tokens();
  for (std::string& text : decoded) {
    bool has_literal_byte = std::any_of(text.begin(), text.end(), [](char c) {
      return IsTokenLiteralByte(static_cast<uint8_t>(c));
    });
    if (has_literal_byte) text.clear();
  }
  for (int32_t id : ids) {
    if (id < 0 || id >= static_cast<int32_t>(decoded.size())) {
      throw InvalidArgumentError("Token(" + std::to_string(id) +
                                 ") is outside the tokenizer's vocabulary of " +
                                 std::to_string(decoded.size()) + " tokens");
    }
    decoded[id] = TokenLiteralBytes(id);
  }
  auto named = [&ids](int32_t id) { return std::binary_search(ids.begin(), ids.end(), id); };
  std::vector<int32_t> stops;
  for (int32_t id : base.stop_token_ids()) {
    if (!named(id)) stops.push_back(id);
  }
  std::vector<int32_t> specials;
  for (int32_t id : base.special_token_ids()) {
    if (!named(id)) specials.push_back(id);
  }
  return std::make_shared<const TokenizerInfo>(std::move(decoded), base.vocab_type(),
                                               base.vocab_size(), std::move(stops),
                                               std::move(specials), base.add_prefix_space());
}

}  // namespace xg2
