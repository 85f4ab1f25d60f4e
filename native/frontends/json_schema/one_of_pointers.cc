// JSON Schema -> EBNF: errors of a rewritten oneOf at the user's own JSON pointers.
//
// OneOf's rewrites (branches narrowed by type, exactly-one disjuncts, the split by type) are
// schemas the converter made, converted at the oneOf's pointer; a refusal inside them names
// their pointers (`/oneOf/1/allOf/1/...`, `/anyOf/0/allOf/0/...`), which are not in the
// user's document. ConvertRenamed maps them back: each rename says which synthetic pointer
// prefix stands for which user pointer, keeping the rest of the pointer where the synthetic
// node is the user's branch itself and dropping it where the node is a made-up part (a
// complement, a type filter), which has no place in the user's schema.
#include <algorithm>
#include <string>
#include <vector>

#include "frontends/json_schema/schema_converter_internal.h"
#include "support/error.h"

namespace xg2 {
namespace schema_internal {

namespace {

// Characters that may continue a pointer token: a match of a prefix must end before none
// of them, so that `/oneOf/1` does not match the start of `/oneOf/12`.
bool ContinuesToken(char c) { return c != '/' && c != ':' && c != ' ' && c != '\'' && c != '"' && c != ','; }

}  // namespace

std::string RenamePointers(const std::string& text, const std::vector<PointerRename>& renames_in) {
  if (renames_in.empty()) return text;
  // Longest first: `/anyOf/0/allOf/1` before `/anyOf/0`.
  std::vector<const PointerRename*> renames;
  for (const PointerRename& rename : renames_in) renames.push_back(&rename);
  std::stable_sort(renames.begin(), renames.end(),
                   [](const PointerRename* a, const PointerRename* b) { return a->from.size() > b->from.size(); });
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    // A pointer starts after a space or a quote.
    bool starts = text[i] == '/' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\'' || text[i - 1] == '"');
    const PointerRename* match = nullptr;
    if (starts) {
      for (const PointerRename* rename : renames) {
        size_t end = i + rename->from.size();
        if (text.compare(i, rename->from.size(), rename->from) == 0 &&
            (end == text.size() || !ContinuesToken(text[end]))) {
          match = rename;
          break;
        }
      }
    }
    if (match == nullptr) {
      out.push_back(text[i++]);
      continue;
    }
    out += match->to.empty() ? "/" : match->to;
    i += match->from.size();
    if (!match->keep_suffix) {
      while (i < text.size() && text[i] != ' ' && text[i] != ':' && text[i] != '\'' && text[i] != '"' &&
             text[i] != ',') {
        ++i;
      }
    } else if (match->to.empty() && i < text.size() && text[i] == '/') {
      out.pop_back();  // "" + "/x" is "/x", not "//x"
    }
  }
  return out;
}

Fragment SchemaConverter::ConvertRenamed(const std::vector<PointerRename>& renames,
                                         const std::function<Fragment()>& convert) {
  const size_t warnings_before = warnings_.size();
  auto rename_warnings = [&] {
    for (size_t w = warnings_before; w < warnings_.size(); ++w) warnings_[w] = RenamePointers(warnings_[w], renames);
  };
  try {
    Fragment result = convert();
    rename_warnings();
    return result;
  } catch (const UnsupportedSchemaError& error) {
    throw UnsupportedSchemaError(RenamePointers(error.what(), renames));
  } catch (const StructuralTagError&) {
    throw;
  } catch (const SchemaError& error) {
    throw SchemaError(RenamePointers(error.what(), renames));
  } catch (const ResourceLimitError& error) {
    throw ResourceLimitError(RenamePointers(error.what(), renames));
  }
}

}  // namespace schema_internal
}  // namespace xg2
