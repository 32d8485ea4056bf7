#include "export/image_codec.hpp"

#include <lz4.h>
#include <lz4hc.h>
#include <stdexcept>

namespace cmt {

namespace {

constexpr char k_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += k_alphabet[(v >> 18) & 63];
    out += k_alphabet[(v >> 12) & 63];
    out += k_alphabet[(v >> 6) & 63];
    out += k_alphabet[v & 63];
  }
  if (i < bytes.size()) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += k_alphabet[(v >> 18) & 63];
    out += k_alphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? k_alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=') : 0;
    int v[4];
    for (int j = 0; j < 4; ++j) {
      v[j] = j >= 4 - pad ? 0 : base64_value(text[i + static_cast<size_t>(j)]);
      if (v[j] < 0) return std::nullopt;
    }
    const unsigned bits = (static_cast<unsigned>(v[0]) << 18) | (static_cast<unsigned>(v[1]) << 12) |
                          (static_cast<unsigned>(v[2]) << 6) | static_cast<unsigned>(v[3]);
    out += static_cast<char>((bits >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((bits >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(bits & 0xff);
  }
  return out;
}

PackedImage pack_image(const std::vector<char>& bytes) {
  if (bytes.size() > static_cast<size_t>(LZ4_MAX_INPUT_SIZE))
    throw std::length_error("pack_image: an image over LZ4's input limit");
  // No bytes: the one-token block (no literals), which liblz4 is not asked for (it reads a null source).
  std::string block(bytes.empty() ? 1 : static_cast<size_t>(LZ4_compressBound(static_cast<int>(bytes.size()))), '\0');
  if (!bytes.empty()) {
    const int size = LZ4_compress_HC(bytes.data(), block.data(), static_cast<int>(bytes.size()),
                                     static_cast<int>(block.size()), LZ4HC_CLEVEL_MAX);
    if (size <= 0) throw std::runtime_error("pack_image: LZ4_compress_HC failed");
    block.resize(static_cast<size_t>(size));
  }
  PackedImage out;
  out.text = base64_encode(block);
  out.raw_bytes = bytes.size();
  out.packed_bytes = block.size();
  return out;
}

std::optional<std::vector<char>> unpack_image(std::string_view text, size_t raw_bytes) {
  const auto block = base64_decode(text);
  if (!block || raw_bytes > static_cast<size_t>(LZ4_MAX_INPUT_SIZE)) return std::nullopt;
  std::vector<char> out(raw_bytes);
  if (raw_bytes == 0) return *block == std::string(1, '\0') ? std::optional(out) : std::nullopt;
  const int size = LZ4_decompress_safe(block->data(), out.data(), static_cast<int>(block->size()),
                                       static_cast<int>(raw_bytes));
  if (size != static_cast<int>(raw_bytes)) return std::nullopt;
  return out;
}

}  // namespace cmt
