// Export's guards on what it reads (issue 18): a --namespace that would not compile, and a stored
// source that no longer matches the hash it is stored under. Both give one line and export nothing.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <string>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/source_bundle.hpp"
#include "export/header_writer.hpp"
#include "space/template_desc.hpp"
#include "store/sqlite.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

// ---------------------------------------------------------------------------------------------
// --namespace
// ---------------------------------------------------------------------------------------------

std::string problem_of(const std::string& name) { return namespace_name_problem(name).value_or("<accepted>"); }

TEST(ExportGuards, NamespaceAcceptsIdentifiersJoinedByColons) {
  for (const char* name : {"cmtune", "app::gemm_v2", "App::Gemm", "a::_x", "a::_1", "classy", "not_a_keyword", "x1::y2::z3"})
    EXPECT_EQ(problem_of(name), "<accepted>") << name;
}

TEST(ExportGuards, NamespaceRefusesKeywordsAndAlternativeTokensNamingThePart) {
  for (const char* keyword : {"class", "namespace", "int", "and", "or", "not", "xor_eq", "bitand", "compl", "co_await",
                              "char8_t", "consteval", "constinit", "requires", "concept", "export", "nullptr"}) {
    EXPECT_EQ(problem_of(keyword), fmt::format("'{}' is a C++ keyword", keyword));
    EXPECT_EQ(problem_of(fmt::format("app::{}::gemm", keyword)), fmt::format("'{}' is a C++ keyword", keyword));
  }
}

TEST(ExportGuards, NamespaceRefusesReservedNames) {
  EXPECT_EQ(problem_of("__x"), "'__x' is reserved to the compiler (it contains __)");
  EXPECT_EQ(problem_of("app::a__b"), "'a__b' is reserved to the compiler (it contains __)");
  EXPECT_EQ(problem_of("app::_Gemm"), "'_Gemm' is reserved to the compiler (_ followed by an uppercase letter)");
  EXPECT_EQ(problem_of("_gemm::app"), "'_gemm' is reserved to the compiler (_ at global scope)");
}

// The macros come from nvcc at build time (tuner/header_macros.cmake), from the device and the host
// pass: CUDA_DOUBLE_MATH_FUNCTIONS is the device pass's, EOF and stdout come from <cstdio>.
TEST(ExportGuards, NamespaceRefusesMacrosOfTheHeadersIncludes) {
  const std::string macro = "is a macro where the header is compiled (nvcc's own, or from <cuda_runtime.h> or another of the header's includes)";
  for (const char* name : {"NULL", "EOF", "CUDART_VERSION", "CUDA_DOUBLE_MATH_FUNCTIONS", "stdout", "cudaStreamDefault"}) {
    EXPECT_EQ(problem_of(name), fmt::format("'{}' {}", name, macro));
    EXPECT_EQ(problem_of(fmt::format("app::{}", name)), fmt::format("'{}' {}", name, macro));
  }
  for (const char* name : {"Null", "eof", "cudart_version", "app::Stdout"}) EXPECT_EQ(problem_of(name), "<accepted>") << name;
}

// The global names come from nvcc at build time too (tuner/header_globals.py): threadIdx is the
// device pass's, cudaMalloc and dim3 the runtime's, printf and std the C++ library's. Nested, they
// would hide the global name from the kernels.
TEST(ExportGuards, NamespaceRefusesNamesTheHeadersIncludesDeclareGlobally) {
  const std::string global =
      "is declared at global scope where the header is compiled (by nvcc, or <cuda_runtime.h> or another of the "
      "header's includes)";
  for (const char* name : {"threadIdx", "blockIdx", "dim3", "printf", "cudaMalloc", "std", "min", "memcpy"}) {
    EXPECT_EQ(problem_of(name), fmt::format("'{}' {}", name, global));
    EXPECT_EQ(problem_of(fmt::format("app::{}", name)), fmt::format("'{}' {}", name, global));
  }
  for (const char* name : {"ThreadIdx", "gemm", "app::kernels", "mylib::blas"}) EXPECT_EQ(problem_of(name), "<accepted>") << name;
}

TEST(ExportGuards, NamespaceRefusesWhatIsNoIdentifier) {
  EXPECT_EQ(problem_of(""), "'' is empty");
  EXPECT_EQ(problem_of("a::"), "ends with '::'");
  EXPECT_EQ(problem_of("::a"), "starts with '::'");
  EXPECT_EQ(problem_of("a::::b"), "has an empty part between '::'");
  EXPECT_EQ(problem_of("a:::b"), "':b' is not a C++ identifier (a letter or _, then letters, digits and _)");
  EXPECT_EQ(problem_of("1abc"), "'1abc' is not a C++ identifier (a letter or _, then letters, digits and _)");
  EXPECT_EQ(problem_of("a b"), "'a b' is not a C++ identifier (a letter or _, then letters, digits and _)");
  EXPECT_EQ(problem_of("app::gemm-v2"), "'gemm-v2' is not a C++ identifier (a letter or _, then letters, digits and _)");
}

TEST(ExportGuards, NamespaceErrorIsOneLineNamingTheOptionAndThePart) {
  EXPECT_FALSE(valid_namespace_name("app::class"));
  EXPECT_TRUE(valid_namespace_name("app::klass"));
  EXPECT_EQ(test::usage_error([] { check_namespace_name("app::class"); }),
            "--namespace 'app::class': 'class' is a C++ keyword, so the header would not compile; give identifiers "
            "joined by ::");
  EXPECT_EQ(test::usage_error([] { check_namespace_name("app::gemm"); }), "<no UsageError thrown>");
}

// ---------------------------------------------------------------------------------------------
// Sources that no longer match their hash
// ---------------------------------------------------------------------------------------------

const TemplateDesc& fixture_blocktile2d() {
  static const std::vector<TemplateDesc> templates =
      load_templates({fs::path(CMTUNE_TEST_FIXTURES) / "export" / "templates"});
  return templates.at(0);
}

/// A database with winners of two templates ("fast", "port") on one device, built through the Store
/// API as the tuner stores them; the hashes of their sources.
struct TwoTemplateDb {
  std::string fast_hash, port_hash;

  explicit TwoTemplateDb(const fs::path& file) {
    Store store(file);
    const int64_t run = store.begin_run(RunRecord{});
    DeviceRecord d;
    d.uuid = "GPU-guards";
    d.name = "NVIDIA H100 80GB HBM3";
    d.cc_major = 9;
    d.sm_count = 132;
    const int64_t device = store.upsert_device(d);
    fast_hash = test::add_synthetic_winner(store, run, device, "fast", {1024, 1024, 1024});
    port_hash = test::add_synthetic_winner(store, run, device, "port", {2048, 2048, 2048});
  }
};

std::string export_error(const fs::path& file) {
  Store store(file);
  return test::usage_error([&] { export_header(store, {}, fixture_blocktile2d()); });
}

TEST(ExportGuards, IntactSourcesExport) {
  test::TempDir dir;
  TwoTemplateDb db(dir / "t.db");
  Store store(dir / "t.db");
  const std::string header = export_header(store, {}, fixture_blocktile2d());
  EXPECT_NE(header.find("cmt_sgemm_fast"), std::string::npos);
  EXPECT_NE(header.find("cmt_sgemm_port"), std::string::npos);
}

TEST(ExportGuards, SourceEditedInTheDatabaseIsRefusedNamingHashAndTemplate) {
  test::TempDir dir;
  TwoTemplateDb db(dir / "t.db");
  Database(dir / "t.db").exec("UPDATE sources SET main_text = main_text || '// edited' WHERE template_name = 'fast'");
  EXPECT_EQ(export_error(dir / "t.db"),
            fmt::format("the database's source for template fast does not match its hash {} (the database was "
                        "modified outside cm-tune); refusing to use it",
                        db.fast_hash));
}

TEST(ExportGuards, IncludedFileEditedInTheDatabaseIsRefused) {
  test::TempDir dir;
  TwoTemplateDb db(dir / "t.db");
  Database(dir / "t.db").exec(
      fmt::format("UPDATE source_headers SET text = '#define CMT_COMMON 2\n' WHERE source_hash = '{}'", db.port_hash));
  EXPECT_EQ(export_error(dir / "t.db"),
            fmt::format("the database's source for template port does not match its hash {} (the database was "
                        "modified outside cm-tune); refusing to use it",
                        db.port_hash));
}

TEST(ExportGuards, SourceSharedByTemplatesNamesEveryTemplate) {
  test::TempDir dir;
  const fs::path file = dir / "t.db";
  TwoTemplateDb db(file);
  // A third template compiled from port's source (descriptors may share a .cuh), then port's source edited.
  {
    Database sql(file);
    sql.exec(fmt::format("UPDATE binaries SET source_hash = '{}' WHERE template_name = 'fast'", db.port_hash));
    sql.exec("UPDATE sources SET main_name = 'renamed.cuh' WHERE template_name = 'port'");
  }
  EXPECT_EQ(export_error(file),
            fmt::format("the database's source for templates fast, port does not match its hash {} (the database was "
                        "modified outside cm-tune); refusing to use it",
                        db.port_hash));
}

}  // namespace
}  // namespace cmt
