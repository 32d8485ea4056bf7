#include "output/value.hpp"

#include <algorithm>

namespace cmt::output {

namespace {

const char* value_kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::null: return "null";
    case Value::Kind::boolean: return "a flag";
    case Value::Kind::integer: return "a whole number";
    case Value::Kind::real: return "a real number";
    case Value::Kind::text: return "text";
    case Value::Kind::list: return "a list";
    case Value::Kind::record: return "a record";
  }
  return "?";
}

[[noreturn]] void wrong_kind(Value::Kind is, const char* wanted) {
  throw std::logic_error(std::string("output::Value: ") + value_kind_name(is) + " read as " + wanted);
}

}  // namespace

Value::Value(List items) : m_data(std::make_shared<const List>(std::move(items))) {}
Value::Value(Record record) : m_data(std::make_shared<const Record>(std::move(record))) {}

bool Value::as_bool() const {
  if (kind() != Kind::boolean) wrong_kind(kind(), "a flag");
  return std::get<bool>(m_data);
}

int64_t Value::as_int() const {
  if (kind() != Kind::integer) wrong_kind(kind(), "a whole number");
  return std::get<int64_t>(m_data);
}

double Value::as_real() const {
  if (kind() != Kind::real) wrong_kind(kind(), "a real number");
  return std::get<double>(m_data);
}

const std::string& Value::as_text() const {
  if (kind() != Kind::text) wrong_kind(kind(), "text");
  return std::get<std::string>(m_data);
}

const List& Value::as_list() const {
  if (kind() != Kind::list) wrong_kind(kind(), "a list");
  return *std::get<std::shared_ptr<const List>>(m_data);
}

const Record& Value::as_record() const {
  if (kind() != Kind::record) wrong_kind(kind(), "a record");
  return *std::get<std::shared_ptr<const Record>>(m_data);
}

double Value::as_number() const {
  if (kind() == Kind::integer) return static_cast<double>(as_int());
  if (kind() != Kind::real) wrong_kind(kind(), "a number");
  return as_real();
}

bool operator==(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::null: return true;
    case Value::Kind::boolean: return a.as_bool() == b.as_bool();
    case Value::Kind::integer: return a.as_int() == b.as_int();
    case Value::Kind::real: return a.as_real() == b.as_real();
    case Value::Kind::text: return a.as_text() == b.as_text();
    case Value::Kind::list: return a.as_list() == b.as_list();
    case Value::Kind::record: {
      const auto& x = a.as_record().fields();
      const auto& y = b.as_record().fields();
      return std::equal(x.begin(), x.end(), y.begin(), y.end(),
                        [](const Field& f, const Field& g) { return f.name == g.name && f.value == g.value; });
    }
  }
  return false;
}

Record::Record(std::initializer_list<Field> fields) {
  for (const Field& f : fields) set(f.name, f.value);
}

Record& Record::set(std::string name, Value value) {
  for (Field& f : m_fields)
    if (f.name == name) {
      f.value = std::move(value);
      return *this;
    }
  m_fields.push_back({std::move(name), std::move(value)});
  return *this;
}

const Value* Record::find(std::string_view name) const {
  for (const Field& f : m_fields)
    if (f.name == name) return &f.value;
  return nullptr;
}

const Value& Record::at(std::string_view name) const {
  if (const Value* v = find(name)) return *v;
  throw std::out_of_range("output::Record: no field " + std::string(name));
}

}  // namespace cmt::output
