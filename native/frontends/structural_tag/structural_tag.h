// Structural-tag frontend: the JSON format vLLM's tool parsers and SGLang send
// (`{"type": "structural_tag", "format": {...}}`, or the legacy
// `{"structures": [...], "triggers": [...]}`) into a grammar whose free-text regions are
// TagDispatch rules (docs/ebnf.md; XGrammar 2, section 3.1). The format semantics are
// documented in xg2_plugin/structural_tag.py, whose pydantic models are the typed builder API.
//
// Two steps: ParseStructuralTag validates the JSON into the small IR below (shape errors:
// StructuralTagError naming the JSON path), LowerStructuralTag writes the grammar (errors for
// what the format allows but xg2 cannot express: UnsupportedSchemaError; errors only visible
// while lowering, such as an empty sequence: StructuralTagError).
#ifndef XG2_FRONTENDS_STRUCTURAL_TAG_STRUCTURAL_TAG_H_
#define XG2_FRONTENDS_STRUCTURAL_TAG_STRUCTURAL_TAG_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "grammar/grammar_ast.h"
#include "support/json.h"
#include "tokenizer/special_token_text.h"
#include "tokenizer/tokenizer_info.h"

namespace xg2 {
namespace structural_tag {

// Formats nest at most this deep; deeper input is a ResourceLimitError (the parser and the
// lowering recurse once per level). The JSON parser's own depth bound (kMaxJsonDepth) is
// checked first.
constexpr int kMaxFormatDepth = 200;
constexpr int kMaxJsonDepth = 512;

// A token named by id or by its text.
using TokenRef = std::variant<int64_t, std::string>;

struct Format;
using FormatPtr = std::unique_ptr<Format>;

// Invariants common to every IR node: strings are valid UTF-8 (the JSON parser checks it);
// `const JsonValue*` members point into StructuralTag::documents, which outlives the IR.

struct ConstStringFormat {
  std::string value;
};

// Also the deprecated `qwen_xml_parameter` (style "qwen_xml").
struct JsonSchemaFormat {
  const JsonValue* schema = nullptr;  // an object or a boolean
  std::string style = "json";         // one of the nine styles of the format (validated)
  bool any_order = false;
  std::optional<int64_t> max_whitespace;  // >= 0
  std::vector<std::string> excludes;
};

struct GrammarFormat {
  std::string ebnf;  // root rule "root"
};

struct RegexFormat {
  std::string pattern;
};

struct AnyTextFormat {
  std::vector<std::string> excludes;
  std::optional<int64_t> max_tokens;  // in [0, 2^31 - 1]
  std::optional<int64_t> max_chars;   // in [0, 2^31 - 1]
};

struct TokenFormat {
  TokenRef token;
};

struct SequenceFormat {
  std::vector<FormatPtr> elements;  // may be empty here; the lowering rejects that
};

struct OrFormat {
  std::vector<FormatPtr> elements;  // may be empty here; the lowering rejects that
};

struct OptionalFormat {
  FormatPtr content;  // never null
};

struct PlusFormat {
  FormatPtr content;  // never null
};

struct StarFormat {
  FormatPtr content;  // never null
};

struct RepeatFormat {
  int64_t min = 0;  // >= 0
  int64_t max = 0;  // >= -1; -1 is unbounded (max < min is rejected by the lowering)
  FormatPtr content;  // never null
};

struct TagFormat {
  std::string path;  // JSON path of the tag object
  std::variant<std::string, TokenFormat> begin;
  FormatPtr content;  // never null
  // A string end is a list of one; a token end has no strings.
  std::variant<std::vector<std::string>, TokenFormat> end;
};

struct TriggeredTagsFormat {
  std::vector<std::string> triggers;
  std::vector<TagFormat> tags;
  bool at_least_one = false;
  bool stop_after_first = false;
  std::vector<std::string> excludes;
};

struct TagsWithSeparatorFormat {
  std::vector<TagFormat> tags;
  std::string separator;
  bool at_least_one = false;
  bool stop_after_first = false;
};

struct DispatchFormat {
  std::vector<std::pair<std::string, FormatPtr>> rules;  // (pattern, format); format never null
  bool loop = true;
  std::vector<std::string> excludes;
};

// exclude_token, any_tokens, token_triggered_tags, token_dispatch: lowered to token sets by
// structural_tag_token_forms.h. Fields a type does not have keep their defaults.
struct TokenLevelFormat {
  std::string type;
  std::vector<TokenRef> exclude_tokens;
  std::optional<int64_t> max_tokens;      // any_tokens; in [0, 2^31 - 1]
  std::vector<TokenRef> trigger_tokens;   // token_triggered_tags
  std::vector<TagFormat> tags;            // token_triggered_tags
  bool at_least_one = false;              // token_triggered_tags
  bool stop_after_first = false;          // token_triggered_tags
  std::vector<std::pair<TokenRef, FormatPtr>> rules;  // token_dispatch; format never null
  bool loop = true;                       // token_dispatch
};

struct Format {
  std::string path;  // JSON path of the format object, e.g. "/format/elements/0"
  std::variant<ConstStringFormat, JsonSchemaFormat, GrammarFormat, RegexFormat, AnyTextFormat,
               TokenFormat, SequenceFormat, OrFormat, OptionalFormat, PlusFormat, StarFormat,
               RepeatFormat, TagFormat, TriggeredTagsFormat, TagsWithSeparatorFormat,
               DispatchFormat, TokenLevelFormat>
      body;
};

struct StructuralTag {
  // The parsed JSON documents the IR points into (the input, plus any legacy schema given
  // as JSON text). Heap-allocated so that their addresses stay fixed.
  std::vector<std::unique_ptr<JsonValue>> documents;
  FormatPtr format;  // never null
};

// Validates structural-tag JSON text. Throws StructuralTagError (malformed JSON or a shape
// error, naming the JSON path) or ResourceLimitError (nesting deeper than the bounds above).
StructuralTag ParseStructuralTag(std::string_view json_text);

struct LoweringOptions {
  // Special-token text in the format's strings becomes Token(id); null: no special tokens.
  const SpecialTokenText* special_tokens = nullptr;
  // Vocabulary size for token-id checks (0: no tokenizer, every id is outside it).
  int32_t vocab_size = 0;
  // The vocabulary that token texts and ids of token-level formats resolve against (null: no
  // tokenizer; then a token named by its text must be a special token's).
  const TokenizerInfo* tokenizer = nullptr;
  // The JSON of json_schema formats may use any whitespace (false: compact separators).
  bool any_whitespace = true;
};

// The grammar of `tag`, built directly (root rule "root"). Its printed EBNF (PrintEbnf, a
// debugging view) parses back to exactly that grammar (GrammarBuilder::FinishInPrintedOrder).
// Throws UnsupportedSchemaError, StructuralTagError, and whatever the embedded frontends throw
// (SchemaError, RegexError, GrammarSyntaxError), and ResourceLimitError for a repetition
// bound above the compile limits installed on the calling thread.
GrammarAst LowerStructuralTag(const StructuralTag& tag, const LoweringOptions& options);

// Both steps.
GrammarAst StructuralTagToGrammar(std::string_view json_text, const LoweringOptions& options);
// Both steps, the printed EBNF alone (a debugging view).
std::string StructuralTagToEbnf(std::string_view json_text, const LoweringOptions& options);

}  // namespace structural_tag
}  // namespace xg2

#endif  // XG2_FRONTENDS_STRUCTURAL_TAG_STRUCTURAL_TAG_H_
