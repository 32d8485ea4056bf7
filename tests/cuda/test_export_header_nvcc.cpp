// The exported header under nvcc (no GPU needed): it compiles for sm_80 and sm_90, and its
// selection equals choose_kernel on shapes of every class, in every call layout and table.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <set>
#include <cstdlib>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "export/cost_model.hpp"
#include "export/dispatch.hpp"
#include "export/header_writer.hpp"
#include "space/space.hpp"
#include "space/template_desc.hpp"
#include "store/store.hpp"
#include "db_builder.hpp"
#include "test_support.hpp"
#include "core/source_bundle.hpp"

#include "export_fixtures.hpp"

namespace fs = std::filesystem;

namespace {

using namespace cmt;
using namespace cmt::export_fixtures;

/// nvcc's arguments with the device code unoptimized (NVVM and ptxas at -O0), which halves each
/// compile: these tests check the header's host code (its dispatch, run on the CPU) and that it
/// compiles and links for each architecture, none of which the device code's optimization changes;
/// the machine code the header runs is held to the tuned NVRTC build's by CompilerParity.
std::string unoptimized(const std::string& args) { return args + " -Xcicc -O0 -Xptxas -O0"; }

template <class... Args>
std::string unoptimized_format(fmt::format_string<Args...> format, Args&&... args) {
  return unoptimized(fmt::format(format, std::forward<Args>(args)...));
}

// The header under nvcc: compiles for sm_80 and sm_90, and its selection equals choose_kernel on
// 315 shapes of every class (tuned or not) x 7 call layouts x 3 tables
// ---------------------------------------------------------------------------------------------

TEST(ExportNvcc, TwoHeadersCompileTogetherForSm90) {
  test::TempDir dir;
  RealFixture f;
  std::string a, b;
  {
    DbBuilder db(dir / "t.db");
    f.build(db);
    a = export_header(db.store(), {}, builtin_blocktile2d());
    db.add_winner(k_h100_uuid, {1024, 1024, 1024}, "overall", f.bv, 0.09);
    ExportOptions other;
    other.name_space = "app::gemm";
    b = export_header(db.store(), other, builtin_blocktile2d());
  }
  test::write_file(dir / "a.cuh", a);
  test::write_file(dir / "b.cuh", b);
  test::write_file(dir / "use.cu", R"(#include "a.cuh"
#include "b.cuh"
#ifdef CMT_DEVICE
#error "a bundle's macro leaked"
#endif
cudaError_t use(float* C, const float* A, const float* B, cudaStream_t s) {
  cudaError_t e = cmtune::sgemm(100, 200, 300, 1.0f, A, 300, B, 200, 0.0f, C, 200, s);
  if (e != cudaSuccess) return e;
  return app::gemm::sgemm(100, 200, 300, 1.0f, A, 300, B, 200, 0.5f, C, 200);
}
)");
  const auto r = test::nvcc_cached(unoptimized("-arch=sm_90 -c"), dir / "use.cu", dir / "use.o", {dir / "a.cuh", dir / "b.cuh"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// The example a user copies (examples/consumer) and the correctness harness the GPU tests run
// (tests/consumer) compile against a real exported header, so neither rots while no GPU runs them.
TEST(ExportNvcc, ExampleAndHarnessCompileAgainstAnExportedHeader) {
  test::TempDir dir;
  RealFixture f;
  f.typed = true;   // the harness calls dgemm and igemm too
  {
    DbBuilder db(dir / "t.db");
    f.build(db);
    test::write_file(dir / "tuned_sgemm.cuh", export_header(db.store(), {}, builtin_blocktile2d()));
  }
  const fs::path root = default_templates_dir().parent_path();
  // A header of sources: every file is CUDA (-x cu), as their CMake projects compile them with it.
  for (const fs::path source : {root / "examples" / "consumer" / "main.cpp", root / "tests" / "consumer" / "harness.cpp",
                                root / "tests" / "consumer" / "checks.cu"}) {
    const auto r = test::nvcc_cached(unoptimized_format("-x cu -arch=sm_90 -c '-DCMTUNE_HEADER_PATH=\"{}\"' -DCMTUNE_NS=cmtune",
                                                 (dir / "tuned_sgemm.cuh").string()),
                                     source, dir / "out.o", {dir / "tuned_sgemm.cuh"});
    EXPECT_EQ(r.exit_code, 0) << source << ":\n" << r.output;
  }
}

/// One call for the header's host-side selection test.
struct SelectCase {
  int table;   // index into the header's device tables; -1: no table
  Problem p;   // its dtype says the entry point: sgemm, dgemm or igemm
  int64_t lda, ldb, ldc, alignment;
};

/// Builds a host program from the header `dir`/tuned.cuh (exported from `model`) with nvcc for
/// `arch`, which prints detail::select without and with a reason (its kernel and reason) for every
/// case and then runs `tail` (more output lines); runs it, and checks every choice against
/// choose_kernel(): the same kernel, computing the call's layout and element type, batched for a
/// batch, and the same reason (DispatchReason), counted by name into `reasons`. Returns the lines after
/// the cases.
std::vector<std::string> check_header_selection(const test::TempDir& dir, const ExportModel& model,
                                                const std::vector<SelectCase>& cases, const std::string& arch,
                                                const std::string& tail,
                                                std::map<std::string, int>* reasons = nullptr,
                                                int* splits_seen = nullptr) {
  std::string program = "#include \"tuned.cuh\"\n#include <cstdio>\n\n";
  program += "struct Case { int table, layout, batch, broadcast, m, n, k, lda, ldb, ldc, alignment, dtype; };\n";
  program += "static const Case k_cases[] = {\n";
  for (const auto& c : cases)
    program += fmt::format("    {{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}},\n", c.table,
                           (c.p.trans_a ? 2 : 0) + (c.p.trans_b ? 1 : 0), c.p.batch,
                           c.p.batch > 1 ? (c.p.stride_a == 0 ? 1 : 0) + (c.p.stride_b == 0 ? 2 : 0) : 0, c.p.m, c.p.n,
                           c.p.k, c.lda, c.ldb, c.ldc, c.alignment, static_cast<int>(c.p.dtype));
  program += R"(};

// Host only: nothing here touches a GPU. The calls of the entry points keep every kernel instantiated.
int main(int argc, char**) {
  if (argc > 5)
    return cmtune::sgemm(1, 1, 1, 1.0f, nullptr, 1, nullptr, 1, 0.0f, nullptr, 1) == cudaSuccess &&
           cmtune::dgemm(1, 1, 1, 1.0, nullptr, 1, nullptr, 1, 0.0, nullptr, 1) == cudaSuccess &&
           cmtune::igemm(1, 1, 1, 1, nullptr, 1, nullptr, 1, 0, nullptr, 1) == cudaSuccess;
  for (const Case& c : k_cases) {
    const cmtune::detail::Call call{c.layout, c.batch, c.broadcast, c.m, c.n, c.k, c.lda, c.ldb, c.ldc, c.alignment,
                                    c.dtype};
    cmtune::DispatchReason reason = cmtune::DispatchReason::tuned;
    int explained_splits = 0, splits = 0;
    const int explained = cmtune::detail::select(c.table, call, &explained_splits, &reason);
    const int selected = cmtune::detail::select(c.table, call, &splits);
    std::printf("%d %d %s %d %d\n", selected, explained, cmtune::dispatch_reason_name(reason), splits, explained_splits);
  }
)";
  program += tail;
  program += "  return 0;\n}\n";
  test::write_file(dir / "select.cu", program);
  const auto build = test::nvcc_cached(unoptimized_format("-arch={} -Xcompiler -Wall,-Wextra -I {}", arch, quoted(dir.path())),
                                       dir / "select.cu", dir / "select", {dir / "tuned.cuh"});
  EXPECT_EQ(build.exit_code, 0) << build.output;
  if (build.exit_code != 0) return {};
  const auto run = test::run_command(quoted(dir / "select"));
  EXPECT_EQ(run.exit_code, 0) << run.output;

  std::istringstream lines(run.output);
  int mismatches = 0;
  for (const auto& c : cases) {
    std::string line;
    if (!std::getline(lines, line)) {
      ADD_FAILURE() << "output ended early:\n" << run.output;
      return {};
    }
    std::istringstream fields(line);
    int index = -2, explained = -2, splits = 0, explained_splits = 0;
    std::string reason;
    fields >> index >> explained >> reason >> splits >> explained_splits;
    if (reasons != nullptr) ++(*reasons)[reason];
    EXPECT_EQ(explained, index) << line << ": select asked for the reason chooses as it does without";
    EXPECT_EQ(explained_splits, splits) << line << ": and splits K alike";
    EXPECT_GE(index, -1);
    EXPECT_LT(index, static_cast<int>(model.kernels.size()));
    if (index < -1 || index >= static_cast<int>(model.kernels.size())) return {};
    const auto name = [&](int i) { return i < 0 ? std::string("(refused)") : model.kernels[static_cast<size_t>(i)].name_expression; };
    const CallShape call{c.p, c.lda, c.ldb, c.ldc, c.alignment};
    const size_t table = c.table < 0 ? model.devices.size() : static_cast<size_t>(c.table);
    const DispatchChoice choice = choose_kernel(model, table, call);
    const std::string expected = name(choice.kernel);
    if (splits_seen != nullptr && choice.splits > 1) ++*splits_seen;
    if ((name(index) != expected || reason != choice.reason || splits != choice.splits) && ++mismatches <= 10)
      ADD_FAILURE() << fmt::format("table {} {} lda={} ldb={} ldc={} alignment={}: header picks {} ({}, {} slices), "
                                   "choose_kernel {} ({}, {} slices)",
                                   c.table, c.p.to_string(), c.lda, c.ldb, c.ldc, c.alignment, name(index), reason,
                                   splits, expected, choice.reason, choice.splits);
    if (choice.splits > 1) {
      EXPECT_EQ(c.p.batch, 1) << c.p.to_string();
      EXPECT_EQ(c.p.k % choice.splits, 0) << c.p.to_string();
      EXPECT_TRUE(model.kernels[static_cast<size_t>(choice.kernel)].batched) << c.p.to_string();
    }
    // Whatever runs computes the call's layout and type, and takes its batch.
    EXPECT_GE(index, 0) << c.p.to_string() << ": blocktile2d serves every layout, type and batch, so nothing is refused";
    if (index < 0) continue;
    const ExportKernel& k = model.kernels[static_cast<size_t>(index)];
    EXPECT_EQ(k.layout, c.p.layout()) << c.p.to_string() << " ran " << k.name_expression;
    if (c.p.dtype == DType::tf32x3)   // an opted-in call runs its class's kernel or sgemm's
      EXPECT_TRUE(k.dtype == DType::tf32x3 || k.dtype == DType::f32) << c.p.to_string() << " ran " << k.name_expression;
    else
      EXPECT_EQ(k.dtype, c.p.dtype) << c.p.to_string() << " ran " << k.name_expression;
    if (c.p.batch > 1) EXPECT_TRUE(k.batched) << c.p.to_string() << " ran " << k.name_expression;
  }
  EXPECT_EQ(mismatches, 0);
  std::vector<std::string> rest;
  for (std::string line; std::getline(lines, line);) rest.push_back(line);
  return rest;
}

/// `count` shapes of every class, log-uniform over 1..65536 per dimension (a fixed seed), after the
/// given ones.
std::vector<Problem> random_shapes(std::vector<Problem> problems, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> log_dim(0.0, std::log(65536.0));
  while (problems.size() < count) {
    const auto dim = [&] { return static_cast<int64_t>(std::exp(log_dim(rng))); };
    const Problem p{dim(), dim(), dim()};
    if (static_cast<double>(p.m) * static_cast<double>(p.n) < 2e9) problems.push_back(p);   // C fits an int's offsets
  }
  return problems;
}

/// Every layout, unbatched and batched (packed, and with A or B broadcast), of each shape in `dtype`,
/// with tight leading dimensions, on tables -1 (none) to table_count - 1.
void add_operand_cases(std::vector<SelectCase>& cases, const std::vector<Problem>& shapes, DType dtype,
                       int table_count) {
  for (int table = -1; table < table_count; ++table)
    for (const Problem& shape : shapes)
      for (int layout = 0; layout < 4; ++layout)
        for (const int64_t batch : {1, 4096, 7})
          for (int broadcast = 0; broadcast < (batch > 1 ? 3 : 1); ++broadcast) {
            Problem p = Problem::make(shape.m, shape.n, shape.k, layout >= 2, layout % 2 == 1, batch, dtype);
            if (broadcast == 1) p.stride_a = 0;
            if (broadcast == 2) p.stride_b = 0;
            const CallShape call = tight_call(p);
            cases.push_back({table, call.problem, call.lda, call.ldb, call.ldc, call.alignment});
          }
}

TEST(ExportNvcc, HeaderSelectionMatchesChooseKernelAndCompilesForSm80) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");
  RealFixture f;
  f.build(db);
  const ExportModel model = build_export_model(db.store(), {}, builtin_blocktile2d());
  ASSERT_EQ(model.devices.size(), 2u);
  ASSERT_EQ(model.devices[0].name, k_a100);
  ASSERT_EQ(model.devices[1].name, k_h100);
  test::write_file(dir / "tuned.cuh", render_header(model, "cmtune"));
  // The NT winner is the f32 NT generic default's very kernel: its build is known, so bench can time
  // it; the TT generic was never measured.
  ASSERT_GE(model.generic_kernels[0][1], 0);
  EXPECT_EQ(model.kernels[static_cast<size_t>(model.generic_kernels[0][1])].name_expression, f.b2_nt.name_expression);
  EXPECT_EQ(model.kernels[static_cast<size_t>(model.generic_kernels[0][1])].binary_key, DbBuilder::binary_key_of(f.b2_nt));
  EXPECT_TRUE(model.kernels[static_cast<size_t>(model.generic_kernels[0][3])].binary_key.empty());

  std::vector<SelectCase> cases;
  const std::vector<Problem> problems = random_shapes(
      {{1024, 1024, 1024}, {4096, 4096, 4096}, {512, 2048, 256}, {2048, 2048, 2048}, {128, 128, 128},
       {17, 33, 65},       {1000, 1000, 1000}, {1023, 1023, 1023}, {1025, 1025, 1025}, {2049, 100, 3000},
       {1, 1, 1},          {100000, 16, 16},   {256, 4096, 128},   {3000, 3000, 64},   {724, 724, 724},
       {256, 256, 65536},  {512, 256, 16384},  {128, 128, 32768},  {256, 256, 8192}},
      315, 17);
  for (int table = -1; table < 2; ++table)
    for (const Problem& p : problems)
      for (const auto& [dl, dc, align] : std::vector<std::tuple<int, int, int>>{{0, 0, 256}, {1, 0, 256}, {0, 3, 256},
                                                                               {0, 0, 4}, {0, 0, 8}, {0, 0, 16}, {4, 4, 16}})
        cases.push_back({table, p, p.k + dl, p.n + dl, p.n + dc, align});
  // Every layout, unbatched and batched (packed, and with A or B broadcast), on a fifth of the shapes
  // and the tuned ones: only kernels of the call's layout (and batched ones for a batch) may run.
  std::vector<Problem> operand_shapes = {{1024, 1024, 1024}, {64, 64, 64}, {100, 100, 100}, {1023, 1023, 1023}};
  for (size_t i = 0; i < problems.size(); i += 5)
    if (problems[i].m * problems[i].n < (int64_t{1} << 24)) operand_shapes.push_back(problems[i]);
  add_operand_cases(cases, operand_shapes, DType::f32, 2);

  std::map<std::string, int> reasons;
  int splits_seen = 0;
  const std::vector<std::string> rest = check_header_selection(dir, model, cases, "sm_80", R"(
  // Why, for calls of the H100 table (1) that no tuned kernel computes, and one that misses the
  // requirements of the only TN kernel (lda, ldb 1023).
  const auto why = [](int table, int layout, int batch, int m, int n, int k, int lda, int ldb, int ldc, int dtype) {
    cmtune::DispatchReason reason = cmtune::DispatchReason::tuned;
    int splits = 1;
    const int kernel = cmtune::detail::select(
        table, cmtune::detail::Call{layout, batch, 0, m, n, k, lda, ldb, ldc, 256, dtype}, &splits, &reason);
    const bool generic = kernel == cmtune::detail::k_generic_kernels[dtype][layout];
    std::printf("why %s%s\n", cmtune::dispatch_reason_name(reason), generic ? " generic" : "");
  };
  why(1, 3, 1, 1024, 1024, 1024, 1024, 1024, 1024, 0);   // f32 tt
  why(1, 0, 1, 1024, 1024, 1024, 1024, 1024, 1024, 1);   // f64 nn
  why(1, 2, 1, 1023, 1023, 1023, 1023, 1023, 1023, 0);   // f32 tn, lda % 4 != 0
  why(1, 0, 1, 1024, 1024, 1024, 1024, 1024, 1024, 0);   // the tuned f32 nn problem
  why(-1, 0, 1, 1024, 1024, 1024, 1024, 1024, 1024, 0);  // no table
  if (argc > 6) {   // the public API with the reason compiles for each type (it needs a GPU to answer)
    const char* name = nullptr;
    cmtune::DispatchReason reason;
    static const double d[1] = {};
    static const int i[1] = {};
    return cmtune::kernel_name(cmtune::Op::T, cmtune::Op::T, 8, 8, 8, d, 8, 0, d, 8, 0, d, 8, 0, 1, &name, &reason) +
           cmtune::kernel_name(8, 8, 8, i, 8, i, 8, i, 8, &name, &reason);
  }
  using cmtune::detail::match_device_table;
  std::printf("match %d %d %d %d %d\n", match_device_table("NVIDIA H100 80GB HBM3", 9, 0, 132),
              match_device_table("NVIDIA A100-SXM4-40GB", 8, 0, 108), match_device_table("NVIDIA H100 PCIe", 9, 0, 114),
              match_device_table("NVIDIA H100 80GB HBM3", 9, 0, 114), match_device_table("Tesla V100", 7, 0, 80));
  static const float buffer[64] = {};
  std::printf("align %d %d %d %d\n", cmtune::detail::alignment_of(buffer, buffer, buffer) >= 16 ? 16 : 0,
              cmtune::detail::alignment_of(buffer + 1, buffer, buffer), cmtune::detail::alignment_of(buffer + 2, buffer, buffer + 4),
              cmtune::detail::alignment_of(nullptr, nullptr, nullptr));
)",
                                                               &reasons, &splits_seen);
  EXPECT_GT(splits_seen, 0) << "the long-K shapes split K, in the header as in choose_kernel";
  EXPECT_EQ(rest, (std::vector<std::string>{"why not_served generic", "why not_served generic",
                                            "why requirements_missed generic", "why tuned", "why no_table generic",
                                            // Exact H100 -> 1, exact A100 -> 0, another cc 9.0 device -> first cc
                                            // 9.0 table, V100 -> none.
                                            "match 1 0 1 1 -1", "align 16 4 8 256"}));
  // The cases meet every reason but not_modelled (every kernel of a real table has a model).
  for (const char* reason : {"tuned", "tuned_portable", "predicted", "no_table", "not_served", "requirements_missed"})
    EXPECT_GT(reasons[reason], 0) << reason;
  EXPECT_EQ(reasons.count("not_modelled"), 0u);
}

// The same with FP64 and INT32 winners beside the FP32 ones: dgemm and igemm calls (the f64 dmma
// winner needs 16-byte alignment and even leading dimensions) choose among their own type's kernels
// as choose_kernel does, and f32 calls never run them; the header builds for sm_80 and sm_90.
TEST(ExportNvcc, TypedHeaderSelectionMatchesChooseKernelForEachType) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");
  RealFixture f;
  f.typed = true;
  f.build(db);
  const ExportModel model = build_export_model(db.store(), {}, builtin_blocktile2d());
  ASSERT_EQ(model.devices.size(), 2u);
  ASSERT_EQ(model.devices[1].name, k_h100);
  const std::string header = render_header(model, "cmtune");
  test::write_file(dir / "tuned.cuh", header);
  // A generic default per type and layout (the built-in blocktile2d computes them all), and the tuned
  // kernels of every type.
  for (int d = 0; d < k_header_dtypes; ++d)
    for (int l = 0; l < 4; ++l) {
      const int g = model.generic_kernels[d][l];
      ASSERT_GE(g, 0) << d << " " << l;
      EXPECT_EQ(static_cast<int>(model.kernels[static_cast<size_t>(g)].dtype), d);
      EXPECT_EQ(layout_number(model.kernels[static_cast<size_t>(g)].layout), l);
    }
  std::set<DType> tuned_types;
  for (const auto& e : model.devices[1].entries) tuned_types.insert(e.problem.dtype);
  EXPECT_EQ(tuned_types, (std::set<DType>{DType::f32, DType::f64, DType::i32}));
  EXPECT_NE(header.find("static_cast<TypedBatchedKernelFn<double>>(&"), std::string::npos);
  EXPECT_NE(header.find("static_cast<TypedBatchedKernelFn<int>>(&"), std::string::npos);
  EXPECT_NE(header.find("{{1024, 1024, 1024, 0, 1, 0, 1}, "), std::string::npos) << "the f64 entry";
  EXPECT_NE(header.find("{{1024, 1024, 1024, 0, 1, 0, 2}, "), std::string::npos) << "the i32 entry";
  EXPECT_NE(header.find("{{64, 64, 64, 1, 4096, 0, 2}, "), std::string::npos) << "the i32 NT batch";

  std::vector<SelectCase> cases;
  const std::vector<Problem> problems =
      random_shapes({{1024, 1024, 1024}, {2048, 2048, 2048}, {64, 64, 64}, {1023, 1023, 1023}, {17, 33, 65},
                     {1, 4096, 4096}, {4096, 4096, 16}, {100000, 16, 16}},
                    80, 29);
  for (const DType dtype : {DType::f32, DType::f64, DType::i32}) {
    for (int table = -1; table < 2; ++table)
      for (Problem p : problems) {
        p.dtype = dtype;
        // Tight and odd leading dimensions, aligned, 8-byte (a double's own) and 4-byte aligned.
        for (const auto& [dl, align] : std::vector<std::pair<int, int>>{{0, 256}, {1, 256}, {0, 8}, {0, 16}, {2, 16}})
          if (align >= dtype_bytes(dtype)) cases.push_back({table, p, p.k + dl, p.n + dl, p.n + dl, align});
      }
    std::vector<Problem> operand_shapes = {{1024, 1024, 1024}, {64, 64, 64}, {100, 100, 100}};
    for (size_t i = 8; i < problems.size(); i += 6)
      if (problems[i].m * problems[i].n < (int64_t{1} << 24)) operand_shapes.push_back(problems[i]);
    add_operand_cases(cases, operand_shapes, dtype, 2);
  }
  const std::vector<std::string> rest = check_header_selection(dir, model, cases, "sm_80", R"(
  static const double d[64] = {};
  std::printf("align %d %d\n", cmtune::detail::alignment_of(d, d, d, 10, 0, 64, 8) >= 16 ? 16 : 0,
              cmtune::detail::alignment_of(d, d, d, 10, 0, 64));
)");
  EXPECT_EQ(rest, (std::vector<std::string>{"align 16 8"}));
  // The tuned shapes run their own type's winners, aligned, and the portable kernels of their type
  // when the call misses the winner's requirements.
  const auto chosen = [&](Problem p, int64_t alignment) {
    CallShape call = tight_call(p);
    call.alignment = alignment;
    const int k = choose_kernel(model, 1, call).kernel;
    return k < 0 ? std::string("(refused)") : model.kernels[static_cast<size_t>(k)].name_expression;
  };
  EXPECT_EQ(chosen(RealFixture::f64({1024, 1024, 1024}), 256), f.dm.name_expression);
  EXPECT_EQ(chosen(RealFixture::f64({1024, 1024, 1024}), 8), f.b2_f64.name_expression);
  EXPECT_EQ(chosen(RealFixture::i32({1024, 1024, 1024}), 256), f.b2_i32.name_expression);
  EXPECT_EQ(chosen({1024, 1024, 1024}, 256), f.ms4.name_expression);

  // And for Hopper, with the calls of every entry point of each type.
  test::write_file(dir / "use.cu", R"(#include "tuned.cuh"
cudaError_t use(double* dc, const double* da, const double* db, int* ic, const int* ia, const int* ib, cudaStream_t s) {
  using cmtune::Op;
  cudaError_t e = cmtune::dgemm(100, 200, 300, 1.0, da, 300, db, 200, 0.0, dc, 200, s);
  if (e == cudaSuccess) e = cmtune::dgemm(Op::T, Op::N, 100, 200, 300, 1.0, da, 100, db, 200, 0.5, dc, 200, s);
  if (e == cudaSuccess)
    e = cmtune::dgemm_strided_batched(Op::N, Op::T, 64, 64, 64, 2.0, da, 64, 4096, db, 64, 0, 0.0, dc, 64, 4096, 8, s);
  if (e == cudaSuccess) e = cmtune::dgemm_colmajor(Op::N, Op::N, 100, 200, 300, 1.0, da, 100, db, 300, 0.0, dc, 100, s);
  if (e == cudaSuccess)
    e = cmtune::dgemm_colmajor_strided_batched(Op::T, Op::T, 64, 64, 64, 1.0, da, 64, 4096, db, 64, 4096, 1.0, dc, 64,
                                               4096, 3, s);
  if (e == cudaSuccess) e = cmtune::igemm(100, 200, 300, 3, ia, 300, ib, 200, -2, ic, 200, s);
  if (e == cudaSuccess) e = cmtune::igemm(Op::N, Op::T, 100, 200, 300, 1, ia, 300, ib, 300, 0, ic, 200, s);
  if (e == cudaSuccess)
    e = cmtune::igemm_strided_batched(Op::T, Op::N, 64, 64, 64, 7, ia, 64, 0, ib, 64, 4096, 3, ic, 64, 4096, 8, s);
  if (e == cudaSuccess) e = cmtune::igemm_colmajor(Op::T, Op::N, 100, 200, 300, 1, ia, 300, ib, 300, 0, ic, 100, s);
  if (e == cudaSuccess)
    e = cmtune::igemm_colmajor_strided_batched(Op::N, Op::N, 64, 64, 64, 1, ia, 64, 4096, ib, 64, 4096, 1, ic, 64, 4096,
                                               3, s);
  const char* name = nullptr;
  if (e == cudaSuccess) e = cmtune::kernel_name(100, 200, 300, da, 300, db, 200, dc, 200, &name);
  if (e == cudaSuccess) e = cmtune::kernel_name(Op::N, Op::N, 100, 200, 300, ia, 300, 0, ib, 200, 0, ic, 200, 0, 1, &name);
  return e;
}
)");
  const auto sm90 = test::nvcc_cached(unoptimized_format("-arch=sm_90 -c -I {}", quoted(dir.path())), dir / "use.cu",
                                      dir / "use.o", {dir / "tuned.cuh"});
  EXPECT_EQ(sm90.exit_code, 0) << sm90.output;
}

// The opt-in class: tf32x3 winners beside the f32 ones (the H100 table only). Opted-in calls
// (Call::dtype 3, what sgemm_tf32x3 dispatches) choose as choose_kernel does in every layout, batch,
// alignment and leading dimension, on both tables and on none; f32 calls never run a tf32x3 kernel;
// both classes run somewhere. The header compiles for sm_80 and sm_90 with every sgemm_tf32x3 entry
// point, with and without CMTUNE_SGEMM_TF32X3, and two translation units that differ in the macro
// link into one program in which each sgemm dispatches as its own unit asked.
TEST(ExportNvcc, OptedInSelectionMatchesChooseKernelAndTheMacroSwitchesSgemm) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");
  RealFixture f;
  f.tf32x3 = true;
  f.build(db);
  const ExportModel model = build_export_model(db.store(), {}, builtin_blocktile2d());
  ASSERT_EQ(model.devices.size(), 2u);
  const std::string header = render_header(model, "cmtune");
  test::write_file(dir / "tuned.cuh", header);
  EXPECT_NE(header.find("{{2048, 2048, 2048, 0, 1, 0, 3}, "), std::string::npos) << "the tf32x3 entry";
  EXPECT_NE(header.find("dtype (0 f32, 1 f64, 2 i32, 3 tf32x3)"), std::string::npos);
  for (int l = 0; l < 4; ++l) EXPECT_GE(model.generic_kernels[0][l], 0) << "the f32 generics serve the fallback";

  std::vector<SelectCase> cases;
  const std::vector<Problem> problems =
      random_shapes({{1024, 1024, 1024}, {2048, 2048, 2048}, {64, 64, 64}, {1023, 1023, 1023}, {17, 33, 65},
                     {2897, 2897, 2897}, {4096, 4096, 16}, {100000, 16, 16}, {256, 256, 65536}},
                    70, 31);
  for (const DType dtype : {DType::tf32x3, DType::f32})
    for (int table = -1; table < 2; ++table)
      for (Problem p : problems) {
        p.dtype = dtype;
        // Tight and odd leading dimensions, aligned, 8-byte aligned (below the 16 bytes of VEC = 4).
        for (const auto& [dl, align] : std::vector<std::pair<int, int>>{{0, 256}, {1, 256}, {0, 8}, {0, 16}, {4, 16}})
          cases.push_back({table, p, p.k + dl, p.n + dl, p.n + dl, align});
      }
  std::vector<Problem> operand_shapes = {{1024, 1024, 1024}, {64, 64, 64}, {100, 100, 100}, {2048, 512, 1024}};
  for (size_t i = 9; i < problems.size(); i += 6)
    if (problems[i].m * problems[i].n < (int64_t{1} << 24)) operand_shapes.push_back(problems[i]);
  add_operand_cases(cases, operand_shapes, DType::tf32x3, 2);
  const std::vector<std::string> rest = check_header_selection(dir, model, cases, "sm_80", R"(
  std::printf("sgemm %d\n", cmtune::k_sgemm_dtype);
)");
  EXPECT_EQ(rest, (std::vector<std::string>{"sgemm 0"})) << "sgemm is IEEE FP32 without the macro";
  // Both classes run opted-in calls; misaligned calls and odd leading dimensions never run a tf32x3
  // kernel that requires more (the VEC = 4 build), and the A100 and no table never run one at all.
  std::map<DType, int> ran;
  for (const SelectCase& c : cases) {
    if (c.p.dtype != DType::tf32x3) continue;
    const DispatchChoice choice = choose_kernel(model, c.table < 0 ? model.devices.size() : size_t(c.table),
                                                CallShape{c.p, c.lda, c.ldb, c.ldc, c.alignment});
    ASSERT_GE(choice.kernel, 0) << c.p.to_string();
    const ExportKernel& k = model.kernels[static_cast<size_t>(choice.kernel)];
    ++ran[k.dtype];
    EXPECT_EQ(k.dtype, choice.dtype) << c.p.to_string();
    if (k.dtype == DType::tf32x3) {
      EXPECT_EQ(c.table, 1) << c.p.to_string() << ": only the H100 table has tf32x3 kernels";
      EXPECT_GE(c.alignment, k.requirements.align_bytes) << c.p.to_string();
      EXPECT_EQ(c.lda % std::max<int64_t>(1, k.requirements.ld_multiple), 0) << c.p.to_string();
    }
  }
  EXPECT_GT(ran[DType::tf32x3], 0);
  EXPECT_GT(ran[DType::f32], 0);
  // The tuned 2048^3 runs its tf32x3 winner where that is predicted faster than sgemm's choice (on
  // these synthetic times, f32's model of an untuned 2048^3 may well be lower), and it has no portable
  // tf32x3 winner: with lda 2049 it runs sgemm's kernel.
  CallShape odd = tight_call(RealFixture::x3({2048, 2048, 2048}));
  const DispatchChoice class_choice = choose_class_kernel(model, 1, odd);
  CallShape fp32_call = odd;
  fp32_call.problem.dtype = DType::f32;
  const DispatchChoice fp32_choice = choose_class_kernel(model, 1, fp32_call);
  ASSERT_EQ(model.kernels[static_cast<size_t>(class_choice.kernel)].name_expression, f.x3_vec4.name_expression);
  ASSERT_GT(class_choice.modelled_us, 0);
  ASSERT_GT(fp32_choice.modelled_us, 0);
  EXPECT_EQ(choose_kernel(model, 1, odd).kernel,
            class_choice.modelled_us < fp32_choice.modelled_us ? class_choice.kernel : fp32_choice.kernel);
  odd.lda = 2049;
  CallShape plain = odd;
  plain.problem.dtype = DType::f32;
  EXPECT_EQ(choose_kernel(model, 1, odd).kernel, choose_kernel(model, 1, plain).kernel);

  // Every entry point, with and without the macro, for Ampere and Hopper; and two units that differ
  // in the macro, linked together.
  const std::string calls = R"(
cudaError_t use(float* c, const float* a, const float* b, cudaStream_t s) {
  using cmtune::Op;
  cudaError_t e = cmtune::sgemm_tf32x3(100, 200, 300, 1.0f, a, 300, b, 200, 0.0f, c, 200, s);
  if (e == cudaSuccess) e = cmtune::sgemm_tf32x3(Op::T, Op::N, 100, 200, 300, 1.0f, a, 100, b, 200, 0.5f, c, 200, s);
  if (e == cudaSuccess)
    e = cmtune::sgemm_tf32x3_strided_batched(Op::N, Op::T, 64, 64, 64, 2.0f, a, 64, 4096, b, 64, 0, 0.0f, c, 64, 4096,
                                             8, s);
  if (e == cudaSuccess)
    e = cmtune::sgemm_tf32x3_colmajor(Op::N, Op::N, 100, 200, 300, 1.0f, a, 100, b, 300, 0.0f, c, 100, s);
  if (e == cudaSuccess)
    e = cmtune::sgemm_tf32x3_colmajor_strided_batched(Op::T, Op::T, 64, 64, 64, 1.0f, a, 64, 4096, b, 64, 4096, 1.0f,
                                                      c, 64, 4096, 3, s);
  if (e == cudaSuccess) e = cmtune::sgemm(100, 200, 300, 1.0f, a, 300, b, 200, 0.0f, c, 200, s);
  const char* name = nullptr;
  cmtune::DispatchReason reason;
  if (e == cudaSuccess) e = cmtune::kernel_name_tf32x3(100, 200, 300, a, 300, b, 200, c, 200, &name, &reason);
  if (e == cudaSuccess)
    e = cmtune::kernel_name_tf32x3(Op::N, Op::N, 100, 200, 300, a, 300, 0, b, 200, 0, c, 200, 0, 1, &name);
  if (e == cudaSuccess) e = cmtune::kernel_name(100, 200, 300, a, 300, b, 200, c, 200, &name);
  return e;
}
)";
  test::write_file(dir / "use.cu", "#include \"tuned.cuh\"\n" + calls);
  for (const std::string flags : {"-arch=sm_80", "-arch=sm_90 -DCMTUNE_SGEMM_TF32X3"}) {
    const auto r = test::nvcc_cached(unoptimized_format("{} -c -Xcompiler -Wall,-Wextra -I {}", flags, quoted(dir.path())),
                                     dir / "use.cu", dir / "use.o", {dir / "tuned.cuh"});
    EXPECT_EQ(r.exit_code, 0) << flags << ":\n" << r.output;
  }
  // The sgemm of each unit, as a pointer, and the class it dispatches as.
  const std::string unit = R"(
#include "tuned.cuh"
typedef cudaError_t (*Sgemm)(int, int, int, float, const float*, int, const float*, int, float, float*, int,
                             cudaStream_t);
int SUFFIX(sgemm_class)() { return cmtune::k_sgemm_dtype; }
const void* SUFFIX(sgemm_address)() { return reinterpret_cast<const void*>(static_cast<Sgemm>(&cmtune::sgemm)); }
)";
  test::write_file(dir / "ieee.cu", "#define SUFFIX(x) x##_ieee\n" + unit);
  test::write_file(dir / "opted.cu", "#define CMTUNE_SGEMM_TF32X3\n#define SUFFIX(x) x##_opted\n" + unit);
  test::write_file(dir / "main.cu", R"(#include <cstdio>
int sgemm_class_ieee();
int sgemm_class_opted();
const void* sgemm_address_ieee();
const void* sgemm_address_opted();
int main() {
  std::printf("%d %d %d\n", sgemm_class_ieee(), sgemm_class_opted(), sgemm_address_ieee() != sgemm_address_opted());
  return 0;
}
)");
  for (const char* name : {"ieee", "opted"}) {
    const auto r = test::nvcc_cached(unoptimized_format("-arch=sm_80 -rdc=true -c -I {}", quoted(dir.path())),
                                     dir / (std::string(name) + ".cu"), dir / (std::string(name) + ".o"),
                                     {dir / "tuned.cuh"});
    ASSERT_EQ(r.exit_code, 0) << name << ":\n" << r.output;
  }
  const auto link = test::run_command(fmt::format("{} -std=c++17 -arch=sm_80 -rdc=true -o {} {} {} {}", test::nvcc_path(),
                                                  quoted(dir / "prog"), quoted(dir / "main.cu"), quoted(dir / "ieee.o"),
                                                  quoted(dir / "opted.o")));
  ASSERT_EQ(link.exit_code, 0) << link.output;
  const auto run = test::run_command(quoted(dir / "prog"));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "0 3 1\n") << "each unit's sgemm is its own: IEEE FP32, and opted in";
}

// A header holding a TMA kernel (tf32x3_wgmma, sm_90a) compiles wherever the header does: for sm_90a,
// where the kernel is real, and for other targets (sm_80 here; plain sm_90 takes the same path), where
// its body traps and the header's probe keeps the dispatch from it (tests/gpu/test_header_tf32x3.cpp
// runs an sm_90a and an sm_90 build). Its row says it takes tensor maps, and its function is named
// uncast.
TEST(ExportNvcc, AHeaderWithAWgmmaKernelCompilesForSm90aAndSm80) {
  test::TempDir dir;
  DbBuilder db(dir / "t.db");   // the wgmma winner alone beside the generic default: a small header
  db.add_device(k_h100_uuid, k_h100, 9, 0, 132);
  const auto templates = load_templates({default_templates_dir()});
  const KernelSpec wg = real_kernel(db, templates, "tf32x3_wgmma", "BM=128,BN=128,STAGES=3,SWIZZLE=1,TRANS_A=0,TRANS_B=1,DTYPE=3",
                                    [](const LaunchShape& s, const Requirements&) { return s.tensor_maps == 1; });
  Problem p{4096, 4096, 4096};
  p.trans_b = true;
  p.dtype = DType::tf32x3;
  db.add_winner(k_h100_uuid, p, "overall", wg, 1.5);
  const std::string header = export_header(db.store(), {}, builtin_blocktile2d());
  ASSERT_NE(header.find("cmt_sgemm_tf32x3_wgmma<128, 128, 3, 1, 0, 1, 3>"), std::string::npos);
  EXPECT_NE(header.find("return reinterpret_cast<const void*>(&src_"), std::string::npos);
  test::write_file(dir / "tuned.cuh", header);
  test::write_file(dir / "use.cu", R"(#include "tuned.cuh"
cudaError_t use(float* C, const float* A, const float* B, cudaStream_t s) {
  return cmtune::sgemm_tf32x3(cmtune::Op::N, cmtune::Op::T, 4096, 4096, 4096, 1.0f, A, 4096, B, 4096, 0.0f, C, 4096, s);
}
)");
  for (const std::string arch : {"sm_90a", "sm_80"}) {
    const auto r = test::nvcc_cached(unoptimized_format("-arch={} -c -I {}", arch, quoted(dir.path())), dir / "use.cu",
                                     dir / ("use_" + arch + ".o"), {dir / "tuned.cuh"});
    EXPECT_EQ(r.exit_code, 0) << arch << ":\n" << r.output;
  }
}

}  // namespace
