// Dispatch decisions for `cm-tune query`, `bench` and `export`: which kernel of an export model
// serves a call. The rules themselves are export/runtime/dispatch_rules.h, which every generated
// header carries too, so the tool and the header decide alike; tests check that they do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "export/export_model.hpp"
#include "store/store.hpp"

namespace cmt {

/// The header's number of a layout ("nn" 0, "nt" 1, "tn" 2, "tt" 3: KernelInfo::layout,
/// TunedProblem::layout, the columns of k_generic_kernels), by the dispatch rules.
int layout_number(std::string_view layout);
/// The header's broadcast bits of a problem (TunedProblem::broadcast), by the dispatch rules.
int broadcast_number(const Problem& problem);

/// One tuned problem of one device: its best kernel, and the best one without input requirements.
struct DispatchEntry {
  Problem problem;
  WinnerRecord primary;
  std::optional<WinnerRecord> portable;
};

/// The winners of one device in the database, one entry per tuned problem, sorted by problem.
std::vector<DispatchEntry> dispatch_entries(Store& store, int64_t device_id);

/// What a call passes that the choice depends on.
struct CallShape {
  Problem problem;           // its strides are the call's, and its dtype the entry point's (sgemm, dgemm, igemm)
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t alignment = 256;   // largest power of two dividing every matrix's address (A, B, C), capped at 256
};

/// A tight row-major call (the stored matrices' widths as leading dimensions, the problem's strides)
/// on freshly allocated buffers.
CallShape tight_call(const Problem& problem);

/// Whether a call satisfies a kernel's requirements.
bool requirements_met(const Requirements& requirements, const CallShape& call);

/// One model's prediction for a call.
struct Prediction {
  int kernel = 0;            // index into ExportModel::kernels
  double us = 0;             // predicted microseconds
  bool usable = false;       // the kernel computes the call (layout, batch) and it meets the kernel's requirements
  bool in_domain = false;    // the call's shape is within a factor of two of the shapes it was measured on
};

struct DispatchChoice {
  int kernel = k_generic_kernel_index;   // index into ExportModel::kernels; -1: no kernel computes the call
  bool exact = false;                    // the call's problem was tuned: its measured winner runs
  bool portable_fallback = false;        // exact, but the call misses the winner's requirements
  std::optional<double> predicted_us;    // the chosen kernel's prediction (not exact; split: with the sum)
  /// K split into this many slices, each a problem of a strided batch the kernel runs, then summed
  /// (dispatch rules, best_split); 1: not split.
  int splits = 1;
  std::vector<Prediction> predictions;   // every model of the table, by predicted time (usable first)
  /// A tuned kernel of the table computes the call's type, layout and batch (table_serves); false:
  /// every such call runs the generic default of its type and layout (or is refused without one).
  bool served = true;
  std::string reason;                    // the header's DispatchReason, by name: "tuned", "not_served", ...
  std::string why;                       // one line
  /// The element type or class whose kernel runs: the call's, or for a call of an opt-in class that
  /// runs its storage type's choice (opt_in_runs_class), that type (f32 for tf32x3).
  DType dtype = DType::f32;
  /// The time the header's opted-in comparison takes for this choice (the dispatch rules'
  /// opt_in_runs_class): predicted_us, else the chosen kernel's model at the call (a tuned problem's
  /// winner, a generic default measured on the device); -1 when its kernel has no model there.
  double modelled_us = -1;
};

/// The kernel an exported header built from `model` runs for a call on device table `device`
/// (an index into model.devices), and why: only kernels of the call's element type
/// (call.problem.dtype) compete, as in the header, whose sgemm, dgemm and igemm each dispatch among
/// their own type's kernels. A call of an opt-in class (tf32x3, the header's sgemm_tf32x3) is
/// dispatched as a call of the class and as a call of its storage type (f32), and runs the class's
/// choice where the rules' opt_in_runs_class says so; its `predictions` list both types' models.
DispatchChoice choose_kernel(const ExportModel& model, size_t device, const CallShape& call);

/// The dispatch of the call's own type or class alone (the header's select_in_class): for an opt-in
/// class, among its kernels only, with no fallback to its storage type (a class has no generic
/// default: kernel -1 where none serves). The held-out check judges a class's models with it.
DispatchChoice choose_class_kernel(const ExportModel& model, size_t device, const CallShape& call);

/// Whether a tuned kernel of device table `device` (an index into model.devices) computes calls of an
/// element type, a layout ("nn", "nt", "tn", "tt") and, when `batched`, batches: table_serves in the
/// dispatch rules, over the kernels the table's entries and models name. When none does, every such
/// call runs the generic default of its type and layout.
bool table_serves(const ExportModel& model, size_t device, DType dtype, std::string_view layout, bool batched);

/// The calls that no tuned kernel of device table `device` serves, for a person, per element type:
/// the layouts it serves in no form, "nn batched" where it serves only unbatched calls, and a type it
/// serves in no layout as "(any layout)": e.g. "f32 nn batched, tt; f64, i32 (any layout)". Empty
/// when every type, layout and batch is served.
std::string unserved_calls(const ExportModel& model, size_t device);

}  // namespace cmt
