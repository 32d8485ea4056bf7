// Reading machine code out of CUBINs: the compiler-parity tests compare the .text sections that
// NVRTC and nvcc build from one source.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

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

}  // namespace cmt::test
