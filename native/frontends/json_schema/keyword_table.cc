// The converter's keyword table: every keyword it knows, with its support level. The
// converter's policy (json_schema_converter.cc) reads its roles from here, and the docs'
// support matrix is generated from it, so the two cannot drift.
#include "frontends/json_schema/json_schema_converter.h"

namespace xg2 {

const std::vector<KeywordSupport>& JsonSchemaKeywordTable() {
  static const auto* table = new std::vector<KeywordSupport>{
      // Annotations and containers.
      {"title", "annotation", ""}, {"description", "annotation", ""}, {"default", "annotation", ""},
      {"examples", "annotation", ""}, {"example", "annotation", "OpenAPI"},
      {"$comment", "annotation", ""}, {"$schema", "annotation", "draft-03..07 URIs select draft-7 `$ref` rules (siblings ignored); a meta-schema outside json-schema.org (unknown vocabularies) is the policy error"},
      {"$id", "annotation", "document-relative ids resolve `$ref`"}, {"id", "annotation", "draft-04 `$id`"},
      {"$anchor", "annotation", "resolves `$ref`"}, {"$dynamicAnchor", "annotation", ""},
      {"$vocabulary", "annotation", ""}, {"deprecated", "annotation", ""},
      {"readOnly", "annotation", ""}, {"writeOnly", "annotation", ""},
      {"contentMediaType", "annotation", ""}, {"contentEncoding", "annotation", ""},
      {"contentSchema", "annotation", ""}, {"$defs", "annotation", "container"},
      {"definitions", "annotation", "container (draft-04/07)"},
      // Core.
      {"type", "supported", "names and arrays of names, next to any other keyword"},
      {"nullable", "supported", "OpenAPI 3.0"},
      {"enum", "supported", "each listed value is kept exactly when it validates against the sibling keywords; a sibling `format` is decided on the format's automaton for strings of printable ASCII (email, duration and hostname, whose grammars are sound subsets, only when it accepts), other strings, formats without an automaton and `unevaluated*` are the policy error"},
      {"const", "supported", "as enum"},
      {"$ref", "limited", "local and `$id`/`$anchor` references, recursion; remote references are an error; recursive `$ref`s intersected with siblings (an intersection met again inside itself is one recursive rule); one target expanded by more than 4 nested intersections of different schemas is the policy error"},
      {"anyOf", "supported", "siblings are distributed over the branches (branches no value of the intersection can match, by type or provably disjoint, are dropped first; at most 256 combined branches that can hold)"},
      {"allOf", "limited", "merged by intersection; several `pattern`s are intersected (automaton product); `patternProperties` merge with the other branches' properties, patterns and additionalProperties; two different `format`s, `contains`, `if` or dependency maps, and a pattern whose names need the other branch's additionalProperties while overlapping its patterns or declared names, are the policy error"},
      {"oneOf", "limited", "exact when the branches are provably disjoint, decided after `$ref` and allOf merges: types, const/enum values, string schemas whose automata (pattern, lengths, listed strings) share no string, arrays whose item counts share no length or that both need an item while their item schemas are disjoint, a required member that the other branch forbids (undeclared and unmatched by its patternProperties next to additionalProperties false) or whose values fail the other branch's schema for it, and (strict mode, or additionalProperties false) a member the other branch requires that this branch never generates; alternatives are decided branch by branch (also those of a branch next to its other keywords, each with them); types two branches accept whole are taken out first (each branch narrowed to the others); a listed branch is disjoint from one that accepts none of its values and keeps the values no overlapping branch accepts; branches that may overlap become anyOf of each branch with the complements (as for `not`) of those it may overlap (exactly one holds); where a branch has no complement, its complement within a closed object branch (from that branch's finite set of names: a required name absent, or a member whose value the other branch rejects, its patternProperties included; a listed object unequal; for arrays with disjoint item schemas, a non-empty array) or, failing that, a split by JSON type (branches that only constrain other types accept the whole type there); at most 262144 JSON nodes of complements (ResourceLimitError); otherwise the policy error (lenient: anyOf with a warning)"},
      {"properties", "supported", "declared order is enforced"},
      {"required", "supported", ""},
      {"additionalProperties", "supported", "keys never repeat a declared name"},
      {"items", "supported", "schema and draft-04/07 array forms"},
      {"prefixItems", "supported", ""},
      {"additionalItems", "supported", ""},
      {"patternProperties", "limited", "exact next to properties, additionalProperties and propertyNames, and through allOf / $ref siblings (see allOf): names are split into disjoint regular languages (declared names, each set of matching patterns, the rest), a name matched by several patterns takes all their schemas; name patterns read as `pattern` reads them (look-aheads at the start included); patterns that split names into more than 64 non-empty regions matched by several patterns, automata above 20000 states, and patterns beyond the regex subset are the policy error"},
      {"propertyNames", "limited", "exact when the name schema is a regular language over strings (no recursion)"},
      {"minItems", "supported", ""}, {"maxItems", "supported", ""},
      {"pattern", "limited", "ECMAScript subset of the regex frontend, plus look-aheads at the start of an anchored pattern (`^(?!x-)...`: automaton product) and `$` before the end (inside groups and repetitions); other look-around and back-references are the policy error; next to other patterns (allOf), min/maxLength or format the languages are intersected (automaton product), ResourceLimitError or the policy error above 20000 automaton states; min/maxLength whose product would pass that are counted by the matcher instead"},
      {"minLength", "supported", "code points; next to a pattern or format by the automaton product, or counted by the matcher where that is too large"},
      {"maxLength", "supported", "code points; next to a pattern or format by the automaton product, or counted by the matcher where that is too large"},
      {"format", "limited", "asserted (format-assertion vocabulary): date, time (leap seconds exact), date-time, duration (RFC 3339 appendix A), email (a sound subset), uri and uri-reference (RFC 3986), iri and iri-reference (RFC 3987: ucschar in names, paths, queries and fragments, iprivate in queries, in their canonical spelling), uri-template (RFC 6570, reserved operators excluded), json-pointer, relative-json-pointer, ipv4, ipv6, uuid, and, in lenient mode only, regex (a documented subset that ECMA-262 and Python's re both compile, with a warning: the two dialects disagree, so no grammar is exact) and hostname (RFC 1123 labels without IDNA A-labels, the last label starting with a letter, with a warning: an A-label is valid only when its Punycode decodes under RFC 5892's rules); hostname, regex (strict mode), idn-hostname and idn-email are the policy error; under draft 3, ip-address is ipv4 and host-name is hostname, while color, time (strptime's hh:mm:ss), utc-millisec, style and phone are the policy error; names no draft defines (e.g. `path`, `int64`) and draft 3's own names in later drafts are annotations, as in jsonschema's checkers; the names above are asserted under drafts 4 and 6 too, where jsonschema's checkers of those drafts leave date, time, duration, uuid and relative-json-pointer (under draft 4 also json-pointer, uri-reference and uri-template) unchecked (both drafts let an implementation check formats beyond their list)"},
      {"minimum", "limited", "exact decimal bounds (fractional, negative) for integers and numbers; a bounded side of a number is generated without exponent notation (a sound subset); bounds with more than 200 digits are the policy error"},
      {"maximum", "limited", "as minimum"},
      {"exclusiveMinimum", "limited", "as minimum; draft-04 boolean form"},
      {"exclusiveMaximum", "limited", "as maximum; draft-04 boolean form"},
      {"multipleOf", "limited", "integers and decimals (no exponent notation): a remainder automaton intersected with the bounds; divisors that scale to an integer above 1000 (e.g. 0.0001 -> 1 is fine, 1001 is not) are the policy error"},
      {"uniqueItems", "limited", "exact over listed item domains of at most 8 values (items an enum/const of any values, boolean or null types): one rule per set of used values; over strings (minLength, and a pattern whose every prefix has infinitely many completions), numbers and integers without bounds, by the matcher (JSON equality: escapes decoded, 1 equals 1.0), with minItems/maxItems up to 128; trivially with maxItems <= 1 or where `type` rules out arrays; more listed scalars (the parser refuses a prefix no unused value extends), open objects, closed objects with an open-ended last member, and `type` lists of open-ended types also by the matcher; other items (strings with maxLength, format or a pattern that can end an item in one way, bounded numbers, null or boolean next to other types, closed objects ending in a member that can end in one way, listed objects or arrays beyond 8) and tuple items are the policy error"},
      {"dependentRequired", "limited", "each dependency becomes `name absent` or `name present with the dependency`, intersected with the schema (allOf); a dependency on a name the object never has (closed object: undeclared, not required, matched by no pattern) is a no-op, one on a `required` name is the dependency itself (its names required, or its schema intersected); names it requires that `properties` does not declare are placed as `required` places its own where no other undeclared member can appear (additionalProperties false, or strict mode without it; elsewhere their position among the other undeclared members would be arbitrary) and more than 6 dependencies (unless each is a schema that constrains one member with listed values, `{properties: {D: S}}`: then the object splits by D's value, the names whose schema that value fails being absent) are the policy error"},
      {"dependentSchemas", "limited", "as dependentRequired, the schema intersected with the object"},
      {"dependencies", "limited", "draft-04/07: array values as dependentRequired, schema values as dependentSchemas"},
      {"minProperties", "limited", "members are counted in the object grammar (optional and undeclared ones included); a minimum above 1 next to possible undeclared members is the policy error (a repeated undeclared key would count twice)"},
      {"maxProperties", "supported", "members are counted in the object grammar"},
      {"if", "limited", "decided by the grammar: the value space splits into allOf [if, then] and allOf [complement of if, else]; exact when `if` is built from type names, const/enum of scalars, required, properties (recursively), not, allOf/anyOf and the count and bound keywords; other conditions (pattern, format, object/array constants, ...) are the policy error"},
      {"then", "supported", "with if; no-op without it"}, {"else", "supported", "with if; no-op without it"},
      {"contains", "limited", "exact when its complement is a schema (the forms `not` complements): each item matches allOf [items, contains] or allOf [items, complement], and the grammar counts matches and items (at most 2000 counter rules); tuple items, uniqueItems alongside, and other forms are the policy error"},
      {"minContains", "supported", "with contains (draft 2019+); no-op without it"},
      {"maxContains", "supported", "with contains (draft 2019+); no-op without it"},
      {"not", "limited", "complemented where the complement is a schema: type names (`integer` without `number`: the non-integral numbers, generated without exponent), const/enum (strings: an automaton difference over every JSON spelling; numbers: the open intervals between the excluded values; objects and arrays member by member, an open object other than a non-empty constant excepted), required, properties, items (some item in the items' complement, generated as `contains`), allOf/anyOf of those, oneOf of provably disjoint branches (their anyOf), count and bound keywords, member and item schemas that accept every value, string schemas (pattern, min/maxLength, string const/enum, the formats date, ipv4, uuid, uri and uri-reference outside drafts 3-7, and their not/allOf/anyOf: an automaton difference within the canonical spellings); next to enum/const it filters the values; the other formats the draft defines (a format it does not define adds nothing), tuple items, a oneOf whose branches may overlap and other forms are the policy error"},
      // Not enforced (yet): always the policy error.

      {"unevaluatedProperties", "error", ""}, {"unevaluatedItems", "error", ""},
      {"$recursiveRef", "error", ""}, {"$dynamicRef", "error", ""},
      {"extends", "error", "draft-03"}, {"disallow", "error", "draft-03"}, {"divisibleBy", "error", "draft-03"},
  };
  return *table;
}

}  // namespace xg2
