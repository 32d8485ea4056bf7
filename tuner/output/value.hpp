// What a command reports, as data: scalars (null, a flag, a whole number, a real number, text),
// lists, and records of named fields. Commands build these; the printers (output/printers.hpp)
// render them. Nothing here knows how a number was measured.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace cmt::output {

class Value;
class Record;
/// Values in order.
using List = std::vector<Value>;

/// One value: null, a flag, a whole number, a real number, text, a list or a record. Copies share
/// their lists and records, which never change once inside a value.
class Value {
 public:
  enum class Kind { null, boolean, integer, real, text, list, record };

  /// Null.
  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool flag) : m_data(flag) {}
  /// A whole number; std::out_of_range for an unsigned one past int64_t's range.
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Value(T number) : m_data(whole(number)) {}
  Value(double number) : m_data(number) {}
  Value(std::string text) : m_data(std::move(text)) {}
  Value(std::string_view text) : m_data(std::string(text)) {}
  Value(const char* text) : m_data(std::string(text)) {}
  Value(List items);
  Value(Record record);
  /// Null when empty, else the value.
  template <class T>
  Value(const std::optional<T>& maybe) : Value(maybe ? Value(*maybe) : Value()) {}
  /// A list of the elements.
  template <class T>
  Value(const std::vector<T>& items) : Value(List(items.begin(), items.end())) {}
  /// A record of the entries, in key order.
  template <class T>
  Value(const std::map<std::string, T>& entries);

  /// What the value is.
  Kind kind() const { return static_cast<Kind>(m_data.index()); }
  /// Whether it is null.
  bool is_null() const { return kind() == Kind::null; }
  /// The value of that kind; std::logic_error for a value of another kind.
  bool as_bool() const;
  int64_t as_int() const;
  double as_real() const;
  const std::string& as_text() const;
  const List& as_list() const;
  const Record& as_record() const;
  /// A whole or a real number as a double; std::logic_error for any other kind.
  double as_number() const;

  /// Same kind and equal contents (records: the same fields in the same order).
  friend bool operator==(const Value& a, const Value& b);
  friend bool operator!=(const Value& a, const Value& b) { return !(a == b); }

 private:
  template <class T>
  static int64_t whole(T number) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t))
      if (number > static_cast<T>(std::numeric_limits<int64_t>::max()))
        throw std::out_of_range("output::Value: a whole number past int64_t's range");
    return static_cast<int64_t>(number);
  }
  // In Kind's order.
  std::variant<std::monostate, bool, int64_t, double, std::string, std::shared_ptr<const List>,
               std::shared_ptr<const Record>>
      m_data;
};

/// A named value in a record.
struct Field {
  std::string name;
  Value value;
};

/// Named fields in the order they were set; a name appears once. The JSON printer lists them in name
/// order (as cm-tune's --json always has), the other printers in this order.
class Record {
 public:
  Record() = default;
  Record(std::initializer_list<Field> fields);
  /// Sets `name` to `value`: a new field last, or the value of the field already there. Returns *this.
  Record& set(std::string name, Value value);
  /// The field's value; nullptr when the record has none of that name.
  const Value* find(std::string_view name) const;
  /// The field's value; std::out_of_range when the record has none of that name.
  const Value& at(std::string_view name) const;
  /// The fields, in the order they were first set.
  const std::vector<Field>& fields() const { return m_fields; }
  /// Whether it has no fields, and how many it has.
  bool empty() const { return m_fields.empty(); }
  size_t size() const { return m_fields.size(); }

 private:
  std::vector<Field> m_fields;
};

template <class T>
Value::Value(const std::map<std::string, T>& entries) {
  Record record;
  for (const auto& [name, value] : entries) record.set(name, Value(value));
  *this = Value(std::move(record));
}

}  // namespace cmt::output
