// Grammars for JSON Schema string formats. Each is the body of a JSON string (between the
// quotes) and every string it produces passes the `jsonschema` library's FormatChecker.
//   date       exact (RFC 3339 full-date: real calendar days, leap years, year 0001-9999)
//   time       exact (RFC 3339 full-time: second 60 only at 23:59:60 UTC; "t"/"z" either case)
//   date-time  exact (date "T" time)
//   ipv4       exact (dotted quad, no leading zeros, as Python's ipaddress)
//   uuid       exact (8-4-4-4-12 hex digits, either case)
//   duration   exact (RFC 3339 appendix A: designators in order, weeks alone, integers only)
//   email      a sound subset of RFC 5322 addr-spec: dot-atom or quoted local part "@" a
//              dotted hostname or an address literal
//   uri        exact RFC 3986 URI (IPv6 and IPvFuture literals, userinfo, port)
//   uri-reference  exact RFC 3986 URI-reference (a URI or a relative reference)
//   uri-template   exact RFC 6570 (level 4; the reserved operators = , ! @ | excluded)
//   json-pointer   exact RFC 6901 ("~" only as ~0 / ~1)
//   relative-json-pointer  exact (draft-handrews-relative-json-pointer-01)
//   regex      a documented subset (string_formats.cc) that ECMA-262 and Python's re both
//              compile, used only in lenient mode (StringFormatIsExact); the grammar is
//              recursive (groups nest), so it is not intersected with pattern or lengths
//   hostname   a sound subset (RFC 1123 labels, no IDNA A-labels), used only in lenient mode:
//              an A-label is valid only when its Punycode decodes under RFC 5892's rules
//   ip-address, host-name  draft 3's names of ipv4 and hostname (the converter asks for them
//              only under draft 3)
// idn-hostname, idn-email, iri and iri-reference have no grammar (the converter refuses
// them): IDNA needs Unicode tables.
#ifndef XG2_FRONTENDS_JSON_SCHEMA_STRING_FORMATS_H_
#define XG2_FRONTENDS_JSON_SCHEMA_STRING_FORMATS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frontends/json_schema/ebnf_builder.h"

namespace xg2 {

// The string-body grammar of `format` (as rules in `rules`), or nullopt for a format
// without a grammar.
std::optional<Fragment> StringFormatBody(std::string_view format, RuleSet* rules);

// A format's grammar built once per process in a rule set of its own (the leap-second table
// of time and date-time alone is ~70 KB of rules, 1 ms to write): `definitions` are that
// set's rules (RuleSet::Definitions), `body` the format's fragment over them (nullopt for a
// format without a grammar), `grammar` the rules with root xg2_language_root ::= body (for
// automata), `bytes` what the rules charge against a RuleSet's limit, `productive` whether
// every rule derives a finite string. Thread-safe; entries live for the process (one per
// known format).
struct PrebuiltFormat {
  std::optional<Fragment> body;
  std::vector<std::pair<std::string, Fragment>> definitions;
  std::string grammar;
  size_t bytes = 0;
  bool productive = false;
};
const PrebuiltFormat& PrebuiltFormatGrammar(std::string_view format);

// False for a format whose grammar is only a sound subset of its strings (regex: ECMA-262
// and Python's re, which jsonschema checks with, disagree, e.g. on "[]" and "(?<n>x)"); the
// converter then raises the policy error, or in lenient mode keeps the subset with a warning.
bool StringFormatIsExact(std::string_view format);

// The fewest characters (code points) a string of `format` has: 0 for formats without a
// grammar or with the empty string.
long long StringFormatMinLength(std::string_view format);

// The most characters (code points) a string of `format` may have where its grammar leaves
// that bound to the converter (hostname's 253: a count across labels, which the converter
// enforces as a maxLength); nullopt otherwise.
std::optional<long long> StringFormatMaxLength(std::string_view format);

}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_STRING_FORMATS_H_
