// Source bundles: which files a template's source pulls in, so the compile cache knows what an
// edit invalidates, and how they are flattened into an exported header.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/source_bundle.hpp"
#include "space/template_desc.hpp"
#include "test_support.hpp"

namespace cmt {
namespace {

TEST(SourceBundle, QuotedIncludesOnly) {
  EXPECT_EQ(quoted_include("#include \"a.cuh\""), std::optional<std::string>("a.cuh"));
  EXPECT_EQ(quoted_include("  #  include   \"b.cuh\"  // why"), std::optional<std::string>("b.cuh"));
  EXPECT_EQ(quoted_include("#include\"c.cuh\"\r"), std::optional<std::string>("c.cuh"));
  EXPECT_EQ(quoted_include("#include <cstdio>"), std::nullopt);
  EXPECT_EQ(quoted_include("#includes \"d.cuh\""), std::nullopt);
  EXPECT_EQ(quoted_include("// #include \"e.cuh\""), std::nullopt);
  EXPECT_EQ(quoted_include("#include \"unterminated"), std::nullopt);
}

TEST(SourceBundle, FlattenDropsPragmaOnceAlsoWithCarriageReturns) {
  const SourceBundle bundle{"m.cuh", "#pragma once\r\n#include \"h.cuh\"\r\nint m;\r\n", {{"h.cuh", "# pragma  once // x\nint h;\n"}}};
  const std::string flat = flatten_source(bundle);
  EXPECT_EQ(flat.find("pragma"), std::string::npos) << flat;
  EXPECT_NE(flat.find("int h;"), std::string::npos);
  EXPECT_LT(flat.find("int h;"), flat.find("int m;"));
}

/// The source-bundle hash of every built-in template, from a copy of the templates folder.
std::map<std::string, std::string> bundle_hashes(const std::filesystem::path& folder) {
  std::map<std::string, std::string> out;
  for (const auto& t : load_templates({folder})) out[t.name] = source_bundle_hash(t.load_source());
  return out;
}

// Each shared header is part of exactly the bundles that include it, so editing one recompiles
// only the templates that use it (the compile cache keys on the bundle hash).
TEST(SourceBundle, AnEditedHeaderChangesOnlyTheTemplatesThatIncludeIt) {
  test::TempDir dir;
  test::copy_builtin_templates(dir / "templates");
  const auto before = bundle_hashes(dir / "templates");
  const auto changed_by = [&](const std::string& header) {
    {
      std::ofstream f(dir / "templates" / header, std::ios::app);
      f << "\n// edited by the test\n";
    }
    std::set<std::string> changed;
    for (const auto& [name, hash] : bundle_hashes(dir / "templates"))
      if (hash != before.at(name)) changed.insert(name);
    test::copy_builtin_templates(dir / "templates");  // undo
    return changed;
  };
  EXPECT_EQ(changed_by("cmt_cluster.cuh"), (std::set<std::string>{"clusterk", "clusterk_deep", "dmma"}));
  EXPECT_EQ(changed_by("clusterk.cuh"), (std::set<std::string>{"clusterk", "clusterk_deep"}));
  EXPECT_EQ(changed_by("clusterk_deep.cuh"), (std::set<std::string>{"clusterk_deep"}));
  EXPECT_EQ(changed_by("multistage.cuh"), (std::set<std::string>{"clusterk", "clusterk_deep", "multistage"}));
  EXPECT_EQ(changed_by("cmt_ring.cuh"),
            (std::set<std::string>{"clusterk", "clusterk_deep", "dmma", "fused_batch", "multistage", "skinny_n",
                                   "tf32x3_mma"}));
  EXPECT_EQ(changed_by("cmt_thin_edges.cuh"),
            (std::set<std::string>{"clusterk", "clusterk_deep", "multistage", "warptile"}));
  EXPECT_EQ(changed_by("cmt_warp_tile.cuh"),
            (std::set<std::string>{"clusterk", "clusterk_deep", "multistage", "warptile"}));
  EXPECT_EQ(changed_by("warptile.cuh"), (std::set<std::string>{"warptile"}));
  // The element types: the typed families, and the warp-tiled ones through cmt_warp_tile.cuh.
  EXPECT_EQ(changed_by("cmt_elem.cuh"),
            (std::set<std::string>{"blocktile2d", "clusterk", "clusterk_deep", "multistage", "warptile"}));
  EXPECT_EQ(changed_by("cmt_smem_elem.cuh"),
            (std::set<std::string>{"clusterk", "clusterk_deep", "multistage", "warptile"}));
  const auto common = changed_by("cmt_common.cuh");
  EXPECT_EQ(common.size(), before.size()) << "every family includes cmt_common.cuh";
}

}  // namespace
}  // namespace cmt
