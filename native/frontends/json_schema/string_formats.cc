#include "frontends/json_schema/string_formats.h"

#include <algorithm>
#include <string>
#include <vector>

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
// is 23:59 shifted by the offset. Each local hh:mm has one offset of each sign; the
// alternatives are nested by hour, then minute, so that a parser predicts few at a time.
Fragment LeapSecondTime(RuleSet* rules, const Fragment& fraction) {
  std::vector<std::vector<Fragment>> by_hour(24);
  for (int local = 0; local < 24 * 60; ++local) {
    std::vector<Fragment> zones;
    for (int sign : {1, -1}) {
      int offset = ((sign * (local - (23 * 60 + 59))) % 1440 + 1440) % 1440;
      zones.push_back(L((sign > 0 ? "+" : "-") + TwoDigits(offset / 60) + ":" + TwoDigits(offset % 60)));
    }
    if (local == 23 * 60 + 59) zones.push_back(C("[Zz]"));
    by_hour[local / 60].push_back(Seq({L(TwoDigits(local % 60) + ":60"), fraction, Alt(zones)}));
  }
  std::vector<Fragment> hours;
  for (int hour = 0; hour < 24; ++hour) {
    Fragment minutes = rules->Share("format_leap_minute", Alt(by_hour[hour]));
    hours.push_back(Seq({L(TwoDigits(hour) + ":"), minutes}));
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

Fragment Email(RuleSet* rules) {
  Fragment atom = Repeat(C("[a-zA-Z0-9!#$%&'*+/=?\\^_`{|}~\\-]"), 1, -1);
  // A dot-atom or a quoted string of printable characters (JSON-escaped quotes around it).
  Fragment quoted = Seq({L("\\\""), Repeat(C("[ !#-\\[\\]-~]"), 0, -1), L("\\\"")});
  Fragment local = Alt({Seq({atom, Repeat(Seq({L("."), atom}), 0, -1)}), quoted});
  Fragment domain = Alt({Hostname(), Seq({L("["), Ipv4(rules), L("]")}), Seq({L("[IPv6:"), Ipv6(rules), L("]")})});
  return rules->Share("format_email", Seq({local, L("@"), domain}));
}

Fragment Uri(RuleSet* rules) {
  Fragment scheme = Seq({C("[a-zA-Z]"), Repeat(C("[a-zA-Z0-9+.\\-]"), 0, -1)});
  Fragment percent_encoded = Seq({L("%"), kHex, kHex});
  // unreserved / sub-delims, then pchar adds ":" and "@".
  Fragment plain = C("[a-zA-Z0-9._~!$&'()*+,;=\\-]");
  Fragment host_char = rules->Share("format_uri_host_char", Alt({plain, percent_encoded}));
  Fragment pchar = rules->Share("format_uri_pchar", Alt({plain, percent_encoded, C("[:@]")}));
  Fragment segment = Repeat(pchar, 0, -1);
  Fragment nonempty_segment = Repeat(pchar, 1, -1);
  Fragment more_segments = Repeat(Seq({L("/"), segment}), 0, -1);
  Fragment userinfo = Seq({Repeat(Alt({host_char, L(":")}), 0, -1), L("@")});
  Fragment ip_literal = Seq({L("["), Ipv6(rules), L("]")});
  Fragment host = Alt({ip_literal, Repeat(host_char, 0, -1)});
  Fragment authority = Seq({Optional(userinfo), host, Optional(Seq({L(":"), Repeat(kDigit, 0, -1)}))});
  Fragment hier_part = Alt({Seq({L("//"), authority, more_segments}),
                            Seq({L("/"), Optional(Seq({nonempty_segment, more_segments}))}),
                            Seq({nonempty_segment, more_segments}), Fragment::Epsilon()});
  Fragment query_char = Alt({pchar, C("[/?]")});
  Fragment query = Optional(Seq({L("?"), Repeat(query_char, 0, -1)}));
  Fragment fragment = Optional(Seq({L("#"), Repeat(query_char, 0, -1)}));
  return rules->Share("format_uri", Seq({scheme, L(":"), hier_part, query, fragment}));
}

}  // namespace

std::optional<Fragment> StringFormatBody(std::string_view format, RuleSet* rules) {
  if (format == "date") return Date(rules);
  if (format == "time") return Time(rules);
  if (format == "date-time") {
    return rules->Share("format_date_time", Seq({Date(rules), C("[Tt]"), Time(rules)}));
  }
  if (format == "ipv4") return Ipv4(rules);
  if (format == "uuid") return Uuid(rules);
  if (format == "ipv6") return Ipv6(rules);
  if (format == "email") return Email(rules);
  if (format == "uri") return Uri(rules);
  return std::nullopt;
}

}  // namespace xg2
