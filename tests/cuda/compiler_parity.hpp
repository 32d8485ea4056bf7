// Compiler parity: a kernel the tuner times (NVRTC) must be the kernel an exported header runs
// (nvcc). These helpers read the machine code out of CUBINs and compare the two builds.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compile/compile_service.hpp"
#include "compile/nvrtc/nvrtc_compiler.hpp"
#include "space/space.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace cmt::test {

/// The contents of every section of a 64-bit little-endian ELF file whose name starts with prefix.
inline std::map<std::string, std::string> elf_sections(const std::string& elf, const std::string& prefix) {
  auto read = [&](size_t at, size_t bytes) {
    if (at + bytes > elf.size()) throw std::runtime_error("truncated ELF file");
    uint64_t v = 0;
    std::memcpy(&v, elf.data() + at, bytes);
    return v;
  };
  if (elf.size() < 64 || elf.compare(0, 4, "\x7f" "ELF") != 0 || elf[4] != 2)
    throw std::runtime_error("not an ELF64 file");
  const uint64_t shoff = read(0x28, 8), shentsize = read(0x3A, 2), shnum = read(0x3C, 2);
  const uint64_t shstrndx = read(0x3E, 2);
  auto header = [&](uint64_t i, size_t field_at, size_t bytes) {
    return read(shoff + i * shentsize + field_at, bytes);
  };
  const uint64_t names_at = header(shstrndx, 0x18, 8);
  std::map<std::string, std::string> sections;
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t name_at = names_at + header(i, 0x00, 4);
    if (name_at >= elf.size()) throw std::runtime_error("ELF section name past the end of the file");
    const std::string name(elf.c_str() + name_at);
    const uint64_t type = header(i, 0x04, 4), offset = header(i, 0x18, 8), size = header(i, 0x20, 8);
    if (name.rfind(prefix, 0) != 0 || type == 8 /* SHT_NOBITS */) continue;
    if (offset + size > elf.size()) throw std::runtime_error("ELF section past the end of the file");
    sections[name] = elf.substr(offset, size);
  }
  return sections;
}

/// What expect_nvrtc_and_nvcc_agree requires of the two builds.
enum class Parity {
  machine_code,  // identical machine code
  names,         // nvcc builds every kernel under NVRTC's lowered name (the code may differ)
};

/// Compiles the candidates with NVRTC, exactly as the tuner does (compile service, sm_90), and with
/// nvcc as a project compiling an exported header would (-O3, sm_90, one unit of explicit
/// instantiations of the same sources, each in its element type), in `dir`; every kernel's
/// machine code must be identical (Parity::machine_code), or nvcc must at least build every kernel
/// under the name NVRTC lowered it to (Parity::names; the sizes are printed).
inline void expect_nvrtc_and_nvcc_agree(const std::vector<Candidate>& candidates, const std::filesystem::path& dir,
                                        Parity parity = Parity::machine_code) {
  Store store(shared_compile_cache());
  const NvrtcCompiler nvrtc;
  CompileService service(store, nvrtc, "sm_90", 0);
  service.submit_all(candidates);
  std::map<std::string, std::string> nvrtc_text;  // lowered name -> the kernel's .text section
  std::set<std::string> sources;
  std::string instantiations;
  while (auto c = service.next()) {
    ASSERT_TRUE(c->binary.ok) << c->candidate->id() << ":\n" << c->binary.log;
    const std::string cubin(c->binary.cubin.begin(), c->binary.cubin.end());
    const auto text = elf_sections(cubin, ".text." + c->binary.lowered_name);
    ASSERT_EQ(text.size(), 1u) << c->candidate->id() << ": no .text section for " << c->binary.lowered_name;
    nvrtc_text[c->binary.lowered_name] = text.begin()->second;
    sources.insert(c->candidate->tmpl->source_path.filename().string());
    // The kernel's element type: float, or double or int for a typed family's DTYPE.
    const DType dtype = c->candidate->tmpl->dtype_of(c->candidate->values);
    const char* t = dtype == DType::f64 ? "double" : dtype == DType::i32 ? "int" : "float";
    instantiations += fmt::format("template __global__ void {0}(int, int, int, {1}, const {1}*, int, const {1}*, "
                                  "int, {1}, {1}*, int{2});\n",
                                  c->candidate->tmpl->name_expression(c->candidate->values), t,
                                  c->candidate->tmpl->takes_batch_count() ? ", long long, long long, long long, int"
                                  : c->candidate->tmpl->batched           ? ", long long, long long, long long"
                                                                          : "");
  }
  ASSERT_EQ(nvrtc_text.size(), candidates.size());

  std::string unit;
  for (const auto& s : sources) unit += fmt::format("#include \"{}\"\n", s);
  write_file(dir / "all.cu", unit + instantiations);
  const auto built = nvcc_cached(fmt::format("-O3 -arch=sm_90 -cubin -I'{}'", default_templates_dir().string()),
                                 dir / "all.cu", dir / "all.cubin");
  ASSERT_EQ(built.exit_code, 0) << built.output;
  const auto nvcc_text = elf_sections(read_file(dir / "all.cubin"), ".text.");
  for (const auto& [name, code] : nvrtc_text) {
    const auto it = nvcc_text.find(".text." + name);
    ASSERT_NE(it, nvcc_text.end()) << "nvcc did not build " << name;
    if (parity == Parity::names) {
      std::printf("%s: %zu bytes of code from NVRTC, %zu from nvcc%s\n", name.c_str(), code.size(), it->second.size(),
                  it->second == code ? " (identical)" : "");
      continue;
    }
    EXPECT_EQ(it->second.size(), code.size()) << name << ": code sizes differ";
    EXPECT_TRUE(it->second == code) << name << ": NVRTC and nvcc built different machine code";
  }
}

}  // namespace cmt::test
