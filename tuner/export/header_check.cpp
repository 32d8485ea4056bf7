#include "export/header_check.hpp"

#include <fmt/format.h>
#include <regex>
#include <sstream>

#include "core/hash.hpp"
#include "export/header_writer.hpp"
#include "export/image_codec.hpp"

namespace cmt {

bool is_machine_code_header(const std::string& header) {
  const size_t end = header.find("#pragma once");
  return header.substr(0, end).find(k_form_machine_code) != std::string::npos;
}

std::vector<EmbeddedImage> embedded_images(const std::string& header) {
  static const std::regex k_comment(R"re(^  // image (\d+): .*, build ([0-9a-f]+)$)re");
  static const std::regex k_text_start(R"re(^  static const char text_(\d+)\[\] =$)re");
  static const std::regex k_text_line(R"re(^      "([A-Za-z0-9+/=]*)"$)re");
  static const std::regex k_entry(R"re(^      \{"([a-z_0-9]+)", (\d+)u, "([0-9a-f]*)", text_(\d+)\},$)re");
  std::vector<EmbeddedImage> out;
  std::vector<std::string> texts, keys;
  std::istringstream lines(header);
  std::string line;
  int reading = -1;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (reading >= 0) {
      if (std::regex_match(line, m, k_text_line)) {
        texts[static_cast<size_t>(reading)] += m[1].str();
        continue;
      }
      reading = -1;
    }
    if (std::regex_match(line, m, k_comment)) {
      const auto index = static_cast<size_t>(std::stoi(m[1].str()));
      if (keys.size() <= index) keys.resize(index + 1);
      keys[index] = m[2].str();
    } else if (std::regex_match(line, m, k_text_start)) {
      reading = std::stoi(m[1].str());
      if (texts.size() <= static_cast<size_t>(reading)) texts.resize(static_cast<size_t>(reading) + 1);
    } else if (std::regex_match(line, m, k_entry)) {
      EmbeddedImage image;
      image.index = std::stoi(m[4].str());
      image.arch = m[1].str();
      image.raw_bytes = std::stoull(m[2].str());
      image.hash = m[3].str();
      if (static_cast<size_t>(image.index) < texts.size()) image.text = texts[static_cast<size_t>(image.index)];
      if (static_cast<size_t>(image.index) < keys.size()) image.binary_key = keys[static_cast<size_t>(image.index)];
      out.push_back(std::move(image));
    }
  }
  return out;
}

std::vector<std::string> image_differences(const std::string& header, const HeaderCode& code) {
  std::vector<std::string> out;
  const std::vector<EmbeddedImage> images = embedded_images(header);
  for (size_t i = 0; i < code.images.size(); ++i) {
    const CodeImageBytes& want = code.images[i];
    const std::string name = fmt::format("image {} ({}, {}, build {})", i, want.what, want.arch, want.binary_key);
    if (i >= images.size() || images[i].index != static_cast<int>(i)) {
      out.push_back(fmt::format("{} is missing from the header", name));
      continue;
    }
    const auto bytes = unpack_image(images[i].text, images[i].raw_bytes);
    if (!bytes) {
      out.push_back(fmt::format("{} does not unpack", name));
    } else if (*bytes != want.bytes) {
      out.push_back(fmt::format("{} unpacks to other bytes (hash {}) than the database's build (hash {})", name,
                                hash_hex(std::string_view(bytes->data(), bytes->size())), want.hash));
    } else if (images[i].hash != want.hash || images[i].arch != want.arch) {
      out.push_back(fmt::format("{} is labelled {} {}, not {} {}", name, images[i].arch, images[i].hash, want.arch,
                                want.hash));
    }
  }
  for (size_t i = code.images.size(); i < images.size(); ++i)
    out.push_back(fmt::format("image {} ({}) is not one export embeds now", i, images[i].arch));
  return out;
}

}  // namespace cmt
