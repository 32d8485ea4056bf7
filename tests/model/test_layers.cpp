// The module map of docs/DESIGN.md, checked on the sources: every quoted include points to a module
// the including one may depend on, and nothing in the CUDA-free model names a CUDA header. (The
// linker enforces the libraries' split; this keeps the modules inside each library in order too.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace fs = std::filesystem;

namespace {

// Module -> the modules it may include (besides itself). A module is a folder of tuner/, and a
// stage's CUDA part, its gpu/ or nvrtc/ subfolder, is a module of its own ("measure/gpu").
// Model, one folder per stage of preset -> space -> search -> compile -> measure -> record -> export:
// core, space (templates, presets, the space), store, search (searchers, calibration's plan), compile
// (the Compiler seam, the compile cache), measure (the protocol, the Measurer seam, the worker
// transport), record (trials, problem state, ranking), tune (the driver that runs the stages),
// export; output (tables of rows and their printers, which the commands report through); and report
// (cm-tune report's page: its data from the store and the export model, its SVG plots and HTML).
// CUDA: cuda (thin wrappers), compile/nvrtc (implements the Compiler), measure/gpu (implements the
// Measurer), export/gpu (an exported header and the exported kernels, loaded and run for bench).
const std::map<std::string, std::set<std::string>> k_allowed = {
    {"core", {}},
    {"space", {"core"}},
    {"store", {"core"}},
    {"search", {"core", "space", "store"}},
    {"compile", {"core", "space", "store"}},
    {"measure", {"core", "space", "store"}},
    {"record", {"core", "space", "store", "measure"}},
    {"tune", {"core", "space", "store", "search", "compile", "measure", "record"}},
    {"export", {"core", "space", "store", "compile", "measure", "record"}},
    {"output", {"core"}},
    {"report", {"core", "space", "store", "measure", "record", "export", "output"}},
    {"cuda", {"core"}},
    {"compile/nvrtc", {"core", "cuda", "compile"}},
    {"measure/gpu", {"core", "cuda", "space", "store", "measure"}},
    {"export/gpu",
     {"core", "space", "store", "compile", "measure", "record", "export", "cuda", "compile/nvrtc", "measure/gpu"}},
    {"cli",
     {"core", "space", "store", "search", "compile", "measure", "record", "tune", "export", "output", "report", "cuda",
      "compile/nvrtc", "measure/gpu", "export/gpu"}},
};
const std::set<std::string> k_model = {"core",   "space", "store",  "search", "compile", "measure",
                                       "record", "tune",  "export", "output", "report"};
/// The subfolders that hold a stage's CUDA part.
const std::set<std::string> k_cuda_parts = {"gpu", "nvrtc"};

TEST(Layers, IncludesPointDownTheModuleMap) {
  const fs::path tuner = fs::path(CMTUNE_SOURCE_DIR) / "tuner";
  const std::regex quoted(R"re(^\s*#\s*include\s*"([a-z_]+)(/gpu|/nvrtc)?/[^"]+")re");
  const std::regex cuda_header(R"re(^\s*#\s*include\s*<(cuda|cublas|nvrtc|cuda_runtime)[^>]*>)re");
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(tuner)) {
    if (!entry.is_regular_file()) continue;
    const fs::path rel = fs::relative(entry.path(), tuner);
    auto part = rel.begin();
    std::string module = (part++)->string();
    if (part != rel.end() && k_cuda_parts.count(part->string()) && std::next(part) != rel.end())
      module += "/" + part->string();
    const std::string ext = entry.path().extension().string();
    if (ext != ".hpp" && ext != ".cpp" && ext != ".cu" && ext != ".h" && ext != ".cuh") continue;
    ASSERT_TRUE(k_allowed.count(module)) << rel << ": a module missing from the map (tests/model/test_layers.cpp)";
    // The header's run-time code is pasted into exported headers: it includes nothing of cm-tune.
    const bool header_runtime = rel.string().rfind("export/runtime/", 0) == 0;
    std::ifstream in(entry.path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::smatch m;
      if (std::regex_search(line, m, quoted)) {
        const std::string target = m[1].str() + m[2].str();
        EXPECT_FALSE(header_runtime) << rel << ":" << number << ": " << line;
        EXPECT_TRUE(target == module || k_allowed.at(module).count(target))
            << rel << ":" << number << ": " << module << "/ may not include " << target << "/ (" << line << ")";
      }
      if (k_model.count(module) && !header_runtime)
        EXPECT_FALSE(std::regex_search(line, cuda_header)) << rel << ":" << number << ": the model includes CUDA: " << line;
    }
    ++files;
  }
  EXPECT_GT(files, 50);
}

}  // namespace
