#include "frontends/json_schema/string_formats.h"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "frontends/json_schema/regular_language.h"
#include "frontends/regex/regex_converter.h"
#include "support/fork_safe_mutex.h"
#include "support/utf8.h"

namespace xg2 {

namespace {

Fragment L(std::string_view text) { return Fragment::Literal(text); }
Fragment C(std::string text) { return Fragment::Atom(std::move(text)); }

const Fragment kDigit = C("[0-9]");
const Fragment kHex = C("[0-9a-fA-F]");

// Two-digit endings 01..99 divisible by 4 (04, 08, 12, ..., 96).
Fragment LeapTwoDigits() {
  return Alt({Seq({L("0"), C("[48]")}), Seq({C("[2468]"), C("[048]")}),
              Seq({C("[13579]"), C("[26]")})});
}

Fragment Date(RuleSet* rules) {
  // Years 0001-9999 (Python's date has no year 0).
  Fragment year = rules->Share(
      "format_year", Alt({Seq({L("000"), C("[1-9]")}), Seq({L("00"), C("[1-9]"), kDigit}),
                          Seq({L("0"), C("[1-9]"), Repeat(kDigit, 2, 2)}),
                          Seq({C("[1-9]"), Repeat(kDigit, 3, 3)})}));
  // Divisible by 4 and not by 100, or divisible by 400; never year 0000.
  Fragment leap_year = rules->Share(
      "format_leap_year", Alt({Seq({kDigit, kDigit, LeapTwoDigits()}),
                               Seq({LeapTwoDigits(), L("00")})}));
  Fragment day28 = Alt({Seq({L("0"), C("[1-9]")}), Seq({L("1"), kDigit}), Seq({L("2"), C("[0-8]")})});
  Fragment day30 = Alt({day28, L("29"), L("30")});
  Fragment day31 = Alt({day30, L("31")});
  Fragment month31 = Alt({L("01"), L("03"), L("05"), L("07"), L("08"), L("10"), L("12")});
  Fragment month30 = Alt({L("04"), L("06"), L("09"), L("11")});
  Fragment month_day = Alt({Seq({month31, L("-"), day31}), Seq({month30, L("-"), day30}),
                            Seq({L("02-"), day28})});
  return rules->Share("format_date", Alt({Seq({year, L("-"), month_day}),
                                          Seq({leap_year, L("-02-29")})}));
}

std::string TwoDigits(int n) { return std::string(1, static_cast<char>('0' + n / 10)) + static_cast<char>('0' + n % 10); }

// hh:mm:60 (RFC 3339 leap second) only where the time is 23:59:60 UTC, i.e. the local time
// is 23:59 shifted by the offset: "+" the local time plus one minute, "-" 23:59 minus the
// local time. The offset depends on both the hour and the minute, read before ":60" (a
// crossing dependency: no grammar can state it with fewer than one path per local minute),
// so the automaton carries one state per local minute from the minute to the offset.
// ":60" and the fraction between them are one rule that all 1,440 paths call: inlined, its
// states would be copied onto every path (about 11k states for `time` instead of 5k, and
// each grammar with a time in it pays per state). Its lookahead, the offset that always
// follows, keeps it a rule.
Fragment LeapSecondTime(RuleSet* rules, const Fragment& fraction) {
  Fragment tail = rules->ShareWithLookahead("format_leap_60", Seq({L(":60"), fraction}), C("[+\\-Zz]"));
  std::vector<Fragment> hours;
  for (int hour = 0; hour < 24; ++hour) {
    std::vector<Fragment> minutes;
    for (int minute = 0; minute < 60; ++minute) {
      const int local = hour * 60 + minute;
      std::vector<Fragment> zones;
      for (int sign : {1, -1}) {
        int offset = ((sign * (local - (23 * 60 + 59))) % 1440 + 1440) % 1440;
        zones.push_back(L((sign > 0 ? "+" : "-") + TwoDigits(offset / 60) + ":" + TwoDigits(offset % 60)));
      }
      if (local == 23 * 60 + 59) zones.push_back(C("[Zz]"));
      minutes.push_back(Seq({L(TwoDigits(minute)), tail, Alt(zones)}));
    }
    hours.push_back(Seq({L(TwoDigits(hour) + ":"), Alt(minutes)}));
  }
  return rules->Share("format_leap_second_time", Alt(hours));
}

Fragment Time(RuleSet* rules) {
  Fragment hour = Alt({Seq({C("[01]"), kDigit}), Seq({L("2"), C("[0-3]")})});
  Fragment minute = Seq({C("[0-5]"), kDigit});
  Fragment fraction = rules->Share("format_time_fraction", Optional(Seq({L("."), Repeat(kDigit, 1, -1)})));
  Fragment offset = Alt({C("[Zz]"), Seq({C("[+\\-]"), hour, L(":"), minute})});
  return rules->Share("format_time",
                      Alt({Seq({hour, L(":"), minute, L(":"), minute, fraction, offset}),
                           LeapSecondTime(rules, fraction)}));
}

Fragment Ipv4(RuleSet* rules) {
  Fragment octet = Alt({Seq({L("25"), C("[0-5]")}), Seq({L("2"), C("[0-4]"), kDigit}),
                        Seq({L("1"), kDigit, kDigit}), Seq({C("[1-9]"), kDigit}), kDigit});
  Fragment shared_octet = rules->Share("format_ipv4_octet", octet);
  return rules->Share("format_ipv4", Seq({shared_octet, Repeat(Seq({L("."), shared_octet}), 3, 3)}));
}

// RFC 4291 / RFC 3986 IPv6address: eight 16-bit groups, or fewer around one "::", the last
// 32 bits optionally written as an IPv4 address.
Fragment Ipv6(RuleSet* rules) {
  Fragment h16 = rules->Share("format_ipv6_h16", Repeat(kHex, 1, 4));
  Fragment ls32 = rules->Share("format_ipv6_ls32", Alt({Seq({h16, L(":"), h16}), Ipv4(rules)}));
  Fragment group = Seq({h16, L(":")});
  std::vector<Fragment> forms = {Seq({Repeat(group, 6, 6), ls32})};
  // "::" followed by exactly `after` groups and ls32, preceded by at most 5 - after groups.
  for (int after = 5; after >= 0; --after) {
    int before = 5 - after;
    Fragment head = before == 0 ? Fragment::Epsilon()
                                : Optional(Seq({Repeat(group, 0, before - 1), h16}));
    forms.push_back(Seq({head, L("::"), Repeat(group, after, after), ls32}));
  }
  forms.push_back(Seq({Optional(Seq({Repeat(group, 0, 5), h16})), L("::"), h16}));
  forms.push_back(Seq({Optional(Seq({Repeat(group, 0, 6), h16})), L("::")}));
  return rules->Share("format_ipv6", Alt(forms));
}

// The JSON string-body language of an anchored regex (each character in its canonical JSON
// spelling, as for `pattern`).
Fragment FromRegex(RuleSet* rules, std::string_view name, std::string_view pattern) {
  RegexOptions options;
  options.json_string_body = true;
  return rules->Share(name, RegexFragment(pattern, options));
}

// RFC 3339 Appendix A duration (JSON Schema 2019-09+): the designators in order, each
// larger unit requiring the next smaller one before a later unit, weeks alone.
Fragment Duration(RuleSet* rules) {
  const std::string second = "[0-9]+S";
  const std::string minute = "[0-9]+M(?:" + second + ")?";
  const std::string hour = "[0-9]+H(?:" + minute + ")?";
  const std::string time = "T(?:" + hour + "|" + minute + "|" + second + ")";
  const std::string day = "[0-9]+D";
  const std::string month = "[0-9]+M(?:" + day + ")?";
  const std::string year = "[0-9]+Y(?:" + month + ")?";
  const std::string date = "(?:" + day + "|" + month + "|" + year + ")(?:" + time + ")?";
  return FromRegex(rules, "format_duration", "P(?:" + date + "|" + time + "|[0-9]+W)");
}

// RFC 6901: "/"-separated reference tokens, "~" only as "~0" or "~1".
const char kJsonPointerRegex[] = "(?:/(?:[^/~]|~[01])*)*";

Fragment JsonPointer(RuleSet* rules) { return FromRegex(rules, "format_json_pointer", kJsonPointerRegex); }

// draft-handrews-relative-json-pointer-01: a non-negative integer without leading zeros,
// then "#" or a JSON pointer.
Fragment RelativeJsonPointer(RuleSet* rules) {
  return FromRegex(rules, "format_relative_json_pointer",
                   std::string("(?:0|[1-9][0-9]*)(?:#|") + kJsonPointerRegex + ")");
}

// RFC 6570 URI Template (level 4): literals and expressions "{" [operator] varspec ...
// "}". The reserved operators = , ! @ | are left out: RFC 6570 section 2.2 reserves them
// and a processor must reject them.
Fragment UriTemplate(RuleSet* rules) {
  // ucschar and iprivate (RFC 3987), as UTF-8 in the pattern.
  const std::string wide =
      "\u00A0-\uD7FF\uF900-\uFDCF\uFDF0-\uFFEF"
      "\U00010000-\U0001FFFD\U00020000-\U0002FFFD\U00030000-\U0003FFFD\U00040000-\U0004FFFD"
      "\U00050000-\U0005FFFD\U00060000-\U0006FFFD\U00070000-\U0007FFFD\U00080000-\U0008FFFD"
      "\U00090000-\U0009FFFD\U000A0000-\U000AFFFD\U000B0000-\U000BFFFD\U000C0000-\U000CFFFD"
      "\U000D0000-\U000DFFFD\U000E1000-\U000EFFFD"
      "\uE000-\uF8FF\U000F0000-\U000FFFFD\U00100000-\U0010FFFD";
  const std::string pct = "%[0-9A-Fa-f]{2}";
  const std::string literal = "[!#$&-;=?-\\[\\]_a-z~" + wide + "]|" + pct;
  const std::string varchar = "(?:[A-Za-z0-9_]|" + pct + ")";
  const std::string varspec = varchar + "(?:\\.?" + varchar + ")*(?::[1-9][0-9]{0,3}|\\*)?";
  const std::string expression = "\\{[+#./;?&]?" + varspec + "(?:," + varspec + ")*\\}";
  return FromRegex(rules, "format_uri_template", "(?:" + literal + "|" + expression + ")*");
}

Fragment Uuid(RuleSet* rules) {
  return rules->Share("format_uuid",
                      Seq({Repeat(kHex, 8, 8), L("-"), Repeat(kHex, 4, 4), L("-"),
                           Repeat(kHex, 4, 4), L("-"), Repeat(kHex, 4, 4), L("-"),
                           Repeat(kHex, 12, 12)}));
}

Fragment Hostname() {
  Fragment label = Seq({C("[a-zA-Z0-9]"), Optional(Seq({Repeat(C("[a-zA-Z0-9\\-]"), 0, 61),
                                                       C("[a-zA-Z0-9]")}))});
  return Seq({label, Repeat(Seq({L("."), label}), 1, -1)});
}

// `format: hostname` (and draft 3's host-name): a sound subset of RFC 1123 host names.
// Labels of 1-63 letters, digits and hyphens, starting and ending with a letter or digit,
// separated by dots; the total of 253 characters is StringFormatMaxLength's. Left out, so
// never generated: every label with "--" at positions 3-4 (RFC 5891 section 4.2.3.1 makes
// those IDNA labels, valid only when `xn--` and its Punycode decodes to code points that
// RFC 5892's contextual rules permit, which no grammar here checks), and a last label
// that does not start with a letter (RFC 1123 section 2.1: the highest-level label is
// alphabetic, which keeps dotted-decimal and all-numeric names out).
Fragment HostnameSubset(RuleSet* rules) {
  const Fragment letter_or_digit = C("[a-zA-Z0-9]");
  const Fragment ldh = C("[a-zA-Z0-9\\-]");
  // Positions 3 and 4 are not both hyphens.
  const Fragment third_and_fourth = Alt({Seq({letter_or_digit, ldh}), Seq({L("-"), letter_or_digit})});
  // What follows a label's first character: lengths 1, 2, 3, 4 and 5-63.
  const Fragment rest = rules->Share(
      "format_hostname_label_rest",
      Optional(Alt({letter_or_digit, Seq({ldh, letter_or_digit}), Seq({ldh, ldh, letter_or_digit}),
                    Seq({ldh, third_and_fourth, Repeat(ldh, 0, 58), letter_or_digit})})));
  const Fragment label = Seq({letter_or_digit, rest});
  const Fragment last_label = Seq({C("[a-zA-Z]"), rest});
  return rules->Share("format_hostname", Seq({Repeat(Seq({label, L(".")}), 0, -1), last_label}));
}

Fragment Email(RuleSet* rules) {
  Fragment atom = Repeat(C("[a-zA-Z0-9!#$%&'*+/=?\\^_`{|}~\\-]"), 1, -1);
  // A dot-atom or a quoted string of printable characters (JSON-escaped quotes around it).
  Fragment quoted = Seq({L("\\\""), Repeat(C("[ !#-\\[\\]-~]"), 0, -1), L("\\\"")});
  Fragment local = Alt({Seq({atom, Repeat(Seq({L("."), atom}), 0, -1)}), quoted});
  Fragment domain = Alt({Hostname(), Seq({L("["), Ipv4(rules), L("]")}), Seq({L("[IPv6:"), Ipv6(rules), L("]")})});
  return rules->Share("format_email", Seq({local, L("@"), domain}));
}

// A documented subset of regular expressions that both ECMA-262 (with the u flag) and
// Python's `re` (jsonschema's checker) compile: literals, ".", the escapes \d \D \w \W \s
// \S \n \r \t \f \v and escaped syntax characters, classes of single characters, escapes and
// ascending ranges within digits / lower-case / upper-case letters, (non-capturing) groups,
// alternation, the anchors ^ $ \b \B (never quantified) and one quantifier per atom
// (* + ? {n} {n,} {m,n} with m <= n, optionally lazy). Left out, so never generated:
// look-around, back-references, named groups, flags, Unicode property escapes, { } ] as
// literals, and characters JSON must escape other than '"'.
Fragment RegexSubset(RuleSet* rules) {
  const Fragment backslash = L("\\\\");  // one regex backslash, JSON-escaped
  Fragment syntax_escape = Seq({backslash, Alt({C("[dDwWsSnrtfv^$.*+?()\\[\\]{}|/]"), backslash})});
  Fragment literal = Alt({C("[^\"\\\\\\x00-\\x1F\\^$.*+?()\\[\\]{}|]"), L("\\\"")});
  // Ascending ranges lo-hi within one of 0-9, a-z, A-Z.
  std::vector<Fragment> ranges;
  for (const auto& [first, last] : {std::pair<char, char>{'0', '9'}, {'a', 'z'}, {'A', 'Z'}}) {
    for (char lo = first; lo <= last; ++lo) {
      ranges.push_back(Seq({L(std::string(1, lo) + "-"), C(std::string("[") + lo + "-" + last + "]")}));
    }
  }
  Fragment class_item = Alt({C("[^\"\\\\\\x00-\\x1F\\]\\[\\^\\-&~|]"), L("\\\""),
                             Seq({backslash, Alt({C("[dDwWsSnrtfvb^$.*+?()\\[\\]{}|/\\-]"), backslash})}),
                             rules->Share("format_regex_range", Alt(ranges))});
  Fragment char_class = Seq({L("["), Optional(L("^")), Repeat(class_item, 1, -1), L("]")});
  Fragment count = Alt({L("0"), Seq({C("[1-9]"), Repeat(kDigit, 0, 3)})});
  std::vector<Fragment> small_bounds;  // {m,n} with single digits m <= n
  for (char lo = '0'; lo <= '9'; ++lo) {
    small_bounds.push_back(Seq({L(std::string(1, lo) + ","), C(std::string("[") + lo + "-9]")}));
  }
  Fragment bounds = Alt({count, Seq({count, L(",")}), Alt(small_bounds),
                         Seq({kDigit, L(","), C("[1-9]"), Repeat(kDigit, 1, 3)})});
  Fragment quantifier = Seq({Alt({C("[*+?]"), Seq({L("{"), bounds, L("}")})}), Optional(L("?"))});
  std::string regex_rule = rules->Reserve("format_regex");
  Fragment group = Seq({L("("), Optional(L("?:")), Fragment::Atom(regex_rule), L(")")});
  Fragment atom = Alt({literal, L("."), syntax_escape, char_class, group});
  Fragment assertion = Alt({C("[\\^$]"), Seq({backslash, C("[bB]")})});
  Fragment term = Alt({assertion, Seq({atom, Optional(quantifier)})});
  Fragment alternative = Repeat(term, 0, -1);
  rules->Define(regex_rule, Seq({alternative, Repeat(Seq({L("|"), alternative}), 0, -1)}));
  return Fragment::Atom(regex_rule);
}

// A character class of code point ranges, written as UTF-8 (string values are generated in
// their canonical spelling, as a pattern's non-ASCII characters are).
std::string CodepointClass(std::initializer_list<std::pair<uint32_t, uint32_t>> ranges) {
  std::string text = "[";
  for (const auto& [lo, hi] : ranges) {
    AppendUtf8(lo, &text);
    text.push_back('-');
    AppendUtf8(hi, &text);
  }
  return text + "]";
}

// RFC 3987 section 2.2: the characters an IRI adds to a URI's unreserved ones (ucschar), and
// those it adds to the query alone (iprivate).
Fragment IriUcsChar() {
  return C(CodepointClass({{0xA0, 0xD7FF}, {0xF900, 0xFDCF}, {0xFDF0, 0xFFEF}, {0x10000, 0x1FFFD},
                           {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD}, {0x40000, 0x4FFFD}, {0x50000, 0x5FFFD},
                           {0x60000, 0x6FFFD}, {0x70000, 0x7FFFD}, {0x80000, 0x8FFFD}, {0x90000, 0x9FFFD},
                           {0xA0000, 0xAFFFD}, {0xB0000, 0xBFFFD}, {0xC0000, 0xCFFFD}, {0xD0000, 0xDFFFD},
                           {0xE1000, 0xEFFFD}}));
}
Fragment IriPrivate() { return C(CodepointClass({{0xE000, 0xF8FF}, {0xF0000, 0xFFFFD}, {0x100000, 0x10FFFD}})); }

// RFC 3986 URI and URI-reference, and RFC 3987 IRI and IRI-reference. All share the
// authority, path and query grammars; an IRI's unreserved characters add ucschar everywhere
// but in the scheme, the IP literal and the port, and its query adds iprivate (its fragment
// does not).
struct UriParts {
  Fragment scheme, authority, more_segments, nonempty_segment, nonempty_segment_no_colon, query, fragment;
};

UriParts MakeUriParts(RuleSet* rules, bool iri) {
  const std::string prefix = iri ? "format_iri_" : "format_uri_";
  Fragment scheme = Seq({C("[a-zA-Z]"), Repeat(C("[a-zA-Z0-9+.\\-]"), 0, -1)});
  Fragment percent_encoded = Seq({L("%"), kHex, kHex});
  // unreserved / sub-delims, then pchar adds ":" and "@".
  Fragment ascii_plain = C("[a-zA-Z0-9._~!$&'()*+,;=\\-]");
  Fragment plain = iri ? Alt({ascii_plain, IriUcsChar()}) : ascii_plain;
  Fragment host_char = rules->Share(prefix + "host_char", Alt({plain, percent_encoded}));
  Fragment pchar = rules->Share(prefix + "pchar", Alt({plain, percent_encoded, C("[:@]")}));
  Fragment segment = Repeat(pchar, 0, -1);
  Fragment userinfo = Seq({Repeat(Alt({host_char, L(":")}), 0, -1), L("@")});
  // IP-literal = "[" ( IPv6address / IPvFuture ) "]"
  Fragment ip_future = Seq({C("[vV]"), Repeat(kHex, 1, -1), L("."), Repeat(Alt({ascii_plain, L(":")}), 1, -1)});
  Fragment ip_literal = Seq({L("["), Alt({Ipv6(rules), ip_future}), L("]")});
  Fragment host = Alt({ip_literal, Repeat(host_char, 0, -1)});
  Fragment authority = Seq({Optional(userinfo), host, Optional(Seq({L(":"), Repeat(kDigit, 0, -1)}))});
  Fragment fragment_char = Alt({pchar, C("[/?]")});
  Fragment query_char = iri ? Alt({pchar, C("[/?]"), IriPrivate()}) : fragment_char;
  return UriParts{
      scheme,
      rules->Share(prefix + "authority", authority),
      rules->Share(prefix + "more_segments", Repeat(Seq({L("/"), segment}), 0, -1)),
      Repeat(pchar, 1, -1),
      Repeat(Alt({plain, percent_encoded, L("@")}), 1, -1),
      Optional(Seq({L("?"), Repeat(query_char, 0, -1)})),
      Optional(Seq({L("#"), Repeat(fragment_char, 0, -1)})),
  };
}

Fragment Uri(RuleSet* rules, bool iri) {
  UriParts p = MakeUriParts(rules, iri);
  Fragment hier_part = Alt({Seq({L("//"), p.authority, p.more_segments}),
                            Seq({L("/"), Optional(Seq({p.nonempty_segment, p.more_segments}))}),
                            Seq({p.nonempty_segment, p.more_segments}), Fragment::Epsilon()});
  return rules->Share(iri ? "format_iri" : "format_uri", Seq({p.scheme, L(":"), hier_part, p.query, p.fragment}));
}

// URI-reference = URI / relative-ref, where a relative path's first segment has no ":"
// (it would read as a scheme); IRI-reference alike (RFC 3987 irelative-ref).
Fragment UriReference(RuleSet* rules, bool iri) {
  UriParts p = MakeUriParts(rules, iri);
  Fragment relative_part = Alt({Seq({L("//"), p.authority, p.more_segments}),
                                Seq({L("/"), Optional(Seq({p.nonempty_segment, p.more_segments}))}),
                                Seq({p.nonempty_segment_no_colon, p.more_segments}), Fragment::Epsilon()});
  Fragment relative_ref = Seq({relative_part, p.query, p.fragment});
  return rules->Share(iri ? "format_iri_reference" : "format_uri_reference", Alt({Uri(rules, iri), relative_ref}));
}

}  // namespace

std::optional<Fragment> StringFormatBody(std::string_view format, RuleSet* rules) {
  if (format == "date") return Date(rules);
  if (format == "time") return Time(rules);
  if (format == "date-time") {
    return rules->Share("format_date_time", Seq({Date(rules), C("[Tt]"), Time(rules)}));
  }
  if (format == "ipv4" || format == "ip-address") return Ipv4(rules);  // ip-address: draft 3's name
  if (format == "hostname" || format == "host-name") return HostnameSubset(rules);  // host-name: draft 3's
  if (format == "uuid") return Uuid(rules);
  if (format == "ipv6") return Ipv6(rules);
  if (format == "email") return Email(rules);
  if (format == "uri") return Uri(rules, false);
  if (format == "uri-reference") return UriReference(rules, false);
  if (format == "iri") return Uri(rules, true);
  if (format == "iri-reference") return UriReference(rules, true);
  if (format == "duration") return Duration(rules);
  if (format == "json-pointer") return JsonPointer(rules);
  if (format == "relative-json-pointer") return RelativeJsonPointer(rules);
  if (format == "uri-template") return UriTemplate(rules);
  if (format == "regex") return RegexSubset(rules);
  return std::nullopt;
}

const PrebuiltFormat& PrebuiltFormatGrammar(std::string_view format) {
  static ForkSafeMutex mutex;
  static auto* prebuilt = new std::map<std::string, PrebuiltFormat, std::less<>>();  // never destroyed
  static const PrebuiltFormat kNone;
  std::lock_guard<ForkSafeMutex> lock(mutex);
  auto found = prebuilt->find(format);
  if (found != prebuilt->end()) return found->second;
  FragmentArenaScope process(ProcessFragmentArena());  // kept for the process
  RuleSet rules(std::numeric_limits<size_t>::max());
  PrebuiltFormat built;
  built.body = StringFormatBody(format, &rules);
  if (!built.body) return kNone;  // unknown names are not kept (they are the caller's input)
  built.definitions = rules.Definitions();
  built.grammar = rules.Print() + "xg2_language_root ::= " + (built.body->epsilon() ? std::string("\"\"") : built.body->text()) + "\n";
  built.bytes = rules.total_bytes();
  built.productive = rules.UnproductiveRules().empty();
  return prebuilt->emplace(std::string(format), std::move(built)).first->second;
}

bool StringFormatIsExact(std::string_view format) {
  return format != "regex" && format != "hostname" && format != "host-name";
}

long long StringFormatMinLength(std::string_view format) {
  // Shortest members: 0001-01-01, 00:00:00Z, 0001-01-01T00:00:00Z, 0.0.0.0, ::, the uuid's
  // 36, a@b.c (the domain is a dotted hostname), a: (scheme ":"), PT0S / P0D ("P0D" is 3),
  // 0 (relative pointer). tests/frontends/test_json_schema_formats.py checks each against the grammar.
  static const std::pair<std::string_view, long long> kMinLengths[] = {
      {"date", 10}, {"time", 9}, {"date-time", 20}, {"ipv4", 7}, {"ipv6", 2}, {"uuid", 36},
      {"email", 5}, {"uri", 2}, {"iri", 2}, {"duration", 3}, {"relative-json-pointer", 1}, {"ip-address", 7},
      {"hostname", 1}, {"host-name", 1}};
  for (const auto& [name, length] : kMinLengths) {
    if (name == format) return length;
  }
  return 0;
}

std::optional<long long> StringFormatMaxLength(std::string_view format) {
  if (format == "hostname" || format == "host-name") return 253;  // RFC 1123 section 2.1
  return std::nullopt;
}

}  // namespace xg2
