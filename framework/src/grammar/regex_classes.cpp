#include "regex_classes.hpp"

#include <memory>
#include <string>

#include <unicode/uchar.h>
#include <unicode/uset.h>

namespace llaisys::grammar::regex_detail {

const CodePointSet& digit_set() {
  static const CodePointSet s = [] {
    CodePointSet d;
    d.add('0', '9');
    return d;
  }();
  return s;
}

const CodePointSet& word_set() {
  static const CodePointSet s = [] {
    CodePointSet w;
    w.add('0', '9');
    w.add('A', 'Z');
    w.add('_', '_');
    w.add('a', 'z');
    return w;
  }();
  return s;
}

const CodePointSet& space_set() {
  static const CodePointSet s = [] {
    CodePointSet w;
    w.add(0x09, 0x0D);  // TAB LF VT FF CR
    w.add(0x20, 0x20);
    w.add(0xA0, 0xA0);
    w.add(0x1680, 0x1680);
    w.add(0x2000, 0x200A);
    w.add(0x2028, 0x2029);
    w.add(0x202F, 0x202F);
    w.add(0x205F, 0x205F);
    w.add(0x3000, 0x3000);
    w.add(0xFEFF, 0xFEFF);
    return w;
  }();
  return s;
}

const CodePointSet& dot_set() {
  static const CodePointSet s = [] {
    CodePointSet terminators;
    terminators.add(0x0A, 0x0A);
    terminators.add(0x0D, 0x0D);
    terminators.add(0x2028, 0x2029);
    return terminators.complement();
  }();
  return s;
}

std::optional<CodePointSet> general_category(std::string_view name) {
  // ICU matches property names loosely ("letter", "L e t t e r"); ECMAScript does not. Look the value
  // up, then accept it only if `name` is exactly one of its aliases.
  const std::string key(name);
  const int32_t value = u_getPropertyValueEnum(UCHAR_GENERAL_CATEGORY_MASK, key.c_str());
  if (value == UCHAR_INVALID_CODE) return std::nullopt;
  bool exact = false;
  for (int choice = 0; choice < 8 && !exact; ++choice) {
    const char* alias =
        u_getPropertyValueName(UCHAR_GENERAL_CATEGORY_MASK, value, static_cast<UPropertyNameChoice>(choice));
    exact = alias != nullptr && key == alias;
  }
  if (!exact) return std::nullopt;

  UErrorCode err = U_ZERO_ERROR;
  std::unique_ptr<USet, decltype(&uset_close)> set(uset_openEmpty(), &uset_close);
  uset_applyIntPropertyValue(set.get(), UCHAR_GENERAL_CATEGORY_MASK, value, &err);
  if (U_FAILURE(err)) return std::nullopt;
  CodePointSet out;
  const int32_t items = uset_getItemCount(set.get());
  for (int32_t i = 0; i < items; ++i) {
    UChar32 lo = 0;
    UChar32 hi = 0;
    const int32_t string_length = uset_getItem(set.get(), i, &lo, &hi, nullptr, 0, &err);
    if (U_FAILURE(err)) return std::nullopt;
    if (string_length == 0) out.add(static_cast<uint32_t>(lo), static_cast<uint32_t>(hi));
  }
  return out;
}

}  // namespace llaisys::grammar::regex_detail
