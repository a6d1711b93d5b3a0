// String formats for the JSON Schema front end, as raw text (before JSON escaping). Each is a subset
// of what ajv-formats 3 accepts in both its "full" and "fast" modes (the checks quoted beside each),
// usually the canonical RFC spelling: being stricter than ajv is fine, looser would be a bug.

#include <bitset>

#include "json_schema_internal.hpp"

namespace llaisys::grammar::json_schema_detail {
namespace {

ExprPtr chars(std::string_view set) {
  std::bitset<256> s;
  for (const char c : set) s.set(static_cast<uint8_t>(c));
  return byte_set(s);
}
ExprPtr d() { return byte_range('0', '9'); }
ExprPtr lit(std::string_view s) { return literal(s); }
ExprPtr hex() { return chars("0123456789abcdefABCDEF"); }
ExprPtr alnum() { return chars("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"); }
ExprPtr alnum_dash() { return alt({alnum(), lit("-")}); }

// ---- date and time ----
// full: /^(\d\d\d\d)-(\d\d)-(\d\d)$/ with 1 <= month <= 12 and 1 <= day <= the month's length (29 in
// February of leap years); fast: /^\d\d\d\d-[0-1]\d-[0-3]\d$/. Generated: exactly the valid dates.
ExprPtr date() {
  const ExprPtr year = repeat(d(), 4, 4);
  // Two-digit multiples of 4: an even tens digit with 0/4/8, or an odd one with 2/6.
  const ExprPtr mult4 = alt({seq({chars("02468"), chars("048")}), seq({chars("13579"), chars("26")})});
  const ExprPtr mult4_nonzero = alt({seq({lit("0"), chars("48")}), seq({chars("2468"), chars("048")}), seq({chars("13579"), chars("26")})});
  // Leap years: yy a nonzero multiple of 4 (any century), or yy == 00 with the century a multiple of 4.
  const ExprPtr leap = alt({seq({d(), d(), mult4_nonzero}), seq({mult4, lit("00")})});
  const ExprPtr day28 = alt({seq({lit("0"), byte_range('1', '9')}), seq({lit("1"), d()}), seq({lit("2"), byte_range('0', '8')})});
  const ExprPtr day30 = alt({day28, lit("29"), lit("30")});
  const ExprPtr day31 = alt({day30, lit("31")});
  const ExprPtr m31 = alt({lit("01"), lit("03"), lit("05"), lit("07"), lit("08"), lit("10"), lit("12")});
  const ExprPtr m30 = alt({lit("04"), lit("06"), lit("09"), lit("11")});
  return alt({
      seq({year, lit("-"), m31, lit("-"), day31}),
      seq({year, lit("-"), m30, lit("-"), day30}),
      seq({year, lit("-02-"), day28}),
      seq({leap, lit("-02-29")}),
  });
}

// full: /^(\d\d):(\d\d):(\d\d(?:\.\d+)?)(z|([+-])(\d\d)(?::?(\d\d))?)?$/i with a zone required,
// hr <= 23, min <= 59, sec < 60, zone hours <= 23 and minutes <= 59 (leap seconds aside);
// fast: /^(?:[0-2]\d:[0-5]\d:[0-5]\d|23:59:60)(?:\.\d+)?(?:z|[+-]\d\d(?::?\d\d)?)$/i.
// Generated: HH:MM:SS[.f{1,9}](Z|[+-]HH:MM), no leap second.
ExprPtr time() {
  const ExprPtr hh = alt({seq({chars("01"), d()}), seq({lit("2"), byte_range('0', '3')})});
  const ExprPtr mm = seq({byte_range('0', '5'), d()});
  const ExprPtr zone = alt({lit("Z"), seq({chars("+-"), hh, lit(":"), mm})});
  return seq({hh, lit(":"), mm, lit(":"), mm, optional(seq({lit("."), repeat(d(), 1, 9)})), zone});
}

// ---- identifiers and addresses ----
// /^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$/i, without the urn prefix.
ExprPtr uuid() {
  const ExprPtr h = hex();
  return seq({repeat(h, 8, 8), lit("-"), repeat(h, 4, 4), lit("-"), repeat(h, 4, 4), lit("-"), repeat(h, 4, 4), lit("-"),
              repeat(h, 12, 12)});
}

// A DNS label of 1..max_len letters, digits and inner hyphens.
ExprPtr label(int32_t max_len) {
  return seq({alnum(), optional(seq({repeat(alnum_dash(), 0, max_len - 2), alnum()}))});
}

// full: /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+
// [a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i; fast: /^[a-z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?
// (?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i. Generated: full's local part, two or more labels of
// at most 63 characters (at most 8 labels).
ExprPtr email() {
  const ExprPtr atom = plus(alt({alnum(), chars("!#$%&'*+/=?^_`{|}~-")}));
  return seq({atom, star(seq({lit("."), atom})), lit("@"), label(63), repeat(seq({lit("."), label(63)}), 1, 7)});
}

// /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/ (both modes).
ExprPtr ipv4() {
  const ExprPtr octet = alt({seq({lit("25"), byte_range('0', '5')}), seq({lit("2"), byte_range('0', '4'), d()}),
                             seq({lit("1"), d(), d()}), seq({byte_range('1', '9'), d()}), d()});
  return seq({octet, repeat(seq({lit("."), octet}), 3, 3)});
}

// ajv-formats' ipv6 regex (both modes) accepts the eight-group form and every "::" form with k groups
// before and j after, k + j <= 7 (plus embedded IPv4 forms, not generated here).
ExprPtr ipv6() {
  const ExprPtr h = repeat(hex(), 1, 4);
  std::vector<ExprPtr> forms;
  forms.push_back(seq({h, repeat(seq({lit(":"), h}), 7, 7)}));
  for (int32_t k = 0; k <= 7; ++k) {
    const ExprPtr before = k == 0 ? lit(":") : repeat(seq({h, lit(":")}), k, k);
    const int32_t room = 7 - k;
    const ExprPtr after = room == 0 ? lit(":") : alt({lit(":"), repeat(seq({lit(":"), h}), 1, room)});
    forms.push_back(seq({before, after}));
  }
  return alt(std::move(forms));
}

// /^(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?$/i
// (both modes). Generated: 1..8 labels of at most 30 characters (so at most 247 in all), no final dot.
ExprPtr hostname() { return seq({label(30), repeat(seq({lit("."), label(30)}), 0, 7)}); }

// full: /\/|:/ and the RFC 3986 regex; fast: /^(?:[a-z][a-z0-9+\-.]*:)(?:\/?\/)?[^\s]*$/i.
// Generated: scheme "://" host [":" port] ("/" segment)* ["?" query] ["#" fragment], the host a run of
// unreserved characters, segments of pchar (unreserved, sub-delims, ':' '@', %XX).
ExprPtr uri() {
  const ExprPtr scheme = seq({chars("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
                              repeat(alt({alnum(), chars("+-.")}), 0, 31)});
  const ExprPtr unreserved = alt({alnum(), chars("-._~")});
  const ExprPtr pct = seq({lit("%"), hex(), hex()});
  const ExprPtr pchar = alt({unreserved, chars("!$&'()*+,;=:@"), pct});
  const ExprPtr qchar = alt({pchar, chars("/?")});
  return seq({scheme, lit("://"), plus(unreserved), optional(seq({lit(":"), repeat(d(), 1, 5)})),
              star(seq({lit("/"), star(pchar)})), optional(seq({lit("?"), star(qchar)})),
              optional(seq({lit("#"), star(qchar)}))});
}

// /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/ (both modes).
ExprPtr byte_format() {
  const ExprPtr b = alt({alnum(), chars("+/")});
  return seq({star(repeat(b, 4, 4)), optional(alt({seq({repeat(b, 2, 2), lit("==")}), seq({repeat(b, 3, 3), lit("=")})}))});
}

// /^P(?!$)((\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?|(\d+W)?)$/ (both modes); numbers of at
// most 9 digits.
ExprPtr duration() {
  const ExprPtr n = repeat(d(), 1, 9);
  auto unit = [&](std::string_view u) { return seq({n, lit(u)}); };
  // Non-empty runs of the optional parts a? b? c?, in order.
  auto some = [&](const ExprPtr& a, const ExprPtr& b, const ExprPtr& c) {
    return alt({seq({a, optional(b), optional(c)}), seq({b, optional(c)}), c});
  };
  const ExprPtr date_part = some(unit("Y"), unit("M"), unit("D"));
  const ExprPtr time_part = seq({lit("T"), some(unit("H"), unit("M"), unit("S"))});
  return seq({lit("P"), alt({seq({date_part, optional(time_part)}), time_part, unit("W")})});
}

// /^(?:\/(?:[^~/]|~0|~1)*)*$/ (both modes).
ExprPtr json_pointer() {
  CodePointSet special;
  special.add('~', '~');
  special.add('/', '/');
  const CodePointSet plain = special.complement();
  return star(seq({lit("/"), star(alt({utf8_class(plain), lit("~0"), lit("~1")}))}));
}

}  // namespace

FormatKind format_kind(std::string_view name) {
  static constexpr std::string_view kString[] = {"date",  "time",  "date-time", "iso-time", "iso-date-time",
                                                 "uuid",  "email", "ipv4",      "ipv6",     "hostname",
                                                 "uri",   "uri-reference", "byte", "duration", "json-pointer",
                                                 "password", "binary"};
  static constexpr std::string_view kNumber[] = {"int32", "int64", "float", "double"};
  for (const std::string_view s : kString) {
    if (s == name) return FormatKind::string;
  }
  for (const std::string_view s : kNumber) {
    if (s == name) return FormatKind::number;
  }
  return FormatKind::unknown;
}

Result<ExprPtr> string_format(std::string_view name) {
  if (name == "date") return date();
  if (name == "time" || name == "iso-time") return time();  // iso-time: the same with the zone optional
  if (name == "date-time" || name == "iso-date-time") return seq({date(), lit("T"), time()});
  if (name == "uuid") return uuid();
  if (name == "email") return email();
  if (name == "ipv4") return ipv4();
  if (name == "ipv6") return ipv6();
  if (name == "hostname") return hostname();
  // uri-reference's regex accepts every absolute URI its uri regex does.
  if (name == "uri" || name == "uri-reference") return uri();
  if (name == "byte") return byte_format();
  if (name == "duration") return duration();
  if (name == "json-pointer") return json_pointer();
  if (name == "password" || name == "binary") return ExprPtr();  // any string: no constraint
  return make_error(ErrorCode::invalid_argument, "format '{}' is not supported in response schemas", name);
}

}  // namespace llaisys::grammar::json_schema_detail
