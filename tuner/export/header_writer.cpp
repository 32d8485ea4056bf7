#include "export/header_writer.hpp"

#include <algorithm>
#include <climits>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "core/dtype.hpp"
#include "core/embedded.hpp"
#include "core/error.hpp"
#include "export/dispatch.hpp"
#include "export/image_codec.hpp"
#include "space/space.hpp"
#include "record/ranking.hpp"

namespace cmt {

namespace {


/// Text safe inside a // comment: control characters (a newline would end the comment) become '?'.
std::string comment_text(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

/// A C string literal; octal escapes keep the output ASCII and unambiguous.
std::string c_string(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c >= 0x7f || ch == '?') {  // '?' too: no trigraphs
      out += fmt::format("\\{:03o}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

/// "namespace a { namespace b {" and the matching closing braces for "a::b".
std::pair<std::string, std::string> namespace_braces(const std::string& name_space) {
  std::string open, close;
  size_t start = 0;
  while (true) {
    const size_t end = name_space.find("::", start);
    const std::string part = name_space.substr(start, end == std::string::npos ? std::string::npos : end - start);
    open += fmt::format("namespace {} {{\n", part);
    close = fmt::format("}}  // namespace {}\n", part) + close;
    if (end == std::string::npos) break;
    start = end + 2;
  }
  return {open, close};
}

/// Macros a flattened source #defines, in order of first definition; undefined after the bundle so
/// that two versions of a helper never clash and nothing leaks into the includer's code.
std::vector<std::string> defined_macros(const std::string& text) {
  static const std::regex k_define(R"re(^\s*#\s*define\s+([A-Za-z_][A-Za-z0-9_]*).*$)re");
  std::vector<std::string> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, m, k_define) && std::find(out.begin(), out.end(), m[1].str()) == out.end())
      out.push_back(m[1].str());
  }
  return out;
}

}  // namespace

namespace {

/// The C++20 keywords and alternative tokens: none can name a namespace.
bool is_cpp_keyword(const std::string& word) {
  static const std::set<std::string> k_keywords = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
      "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
      "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
      "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
      "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
      "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
      "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename",
      "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"};
  return k_keywords.count(word) > 0;
}

/// The header's #include lines: those of export/runtime/header_includes.h, which the build also
/// preprocesses to list their macros.
const std::vector<std::string>& header_include_lines() {
  static const std::vector<std::string> k_lines = [] {
    std::vector<std::string> out;
    for (const EmbeddedFile& f : embedded_header_runtime()) {
      if (f.name != "header_includes.h") continue;
      std::istringstream lines{std::string(f.text)};
      std::string line;
      while (std::getline(lines, line))
        if (line.rfind("#include ", 0) == 0) out.push_back(line);
    }
    if (out.empty()) throw std::logic_error("export/runtime/header_includes.h is not embedded or includes nothing");
    return out;
  }();
  return k_lines;
}

/// The files the header includes, for messages: "<cuda_runtime.h> or another of the header's includes".
std::string header_include_names() {
  const auto& lines = header_include_lines();
  const std::string first = lines.front().substr(9);
  return lines.size() == 1 ? first : first + " or another of the header's includes";
}

/// The lines of one list of embedded_header_macros (header_macros.txt: the macros the header's
/// includes define; header_globals.txt: the names they declare at global scope), sorted.
std::vector<std::string_view> embedded_name_list(std::string_view file) {
  std::vector<std::string_view> out;
  for (const EmbeddedFile& f : embedded_header_macros()) {
    if (f.name != file) continue;
    std::string_view text = f.text;
    while (!text.empty()) {
      const size_t end = std::min(text.find('\n'), text.size());
      if (end > 0) out.push_back(text.substr(0, end));
      text.remove_prefix(std::min(end + 1, text.size()));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

const std::vector<std::string_view>& header_include_macros() {
  static const std::vector<std::string_view> k_macros = embedded_name_list("header_macros.txt");
  return k_macros;
}

const std::vector<std::string_view>& header_include_globals() {
  static const std::vector<std::string_view> k_globals = embedded_name_list("header_globals.txt");
  return k_globals;
}

/// Why one ::-separated part cannot name a namespace, or nullopt when it can. `global`: the part is
/// declared at global scope, where every name starting with an underscore is the implementation's.
std::optional<std::string> namespace_part_problem(const std::string& part, bool global) {
  static const std::regex k_identifier(R"re(^[A-Za-z_][A-Za-z0-9_]*$)re");
  if (part.empty()) return std::string("is empty");
  if (!std::regex_match(part, k_identifier))
    return std::string("is not a C++ identifier (a letter or _, then letters, digits and _)");
  if (is_cpp_keyword(part)) return std::string("is a C++ keyword");
  if (part.find("__") != std::string::npos) return std::string("is reserved to the compiler (it contains __)");
  if (part.size() > 1 && part[0] == '_' && part[1] >= 'A' && part[1] <= 'Z')
    return std::string("is reserved to the compiler (_ followed by an uppercase letter)");
  if (global && part[0] == '_') return std::string("is reserved to the compiler (_ at global scope)");
  if (std::binary_search(header_include_macros().begin(), header_include_macros().end(), std::string_view(part)))
    return fmt::format("is a macro where the header is compiled (nvcc's own, or from {})", header_include_names());
  // At global scope it would clash with the declaration; nested, the kernels would find the
  // namespace where they mean the global name (threadIdx, min).
  if (std::binary_search(header_include_globals().begin(), header_include_globals().end(), std::string_view(part)))
    return fmt::format("is declared at global scope where the header is compiled (by nvcc, or {})",
                       header_include_names());
  return std::nullopt;
}

}  // namespace

namespace {

/// The function pointer type a kernel of the header is cast to: its arguments (11, 14 with the batch
/// strides, 15 with the problem count) over its element type; FP32 by the names of earlier headers.
std::string kernel_function_type(const ExportKernel& k) {
  const char* kind = k.takes_batch_count ? "BatchCountKernelFn" : k.batched ? "BatchedKernelFn" : "KernelFn";
  const DType storage = storage_of(k.dtype);
  if (storage == DType::f32) return kind;
  return fmt::format("Typed{}<{}>", kind, type_info(storage).c_type);
}

}  // namespace

std::optional<std::string> namespace_name_problem(const std::string& text) {
  size_t start = 0;
  for (bool global = true;; global = false) {
    const size_t end = text.find("::", start);
    const std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (part.empty() && !text.empty()) {
      if (start == 0) return std::string("starts with '::'");
      if (end == std::string::npos) return std::string("ends with '::'");
      return std::string("has an empty part between '::'");
    }
    if (const auto problem = namespace_part_problem(part, global)) return fmt::format("'{}' {}", part, *problem);
    if (end == std::string::npos) return std::nullopt;
    start = end + 2;
  }
}

bool valid_namespace_name(const std::string& text) { return !namespace_name_problem(text); }

void check_namespace_name(const std::string& text) {
  if (const auto problem = namespace_name_problem(text))
    throw UsageError(fmt::format("--namespace '{}': {}, so the header would not compile; give identifiers joined by ::",
                                 text, *problem));
}

std::string render_dispatch_tables(const ExportModel& model) {
  std::string out;
  out += "// ---- dispatch tables (generated) ----\n";
  out += "// The generic default kernel of each element type (rows: f32, f64, i32) and layout (columns: nn, nt, tn,\n";
  out += "// tt); -1: none, such calls are refused unless a tuned kernel serves them.\n";
  out += "constexpr int k_generic_kernels[k_dtype_count][4] = {\n";
  for (int d = 0; d < k_header_dtypes; ++d)
    out += fmt::format("    {{{}, {}, {}, {}}},  // {}\n", model.generic_kernels[d][0], model.generic_kernels[d][1],
                       model.generic_kernels[d][2], model.generic_kernels[d][3], dtype_name(static_cast<DType>(d)));
  out += "};\n";
  out += fmt::format("constexpr int k_kernel_count = {};\n", model.kernels.size());
  out += "constexpr KernelInfo k_kernels[k_kernel_count] = {\n";
  out += "    // name, source namespace, threads, tile_m, tile_n, dynamic_smem, grid_z, align_bytes, ld_multiple, layout,\n";
  // The opt-in classes are named where the header has kernels of them, so a header without any keeps
  // the tables of headers before classes existed.
  std::string classes;
  for (const TypeInfo& t : k_types)
    if (t.opt_in && std::any_of(model.kernels.begin(), model.kernels.end(), [&](const ExportKernel& k) {
          return k.dtype == t.dtype;
        }))
      classes += fmt::format(", {} {}", static_cast<int>(t.dtype), t.name);
  out += fmt::format("    // batched, problems per block (0: one, and the kernel takes no problem count), dtype (0 f32, 1 f64, "
                     "2 i32{})\n",
                     classes);
  for (size_t i = 0; i < model.kernels.size(); ++i) {
    const ExportKernel& k = model.kernels[i];
    bool generic = false;
    for (const auto& row : model.generic_kernels)
      generic = generic || std::find(std::begin(row), std::end(row), static_cast<int>(i)) != std::end(row);
    // Every field is written (tensor_maps too), so -Wextra finds no missing initializer.
    out += fmt::format("    {{{}, \"{}\", {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}},  // {}: {}{}[{}]\n",
                       c_string(k.name_expression), source_namespace(k.source_hash), k.shape.threads, k.shape.tile_m,
                       k.shape.tile_n, k.shape.dynamic_smem, k.shape.grid_z, k.requirements.align_bytes,
                       k.requirements.ld_multiple, layout_number(k.layout), k.batched ? 1 : 0,
                       k.takes_batch_count ? k.shape.problems_per_block : 0, static_cast<int>(k.dtype),
                       k.shape.tensor_maps != 0 ? 1 : 0, i, generic ? "generic default, " : "", k.template_name,
                       comment_text(k.params));
  }
  out += "};\n\n";
  for (size_t d = 0; d < model.devices.size(); ++d) {
    const ExportDevice& dev = model.devices[d];
    out += fmt::format("// {} (sm_{}{}, {} SMs)\n", comment_text(dev.name), dev.cc_major, dev.cc_minor, dev.sm_count);
    out += fmt::format("constexpr Entry k_entries_{}[] = {{\n", d);
    out += "    // {M, N, K, layout, batch, broadcast, dtype}, primary kernel, portable kernel (-1: none tuned, the\n";
    out += "    // generic default runs)\n";
    for (const auto& e : dev.entries) {
      const Problem& p = e.problem;
      out += fmt::format("    {{{{{}, {}, {}, {}, {}, {}, {}}}, {}, {}}},\n", p.m, p.n, p.k, layout_number(p.layout()),
                         p.batch, broadcast_number(p), static_cast<int>(p.dtype), e.primary, e.portable);
    }
    out += "};\n";
    out += fmt::format("constexpr KernelModel k_models_{}[] = {{\n", d);
    out += "    // kernel, blocks per SM, coefficients in us (fixed, per 1e6 multiply-adds, per 1e3 k steps, per 1e3 outputs),\n";
    out += "    // measured M, N, K ranges; fitted on n problems with rms relative error e\n";
    for (const auto& m : dev.models)
      out += fmt::format("    {{{}, {}, {{{:.17g}, {:.17g}, {:.17g}, {:.17g}}}, {}, {}, {}, {}, {}, {}}},  // n={} e={:.3f}\n",
                         m.kernel, m.blocks_per_sm, m.coef[0], m.coef[1], m.coef[2], m.coef[3], m.min_m, m.max_m, m.min_n,
                         m.max_n, m.min_k, m.max_k, m.points, m.rms_relative_error);
    if (dev.models.empty()) out += "    {0, 1, {0, 0, 0, 0}, 0, 0, 0, 0, 0, 0},  // unused: model_count is 0\n";
    out += "};\n";
  }
  out += fmt::format("\nconstexpr int k_device_table_count = {};\n", model.devices.size());
  out += "constexpr DeviceTable k_device_tables[k_device_table_count] = {\n";
  out += "    // name, cc major, cc minor, SM count, entries (sorted by problem), entry count, models, model count,\n";
  out += "    // memory bandwidth for split K's sum (bytes per us; 0: K is never split)\n";
  for (size_t d = 0; d < model.devices.size(); ++d) {
    const ExportDevice& dev = model.devices[d];
    out += fmt::format("    {{{}, {}, {}, {}, k_entries_{}, {}, k_models_{}, {}, {:.17g}}},\n", c_string(dev.name),
                       dev.cc_major, dev.cc_minor, dev.sm_count, d, dev.entries.size(), d, dev.models.size(),
                       dev.bytes_per_us);
  }
  out += "};\n\n";
  out += "// ---- end of dispatch tables ----\n";
  return out;
}

namespace {

const char* source_origin(const ExportSource& s) {
  if (s.from_database && s.from_templates_folder) return "the database and the templates folder (generic default)";
  return s.from_templates_folder ? "the templates folder (generic default)" : "the database";
}

/// A header of sources: kernel_function, the address of each kernel the program's device code holds.
std::string render_source_functions(const ExportModel& model) {
  std::string out;
  out += "/// The function of k_kernels[index] (cudaErrorInvalidValue for an index out of range). Unbatched\n";
  out += "/// kernels take the 11 arguments of KernelFn, batched ones the 14 of BatchedKernelFn (15 of\n";
  out += "/// BatchCountKernelFn with the problem count); of TypedKernelFn<double> and so on for the other types.\n";
  out += "inline const void* kernel_pointer(int index) {\n";
  out += "  switch (index) {\n";
  for (size_t i = 0; i < model.kernels.size(); ++i) {
    const ExportKernel& k = model.kernels[i];
    // A TMA kernel takes its source's tensor-map type after the 15 arguments: named as it is.
    if (k.shape.tensor_maps != 0)
      out += fmt::format("    case {}: return reinterpret_cast<const void*>(&{}::{});\n", i,
                         source_namespace(k.source_hash), k.name_expression);
    else
      out += fmt::format("    case {}: return reinterpret_cast<const void*>(static_cast<{}>(&{}::{}));\n", i,
                         kernel_function_type(k), source_namespace(k.source_hash), k.name_expression);
  }
  out += "    default: return nullptr;\n";
  out += "  }\n";
  out += "}\n";
  out += "inline cudaError_t kernel_function(int /*device*/, int index, const void** fn) {\n";
  out += "  *fn = kernel_pointer(index);\n";
  out += "  return *fn != nullptr ? cudaSuccess : cudaErrorInvalidValue;\n";
  out += "}\n";
  return out;
}

/// A header of machine code: its images as base64 text in one inline function (one copy in a program
/// of many translation units), the functions and the images that hold each, and kernel_function and
/// helper_function over the loader (export/runtime/image_loader.h).
std::string render_code_tables(const ExportModel& model, const HeaderCode& code) {
  std::string out;
  out += "// ---- machine code (generated) ----\n";
  out += fmt::format("constexpr int k_image_count = {};\n", code.images.size());
  out += "/// The images: arch, bytes, hash of the bytes, and the bytes LZ4-packed in base64.\n";
  out += "inline const CodeImage* code_images() {\n";
  for (size_t i = 0; i < code.images.size(); ++i) {
    const CodeImageBytes& image = code.images[i];
    const PackedImage packed = pack_image(image.bytes);
    out += fmt::format("  // image {}: {}, {} ({} bytes, {} packed), build {}\n", i, image.what, image.arch,
                       image.bytes.size(), packed.packed_bytes, image.binary_key);
    out += fmt::format("  static const char text_{}[] =\n", i);
    constexpr size_t k_line = 112;
    for (size_t at = 0; at < packed.text.size(); at += k_line)
      out += fmt::format("      \"{}\"\n", packed.text.substr(at, k_line));
    if (packed.text.empty()) out += "      \"\"\n";
    out += "      ;\n";
  }
  out += "  static const CodeImage images[k_image_count + 1] = {\n";
  for (size_t i = 0; i < code.images.size(); ++i) {
    const CodeImageBytes& image = code.images[i];
    out += fmt::format("      {{\"{}\", {}u, \"{}\", text_{}}},\n", image.arch, image.bytes.size(), image.hash, i);
  }
  out += "      {\"\", 0u, \"\", \"\"},   // unused\n";
  out += "  };\n";
  out += "  return images;\n";
  out += "}\n";
  std::vector<int> lists;
  out += fmt::format("constexpr int k_code_function_count = {};   // the kernels, then the header's own\n",
                     code.symbols.size());
  out += "constexpr CodeFunction k_code_functions[k_code_function_count] = {\n";
  out += "    // symbol, first of its images in k_image_lists, image count\n";
  for (size_t f = 0; f < code.symbols.size(); ++f) {
    const auto& images = code.function_images[f];
    const std::string what = f < model.kernels.size() ? fmt::format("kernel {}", f)
                                                      : fmt::format("helper {}", f - model.kernels.size());
    out += fmt::format("    {{{}, {}, {}}},  // {}\n", c_string(code.symbols[f]), lists.size(), images.size(), what);
    lists.insert(lists.end(), images.begin(), images.end());
  }
  out += "};\n";
  out += fmt::format("constexpr int k_image_lists[{}] = {{", lists.size() + 1);
  for (size_t i = 0; i < lists.size(); ++i) out += fmt::format("{}{}{}", i % 24 == 0 ? "\n    " : " ", lists[i], ",");
  out += "\n    -1};\n";
  out += "/// Function `function` (a kernel, or k_kernel_count + a helper) on `device`, loaded on first use.\n";
  out += "inline cudaError_t code_function(int device, int function, const void** fn) {\n";
  out += "  static LoadedImage loaded[k_image_count + 1];\n";
  out += "  static std::atomic<const void*> cache[k_code_devices * k_code_function_count];\n";
  out += "  return code_function(device, function, k_code_functions, k_code_function_count, k_image_lists, code_images(),\n";
  out += "                       loaded, cache, fn);\n";
  out += "}\n";
  out += "inline cudaError_t kernel_function(int device, int index, const void** fn) {\n";
  out += "  if (index < 0 || index >= k_kernel_count) return cudaErrorInvalidValue;\n";
  out += "  return code_function(device, index, fn);\n";
  out += "}\n";
  out += "inline cudaError_t helper_function(int device, int helper, const void** fn) {\n";
  out += "  if (helper < 0 || helper >= k_helper_count) return cudaErrorInvalidValue;\n";
  out += "  return code_function(device, k_kernel_count + helper, fn);\n";
  out += "}\n";
  out += "// ---- end of machine code ----\n";
  return out;
}

bool uses_cp_async(const ExportSource& source) { return source.text.find("cp.async") != std::string::npos; }

std::string bundle_files(const ExportSource& s) {
  std::string out = s.main_name;
  if (!s.header_names.empty()) {
    out += " (+ ";
    for (size_t i = 0; i < s.header_names.size(); ++i) out += (i ? ", " : "") + s.header_names[i];
    out += ")";
  }
  return out;
}

}  // namespace

std::string render_header(const ExportModel& model, const std::string& name_space, const HeaderCode* code) {
  check_namespace_name(name_space);
  const auto [ns_open, ns_close] = namespace_braces(name_space);
  const ExportKernel& generic = model.kernels.at(k_generic_kernel_index);
  bool cp_async = false;
  for (const auto& s : model.sources) cp_async = cp_async || (code == nullptr && uses_cp_async(s));

  std::string out;
  // Provenance: nothing time-dependent, so the same database gives the same bytes.
  out += "// GEMM kernels tuned by cm-tune, with their dispatch: generated by `cm-tune export`, do not edit.\n";
  out += "// The same database, templates folder and options always give this exact file (see docs/EXPORT.md).\n";
  out += "//\n";
  out += fmt::format("// cm-tune version:       {}\n", model.tool_version);
  out += fmt::format("// Database content hash: {}\n", model.content_hash);
  out += fmt::format("// Namespace:             {}\n", name_space);
  out += code != nullptr ? k_form_machine_code : k_form_sources;
  out += "//\n";
  out += fmt::format("// Device tables ({}), matched at run time by name, compute capability and SM count:\n",
                     model.devices.size());
  for (size_t d = 0; d < model.devices.size(); ++d) {
    const ExportDevice& dev = model.devices[d];
    out += fmt::format("//   [{}] {}: sm_{}{}, {} SMs, {} tuned problem{}\n", d, comment_text(dev.name), dev.cc_major,
                       dev.cc_minor, dev.sm_count, dev.entries.size(), dev.entries.size() == 1 ? "" : "s");
    for (const auto& r : dev.records)
      out += fmt::format("//       {}: driver {}, runtime {}, NVRTC {}\n", comment_text(r.uuid), r.driver_version,
                         r.runtime_version, comment_text(r.nvrtc_version));
  }
  out += "//\n";
  out += code != nullptr ? "// Kernel sources the machine code was built from (files, bundle hash):\n"
                         : "// Kernel sources (namespace under detail, files, bundle hash):\n";
  for (const auto& s : model.sources)
    out += fmt::format("//   {}  {}  {}  (from {})\n", source_namespace(s.hash), comment_text(bundle_files(s)), s.hash,
                       source_origin(s));
  out += "//\n";
  out += fmt::format("// Generic default kernel (devices without a table): {}[{}],\n", generic.template_name, generic.params);
  out += fmt::format("//   from the templates folder, not the database (source hash {}); one per element type and\n",
                     generic.source_hash);
  out += "//   layout it has.\n";
  out += "//\n";
  out += fmt::format("// Use: {}::sgemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream), row-major, like cublasSgemm;\n",
                     name_space);
  out += "// sgemm(opA, opB, ...) for transposed operands, sgemm_strided_batched(...) for batches, and\n";
  out += "// sgemm_colmajor(...) / sgemm_colmajor_strided_batched(...) for column-major (cuBLAS-style) callers.\n";
  out += "// dgemm(...) and igemm(...) are the same five calls for double and for int (32-bit, wrapping modulo\n";
  out += "// 2^32) operands. sgemm_tf32x3(...) (the same five calls) opts into FP32 on the tensor cores (3xTF32,\n";
  out += "// validated against FP64) where a tf32x3 kernel is predicted faster; #define CMTUNE_SGEMM_TF32X3 before\n";
  out += "// including the header makes sgemm do so too.\n";
  out += "// CMTUNE_RECORD=FILE in the environment appends each distinct call to FILE, for `cm-tune tune --sizes @FILE`.\n";
  if (code != nullptr) {
    size_t raw = 0;
    for (const auto& image : code->images) raw += image.bytes.size();
    out += fmt::format("// Machine code: {} images, {} bytes unpacked, loaded with the CUDA runtime (cudaLibraryLoadData)\n",
                       code->images.size(), raw);
    out += "// on the first call that needs each, once per program.\n";
    out += "// Needs only the CUDA runtime 12.0 or newer (<cuda_runtime.h>; <cuda.h> for the types of tensor maps,\n";
    out += "// no driver symbol) and the C++ standard library: compile with g++, clang++ or nvcc, C++14 or newer,\n";
    out += "// and link with cudart.\n";
  } else {
    out += "// Needs only the CUDA runtime (<cuda_runtime.h>, which also provides log/fabs; <cuda.h> for the types of\n";
    out += "// tensor maps, no driver symbol) and the C++ standard library;\n";
    out += "// compile with nvcc, C++14 or newer";
    out += cp_async ? ",\n// for sm_80 or newer (the tuned kernels use cp.async).\n" : ".\n";
  }
  out += "#pragma once\n\n";
  out += embedded_header_runtime_file("header_includes.h");
  out += "\n";
  if (cp_async) {
    out += "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800\n";
    out += "#error \"this header's tuned kernels use cp.async: compile it for sm_80 or newer (e.g. -arch=sm_80)\"\n";
    out += "#endif\n\n";
  }

  for (const auto& s : model.sources) {
    if (code != nullptr) break;   // a header of machine code holds no source
    const std::string src_ns = source_namespace(s.hash);
    out += "// ==============================================================================================\n";
    out += fmt::format("// Source bundle {}: {}\n", src_ns, comment_text(bundle_files(s)));
    out += fmt::format("// hash {}, from {}\n", s.hash, source_origin(s));
    out += "// ==============================================================================================\n";
    out += ns_open;
    out += "namespace detail {\n";
    out += fmt::format("namespace {} {{\n\n", src_ns);
    out += s.text;
    if (!s.text.empty() && s.text.back() != '\n') out += '\n';
    out += fmt::format("\n}}  // namespace {}\n", src_ns);
    out += "}  // namespace detail\n";
    out += ns_close;
    for (const auto& macro : defined_macros(s.text)) out += fmt::format("#undef {}\n", macro);
    out += "\n";
  }

  out += "// ==============================================================================================\n";
  out += "// Dispatch\n";
  out += "// ==============================================================================================\n";
  out += ns_open;
  out += "\n";
  out += embedded_header_runtime_file("header_types.cuh");
  out += "\nnamespace detail {\n\n";
  out += "// ---- dispatch rules (shared with cm-tune's `query`) ----\n";
  out += embedded_header_runtime_file("dispatch_rules.h");
  out += "// ---- end of dispatch rules ----\n\n";
  out += render_dispatch_tables(model);
  out += "\n";
  if (code != nullptr) {
    out += "// ---- the loader of the machine code ----\n";
    out += embedded_header_runtime_file("image_loader.h");
    out += "// ---- end of the loader ----\n\n";
    out += render_code_tables(model, *code);
  } else {
    out += render_source_functions(model);
    out += "\n";
    out += embedded_header_runtime_file("header_kernels.cuh");
    out += "\n";
    out += embedded_header_runtime_file("source_code.cuh");
  }
  out += "\n}  // namespace detail\n\n";
  out += embedded_header_runtime_file("call_recorder.cuh");
  out += "\n";
  out += embedded_header_runtime_file("header_api.cuh");
  out += ns_close;
  return out;
}

std::string export_header(Store& store, const ExportOptions& options, const TemplateDesc& default_tmpl) {
  check_namespace_name(options.name_space);
  return render_header(build_export_model(store, options, default_tmpl), options.name_space);
}

}  // namespace cmt
