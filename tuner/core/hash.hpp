// Content hashing for cache and trial keys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cmt {

/// Incremental 128-bit hash (XXH3). Every field is length-prefixed, so ("ab","c") and ("a","bc")
/// never collide.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  /// Adds one delimited field.
  Hasher& field(std::string_view bytes);
  Hasher& field(int64_t value);
  /// 32 lowercase hex digits.
  std::string hex() const;

 private:
  void* m_state;
};

/// One-shot hash of a byte string, 32 hex digits.
std::string hash_hex(std::string_view bytes);

}  // namespace cmt
