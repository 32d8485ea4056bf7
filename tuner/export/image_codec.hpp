// How an exported header carries machine code: each image (a cubin, or PTX) LZ4-packed (liblz4's
// high-compression mode) and written as base64 text, which compilers read as fast as any string
// literal. The header unpacks it with its own decoder (export/runtime/image_loader.h); unpack_image
// is the same transformation for the tool's side (`export --check`, the tests).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmt {

/// One image as the header holds it: base64 of the LZ4 block of its bytes.
struct PackedImage {
  std::string text;             // base64
  size_t raw_bytes = 0;         // the image's size
  size_t packed_bytes = 0;      // the LZ4 block's size (before base64)
};

PackedImage pack_image(const std::vector<char>& bytes);

/// The image's bytes back, or nullopt when the text is not base64 of an LZ4 block of raw_bytes bytes.
std::optional<std::vector<char>> unpack_image(std::string_view text, size_t raw_bytes);

/// Base64 (RFC 4648, with padding) of bytes, and back (nullopt for text that is not base64).
std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace cmt
