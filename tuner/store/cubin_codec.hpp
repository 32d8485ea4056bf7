// How the compile cache stores a cubin: one zstd frame of it. Rows that cm-tune wrote before it
// compressed hold the cubin itself (an ELF image); the first four bytes tell the two apart.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace cmt {

/// A stored cubin that does not decompress: a damaged frame, a wrong checksum or size.
class CubinCodecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The compression level of pack_cubin. On the quick preset's cubins (59 KB on average) 9 takes
/// 3.3 ms per cubin and stores 4.8x less; 19 stores 9% less again but takes 40 ms, on the thread
/// that owns the database. Decompressing takes 0.05 ms either way.
constexpr int k_cubin_zstd_level = 9;

/// The blob to store for a cubin: one zstd frame with its size and a checksum; empty stays empty.
std::vector<char> pack_cubin(const std::vector<char>& cubin);

/// Whether a stored blob is a zstd frame (magic 0x28B52FFD), not a cubin stored as it is.
bool is_packed_cubin(std::string_view stored);

/// The cubin a stored blob holds: a zstd frame decompressed, anything else as it is (a row written
/// before cubins were compressed). Throws CubinCodecError naming what is wrong with the frame.
std::vector<char> unpack_cubin(const std::vector<char>& stored);

/// The size of the cubin a stored blob holds, read from the first bytes of the blob (a zstd frame's
/// header holds it; 18 bytes are enough), without decompressing; stored_size for a blob stored as it
/// is, -1 when the header is damaged.
int64_t unpacked_cubin_size(std::string_view stored_prefix, int64_t stored_size);

}  // namespace cmt
