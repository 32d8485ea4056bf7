// A header of machine code: the cubins `tune` timed (and the runtime library: the generic defaults and
// the header's own kernels, as cubins for the tables' architectures and PTX for any other GPU), each
// LZ4-packed as base64 text, loaded with the CUDA runtime on the first call that needs them. Pasted
// by `cm-tune export` inside detail; the generated tables that follow it (k_images, k_functions)
// name what is loaded, and its kernel_function and helper_function call code_function here.

/// One image: a cubin for one architecture ("sm_90"; "sm_90a" runs on compute capability 9.0 alone),
/// or PTX ("compute_75"), which the driver compiles for any GPU of that capability or newer.
struct CodeImage {
  const char* arch;
  unsigned raw_bytes;   // its size unpacked
  const char* hash;     // of the bytes (32 hex digits, XXH3-128), as `cm-tune export --check` compares them
  const char* text;     // base64 of the LZ4 block of the bytes
};

/// One function of the machine code: its symbol, and the images that hold it (image_count indices
/// into the image lists, from first_image).
struct CodeFunction {
  const char* symbol;
  int first_image;
  int image_count;
};

/// Whether text starts with prefix.
inline bool starts_with_text(const char* text, const char* prefix) {
  while (*prefix != '\0' && *text == *prefix) ++text, ++prefix;
  return *prefix == '\0';
}

/// How well an image suits a GPU of compute capability major.minor: 3 its exact cubin, 2 a cubin of
/// the same major and a lower minor (which runs there), 1 PTX the driver compiles for it, 0 none.
inline int image_rank(const char* arch, int major, int minor) {
  int prefix = 0;
  if (starts_with_text(arch, "sm_")) prefix = 3;
  else if (starts_with_text(arch, "compute_")) prefix = 8;
  else return 0;
  int number = 0;
  const char* p = arch + prefix;
  for (; *p >= '0' && *p <= '9'; ++p) number = number * 10 + (*p - '0');
  const bool specific = *p == 'a';   // arch-specific features: that capability alone
  const int arch_major = number / 10, arch_minor = number % 10;
  if (prefix == 8) return number <= major * 10 + minor && !specific ? 1 : 0;
  if (arch_major != major) return 0;
  if (arch_minor == minor) return 3;
  return !specific && arch_minor < minor ? 2 : 0;
}

/// Base64 text back into bytes; false for a character outside the alphabet.
inline bool base64_unpack(const char* text, std::string* out) {
  unsigned bits = 0;
  int count = 0;
  for (const char* p = text; *p != '\0' && *p != '='; ++p) {
    const char c = *p;
    int v = -1;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    if (v < 0) return false;
    bits = (bits << 6) | static_cast<unsigned>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out->push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  return true;
}

/// The length field of an LZ4 sequence: the token's 4 bits, and while they sum to 15 + k*255, more bytes.
inline bool lz4_length(const unsigned char* in, size_t size, size_t* i, size_t* length) {
  if (*length != 15) return true;
  unsigned char b = 255;
  while (b == 255) {
    if (*i >= size) return false;
    b = in[(*i)++];
    *length += b;
  }
  return true;
}

/// An LZ4 block (the format of liblz4's LZ4_compress_HC) unpacked into exactly out_size bytes.
inline bool lz4_unpack(const std::string& block, char* out, size_t out_size) {
  const unsigned char* in = reinterpret_cast<const unsigned char*>(block.data());
  const size_t size = block.size();
  size_t i = 0, o = 0;
  while (i < size) {
    const unsigned token = in[i++];
    size_t literals = token >> 4;
    if (!lz4_length(in, size, &i, &literals) || literals > size - i || literals > out_size - o) return false;
    if (literals != 0) memcpy(out + o, in + i, literals);
    i += literals;
    o += literals;
    if (i == size) break;   // the last sequence holds literals only
    if (size - i < 2) return false;
    const size_t offset = static_cast<size_t>(in[i]) | (static_cast<size_t>(in[i + 1]) << 8);
    i += 2;
    size_t match = token & 15;
    if (offset == 0 || offset > o || !lz4_length(in, size, &i, &match)) return false;
    match += 4;
    if (match > out_size - o) return false;
    for (size_t k = 0; k < match; ++k, ++o) out[o] = out[o - offset];   // may overlap: byte by byte
  }
  return o == out_size;
}

/// One image once loaded (state 1), with the runtime's library of it.
struct LoadedImage {
  std::atomic<int> state;
  cudaLibrary_t library;
};

/// The libraries this program has loaded from the header's images so far (each image at most once).
inline std::atomic<int>& library_loads() {
  static std::atomic<int> count(0);
  return count;
}

/// Loads an image as a library (the runtime copies the bytes; the unpacked buffer is freed here).
/// Thread-safe: the first caller loads it, the others wait and use its library.
inline cudaError_t load_image(const CodeImage& image, LoadedImage* slot, cudaLibrary_t* library) {
  if (slot->state.load(std::memory_order_acquire) == 1) {
    *library = slot->library;
    return cudaSuccess;
  }
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (slot->state.load(std::memory_order_acquire) != 1) {
    std::string block, bytes(image.raw_bytes, '\0');
    if (!base64_unpack(image.text, &block) || !lz4_unpack(block, &bytes[0], bytes.size()))
      return cudaErrorInvalidKernelImage;
    cudaLibrary_t loaded = 0;
    const cudaError_t err = cudaLibraryLoadData(&loaded, bytes.data(), 0, 0, 0, 0, 0, 0);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      return err;
    }
    slot->library = loaded;
    library_loads().fetch_add(1);
    slot->state.store(1, std::memory_order_release);
  }
  *library = slot->library;
  return cudaSuccess;
}

/// The devices whose functions are remembered; a higher ordinal looks its function up at every call.
constexpr int k_code_devices = 64;

/// Function `function` on `device`: from the image that suits the device best (image_rank), loaded on
/// the first call that needs it; cudaErrorNoKernelImageForDevice where no image runs there. `cache`
/// holds k_code_devices rows of function_count handles.
inline cudaError_t code_function(int device, int function, const CodeFunction* functions, int function_count,
                                 const int* image_lists, const CodeImage* images, LoadedImage* loaded,
                                 std::atomic<const void*>* cache, const void** fn) {
  *fn = 0;
  if (function < 0 || function >= function_count) return cudaErrorInvalidValue;
  std::atomic<const void*>* slot =
      device >= 0 && device < k_code_devices ? &cache[device * function_count + function] : 0;
  if (slot != 0) {
    *fn = slot->load(std::memory_order_acquire);
    if (*fn != 0) return cudaSuccess;
  }
  int major = 0, minor = 0;
  cudaError_t err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  if (err != cudaSuccess) return err;
  const CodeFunction& f = functions[function];
  int best = -1, best_rank = 0;
  for (int i = 0; i < f.image_count; ++i) {
    const int image = image_lists[f.first_image + i];
    const int rank = image_rank(images[image].arch, major, minor);
    if (rank > best_rank) best = image, best_rank = rank;
  }
  if (best < 0) return cudaErrorNoKernelImageForDevice;
  cudaLibrary_t library = 0;
  err = load_image(images[best], &loaded[best], &library);
  if (err != cudaSuccess) return err;
  cudaKernel_t kernel = 0;
  err = cudaLibraryGetKernel(&kernel, library, f.symbol);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return err;
  }
  *fn = reinterpret_cast<const void*>(kernel);
  if (slot != 0) slot->store(*fn, std::memory_order_release);
  return cudaSuccess;
}

/// The machine code holds sm_90a cubins wherever it holds TMA kernels: they run on compute capability
/// 9.0 whatever the program's own device code was built for.
inline cudaError_t device_code_has_sm90a(int* built) {
  *built = 1;
  return cudaSuccess;
}
