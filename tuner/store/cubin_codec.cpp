#include "store/cubin_codec.hpp"

#include <fmt/format.h>
#include <memory>
#include <zstd.h>

namespace cmt {

namespace {

/// No cubin is this large (the largest of the default preset is under 1 MiB): a frame header that
/// claims more is damaged, and is refused before anything is allocated.
constexpr unsigned long long k_max_cubin_bytes = 1ull << 30;

struct CctxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

void check(size_t result, const char* call) {
  if (ZSTD_isError(result)) throw CubinCodecError(fmt::format("zstd {}: {}", call, ZSTD_getErrorName(result)));
}

}  // namespace

std::vector<char> pack_cubin(const std::vector<char>& cubin) {
  if (cubin.empty()) return {};
  // One context per call: put_binary runs on one thread, and a context costs little next to a compile.
  std::unique_ptr<ZSTD_CCtx, CctxDeleter> cctx(ZSTD_createCCtx());
  if (!cctx) throw std::bad_alloc();
  check(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, k_cubin_zstd_level), "setParameter");
  check(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1), "setParameter");
  check(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1), "setParameter");
  std::vector<char> out(ZSTD_compressBound(cubin.size()));
  const size_t size = ZSTD_compress2(cctx.get(), out.data(), out.size(), cubin.data(), cubin.size());
  check(size, "compress2");
  out.resize(size);
  return out;
}

bool is_packed_cubin(std::string_view stored) {
  return stored.size() >= 4 && static_cast<unsigned char>(stored[0]) == 0x28 &&
         static_cast<unsigned char>(stored[1]) == 0xB5 && static_cast<unsigned char>(stored[2]) == 0x2F &&
         static_cast<unsigned char>(stored[3]) == 0xFD;
}

std::vector<char> unpack_cubin(const std::vector<char>& stored) {
  if (!is_packed_cubin({stored.data(), stored.size()})) return stored;
  const unsigned long long size = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (size == ZSTD_CONTENTSIZE_ERROR) throw CubinCodecError("its zstd frame header is damaged");
  if (size == ZSTD_CONTENTSIZE_UNKNOWN) throw CubinCodecError("its zstd frame does not state its size");
  if (size == 0 || size > k_max_cubin_bytes)
    throw CubinCodecError(fmt::format("its zstd frame header states {} bytes", size));
  std::vector<char> cubin(static_cast<size_t>(size));
  const size_t got = ZSTD_decompress(cubin.data(), cubin.size(), stored.data(), stored.size());
  if (ZSTD_isError(got)) throw CubinCodecError(fmt::format("zstd: {}", ZSTD_getErrorName(got)));
  if (got != size)
    throw CubinCodecError(fmt::format("its zstd frame holds {} bytes, its header states {}", got, size));
  return cubin;
}

int64_t unpacked_cubin_size(std::string_view stored_prefix, int64_t stored_size) {
  if (!is_packed_cubin(stored_prefix)) return stored_size;
  const unsigned long long size = ZSTD_getFrameContentSize(stored_prefix.data(), stored_prefix.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > k_max_cubin_bytes) return -1;
  return static_cast<int64_t>(size);
}

}  // namespace cmt
