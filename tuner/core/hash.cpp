#include "core/hash.hpp"

#include <fmt/format.h>
#include <xxhash.h>

namespace cmt {

Hasher::Hasher() : m_state(XXH3_createState()) { XXH3_128bits_reset(static_cast<XXH3_state_t*>(m_state)); }

Hasher::~Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(m_state)); }

Hasher& Hasher::field(std::string_view bytes) {
  auto* state = static_cast<XXH3_state_t*>(m_state);
  const uint64_t length = bytes.size();
  XXH3_128bits_update(state, &length, sizeof length);
  XXH3_128bits_update(state, bytes.data(), bytes.size());
  return *this;
}

Hasher& Hasher::field(int64_t value) { return field(std::to_string(value)); }

std::string Hasher::hex() const {
  const XXH128_hash_t h = XXH3_128bits_digest(static_cast<XXH3_state_t*>(m_state));
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

std::string hash_hex(std::string_view bytes) {
  Hasher h;
  h.field(bytes);
  return h.hex();
}

}  // namespace cmt
