// A header of machine code (`export`'s default form), exported from a database tuned through the
// scripted measuring process (real NVRTC builds, scripted times): it compiles with g++ (warnings as
// errors) and with nvcc, two translation units of one program include it and link, its embedded
// images unpack to exactly the database's cubins, and `export --check` names an image whose bytes
// are not the database's.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <set>
#include <string>

#include "cli_support.hpp"
#include "core/hash.hpp"
#include "export/header_check.hpp"
#include "export/image_codec.hpp"
#include "store/store.hpp"

namespace cmt {
namespace {

/// One translation unit calling every entry point once (`suffix` names its function).
std::string unit(const std::string& suffix) {
  return fmt::format(R"(#include "tuned.cuh"
int calls_{0}(float* f, double* d, int* i, cudaStream_t s) {{
  int failures = 0;
  failures += cmtune::sgemm(64, 64, 64, 1.f, f, 64, f, 64, 0.f, f, 64, s) != cudaSuccess;
  failures += cmtune::sgemm(cmtune::Op::T, cmtune::Op::N, 64, 64, 64, 1.f, f, 64, f, 64, 0.f, f, 64, s) != cudaSuccess;
  failures += cmtune::sgemm_strided_batched(cmtune::Op::N, cmtune::Op::N, 64, 64, 64, 1.f, f, 64, 4096, f, 64, 4096,
                                            0.f, f, 64, 4096, 2, s) != cudaSuccess;
  failures += cmtune::sgemm_colmajor(cmtune::Op::N, cmtune::Op::N, 64, 64, 64, 1.f, f, 64, f, 64, 0.f, f, 64, s) != cudaSuccess;
  failures += cmtune::sgemm_tf32x3(64, 64, 64, 1.f, f, 64, f, 64, 0.f, f, 64, s) != cudaSuccess;
  failures += cmtune::dgemm(64, 64, 64, 1.0, d, 64, d, 64, 0.0, d, 64, s) != cudaSuccess;
  failures += cmtune::igemm(64, 64, 64, 1, i, 64, i, 64, 0, i, 64, s) != cudaSuccess;
  const char* name = nullptr;
  failures += cmtune::kernel_name(64, 64, 64, f, 64, f, 64, f, 64, &name) != cudaSuccess;
  return failures;
}}
)",
                     suffix);
}

class ExportMachineCode : public test::ScriptedTune {
 protected:
  ExportMachineCode() : ScriptedTune("machine-code", "32, 128") {}
  void SetUp() override {
    ScriptedTune::SetUp();
    const auto tune = test::run_split(m_dir, "--quiet --db tune.db tune --config " + preset() +
                                                 " --sizes 256,384 --no-calibrate --seed 3");
    ASSERT_EQ(tune.exit_code, 0) << tune.err;
    const auto exported = test::run_split(m_dir, "--quiet --db tune.db export --out tuned.cuh");
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    m_header = test::read_file(m_dir / "tuned.cuh");
  }
  std::string m_header;
};

TEST_F(ExportMachineCode, CompilesWithGppAndNvccAndTwoUnitsOfOneProgramLink) {
  ASSERT_TRUE(is_machine_code_header(m_header));
  EXPECT_EQ(m_header.find("__global__"), std::string::npos) << "a header of machine code holds no device code";
  test::write_file(m_dir / "a.cpp", unit("a"));
  test::write_file(m_dir / "b.cpp", unit("b") + "int calls_a(float*, double*, int*, cudaStream_t);\n"
                                               "int main() { return calls_a(nullptr, nullptr, nullptr, 0) + "
                                               "calls_b(nullptr, nullptr, nullptr, 0) > 0 ? 0 : 1; }\n");
  const std::string dir = m_dir.path().string();
  for (const char* std : {"c++14", "c++17"}) {
    SCOPED_TRACE(std);
    for (const char* name : {"a", "b"}) {
      const auto r = test::run_command(fmt::format("g++ -std={} -O2 -Wall -Wextra -Werror -I '{}/include' -c '{}/{}.cpp' -o '{}/{}.o'",
                                                   std, test::cuda_root(), dir, name, dir, name));
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    const auto link = test::run_command(
        fmt::format("g++ -o '{0}/prog' '{0}/a.o' '{0}/b.o' -L '{1}/lib64' -lcudart -lpthread", dir, test::cuda_root()));
    ASSERT_EQ(link.exit_code, 0) << link.output;
  }
  // Calls on null pointers return an error, GPU or not (the program exits 0 when they did), and never crash.
  const auto run = test::run_command(fmt::format("'{}/prog'", dir));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // nvcc compiles it as CUDA too.
  const auto nvcc = test::run_command(
      fmt::format("'{}' -std=c++17 -arch=sm_80 -x cu -c '{}/a.cpp' -o '{}/a_nvcc.o'", test::nvcc_path(), dir, dir));
  EXPECT_EQ(nvcc.exit_code, 0) << nvcc.output;
}

TEST_F(ExportMachineCode, TwoHeadersOfTwoNamespacesShareOneTranslationUnit) {
  const auto other = test::run_split(m_dir, "--quiet --db tune.db export --namespace app::gemm --out other.cuh");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  test::write_file(m_dir / "both.cpp", R"(#include "tuned.cuh"
#include "other.cuh"
int main() {
  float* p = nullptr;
  const bool refused = cmtune::sgemm(8, 8, 8, 1.f, p, 8, p, 8, 0.f, p, 8, 0) == cudaErrorInvalidValue &&
                       app::gemm::sgemm(8, 8, 8, 1.f, p, 8, p, 8, 0.f, p, 8, 0) == cudaErrorInvalidValue;
  return refused && &cmtune::detail::library_loads() != &app::gemm::detail::library_loads() ? 0 : 1;
}
)");
  const std::string dir = m_dir.path().string();
  const auto build = test::run_command(fmt::format(
      "g++ -std=c++14 -O2 -Wall -Wextra -Werror -I '{1}/include' '{0}/both.cpp' -o '{0}/both' -L '{1}/lib64' -lcudart",
      dir, test::cuda_root()));
  ASSERT_EQ(build.exit_code, 0) << build.output;
  const auto run = test::run_command(fmt::format("'{}/both'", dir));
  EXPECT_EQ(run.exit_code, 0) << run.output;
}

TEST_F(ExportMachineCode, EmbeddedImagesAreTheDatabasesCubins) {
  const std::vector<EmbeddedImage> images = embedded_images(m_header);
  ASSERT_GE(images.size(), 3u) << "two runtime library builds (sm_90, PTX) and the tuned kernels";
  Store store(m_dir / "tune.db", OpenMode::read);
  int kernels = 0, runtime = 0;
  for (const EmbeddedImage& image : images) {
    SCOPED_TRACE(fmt::format("image {} {}", image.index, image.arch));
    const auto bytes = unpack_image(image.text, image.raw_bytes);
    ASSERT_TRUE(bytes.has_value());
    EXPECT_EQ(hash_hex(std::string_view(bytes->data(), bytes->size())), image.hash);
    const auto binary = store.find_binary(image.binary_key);
    if (binary) {
      ++kernels;
      EXPECT_EQ(*bytes, binary->cubin) << "the header's bytes are the cubin tune timed";
      EXPECT_EQ(image.arch, binary->arch);
    } else {
      ++runtime;
      EXPECT_TRUE(image.arch == "sm_90" || image.arch == "compute_75") << image.arch;
    }
  }
  EXPECT_GE(kernels, 1);
  EXPECT_EQ(runtime, 2);
  // Every winner's build is embedded.
  std::set<std::string> keys;
  for (const EmbeddedImage& image : images) keys.insert(image.binary_key);
  for (const auto& w : store.winners()) EXPECT_TRUE(keys.count(w.binary_key)) << w.template_name << "[" << w.params << "]";
}

TEST_F(ExportMachineCode, CheckNamesAnImageWhoseBytesAreNotTheDatabases) {
  const auto clean = test::run_split(m_dir, "--db tune.db export --check --out tuned.cuh");
  EXPECT_EQ(clean.exit_code, 0) << clean.err;
  EXPECT_NE(clean.out.find("images unpack to the builds the database holds"), std::string::npos) << clean.out;

  // The database's cubin of one kernel changes (its row rewritten with one byte flipped): the header
  // no longer holds what the database has.
  std::string key;
  {
    Store store(m_dir / "tune.db");
    key = store.winners().front().binary_key;
    BinaryRecord b = *store.find_binary(key);
    b.cubin[b.cubin.size() / 2] ^= 0x5a;
    store.put_binary(b);
  }
  const auto changed = test::run_split(m_dir, "--db tune.db export --check --out tuned.cuh");
  EXPECT_EQ(changed.exit_code, 1) << changed.err;
  EXPECT_NE(changed.err.find("build " + key + ") unpacks to other bytes"), std::string::npos) << changed.err;

  // The header's text of an image replaced by a packing of other bytes: found the same way.
  const auto fresh = test::run_split(m_dir, "--quiet --db tune.db export --out tuned.cuh");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  std::string header = test::read_file(m_dir / "tuned.cuh");
  const std::vector<EmbeddedImage> images = embedded_images(header);
  const EmbeddedImage& target = images.back();
  std::vector<char> other = *unpack_image(target.text, target.raw_bytes);
  other[0] ^= 1;
  std::string packed = pack_image(other).text;
  // The text is written in lines of 112 characters; the replacement keeps that layout.
  auto lines_of = [](const std::string& text) {
    std::string out;
    for (size_t at = 0; at < text.size(); at += 112) out += "      \"" + text.substr(at, 112) + "\"\n";
    return out;
  };
  const size_t at = header.find(lines_of(target.text));
  ASSERT_NE(at, std::string::npos);
  header.replace(at, lines_of(target.text).size(), lines_of(packed));
  test::write_file(m_dir / "tuned.cuh", header);
  const auto edited = test::run_split(m_dir, "--db tune.db export --check --out tuned.cuh");
  EXPECT_EQ(edited.exit_code, 1) << edited.err;
  EXPECT_NE(edited.err.find(fmt::format("image {} (", target.index)), std::string::npos) << edited.err;
  EXPECT_NE(edited.err.find("unpacks to other bytes"), std::string::npos) << edited.err;
}

TEST_F(ExportMachineCode, SourceFormIsTheHeaderOfKernelSources) {
  const auto r = test::run_split(m_dir, "--quiet --db tune.db export --form source --out sources.cuh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string sources = test::read_file(m_dir / "sources.cuh");
  EXPECT_FALSE(is_machine_code_header(sources));
  EXPECT_NE(sources.find("__global__"), std::string::npos);
  EXPECT_TRUE(embedded_images(sources).empty());
  const auto check = test::run_split(m_dir, "--db tune.db export --form source --check --out sources.cuh");
  EXPECT_EQ(check.exit_code, 0) << check.err;
  const auto bad = test::run_split(m_dir, "--db tune.db export --form cubin --out x.cuh");
  EXPECT_EQ(bad.exit_code, cli::k_exit_usage) << bad.err;
  EXPECT_NE(bad.err.find("--form"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace cmt
