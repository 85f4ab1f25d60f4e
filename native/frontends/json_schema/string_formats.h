// Grammars for JSON Schema string formats. Each is the body of a JSON string (between the
// quotes) and every string it produces passes the `jsonschema` library's FormatChecker.
//   date       exact (RFC 3339 full-date: real calendar days, leap years, year 0001-9999)
//   time       exact (RFC 3339 full-time without leap second 60; "t"/"z" either case)
//   date-time  exact (date "T" time)
//   ipv4       exact (dotted quad, no leading zeros, as Python's ipaddress)
//   uuid       exact (8-4-4-4-12 hex digits, either case)
//   email      a sound subset of RFC 5322 addr-spec: dot-atom "@" dotted hostname
//   uri        a sound subset of RFC 3986 URI: scheme ":" then an authority-and-path or a
//              path, optional query and fragment, from unreserved / percent-encoded /
//              sub-delimiter characters (no IP-literal hosts, no userinfo)
#ifndef XG2_FRONTENDS_JSON_SCHEMA_STRING_FORMATS_H_
#define XG2_FRONTENDS_JSON_SCHEMA_STRING_FORMATS_H_

#include <optional>
#include <string_view>

#include "frontends/json_schema/ebnf_builder.h"

namespace xg2 {

// The string-body grammar of `format` (as rules in `rules`), or nullopt for a format
// without a grammar.
std::optional<Fragment> StringFormatBody(std::string_view format, RuleSet* rules);

}  // namespace xg2

#endif  // XG2_FRONTENDS_JSON_SCHEMA_STRING_FORMATS_H_
