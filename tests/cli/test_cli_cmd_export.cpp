// cm-tune export through the real binary: determinism, --check, --dtype, what no tuned kernel serves.
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

// ---------------------------------------------------------------------------------------------
// The command: determinism and --check, through the real binary
// ---------------------------------------------------------------------------------------------

TEST(ExportCli, SameDatabaseSameBytesAndCheckDetectsChanges) {
  test::TempDir dir;
  const fs::path db_file = dir / "t.db";
  RealFixture f;
  {
    DbBuilder db(db_file);
    f.build(db);
  }
  const std::string exe = test::cmtune_binary();
  const auto cmtune = [&](const std::string& args) {
    return test::run_command(fmt::format("{} --db {} {}", exe, quoted(db_file), args));
  };

  const auto first = cmtune("export --out " + quoted(dir / "a.cuh"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("2 device tables"), std::string::npos) << first.output;
  const auto second = cmtune("export --out " + quoted(dir / "b.cuh"));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(test::read_file(dir / "a.cuh"), test::read_file(dir / "b.cuh"));

  const auto check = cmtune("export --check --out " + quoted(dir / "a.cuh"));
  EXPECT_EQ(check.exit_code, 0) << check.output;
  const auto missing = cmtune("export --check --out " + quoted(dir / "missing.cuh"));
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_FALSE(fs::exists(dir / "missing.cuh"));

  // A different namespace is a different file.
  const auto other_ns = cmtune("export --check --namespace app::gemm --out " + quoted(dir / "a.cuh"));
  EXPECT_EQ(other_ns.exit_code, 1) << other_ns.output;

  // Change one winner: the export differs and --check says so in its last line, after a line per
  // embedded image that is not what export embeds now.
  {
    DbBuilder db(db_file);
    db.add_winner(k_h100_uuid, {1024, 1024, 1024}, "overall", f.bv, 0.09);
  }
  const auto stale = cmtune("export --check --out " + quoted(dir / "a.cuh"));
  EXPECT_EQ(stale.exit_code, 1) << stale.output;
  EXPECT_NE(stale.output.find("differs"), std::string::npos) << stale.output;
  {
    std::istringstream lines(stale.output);
    std::vector<std::string> all;
    for (std::string line; std::getline(lines, line);) all.push_back(line);
    ASSERT_FALSE(all.empty());
    EXPECT_NE(all.back().find("differs from what"), std::string::npos) << stale.output;
    for (size_t i = 0; i + 1 < all.size(); ++i)
      EXPECT_NE(all[i].find("a.cuh: image "), std::string::npos) << stale.output;
  }
  ASSERT_EQ(cmtune("export --out " + quoted(dir / "c.cuh")).exit_code, 0);
  EXPECT_NE(test::read_file(dir / "a.cuh"), test::read_file(dir / "c.cuh"));
  EXPECT_EQ(cmtune("export --check --out " + quoted(dir / "c.cuh")).exit_code, 0);

  // --device: one table only; a bad spec is resolve_db_device's usage error.
  const auto one = cmtune("export --device A100 --out " + quoted(dir / "d.cuh"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const std::string d = test::read_file(dir / "d.cuh");
  EXPECT_EQ(d.find(k_h100_uuid), std::string::npos);
  EXPECT_NE(d.find(k_a100_uuid), std::string::npos);
  const auto bad = cmtune("export --device 'No Such GPU' --out " + quoted(dir / "e.cuh"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("has not been tuned"), std::string::npos) << bad.output;
  EXPECT_EQ(cmtune("export --namespace 9x --out " + quoted(dir / "e.cuh")).exit_code, 2);
}

TEST(ExportCli, DtypeChoosesWhichTypesWinnersGoIntoTheTables) {
  test::TempDir dir;
  const fs::path db_file = dir / "t.db";
  RealFixture f;
  {
    DbBuilder db(db_file);
    f.build(db);   // f32 winners only
  }
  const auto cmtune = [&](const std::string& args) {
    return test::run_split(dir, fmt::format("--db {} {}", quoted(db_file), args));
  };
  // Nothing of the requested types: one line naming them, nothing written.
  const auto none = cmtune("export --dtype f64,i32 --out h.cuh");
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_EQ(none.err, fmt::format("cm-tune: error: database {} has no tuned problems of type f64, i32 (--dtype) to "
                                  "export; its tuned problems are of type f32\n",
                                  db_file.string()));
  EXPECT_FALSE(fs::exists(dir / "h.cuh"));
  const auto bad = cmtune("export --dtype f16 --out h.cuh");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "cm-tune: error: --dtype: unknown type 'f16' (f32, f64, i32, tf32x3 or all)\n");

  {
    DbBuilder db(db_file);
    f.add_typed(db);
  }
  const auto all = cmtune("export --out all.cuh");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.err, "") << "no warning: every type is exported";
  EXPECT_NE(all.out.find("12 generic defaults, one per type and layout"), std::string::npos) << all.out;
  // Per table, the types and layouts no tuned kernel serves (every fixture kernel is batched).
  EXPECT_NE(all.out.find("\nNVIDIA A100-SXM4-40GB: no tuned kernel serves f32 nt, tn, tt; f64 nt, tn, tt; i32 (any "
                         "layout); those calls run the generic default kernels\nNVIDIA H100 80GB HBM3: no tuned kernel "
                         "serves f32 tt; f64 nt, tt; i32 tn, tt; those calls run the generic default kernels\n"),
            std::string::npos)
      << all.out;
  const std::string every = test::read_file(dir / "all.cuh");
  EXPECT_NE(every.find(f.dm.name_expression), std::string::npos) << "the f64 winner";
  EXPECT_NE(every.find(f.b2_i32.name_expression), std::string::npos) << "the i32 winner";
  EXPECT_EQ(cmtune("export --dtype all --check --out all.cuh").exit_code, 0) << "all is the default";
  EXPECT_EQ(cmtune("export --dtype i32,f64,f32 --check --out all.cuh").exit_code, 0);

  // f32 alone: no tuned f64 or i32 kernel, but dgemm and igemm are there, on the generic defaults.
  const auto f32 = cmtune("export --dtype f32 --out f32.cuh");
  ASSERT_EQ(f32.exit_code, 0) << f32.err;
  EXPECT_NE(f32.out.find("\nNVIDIA H100 80GB HBM3: no tuned kernel serves f32 tt; f64, i32 (any layout); those calls "
                         "run the generic default kernels\n"),
            std::string::npos)
      << f32.out;
  const std::string only = test::read_file(dir / "f32.cuh");
  EXPECT_EQ(only.find(f.dm.name_expression), std::string::npos);
  EXPECT_EQ(only.find(f.b2_i32.name_expression), std::string::npos);
  const std::regex typed_entry(R"(\{\{\d+, \d+, \d+, \d, \d+, \d, [12]\}, -?\d+, -?\d+\},)");
  EXPECT_FALSE(std::regex_search(only, typed_entry)) << "no f64 or i32 entry";
  EXPECT_TRUE(std::regex_search(every, typed_entry));
  EXPECT_NE(only.find("inline cudaError_t dgemm("), std::string::npos);
  EXPECT_NE(only.find("inline cudaError_t igemm_colmajor_strided_batched("), std::string::npos);
  EXPECT_NE(only.find("cmt_sgemm_blocktile2d<64, 64, 8, 8, 4, 1, 1, 2>"), std::string::npos) << "the i32 TT generic";
  // --check names the option in the command it suggests.
  const auto stale = cmtune("export --dtype f32 --check --out all.cuh");
  EXPECT_EQ(stale.exit_code, 1);
  EXPECT_NE(stale.err.find("--dtype f32`"), std::string::npos) << stale.err;
  EXPECT_EQ(cmtune("export --dtype f32 --check --out f32.cuh").exit_code, 0);
}

// export names, per table, the types and layouts no tuned kernel serves (nothing when all are), and
// query says of a call that runs the generic default whether no tuned kernel computes it or it misses
// their requirements, in text and JSON.
TEST(ExportCli, SaysWhichCallsNoTunedKernelServes) {
  test::TempDir dir;
  RealFixture f;
  {
    DbBuilder db(dir / "t.db");
    f.build(db);   // f32 only; H100: nn, nt and tn (with requirements), all batched; A100: nn
  }
  const auto cmtune = [&](const std::string& db, const std::string& args) {
    return test::run_split(dir, fmt::format("--db {} {}", quoted(dir / db), args));
  };
  // The lines of export's output that name unserved calls (the held-out check's lines come before).
  const auto unserved_lines = [](const std::string& out) {
    std::istringstream in(out);
    std::string text;
    for (std::string line; std::getline(in, line);)
      if (line.find(": no tuned kernel serves ") != std::string::npos) text += line + "\n";
    return text;
  };
  const auto exported = cmtune("t.db", "export --out t.cuh");
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(unserved_lines(exported.out),
            "NVIDIA A100-SXM4-40GB: no tuned kernel serves f32 nt, tn, tt; f64, i32 (any layout); those calls run the "
            "generic default kernels\n"
            "NVIDIA H100 80GB HBM3: no tuned kernel serves f32 tt; f64, i32 (any layout); those calls run the generic "
            "default kernels\n");
  const auto one = cmtune("t.db", "export --device A100 --out a.cuh");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(std::count(one.out.begin(), one.out.end(), '\n'), 3) << "one table: wrote, held-out check, unserved: "
                                                                   << one.out;
  EXPECT_EQ(unserved_lines(one.out),
            "NVIDIA A100-SXM4-40GB: no tuned kernel serves f32 nt, tn, tt; f64, i32 (any layout); those calls run the "
            "generic default kernels\n");

  const auto query = [&](const std::string& args) {
    const auto r = cmtune("t.db", fmt::format("query --device {} {}", k_h100_uuid, args));
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    return r.out;
  };
  const auto query_json = [&](const std::string& args) {
    const std::string out = query(args + " --json");
    const auto at = [&](const std::string& key) {
      const std::regex field("\"" + key + "\": (\"[^\"]*\"|true|false)");
      std::smatch m;
      return std::regex_search(out, m, field) ? m[1].str() : "(missing in " + out + ")";
    };
    return std::vector<std::string>{at("served"), at("dispatch_kind"), at("dispatch_reason"), at("template")};
  };
  // Served: the tuned problem's winner.
  EXPECT_EQ(query_json("--size 1024"),
            (std::vector<std::string>{"true", "\"tuned\"", "\"tuned for this problem: its measured winner runs\"",
                                      "\"multistage\""}));
  // Not served: no tuned kernel computes f32 tt, or f64.
  const std::string tt = "generic default: no tuned kernel of this table computes f32 tt (tune --layout tt, or the "
                         "calls you record, to serve it)";
  EXPECT_EQ(query_json("--size 1024 --layout tt"),
            (std::vector<std::string>{"false", "\"not_served\"", "\"" + tt + "\"", "\"blocktile2d\""}));
  EXPECT_NE(query("--size 1024 --layout tt").find("\ndispatch: " + tt + "\n  blocktile2d["), std::string::npos)
      << query("--size 1024 --layout tt");
  EXPECT_NE(query("--size 512 --dtype f64 --batch 4")
                .find("dispatch: generic default: no tuned kernel of this table computes f64 nn (tune --dtype f64 "
                      "--batch 4, or the calls you record, to serve it)\n"),
            std::string::npos);
  // Served, but the tight call's lda and ldb (1023) miss the requirements of the only TN kernel.
  const std::string missed = "generic default: the call misses the requirements of every modelled kernel that "
                             "computes f32 tn";
  EXPECT_EQ(query_json("--size 1023 --layout tn"),
            (std::vector<std::string>{"true", "\"requirements_missed\"", "\"" + missed + "\"", "\"blocktile2d\""}));
  EXPECT_NE(query("--size 1023 --layout tn").find("\ndispatch: " + missed + "\n"), std::string::npos);

  // A table with a winner of every type and layout: export says nothing more.
  {
    DbBuilder db(dir / "all.db");
    db.add_device(k_h100_uuid, k_h100, 9, 0, 132);
    const auto without_requirements = [](const LaunchShape&, const Requirements& r) { return r.none(); };
    for (int d = 0; d < k_header_dtypes; ++d)
      for (int l = 0; l < 4; ++l) {
        const std::string params =
            fmt::format("BM=128,BN=64,BK=16,TM=8,TN=4,TRANS_A={},TRANS_B={},DTYPE={}", l / 2, l % 2, d);
        const KernelSpec k = real_kernel(db, f.templates, "blocktile2d", params, without_requirements);
        db.add_winner(k_h100_uuid, Problem::make(256, 256, 256, l >= 2, l % 2 == 1, 1, static_cast<DType>(d)),
                      "overall", k, 0.01);
      }
  }
  const auto served = cmtune("all.db", "export --out all.cuh");
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_EQ(served.out.find("no tuned kernel serves"), std::string::npos) << served.out;
  EXPECT_EQ(served.out.rfind("wrote all.cuh: ", 0), 0u) << served.out;
}

TEST(ExportCli, DatabaseWithoutWinnersIsAUsageError) {
  test::TempDir dir;
  {
    DbBuilder db(dir / "t.db");
    db.add_device("GPU-x", "Some GPU", 9, 0, 132);
  }
  const auto r = test::run_command(
      fmt::format("{} --db {} export --out {}", test::cmtune_binary(), quoted(dir / "t.db"), quoted(dir / "x.cuh")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no tuned problems"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "x.cuh"));
}


// The generic default kernel is the one template that declares [generic_default]: one line of error
// when the templates declare none or two.
TEST(ExportCli, OneTemplateMustDeclareTheGenericDefault) {
  test::TempDir dir;
  {
    DbBuilder db(dir / "t.db");
    db.add_device("GPU-x", "Some GPU", 9, 0, 132);
  }
  const std::string export_args =
      fmt::format("--db {} export --out {}", quoted(dir / "t.db"), quoted(dir / "x.cuh"));
  // No built-in folder declares it (CMTUNE_TEMPLATES names the built-in folder).
  const fs::path none = test::k_space_fixtures / "templates";
  const auto r = test::run_command(
      fmt::format("CMTUNE_TEMPLATES={} {} {}", quoted(none), test::cmtune_binary(), export_args));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output, fmt::format("cm-tune: error: no template declares [generic_default] (the generic default kernel "
                                  "of exported headers), neither in the templates folders nor in {}\n",
                                  none.string()));
  // Two in the --templates folder.
  for (const char* name : {"aaa", "bbb"}) {
    test::write_file(dir / "tpl" / (std::string(name) + ".toml"),
                     fmt::format("name = \"{}\"\nkernel = \"k\"\nsummary = \"s\"\n[[param]]\nname = \"P\"\nvalues = [1]\n"
                                 "[generic_default]\nP = 1\n[launch]\nthreads = \"32\"\ntile_m = \"1\"\ntile_n = \"32\"\n",
                                 name));
    test::write_file(dir / "tpl" / (std::string(name) + ".cuh"), "// nothing\n");
  }
  const auto two = test::run_command(
      fmt::format("{} --templates {} {}", test::cmtune_binary(), quoted(dir / "tpl"), export_args));
  EXPECT_EQ(two.exit_code, 2) << two.output;
  EXPECT_NE(two.output.find("both declare [generic_default]; the exported header has one generic default kernel"),
            std::string::npos)
      << two.output;
  EXPECT_EQ(std::count(two.output.begin(), two.output.end(), '\n'), 1) << two.output;
  EXPECT_FALSE(fs::exists(dir / "x.cuh"));
}

}  // namespace
