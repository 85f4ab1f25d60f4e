// Internal to the JSON Schema frontend: the converter class shared by its .cc files.
//
// The converter walks the schema once per (node, layout depth) and emits one fragment per
// node; fragments that are not short atoms become rules (identical bodies share one rule).
// $ref targets always become rules, reserved before their body is built, which is what
// makes recursive schemas finite. "Layout depth" is the nesting depth of the value being
// generated when `indent` makes whitespace depend on it, and 0 otherwise.
#ifndef XG2_FRONTENDS_JSON_SCHEMA_SCHEMA_CONVERTER_INTERNAL_H_
#define XG2_FRONTENDS_JSON_SCHEMA_SCHEMA_CONVERTER_INTERNAL_H_

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "frontends/json_schema/decimal.h"
#include "frontends/json_schema/ebnf_builder.h"
#include "frontends/json_schema/json_schema_converter.h"
#include "frontends/json_schema/regular_language.h"
#include "frontends/json_schema/string_formats.h"
#include "support/json.h"

namespace xg2 {
namespace schema_internal {

// With `indent`, containers nested deeper than this are not generated (the grammar needs
// one copy of each rule per depth).
constexpr int kMaxIndentedNesting = 32;
// The generated grammar size and the nesting / $ref depth are bounded by the configurable
// CompileLimits (support/compile_limits.h).
// Integer bounds with more digits than this are refused.
constexpr size_t kMaxBoundDigits = 200;
// Length, item and property counts above this are refused: the grammar writes a count as a
// repetition bound, which the FSM builder folds into a counted loop whose counter (like the
// matcher's byte positions) is an int32_t. Up to it a bound costs no states.
constexpr long long kMaxRepetitionBound = 2147483647;
// multipleOf divisors scaled to an integer (0.05 -> 5) above this are refused: the
// remainder automaton has about divisor x (fraction digits + 2) states.
constexpr long long kMaxMultipleOfDivisor = 1000;
// any_order objects: the grammar has one rule per subset of the declared properties.
constexpr size_t kMaxAnyOrderMembers = 8;
// uniqueItems is enforced over listed item domains up to this many values (one rule per
// subset of used values: at most 2^8 = 256 rules).
constexpr size_t kMaxUniqueDomain = 8;
// uniqueItems decided by the matcher: the largest minItems / maxItems (the array rule holds
// the item count as explicit copies; a compressed repetition's counter would take the field
// the parser keeps the set of values in).
constexpr long long kMaxUniqueItemsBound = 128;
// contains: at most this many (matches, items) counter rules.
constexpr double kMaxContainsStates = 2000;

// Whitespace and separators between JSON tokens, as the options say.
class Layout {
 public:
  explicit Layout(const JsonSchemaOptions& options);
  bool depth_sensitive() const { return indent_.has_value(); }
  // Any whitespace between tokens (no indent or separators fixed by the options).
  bool flexible() const { return flexible_; }
  // `depth` is the nesting depth of the container itself (0 for the top-level value).
  Fragment Open(char bracket, int depth) const;
  Fragment Close(char bracket, int depth) const;
  Fragment ItemSeparator(int depth) const;
  Fragment KeySeparator() const;
  Fragment EmptyContainer(char open, char close) const;
  Fragment Whitespace() const;

 private:
  std::string Newline(int level) const;

  bool flexible_;
  std::optional<int> max_whitespace_;
  std::optional<int> indent_;
  std::string item_separator_;
  std::string key_separator_;
};

// A schema node and where it is: `pointer` is its JSON pointer in the document.
struct Node {
  const JsonValue& schema;
  const std::string& pointer;
};

// A synthetic pointer prefix that stands for a user pointer (one_of_pointers.cc): `from`
// and what follows it in a message become `to`, and the rest of the pointer is kept only
// when `keep_suffix` (the synthetic node is the user's node itself).
struct PointerRename {
  std::string from;
  std::string to;
  bool keep_suffix;
};

// `text` with every pointer that starts with a rename's `from` renamed (longest first).
std::string RenamePointers(const std::string& text, const std::vector<PointerRename>& renames);

// The conjuncts one merge collects (see schema_merge.cc).
struct MergeState {
  std::vector<std::pair<JsonValue, std::string>> parts;         // flat schemas, pointers
  std::vector<std::pair<JsonValue, std::string>> alternatives;  // {"anyOf"|"oneOf": [...]}
  std::vector<const JsonValue*> targets;                        // $ref targets expanded
  size_t collected = 0;
  bool never = false;
};

// Member-name languages of one object schema (patternProperties / propertyNames), over
// quoted keys in their canonical JSON spelling (raw characters, short escapes, \u00xx for
// other control characters), so that each name has exactly one spelling and complements
// are exact.
struct NameLanguages {
  bool active = false;                 // patternProperties or propertyNames is present
  std::optional<CodepointDfa> names;   // propertyNames (nullopt: any name)
  std::vector<CodepointDfa> patterns;  // the names each pattern matches
  std::vector<const JsonValue*> pattern_schemas;
  std::vector<std::string> pattern_pointers;
};

class SchemaConverter {
 public:
  SchemaConverter(const JsonValue& document, const JsonSchemaOptions& options);
  // The conversion: the rules built under `grammar_limits`, or printed where it is null.
  JsonSchemaConversion Convert(const CompileLimits* grammar_limits);
  // The built-in JSON grammar: built, or printed.
  JsonSchemaConversion ConvertBuiltinJson(bool build_grammar);

  // --- json_schema_converter.cc: dispatch, references, combinators, scalars ---
  Fragment Schema(const JsonValue& schema, const std::string& pointer, int depth);
  Fragment AnyValue(int depth);
  void DefineFlexibleAnyValue(const std::string& name);

 private:
  void StartOutput();
  Fragment SchemaObject(const Node& node, int depth);
  Fragment Reference(const Node& node, int depth);
  const JsonValue* ResolveReference(const std::string& ref, const Node& node,
                                    std::string* target_pointer);
  void IndexIdentifiers(const JsonValue& schema, std::string* pointer, int depth);
  Fragment AnyOf(const Node& node, int depth);
  Fragment EnumOrConst(const Node& node, int depth);
  bool EnumValueAllowed(const JsonValue& value, const Node& node);
  // enum_siblings.cc: a listed value against a whole subschema, and against one structural
  // keyword of `node` (nullopt: not evaluated exactly, the policy error).
  bool ListedValueSatisfies(const JsonValue& value, const JsonValue& schema, const std::string& pointer);
  std::optional<bool> ListedValueSiblingAllows(const JsonValue& value, const Node& node, const std::string& keyword);
  // Whether listed string `value` is in the language of `format` (a defined format), decided
  // on its automaton; nullopt where that is not decided exactly (see enum_siblings.cc).
  std::optional<bool> ListedStringHasFormat(const JsonValue& value, const JsonValue& format);
  std::optional<bool> ListedObjectAllows(const JsonValue& value, const Node& node, const std::string& keyword);
  std::optional<bool> ListedArrayAllows(const JsonValue& value, const Node& node, const std::string& keyword);
  Fragment TypedValue(const Node& node, int depth);
  std::vector<std::string> AllowedTypes(const Node& node);
  Fragment IntegerValue(const Node& node);
  Fragment NumberValue(const Node& node);
  std::optional<Decimal> MultipleOf(const Node& node);
  Fragment NumberIntersection(const Node& node, const std::vector<Fragment>& parts, const std::string& hint);
  Fragment StringValue(const Node& node);
  void AddFormatAndPatternLanguages(const Node& node, const JsonValue* format, const JsonValue* pattern,
                                    const std::string& where,
                                    std::vector<std::pair<std::string, std::string>>* languages,
                                    std::optional<Fragment>* body, std::optional<Fragment>* format_fragment);
  // counted_strings.cc: the string body of `language` (JSON-escaped string bodies) with
  // min..max JSON characters, counted by the matcher (a rule [json_chars=M..N]) rather than
  // by a product automaton: `written` is the language's fragment when one exists already
  // (a pattern's expression, a format's rules), else the automaton is written. Never when no
  // string has such a length.
  Fragment CountedStringBody(const Node& node, const CodepointDfa& language, const std::optional<Fragment>& written,
                             long long min_length, long long max_length);
  // StringValue's string for `language` (the product of `languages` but the length, less what
  // `subtracts`) counted by the matcher; `body` is the single language's fragment. Nullopt,
  // with the reason in `why`, when that too passes a limit (StringValue then refuses).
  std::optional<Fragment> CountedString(const Node& node, const CodepointDfa& language,
                                        const std::vector<std::pair<std::string, std::string>>& languages,
                                        bool subtracts, const std::optional<Fragment>& body,
                                        std::optional<long long> min_length, std::optional<long long> max_length,
                                        std::string* why);
  // A format's grammar on its own (PrebuiltFormatGrammar), charged against this conversion's
  // limit: `body` in a private rule set, `grammar` those rules with root xg2_language_root
  // (for automata); body is nullopt for a format without one.
  const PrebuiltFormat& StandaloneFormatGrammar(const std::string& format);
  // StringFormatBody(format, &rules_), built once per output.
  std::optional<Fragment> FormatInRules(const std::string& format);
  bool UniqueItemsTrivial(const Node& node);
  std::optional<std::vector<JsonValue>> UniqueItemDomain(const Node& node);
  std::optional<std::vector<JsonValue>> ListedItemDomain(const Node& node);
  std::optional<std::vector<JsonValue>> ListedScalarItems(const Node& node);
  std::pair<long long, std::optional<long long>> ListedItemCounts(const Node& node, size_t values);
  Fragment UniqueItemsRule(const Node& node, int depth, const Fragment& item, const Fragment& item_end,
                           long long min_items, std::optional<long long> max_items);
  Fragment UniqueArrayValue(const Node& node, int depth);
  std::string UniqueItemsByMatcherRefusal(const Node& node);
  bool EveryPrefixHasInfinitelyManyCompletions(const JsonValue& item_schema, const std::string& pointer);
  bool UniqueItemsByMatcher(const Node& node);
  Fragment UniqueArrayByMatcher(const Node& node, int depth);
  std::string UniqueObjectItemRefusal(const JsonValue& item_schema, const std::string& pointer);
  std::string OpenEndedValueRefusal(const JsonValue& schema, const std::string& pointer);
  bool SurelyOpenObject(const JsonValue& schema);
  Fragment OpenEndedObjectItem(const JsonValue& item_schema, const std::string& pointer, int depth);
  std::string ContainsRefusal(const Node& node);
  Fragment ContainsArrayValue(const Node& node, int depth);
  Fragment ConstValue(const JsonValue& value, int depth);
  void CheckKeywords(const Node& node);
  bool HasDependencies(const Node& node) const;
  std::optional<JsonValue> WithoutNot(const Node& node, const JsonValue& negated);
  std::optional<JsonValue> Complement(const JsonValue& schema, const std::string& pointer, bool declares,
                                      int budget);
  bool NotReadByGenerators(const Node& node);
  // bounded_integers.cc: an integer schema with both bounds as its listed integers (at most
  // 256), for a `not` without a complement; nullopt otherwise.
  std::optional<JsonValue> BoundedIntegersListed(const Node& node);
  // if / then / else as anyOf [allOf [if, then], allOf [complement of if, else]]; nullopt
  // when the complement of `if` is not a schema (the policy error).
  std::optional<JsonValue> WithoutConditional(const Node& node);
  // The string spellings `excluded` rules out (StringValue), or nullopt.
  std::optional<std::vector<std::string>> ExcludedStrings(const Node& node);
  const JsonValue& WithoutDependencies(const Node& node);
  // dependency_discriminator.cc: at least `min_count` schema dependencies that each
  // constrain one listed member D, split by D's value; nullopt for other forms.
  std::optional<JsonValue> DependenciesByDiscriminator(const Node& node, size_t min_count);
  // member_presence.cc
  bool NeverAMember(const Node& node, const std::string& name);
  bool AlwaysAMember(const Node& node, const std::string& name);
  // --- string_language.cc: `not` over string schemas, patterns intersected ---
  std::optional<CodepointDfa> StringLanguage(const JsonValue& schema, const std::string& pointer, int budget);
  const CodepointDfa& ListedSpellings(const std::vector<std::string>& texts);
  std::optional<CodepointDfa> NegatedStringLanguage(const Node& node);
  // The automaton of a defined format's grammar, built once per conversion (nullptr: no
  // grammar, or past the automaton limits).
  const CodepointDfa* FormatAutomaton(const std::string& format);
  // The strings of `format` in canonical spellings, where that automaton is exactly the
  // format's strings (see string_language.cc); nullopt elsewhere.
  std::optional<CodepointDfa> FormatLanguage(const std::string& format);
  std::optional<JsonValue> ListedWithoutNot(const Node& node, const JsonValue& negated);

  // --- schema_merge.cc: allOf, $ref with siblings, applicators next to other keywords ---
  bool NeedsMerge(const Node& node) const;
  Fragment MergedSchema(const Node& node, int depth);
  Fragment MergedSchemaBody(const Node& node, int depth);
  void CollectParts(const JsonValue& schema, const std::string& pointer, MergeState* state);
  // --- alternative_pruning.cc: alternative groups of one merge before distribution ---
  // Drops the branches no value of the merge can match (by type, or disjoint from `base`);
  // false when a group has none left.
  bool PruneAlternatives(const JsonValue& base, const std::string& pointer, MergeState* state);
  // How many leading alternative groups combine into at most `limit` viable branches.
  size_t ViableGroups(const JsonValue& base, const std::string& pointer, const MergeState& state, size_t limit);
  JsonValue MergeObjects(const JsonValue& a, const JsonValue& b, const std::string& pointer);
  void MergeObjectKeywords(const JsonValue& a, const JsonValue& b, const std::string& pointer,
                           std::vector<JsonValue::Member>* out);
  const JsonValue& Dereferenced(const JsonValue& schema, const std::string& pointer);
  // `generated`: `a` stands for the values the grammar generates for it (strict mode).
  bool Excludes(const JsonValue& a, const JsonValue& b, const std::string& pointer, int budget, bool generated);
  bool ArraysExclude(const JsonValue& a, const JsonValue& b, const std::string& pointer, int budget, bool generated);
  bool FlatExcludes(const JsonValue& a, bool exact_a, const JsonValue& b, const std::string& pointer, int budget,
                    bool generated);
  std::optional<JsonValue> FlatBranch(const JsonValue& schema, const std::string& pointer, bool* exact);
  // Collects `schema`'s parts and merges them into one base (as the generator would), then
  // returns finish(state, base) (the base is `{}` when state.never). The merge runs strict:
  // a refusal anywhere gives nullopt, and the lenient flag and ignored keywords are restored
  // on every exit, so a trial leaves no warning behind.
  // trial() with refusals thrown (even when lenient): a refusal gives nullopt, and the
  // lenient flag and ignored keywords are restored on every exit.
  std::optional<JsonValue> StrictTrial(const std::function<std::optional<JsonValue>()>& trial);
  std::optional<JsonValue> TrialMerge(
      const JsonValue& schema, const std::string& pointer,
      const std::function<std::optional<JsonValue>(const MergeState&, JsonValue)>& finish);
  Fragment OneOf(const Node& node, int depth);
  Fragment OverlappingOneOf(const Node& node, const std::vector<JsonValue>& items,
                            const std::vector<std::vector<size_t>>& overlapping, int depth);
  void RefuseOversizedDisjuncts(const JsonValue& disjunction, const std::string& pointer);
  // one_of_pointers.cc: `convert` (a rewritten schema's conversion) with the pointers of its
  // errors and warnings renamed to the user's.
  Fragment ConvertRenamed(const std::vector<PointerRename>& renames, const std::function<Fragment()>& convert);
  bool NoPatternAdmits(const JsonValue& schema, const std::string& name);
  bool NoPatternMatches(const JsonValue& schema, const std::string& name);
  bool StringsDisjoint(const JsonValue& a, const JsonValue& b, const std::string& pointer);
  std::optional<CodepointDfa> DisjointnessLanguage(const JsonValue& schema, const std::string& text,
                                                   const std::string& pointer);
  // --- one_of_by_type.cc: oneOf split by JSON type ---
  // anyOf over the JSON types of allOf [type, oneOf of the branches possible there], with
  // types where two branches accept every value dropped; nullopt when the branches allow
  // fewer than two type groups (the split would change nothing). `renames`: the split's
  // pointers that stand for the user's (ConvertRenamed).
  std::optional<JsonValue> OneOfByType(const Node& node, const std::vector<JsonValue>& branches,
                                       std::vector<PointerRename>* renames);
  // The oneOf node with its branches narrowed to the type groups that fewer than two
  // branches accept whole (false when none is left); nullopt when no group is shared so.
  std::optional<JsonValue> OneOfWithoutSharedTypes(const Node& node, const std::vector<JsonValue>& branches,
                                                   std::vector<PointerRename>* renames);
  // --- one_of_exact.cc: oneOf with branches that may overlap ---
  // True when no value satisfies two of `branches` (then their oneOf is their anyOf).
  bool BranchesDisjoint(const std::vector<JsonValue>& branches, const std::string& pointer);
  // FlatExcludes both ways on two branches and their flat forms; where a flat form left
  // alternatives out, again with them spelled out (AlternativesSpelledOut).
  bool FlatBranchesDisjoint(const JsonValue& a, const JsonValue& flat_a, bool exact_a, const JsonValue& b,
                            const JsonValue& flat_b, bool exact_b, const std::string& pointer, bool generated);
  std::optional<JsonValue> AlternativesSpelledOut(const JsonValue& branch, const std::string& pointer);
  // The values a flat schema with enum / const accepts: the listed values that satisfy all
  // of its keywords, each decided on the value; nullopt without a list or where a value is
  // not decided exactly.
  std::optional<std::vector<JsonValue>> ListedLanguage(const JsonValue& flat, const std::string& pointer);
  // True when `listing` lists its values (ListedLanguage; a flat form may list a superset)
  // and `other` accepts none of them, each decided on the value (false where one is not).
  bool ListedValuesFail(const JsonValue& listing, const JsonValue& other, const std::string& pointer);
  // anyOf over i of allOf [B_i, complement of B_j for each j in overlapping[i]]; nullopt
  // (with `refusal` set) when a complement is not a schema; ResourceLimitError past a bound.
  // A branch that lists its values (enum / const) with the values some overlapping branch
  // also accepts left out, each decided on the value itself; nullopt when the branch lists
  // no values or a value is not decided exactly.
  std::optional<JsonValue> ListedExactlyOne(const Node& node, const std::vector<JsonValue>& branches, size_t i,
                                            const std::vector<size_t>& overlapping);
  std::optional<JsonValue> ExactlyOneOf(const Node& node, const std::vector<JsonValue>& branches,
                                        const std::vector<std::vector<size_t>>& overlapping, std::string* refusal,
                                        std::vector<PointerRename>* renames);
  // --- complement_within.cc: the objects of branch `a` that fail branch `b` ---
  // A schema to intersect with `a` (its objects closed, from a finite set of names), for
  // `b` made of type / properties / required / additionalProperties; nullopt otherwise.
  std::optional<JsonValue> ComplementWithin(const JsonValue& a, const JsonValue& b, const std::string& pointer);
  std::optional<JsonValue> ListedComplementWithin(const JsonValue& a, const std::vector<JsonValue>& listed,
                                                  bool objects_only, const std::string& pointer);
  std::optional<JsonValue> ArrayComplementWithin(const JsonValue& a, const JsonValue& b, const std::string& pointer);
  // --- pattern_properties_merge.cc: object members of a ∩ b with patternProperties ---
  void MergePatternMembers(const JsonValue& a, const JsonValue& b, const std::string& pointer,
                           std::vector<JsonValue::Member>* out);
  bool SomePatternMatches(const JsonValue* patterns, const std::string& name);
  void MergeArrayKeywords(const JsonValue& a, const JsonValue& b, std::vector<JsonValue::Member>* out);

  // --- json_schema_objects.cc: objects, arrays, property keys ---
  Fragment ObjectValue(const Node& node, int depth);
  Fragment ArrayValue(const Node& node, int depth);
  Fragment KeyNotIn(const std::vector<std::string>& names);
  // key_spellings.cc: a declared name in any JSON spelling; a name that is none of `names`
  // in any spelling (KeyNotIn's canonical subset where that automaton is too large).
  Fragment DeclaredKey(const std::string& name);
  Fragment UndeclaredKey(const std::vector<std::string>& names);
  // UndeclaredKey under any_key_spelling: a name that is none of `names` in any spelling.
  Fragment KeyInNoSpellingOf(const std::vector<std::string>& names);
  std::optional<Fragment> MembersInAnyOrder(const std::vector<Fragment>& members, const std::vector<bool>& required,
                                            const Fragment& extra_member, long long min_count, long long max_count,
                                            const Node& node, const std::string& hint, int depth);
  Fragment MembersInOrderCounted(const std::vector<Fragment>& members, const std::vector<bool>& required,
                                 const Fragment& extra_member, long long min_count, long long max_count,
                                 const std::string& hint, int depth);
  NameLanguages NameLanguagesOf(const Node& node);
  // The quoted names `pattern` (a patternProperties key) matches, in canonical spelling.
  const CodepointDfa& PatternNames(const std::string& pattern);
  // A region of the undeclared names (NameRegions): its quoted names, and the indexes of the
  // patterns that match them all (empty: no pattern does).
  struct NameRegion {
    CodepointDfa names;
    std::vector<size_t> patterns;
  };
  // The undeclared names (none of `names`, within `languages.names`) split into the regions
  // the patterns cut them into, empty ones left out; the region no pattern matches only when
  // `with_unmatched`. Throws ResourceLimitError as Product does, or when too many regions are
  // matched by several patterns.
  std::vector<NameRegion> NameRegions(const NameLanguages& languages, const std::vector<std::string>& names,
                                      bool with_unmatched);
  // Members whose names are none of `names`: one alternative per region of the name space
  // that the patterns split it into.
  Fragment UndeclaredMembers(const Node& node, const NameLanguages& languages,
                             const std::vector<std::string>& names, const Fragment& additional_value,
                             int depth);
  // The grammar (root "root") of `schema` on its own; nullopt when it accepts nothing.
  std::optional<GrammarAst> SubschemaGrammar(const JsonValue& schema, const std::string& pointer);
  Fragment MembersInOrder(const std::vector<Fragment>& members, const std::vector<bool>& required,
                          const Fragment& extra_member, const std::string& hint, int depth);
  Fragment MembersInOrderContent(const std::vector<Fragment>& members, const std::vector<bool>& required,
                                 const Fragment& extra_member, const std::string& hint, int depth,
                                 bool* may_be_empty);

  // --- shared helpers ---
  // Reports a keyword the converter cannot enforce: throws UnsupportedSchemaError, or
  // records a warning when lenient (the caller then ignores the keyword).
  void Unsupported(const std::string& message);
  [[noreturn]] void Invalid(const std::string& message) const;
  bool IsIgnored(const Node& node, const std::string& keyword) const;
  int LayoutDepth(int depth) const { return layout_.depth_sensitive() ? depth : 0; }
  bool ContainersAllowed(int depth) const {
    return !layout_.depth_sensitive() || depth < kMaxIndentedNesting;
  }
  // A non-negative integer keyword (integral numbers such as 2.0 included).
  std::optional<long long> CountKeyword(const Node& node, const char* keyword);
  Fragment CommonRule(const std::string& name);
  Fragment JsonStringFragment();
  std::string RuleHint(const std::string& pointer) const;

  // The conversion's fragment arena, current from before any member below makes a node until
  // the converter is destroyed (ebnf_builder.h).
  FragmentArenaScope arena_scope_;
  const JsonValue& document_;
  JsonSchemaOptions options_;
  Layout layout_;
  RuleSet rules_;
  std::vector<std::string> warnings_;
  std::set<std::string> warned_;
  // Keywords ignored after a lenient warning: (pointer, keyword).
  std::set<std::pair<std::string, std::string>> ignored_keywords_;
  // $ref targets already given a rule: (target, layout depth) -> rule name; an empty name
  // marks a target whose language is empty.
  std::map<std::pair<const JsonValue*, int>, std::string> reference_rules_;
  std::set<std::string> references_in_progress_;
  std::unordered_map<std::string, std::pair<const JsonValue*, std::string>> identifiers_;
  std::string base_uri_;
  // ResolveReference's answers by $ref text: (target, its pointer). A schema names the same
  // definitions from many places, and the answer depends on the text alone (identifiers_ and
  // base_uri_ are fixed before conversion starts); failures are not kept (they throw).
  std::unordered_map<std::string, std::pair<const JsonValue*, std::string>> resolved_references_;
  std::map<int, std::string> any_value_rules_;
  // Intersected string languages already written (keyword set -> fragment).
  std::map<std::string, Fragment> string_languages_;
  // ListedSpellings' automata (the listed texts, each prefixed by its length -> language).
  std::unordered_map<std::string, CodepointDfa> listed_spellings_;
  // StringsDisjoint's answers, by the two schemas' texts (only schemas without `$ref`,
  // whose languages do not depend on where they are read).
  std::unordered_map<std::string, bool> strings_disjoint_;
  // StringsDisjoint's string languages, by schema text (the same condition); nullopt: none.
  std::unordered_map<std::string, std::optional<CodepointDfa>> disjointness_languages_;
  // NegatedStringLanguage's automata (pointer and negated schema -> language).
  std::map<std::string, std::optional<CodepointDfa>> negated_string_languages_;
  // NumberIntersection's languages written so far (divisor and parts -> fragment).
  std::map<std::string, Fragment> number_languages_;
  // FormatAutomaton's automata, by format name (nullopt: none).
  std::map<std::string, std::optional<CodepointDfa>> format_automata_;
  // PatternNames, by pattern.
  std::map<std::string, CodepointDfa> pattern_names_;
  // UndeclaredKey's rule references, by the declared names in order; cleared with rules_.
  // Objects repeat across a schema (a definition copied into every allOf/oneOf branch that
  // merges it), and each trie costs far more than the lookup.
  std::map<std::vector<std::string>, Fragment> undeclared_keys_;
  // FormatInRules, cleared with rules_.
  std::map<std::string, std::optional<Fragment>> formats_in_rules_;
  int active_depth_ = 0;
  // ListedValueSatisfies' recursion depth.
  int listed_value_depth_ = 0;
  // Draft 7 and older ($schema says so): keywords next to $ref are ignored.
  bool legacy_ref_ = false;
  // Draft 3 ($schema says so): its own format names (color, host-name, ...) are defined.
  bool draft3_ = false;
  // Draft 3 and 4 ($schema says so): an "integer" is a number written without a fraction, so
  // 7.0 is not one (draft 6 made it one).
  bool draft4_integers_ = false;
  // Schemas built by merges; a deque keeps references to them stable.
  std::deque<JsonValue> synthetic_;
  // JSON nodes written by the merges of this conversion so far (kMaxMergedJsonNodes).
  size_t merged_json_nodes_ = 0;
  // $ref targets expanded by the merges in progress (recursion guard).
  std::vector<const JsonValue*> merge_targets_;
  // Merges being built, outermost first: a merge's schema (the caller's, alive until the
  // merge returns), its layout depth, and the rule reserved once the merge is met again
  // inside itself (empty until then).
  struct MergeInProgress {
    const JsonValue* schema;
    int layout_depth;
    std::string rule;
  };
  std::vector<MergeInProgress> merges_in_progress_;
};

std::string ChildPointer(const std::string& pointer, const std::string& token);
// Keywords without validation meaning (annotations, unknown keywords).
bool IsPassiveKeyword(const std::string& keyword);
// Format names the schema's draft (`draft3`: $schema names draft 3) does not define:
// annotations.
bool IsUnknownFormat(const std::string& format, bool draft3);
// One JSON string character (an escape counts as one character).
Fragment JsonCharFragment();
// The same as a code-point automaton.
const CodepointDfa& JsonCharDfa();
// Every JSON spelling of the string bodies of `texts` (raw characters, short escapes and
// \u escapes of any character, surrogate pairs for astral ones).
Fragment StringSpellings(const std::vector<std::string>& texts);

// The trie of the decoded code points of `names` (json_schema_objects.cc), node 0 the root.
// Invariant: a child always has a larger index than its parent, so a walk from the last
// node down builds every subtrie before its parent.
struct NameTrieNode {
  bool terminal = false;  // a name ends here
  std::map<uint32_t, size_t> children;
};
std::vector<NameTrieNode> NameTrie(const std::vector<std::string>& names);
// The values of a const / enum-only schema (annotations aside), else nullopt.
std::optional<std::vector<JsonValue>> ListedValuesOnly(const JsonValue& schema);
// True when `schema`'s `not` is exactly {"type": "integer"} (annotations aside): the form
// Complement writes for the non-integral numbers, read by the number generators.
bool ExcludesIntegers(const JsonValue& schema);
// The non-integral numbers, each in its one spelling without exponent or trailing zeros.
Fragment NonIntegralNumber();
// JSON value types as bits of a mask; kNumberType means non-integral numbers only.
enum JsonTypeBit : uint8_t {
  kNullType = 1 << 0,
  kBooleanType = 1 << 1,
  kObjectType = 1 << 2,
  kArrayType = 1 << 3,
  kNumberType = 1 << 4,
  kIntegerType = 1 << 5,
  kStringType = 1 << 6,
};
constexpr uint8_t kAllJsonTypes = 0x7f;
// The JSON types a schema's values can have (JsonTypeBit mask), from `type`, `const` and
// `enum` (all types when none says); sound for any schema, since other keywords only narrow.
uint8_t PossibleTypes(const JsonValue& schema);
// The JSON type a type-specific keyword applies to ("" for keywords of every type).
std::string TypeOfKeyword(const std::string& keyword);
// The JSON Schema type name of a JSON value ("integer" for integral numbers).
std::string JsonTypeOf(const JsonValue& value);
// The pointer as shown in messages ("/" for the root).
std::string ShowPointer(const std::string& pointer);

// The JSON types a `type` keyword may name, but "integer" (a subset of "number").
inline constexpr const char* kAllTypes[] = {"null", "boolean", "object", "array", "number", "string"};
// One of kAllTypes, or "integer".
bool IsTypeName(std::string_view name);
// 'keyword', as error messages quote a keyword.
std::string Quoted(const std::string& keyword);

}  // namespace schema_internal
}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_SCHEMA_CONVERTER_INTERNAL_H_
