// What `cm-tune report` shows, as plain data gathered from the database and the export model: the
// speed of each kernel family and of cuBLAS against problem size, a roofline of the winners, the
// search landscape of one problem, the dispatch map of the exported header, the winners and the
// held-out check of the dispatch's cost model. report/report_html.hpp draws it. It only reads the
// store, and never touches a GPU.
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/device_info.hpp"
#include "core/types.hpp"
#include "export/export_model.hpp"
#include "export/model_check.hpp"
#include "output/table.hpp"
#include "space/template_desc.hpp"
#include "store/store.hpp"

namespace cmt::report {

/// What the report is asked to show.
struct ReportRequest {
  int64_t device_id = 0;                   // a database device (the command resolves --device)
  /// The element types and classes to show; empty: every one tuned on the device. A type named here
  /// that has no winners on the device is a UsageError.
  std::vector<DType> dtypes;
  /// The landscape's problem; nullopt: the largest tuned problem searched in full (with at least half
  /// as many trials as the most searched one: calibration's shapes, which measure the leaders only,
  /// are left out).
  std::optional<Problem> problem;
  std::optional<int64_t> dispatch_k;       // the dispatch map's K; nullopt: the most common tuned K
  int grid_cells = 24;                     // the dispatch map's M and N values, log-spaced
  int64_t grid_min = 64, grid_max = 16384;
};

/// The dispatch map's K when the request names none and nothing is tuned to take it from.
constexpr int64_t k_default_dispatch_k = 4096;

/// One rate: the best time a kernel (or cuBLAS) took on a problem.
struct RatePoint {
  Problem problem;
  double rate = 0;          // T/s (TF/s, TOP/s for an integer type): flops / time
  double ms = 0;
  std::string kernel;       // "template[params]", or "cuBLAS"
};

/// One series of the speed plot: a kernel family's best passing trial at each tuned problem where
/// it passed one, or cuBLAS at each tuned problem it was measured on.
struct SpeedSeries {
  std::string name;         // the template, or "cuBLAS"
  bool cublas = false;
  std::vector<RatePoint> points;   // by problem
};

/// The speed plot of one element type or class.
struct SpeedPlot {
  DType dtype = DType::f32;
  size_t problems = 0;                 // tuned problems of the type
  std::vector<SpeedSeries> series;     // the families by name, then cuBLAS (where the type has a baseline)
};

/// A compute roof: a peak the types shown are held against.
struct Roof {
  std::string name;          // type_peak_of's, with the types it serves: "FP32, CUDA cores (f32)"
  double rate = 0;           // T/s
  bool tensor_cores = false;
};

/// A winner on the roofline.
struct RooflinePoint {
  Problem problem;
  std::string template_name;
  std::string kernel;        // "template[params]"
  double intensity = 0;      // flops / problem_bytes
  double rate = 0;           // T/s, the winner's re-timed rate
};

struct Roofline {
  std::vector<Roof> roofs;             // by rate
  double bandwidth_gbs = 0;            // theoretical DRAM bandwidth; 0: the database stores no memory clock
  std::vector<RooflinePoint> winners;  // every tuned problem's winner of the types shown
  std::string note;                    // where the roofs come from, and what is missing
};

/// A passing trial of the landscape's problem.
struct LandscapeTrial {
  int64_t trial_id = 0;
  std::string template_name, params;
  int64_t bm = 0, bn = 0;    // its launch shape's tile: rows and columns of C per block
  double rate = 0;           // T/s, from the time trials rank by (record/ranking.hpp)
  bool winner = false;
};

/// A cell of a family's heat map: the best of its passing trials of one tile (BM x BN).
struct HeatCell {
  int64_t bm = 0, bn = 0;
  double best_rate = 0;
  int trials = 0;
  std::string best_params;
  bool winner = false;       // the problem's winner is among them
};

struct HeatMap {
  std::string template_name;
  std::vector<int64_t> bms, bns;   // the tiles' values, ascending
  std::vector<HeatCell> cells;     // one per tile with a passing trial
};

/// How a family's trials of the landscape's problem ended, by outcome (k_outcomes' order).
struct OutcomeBar {
  std::string template_name;
  std::array<int, std::size(k_outcomes)> counts{};
};

/// The search landscape of one problem.
struct Landscape {
  Problem problem;
  bool requested = false;                 // the request named it; else the largest searched in full
  std::optional<double> cublas_rate;      // T/s
  std::vector<LandscapeTrial> trials;     // the passing trials, in ranking order (fastest first)
  std::vector<HeatMap> heat_maps;         // per family with a passing trial, by name
  std::vector<OutcomeBar> outcomes;       // per family with any trial, by name
  std::optional<int64_t> winner_trial;    // the overall winner's trial
};

/// One cell of the dispatch map: the kernel the exported header runs for an M x N x K call.
struct DispatchCell {
  int64_t m = 0, n = 0;
  int kernel = -1;           // index into ExportModel::kernels; -1: none computes the call
  double us = -1;            // its predicted time (the model's, split K's sum included); -1: none
  int splits = 1;            // K split into this many slices
  bool exact = false;        // a tuned problem: its measured winner runs
  std::string why;           // the dispatch's one line
};

/// The dispatch map of one element type or class: row-major NN calls with a batch of 1 at one K.
struct DispatchMap {
  DType dtype = DType::f32;
  int64_t k = 0;
  std::vector<int64_t> sizes;          // M and N values, ascending
  std::vector<DispatchCell> cells;     // sizes.size() squared, by M then N
  std::vector<Problem> tuned;          // the table's tuned problems at this K (nn, batch 1, the type)
};

/// A tuned problem's winner, with what its trials and cuBLAS say of it.
struct WinnerRow {
  WinnerRecord winner;
  std::optional<TrialRecord> trial;                   // the winning trial (its errors)
  std::optional<BaselineRecord> baseline;             // cuBLAS
  std::array<int, std::size(k_outcomes)> outcomes{};  // the problem's trials by outcome
};

/// Everything the page shows.
struct ReportData {
  /// Around the export model it shows, moved in (it is large).
  explicit ReportData(ExportModel export_model) : model(std::move(export_model)) {}

  std::string database;                // the file, as given
  std::string content_hash;            // Store::content_hash()
  DeviceRecord device;
  DeviceInfo info;                     // the device as stored (stored_device_info)
  std::vector<DeviceRecord> table_devices;   // every device the dispatch table merges (this one first)
  std::vector<DType> dtypes;           // shown, in DType order
  std::vector<SpeedPlot> speed;        // per type
  Roofline roofline;
  Landscape landscape;
  std::vector<DispatchMap> dispatch;   // per type
  bool dispatch_k_requested = false;
  std::vector<WinnerRow> winners;      // by problem
  ExportModel model;                   // the export model of the device's table, for the types shown
  std::vector<HeldOutCheck> checks;    // check_held_out(model)
};

/// What a DeviceInfo holds of a stored device: its identity, SMs, clocks, memory and versions (the
/// limits the store does not keep are 0). Its peaks are what `cm-tune devices` prints for that GPU.
DeviceInfo stored_device_info(const DeviceRecord& device);

/// The problem's size on the speed plot's x axis: (M N K batch)^(1/3), a cube's side.
double problem_size(const Problem& p);

/// The M and N values of the dispatch map: `cells` values from lo to hi, evenly spaced on a log
/// scale and rounded to whole numbers, ascending and distinct.
std::vector<int64_t> log_grid(int64_t lo, int64_t hi, int cells);

/// Gathers the report. `generic_default` is the template of the exported header's generic default
/// kernel (what export takes). UsageError, in one line: the device is not in the database or has
/// no winners, a requested type has no winners on it, the requested problem has no trials on it, a
/// bad grid.
ReportData gather_report(Store& store, const ReportRequest& request, const TemplateDesc& generic_default);

/// The winners as a table, a row per tuned problem: its kernel, rate, cuBLAS's rate and the ratio,
/// its trials by outcome, and its measured error (of the tolerance; a class validated against FP64
/// in units of 2^-24 beside cuBLAS SGEMM's on the same data).
output::Table winners_table(const ReportData& data);

}  // namespace cmt::report
