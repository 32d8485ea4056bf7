// Correctness harness for a header written by `cm-tune export` (tests/consumer/README.md): checks
// CMTUNE_NS::sgemm against cuBLAS FP32 on tuned, untuned, ragged and misaligned problems and on the
// BLAS corner cases, and its transposed, strided-batched (broadcast too) and column-major entries in
// every layout, and every tuned batch as it was tuned (so its measured kernel runs: e.g. one that
// computes several problems per block); dgemm and igemm through every entry point and layout, in
// batches and on their tuned problems, against a CPU reference (FP64 within the FP32 bound at
// u = 2^-53, INT32 exact with wrapping, including calls that overflow); then times sgemm and cuBLAS,
// L2 flushed, interleaved, and prints TF/s side by side.
// The GPU test ExportConsumer (tests/gpu/test_header_consumer.cpp) builds and runs it, and
// scripts/gpu/gpu_session.sh runs it in its `consumer` phase. Exit code: 0 all checks passed,
// 1 a check failed, 2 bad usage or a CUDA/cuBLAS failure.
//
//   cmtune_consumer_test [--sizes LIST] [--samples N] [--json FILE] [--no-timing] [--no-tuned] [--device N]
//
// LIST is comma-separated sizes, each N (square) or MxNxK. Default: the problems tuned for this GPU
// (read from the header) plus untuned and ragged ones.
#include CMTUNE_HEADER_PATH

#include "checks.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cublas_v2.h>
#include <string>
#include <vector>

namespace tuned = CMTUNE_NS;

namespace {

#define CHECK_CUDA(call) check_cuda((call), #call, __FILE__, __LINE__)
#define CHECK_CUBLAS(call) check_cublas((call), #call, __FILE__, __LINE__)

void check_cuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "error: %s failed at %s:%d: %s (%s)\n", call, file, line, cudaGetErrorString(err),
               cudaGetErrorName(err));
  std::exit(2);
}

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::fprintf(stderr, "error: %s failed at %s:%d: cuBLAS status %d\n", call, file, line, static_cast<int>(status));
  std::exit(2);
}

struct Size {
  int m, n, k;
};

std::string size_text(const Size& s) { return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k); }


// ---------------------------------------------------------------------------------------------
// Buffers
// ---------------------------------------------------------------------------------------------

/// A device allocation freed on scope exit.
struct DeviceBuffer {
  float* p = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) { CHECK_CUDA(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(float))); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

void random_fill(DeviceBuffer& b, uint64_t seed) {
  fill_random(b.p, b.n, seed);
  CHECK_CUDA(cudaGetLastError());
}

void copy(DeviceBuffer& dst, const DeviceBuffer& src) {
  CHECK_CUDA(cudaMemcpy(dst.p, src.p, src.n * sizeof(float), cudaMemcpyDeviceToDevice));
}

/// Random A and B; C0 random, or NaN everywhere (c_nan: only meaningful with beta == 0, which must
/// not read it); our C and the reference's start as C0.
void fill_inputs(DeviceBuffer& a, DeviceBuffer& b, DeviceBuffer& c0, DeviceBuffer& ours, DeviceBuffer& ref, bool c_nan,
                 uint64_t seed) {
  random_fill(a, seed);
  random_fill(b, seed + 1);
  if (c_nan)
    CHECK_CUDA(cudaMemset(c0.p, 0xff, c0.n * sizeof(float)));   // all bits set: a NaN
  else
    random_fill(c0, seed + 2);
  copy(ours, c0);
  copy(ref, c0);
}

// Row-major C = alpha*A*B + beta*C with cuBLAS (column-major) by computing C^T = B^T A^T.
void cublas_sgemm(cublasHandle_t h, int m, int n, int k, float alpha, const float* A, int lda, const float* B, int ldb,
                  float beta, float* C, int ldc) {
  CHECK_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, B, ldb, A, lda, &beta, C, ldc));
}

// ---------------------------------------------------------------------------------------------
// Correctness
// ---------------------------------------------------------------------------------------------

struct CheckRecord {
  std::string name;
  Size size;
  int lda, ldb, ldc, offset;
  float alpha, beta;
  std::string kernel;
  double max_ratio;
  unsigned long long bad, outside_written;
  std::string error;   // a CUDA status that should not have been returned
  bool ok;
};

struct Context {
  cublasHandle_t cublas = nullptr;
  CompareResult* result = nullptr;   // device
  std::vector<CheckRecord> checks;
  int failures = 0;
};

void report(Context& ctx, CheckRecord r) {
  r.ok = r.error.empty() && r.bad == 0 && r.outside_written == 0;
  if (!r.ok) ++ctx.failures;
  std::printf("  %-4s %-16s %-12s lda %-6d ldb %-6d ldc %-6d +%d float  alpha %-5g beta %-5g  err/tol %-9.3g %s",
              r.ok ? "ok" : "FAIL", size_text(r.size).c_str(), r.name.c_str(), r.lda, r.ldb, r.ldc, r.offset, r.alpha,
              r.beta, r.max_ratio, r.kernel.c_str());
  if (!r.error.empty()) std::printf("  <- %s", r.error.c_str());
  if (r.bad) std::printf("  <- %llu elements beyond tolerance", r.bad);
  if (r.outside_written) std::printf("  <- %llu elements outside the M x N block changed", r.outside_written);
  std::printf("\n");
  ctx.checks.push_back(std::move(r));
}

/// Compares our C with the reference on the GPU (see compare) and reports the check.
void compare_and_report(Context& ctx, CheckRecord& r, const float* ours, const float* ref, const float* c0,
                        const float* abs_ab, size_t total, size_t offset, Size s, int ldc, float alpha, float beta,
                        int batch = 1, size_t stride_c = 0) {
  CHECK_CUDA(cudaMemset(ctx.result, 0, sizeof(CompareResult)));
  compare(ours, ref, c0, abs_ab, total, offset, s.m, s.n, s.k, ldc, alpha, beta, ctx.result,
                                   batch, stride_c);
  CHECK_CUDA(cudaGetLastError());
  CompareResult host{};
  CHECK_CUDA(cudaMemcpy(&host, ctx.result, sizeof(host), cudaMemcpyDeviceToHost));
  float ratio = 0;
  std::memcpy(&ratio, &host.max_ratio_bits, sizeof(ratio));
  r.max_ratio = ratio;
  r.bad = host.bad;
  r.outside_written = host.outside_written;
  report(ctx, r);
}

/// Waits for a call and notes a status it should not have returned; a sticky error ends the run,
/// since nothing more can run in this process.
void note_call_status(Context& ctx, CheckRecord& r, cudaError_t status) {
  const cudaError_t sync = cudaDeviceSynchronize();
  if (status == cudaSuccess && sync == cudaSuccess) return;
  r.error = std::string("sgemm returned ") + cudaGetErrorName(status) + ", then " + cudaGetErrorName(sync);
  if (sync != cudaSuccess) {
    report(ctx, r);
    std::fprintf(stderr, "error: the GPU context is unusable after %s: %s\n", r.name.c_str(), cudaGetErrorString(sync));
    std::exit(1);
  }
}

/// One sgemm call checked against cuBLAS. offset: floats added to each base pointer (misalignment).
/// c_nan: C starts as NaN (only meaningful with beta == 0, which must not read it).
void check_product(Context& ctx, const std::string& name, Size s, int lda, int ldb, int ldc, int offset, float alpha,
                   float beta, bool c_nan, uint64_t seed) {
  constexpr size_t k_guard = 256;   // floats after C that must stay untouched
  DeviceBuffer a(offset + static_cast<size_t>(s.m) * lda), b(offset + static_cast<size_t>(s.k) * ldb);
  const size_t c_total = offset + static_cast<size_t>(s.m) * ldc + k_guard;
  DeviceBuffer c0(c_total), ours(c_total), ref(c_total);
  DeviceBuffer abs_a(a.n), abs_b(b.n), abs_ab(static_cast<size_t>(s.m) * s.n);
  fill_inputs(a, b, c0, ours, ref, c_nan, seed);
  const float* A = a.p + offset;
  const float* B = b.p + offset;

  CheckRecord r{name, s, lda, ldb, ldc, offset, alpha, beta, "", 0, 0, 0, "", false};
  const char* kernel = nullptr;
  if (tuned::kernel_name(s.m, s.n, s.k, A, lda, B, ldb, ours.p + offset, ldc, &kernel) == cudaSuccess && kernel) r.kernel = kernel;
  const cudaError_t status = tuned::sgemm(s.m, s.n, s.k, alpha, A, lda, B, ldb, beta, ours.p + offset, ldc);
  note_call_status(ctx, r, status);

  cublas_sgemm(ctx.cublas, s.m, s.n, s.k, alpha, A, lda, B, ldb, beta, ref.p + offset, ldc);
  abs_copy(a.p, abs_a.p, a.n);
  abs_copy(b.p, abs_b.p, b.n);
  CHECK_CUDA(cudaGetLastError());
  cublas_sgemm(ctx.cublas, s.m, s.n, s.k, 1.0f, abs_a.p + offset, lda, abs_b.p + offset, ldb, 0.0f, abs_ab.p, s.n);

  compare_and_report(ctx, r, ours.p, ref.p, c0.p, abs_ab.p, c_total, offset, s, ldc, alpha, beta);
}

/// A call that must not compute a product: C = beta*C (alpha == 0 or K == 0), A and B null.
void check_scale_only(Context& ctx, const std::string& name, Size s, float alpha, float beta, bool c_nan) {
  const int ldc = s.n + 3;
  const size_t total = static_cast<size_t>(s.m) * ldc + 256;
  DeviceBuffer c0(total), ours(total), ref(total);
  if (c_nan)
    CHECK_CUDA(cudaMemset(c0.p, 0xff, c0.n * sizeof(float)));
  else
    random_fill(c0, 99);
  copy(ours, c0);
  copy(ref, c0);
  CheckRecord r{name, s, std::max(1, s.k), s.n, ldc, 0, alpha, beta, "scale only (A, B null)", 0, 0, 0, "", false};
  const cudaError_t status = tuned::sgemm(s.m, s.n, s.k, alpha, nullptr, std::max(1, s.k), nullptr, s.n, beta, ours.p, ldc);
  CHECK_CUDA(cudaDeviceSynchronize());
  if (status != cudaSuccess) r.error = std::string("sgemm returned ") + cudaGetErrorName(status);
  // The reference is written only inside the block: ldc padding keeps C0, as it must.
  for (int i = 0; i < s.m; ++i) {
    scale_reference(c0.p + static_cast<size_t>(i) * ldc, ref.p + static_cast<size_t>(i) * ldc, s.n, beta);
  }
  CHECK_CUDA(cudaGetLastError());
  compare_and_report(ctx, r, ours.p, ref.p, c0.p, nullptr, total, 0, s, ldc, 0.0f, beta);
}

/// A call that must return `expected` without touching C.
void check_status(Context& ctx, const std::string& name, Size s, int lda, int ldb, int ldc, bool null_a,
                  cudaError_t expected) {
  DeviceBuffer a(static_cast<size_t>(std::max(s.m, 1)) * std::max(lda, 1)), b(static_cast<size_t>(std::max(s.k, 1)) * std::max(ldb, 1));
  const size_t total = static_cast<size_t>(std::max(s.m, 1)) * std::max(ldc, 1) + 256;
  DeviceBuffer c0(total), ours(total);
  random_fill(a, 5);
  random_fill(b, 6);
  random_fill(c0, 7);
  copy(ours, c0);
  CheckRecord r{name, s, lda, ldb, ldc, 0, 1.0f, 0.0f, std::string("expects ") + cudaGetErrorName(expected), 0, 0, 0, "", false};
  const cudaError_t status = tuned::sgemm(s.m, s.n, s.k, 1.0f, null_a ? nullptr : a.p, lda, b.p, ldb, 0.0f, ours.p, ldc);
  CHECK_CUDA(cudaDeviceSynchronize());
  if (status != expected) r.error = std::string("sgemm returned ") + cudaGetErrorName(status);
  CHECK_CUDA(cudaMemset(ctx.result, 0, sizeof(CompareResult)));
  compare(ours.p, c0.p, c0.p, nullptr, total, 0, 0, 0, 1, std::max(ldc, 1), 0.0f, 0.0f, ctx.result);
  CHECK_CUDA(cudaGetLastError());
  CompareResult host{};
  CHECK_CUDA(cudaMemcpy(&host, ctx.result, sizeof(host), cudaMemcpyDeviceToHost));
  r.outside_written = host.outside_written;
  report(ctx, r);
}

int round_up4(int x) { return (x + 3) / 4 * 4; }

cublasOperation_t cublas_op(tuned::Op op) { return op == tuned::Op::T ? CUBLAS_OP_T : CUBLAS_OP_N; }
const char* layout_text(tuned::Op a, tuned::Op b) {
  static const char* names[] = {"nn", "nt", "tn", "tt"};
  return names[(a == tuned::Op::T ? 2 : 0) + (b == tuned::Op::T ? 1 : 0)];
}

/// One call of the transposed or strided-batched API (or, with col_major, its column-major form)
/// checked against cuBLAS: stored A is M x K (K x M for Op::T), B K x N (N x K), leading
/// dimensions `pad` wider than that, `batch` matrices each (stride 0 for a broadcast operand), and
/// 64 guard floats between the matrices of C that must stay untouched.
void check_operands(Context& ctx, Size s, tuned::Op op_a, tuned::Op op_b, int batch, bool broadcast_a,
                    bool broadcast_b, int pad, float alpha, float beta, bool c_nan, bool col_major, uint64_t seed) {
  const bool ta = op_a == tuned::Op::T, tb = op_b == tuned::Op::T;
  // Row-major storage; a column-major call names the same memory with rows and columns swapped.
  const int a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k;
  const int b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
  const int lda = a_cols + pad, ldb = b_cols + pad, ldc = s.n + pad;
  const long long stride_a = broadcast_a ? 0 : static_cast<long long>(a_rows) * lda + 32;
  const long long stride_b = broadcast_b ? 0 : static_cast<long long>(b_rows) * ldb + 32;
  const long long stride_c = static_cast<long long>(s.m) * ldc + 64;
  DeviceBuffer a(static_cast<size_t>(stride_a * (batch - 1) + static_cast<long long>(a_rows) * lda));
  DeviceBuffer b(static_cast<size_t>(stride_b * (batch - 1) + static_cast<long long>(b_rows) * ldb));
  const size_t c_total = static_cast<size_t>(stride_c * batch);
  DeviceBuffer c0(c_total), ours(c_total), ref(c_total);
  DeviceBuffer abs_a(a.n), abs_b(b.n), abs_ab(static_cast<size_t>(batch) * s.m * s.n);
  fill_inputs(a, b, c0, ours, ref, c_nan, seed);

  std::string name = std::string(col_major ? "colmajor-" : "") + layout_text(op_a, op_b);
  if (batch > 1) name += "*" + std::to_string(batch) + (broadcast_a ? "-sa0" : broadcast_b ? "-sb0" : "");
  if (c_nan) name += "-nan";
  CheckRecord r{name, s, lda, ldb, ldc, 0, alpha, beta, "", 0, 0, 0, "", false};
  const char* kernel = nullptr;
  cudaError_t status;
  if (col_major) {
    // The row-major C (M x N) is the column-major C^T (N x M) = op(B)^T op(A)^T: B takes A's place.
    // Column-major B^T read with op_b is the row-major B read with op_b, so the ops carry over.
    status = tuned::sgemm_colmajor_strided_batched(op_b, op_a, s.n, s.m, s.k, alpha, b.p, ldb, stride_b, a.p, lda,
                                                   stride_a, beta, ours.p, ldc, stride_c, batch);
    r.kernel = "column-major entry";
  } else {
    if (tuned::kernel_name(op_a, op_b, s.m, s.n, s.k, a.p, lda, stride_a, b.p, ldb, stride_b, ours.p, ldc, stride_c,
                           batch, &kernel) == cudaSuccess && kernel)
      r.kernel = kernel;
    status = batch == 1 ? tuned::sgemm(op_a, op_b, s.m, s.n, s.k, alpha, a.p, lda, b.p, ldb, beta, ours.p, ldc)
                        : tuned::sgemm_strided_batched(op_a, op_b, s.m, s.n, s.k, alpha, a.p, lda, stride_a, b.p, ldb,
                                                       stride_b, beta, ours.p, ldc, stride_c, batch);
  }
  note_call_status(ctx, r, status);
  // The reference: cuBLAS on the column-major view C^T = op(B)^T op(A)^T.
  CHECK_CUBLAS(cublasSgemmStridedBatched(ctx.cublas, cublas_op(op_b), cublas_op(op_a), s.n, s.m, s.k, &alpha, b.p, ldb,
                                         stride_b, a.p, lda, stride_a, &beta, ref.p, ldc, stride_c, batch));
  abs_copy(a.p, abs_a.p, a.n);
  abs_copy(b.p, abs_b.p, b.n);
  CHECK_CUDA(cudaGetLastError());
  const float one = 1.0f, zero = 0.0f;
  CHECK_CUBLAS(cublasSgemmStridedBatched(ctx.cublas, cublas_op(op_b), cublas_op(op_a), s.n, s.m, s.k, &one, abs_b.p, ldb,
                                         stride_b, abs_a.p, lda, stride_a, &zero, abs_ab.p, s.n,
                                         static_cast<long long>(s.m) * s.n, batch));
  compare_and_report(ctx, r, ours.p, ref.p, c0.p, abs_ab.p, c_total, 0, s, ldc, alpha, beta, batch,
                     static_cast<size_t>(stride_c));
}

// ---------------------------------------------------------------------------------------------
// Split K: the header's path for a long K over few tiles (detail::launch_split), forced on each
// batched kernel of every layout, so it is checked whatever this device's dispatch chooses
// ---------------------------------------------------------------------------------------------

/// One split-K call, launched on a stream and checked later (two may run at once).
struct SplitCall {
  Size s;
  tuned::Op op_a, op_b;
  int kernel, splits, lda, ldb, ldc, offset;
  float alpha, beta;
  bool c_nan;
  DeviceBuffer a, b, c0, ours, ref, abs_a, abs_b, abs_ab;
  cudaError_t status = cudaSuccess;

  SplitCall(Size size, tuned::Op oa, tuned::Op ob, int k, int n_splits, int pad, int off, float al, float be, bool nan,
            uint64_t seed)
      : s(size), op_a(oa), op_b(ob), kernel(k), splits(n_splits),
        lda((oa == tuned::Op::T ? size.m : size.k) + pad), ldb((ob == tuned::Op::T ? size.k : size.n) + pad),
        ldc(size.n + pad), offset(off), alpha(al), beta(be), c_nan(nan),
        a(off + static_cast<size_t>(oa == tuned::Op::T ? size.k : size.m) * lda),
        b(off + static_cast<size_t>(ob == tuned::Op::T ? size.n : size.k) * ldb),
        c0(off + static_cast<size_t>(size.m) * ldc + 256), ours(c0.n), ref(c0.n), abs_a(a.n), abs_b(b.n),
        abs_ab(static_cast<size_t>(size.m) * size.n) {
    fill_inputs(a, b, c0, ours, ref, c_nan, seed);
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  int layout() const { return (op_a == tuned::Op::T ? 2 : 0) + (op_b == tuned::Op::T ? 1 : 0); }
  void launch(cudaStream_t stream) {
    int device = 0;
    CHECK_CUDA(cudaGetDevice(&device));
    status = tuned::detail::prepare_kernel(device, kernel);   // as sgemm does before it launches
    if (status != cudaSuccess) return;
    status = tuned::detail::launch_split<float>(device, kernel, splits, layout(), s.m, s.n, s.k, alpha, a.p + offset, lda,
                                                b.p + offset, ldb, beta, ours.p + offset, ldc, stream);
  }
  void check(Context& ctx, const std::string& name) {
    CheckRecord r{name, s, lda, ldb, ldc, offset, alpha, beta,
                  std::string(tuned::detail::k_kernels[kernel].name) + " in " + std::to_string(splits) + " slices",
                  0, 0, 0, "", false};
    if (status != cudaSuccess) r.error = std::string("launch_split returned ") + cudaGetErrorName(status);
    CHECK_CUBLAS(cublasSgemm(ctx.cublas, cublas_op(op_b), cublas_op(op_a), s.n, s.m, s.k, &alpha, b.p + offset, ldb,
                             a.p + offset, lda, &beta, ref.p + offset, ldc));
    abs_copy(a.p, abs_a.p, a.n);
    abs_copy(b.p, abs_b.p, b.n);
    CHECK_CUDA(cudaGetLastError());
    const float one = 1.0f, zero = 0.0f;
    CHECK_CUBLAS(cublasSgemm(ctx.cublas, cublas_op(op_b), cublas_op(op_a), s.n, s.m, s.k, &one, abs_b.p + offset, ldb,
                             abs_a.p + offset, lda, &zero, abs_ab.p, s.n));
    compare_and_report(ctx, r, ours.p, ref.p, c0.p, abs_ab.p, c0.n, static_cast<size_t>(offset), s, ldc, alpha, beta);
  }
};

/// Whether the slices of a split call may run a kernel, as the dispatch decides it.
bool split_usable(const SplitCall& c, int kernel) {
  const tuned::detail::Call call = tuned::detail::make_call(c.op_a, c.op_b, c.s.m, c.s.n, c.s.k, c.a.p + c.offset, c.lda,
                                                            0, c.b.p + c.offset, c.ldb, 0, c.ours.p + c.offset, c.ldc,
                                                            0, 1);
  return tuned::detail::k_kernels[kernel].dtype == 0 && tuned::detail::SliceRequirements{call}(kernel, c.splits);
}

/// Per layout, up to three batched f32 kernels (the first ones the slices may run): beta = 0 over
/// NaN with wide leading dimensions, M = 1, N = 1, offset pointers; and two calls on two streams at
/// once, each with its own workspace.
void check_split_k(Context& ctx, uint64_t seed) {
  cudaStream_t streams[2];
  for (auto& st : streams) CHECK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (const tuned::Op op_a : {tuned::Op::N, tuned::Op::T})
    for (const tuned::Op op_b : {tuned::Op::N, tuned::Op::T}) {
      int tried = 0;
      for (int k = 0; k < tuned::detail::k_kernel_count && tried < 3; ++k) {
        SplitCall probe({196, 132, 1024}, op_a, op_b, k, 4, 4, 0, 1.0f, 0.0f, true, seed += 7);
        if (!split_usable(probe, k)) continue;
        ++tried;
        const std::string layout = layout_text(op_a, op_b);
        probe.launch(0);
        CHECK_CUDA(cudaDeviceSynchronize());
        probe.check(ctx, "split-" + layout + "-nan");
        SplitCall row({1, 77, 512}, op_a, op_b, k, 2, 0, 0, 0.75f, -1.25f, false, seed += 7);
        SplitCall column({65, 1, 768}, op_a, op_b, k, 2, 1, 0, 1.25f, 0.5f, false, seed += 7);
        SplitCall offset({130, 67, 2048}, op_a, op_b, k, 8, 0, 1, 1.0f, 1.0f, false, seed += 7);
        for (SplitCall* c : {&row, &column, &offset}) {
          if (!split_usable(*c, k)) continue;
          c->launch(0);
          CHECK_CUDA(cudaDeviceSynchronize());
          c->check(ctx, "split-" + layout + (c == &row ? "-m1" : c == &column ? "-n1" : "-offset"));
        }
        // Two streams at once, each call with its own workspace.
        SplitCall first({256, 192, 4096}, op_a, op_b, k, 16, 0, 0, 1.0f, 0.0f, true, seed += 7);
        SplitCall second({160, 224, 2048}, op_a, op_b, k, 8, 2, 0, 0.5f, 2.0f, false, seed += 7);
        if (split_usable(first, k) && split_usable(second, k)) {
          first.launch(streams[0]);
          second.launch(streams[1]);
          CHECK_CUDA(cudaDeviceSynchronize());
          first.check(ctx, "split-" + layout + "-stream0");
          second.check(ctx, "split-" + layout + "-stream1");
        }
      }
      if (tried == 0) std::printf("  (no batched f32 %s kernel in this header: nothing to split)\n", layout_text(op_a, op_b));
    }
  for (auto& st : streams) CHECK_CUDA(cudaStreamDestroy(st));
}

/// Every layout, unbatched and in batches (packed, A broadcast, B broadcast), beta = 0 over NaN and
/// alpha/beta over random C, leading dimensions wider than the matrices, and the column-major entry.
void check_layouts(Context& ctx, Size s, uint64_t seed) {
  for (const tuned::Op op_a : {tuned::Op::N, tuned::Op::T})
    for (const tuned::Op op_b : {tuned::Op::N, tuned::Op::T}) {
      check_operands(ctx, s, op_a, op_b, 1, false, false, 0, 1.0f, 0.0f, true, false, seed += 3);
      check_operands(ctx, s, op_a, op_b, 1, false, false, 5, 0.75f, -1.25f, false, false, seed += 3);
      check_operands(ctx, s, op_a, op_b, 5, false, false, 3, 1.0f, 0.0f, true, false, seed += 3);
      check_operands(ctx, s, op_a, op_b, 5, true, false, 0, 0.75f, 0.5f, false, false, seed += 3);
      check_operands(ctx, s, op_a, op_b, 5, false, true, 4, 1.25f, 0.0f, true, false, seed += 3);
      check_operands(ctx, s, op_a, op_b, 3, false, false, 1, 0.5f, 2.0f, false, true, seed += 3);
    }
}

/// A tuned batch as it was tuned (its layout, batch and broadcast operands), so the call meets the
/// table's exact entry and runs its measured kernel (e.g. one computing several problems per block),
/// and with wider leading dimensions, which may take another kernel. Skipped (false) when its buffers
/// would pass 2^27 floats.
bool check_tuned_batch(Context& ctx, const tuned::TunedProblem& p, uint64_t seed) {
  const long long batch = p.batch;
  const long long floats_a = (p.broadcast & 1) ? 1 : batch, floats_b = (p.broadcast & 2) ? 1 : batch;
  const long long limit = 1LL << 27;
  if (floats_a * p.m * p.k > limit || floats_b * p.k * p.n > limit || batch * p.m * p.n > limit) return false;
  const tuned::Op op_a = (p.layout & 2) ? tuned::Op::T : tuned::Op::N, op_b = (p.layout & 1) ? tuned::Op::T : tuned::Op::N;
  const Size s{p.m, p.n, p.k};
  const bool ba = (p.broadcast & 1) != 0, bb = (p.broadcast & 2) != 0;
  check_operands(ctx, s, op_a, op_b, p.batch, ba, bb, 0, 1.0f, 0.0f, true, false, seed);
  check_operands(ctx, s, op_a, op_b, p.batch, ba, bb, 0, 0.75f, -1.25f, false, false, seed + 3);
  check_operands(ctx, s, op_a, op_b, p.batch, ba, bb, 4, 1.25f, 0.5f, false, false, seed + 6);
  return true;
}

void check_size(Context& ctx, Size s, uint64_t seed) {
  check_product(ctx, "beta0-nan-c", s, s.k, s.n, s.n, 0, 1.0f, 0.0f, true, seed);
  check_product(ctx, "alpha-beta", s, s.k, s.n, s.n, 0, 0.75f, -1.25f, false, seed + 10);
  check_product(ctx, "padded-ld", s, round_up4(s.k) + 4, round_up4(s.n) + 8, round_up4(s.n) + 4, 0, 1.5f, 0.5f, false, seed + 20);
  check_product(ctx, "offset-1", s, s.k, s.n, s.n, 1, 1.0f, 1.0f, false, seed + 30);
  check_product(ctx, "odd-ld+off", s, s.k + 1, s.n + 1, s.n + 3, 1, 1.25f, 0.5f, false, seed + 40);
}

void check_corners(Context& ctx) {
  check_scale_only(ctx, "alpha0", {300, 200, 100}, 0.0f, 2.0f, false);
  check_scale_only(ctx, "alpha0-beta0", {300, 200, 100}, 0.0f, 0.0f, true);   // NaN in C must become 0
  check_scale_only(ctx, "k0", {300, 200, 0}, 1.0f, 0.5f, false);
  check_scale_only(ctx, "k0-beta0", {300, 200, 0}, 1.0f, 0.0f, true);
  check_scale_only(ctx, "alpha0-beta1", {300, 200, 100}, 0.0f, 1.0f, false);   // C unchanged
  check_status(ctx, "m0", {0, 64, 64}, 64, 64, 64, false, cudaSuccess);
  check_status(ctx, "n0", {64, 0, 64}, 64, 1, 1, false, cudaSuccess);
  check_status(ctx, "lda<k", {64, 64, 64}, 63, 64, 64, false, cudaErrorInvalidValue);
  check_status(ctx, "ldc<n", {64, 64, 64}, 64, 64, 63, false, cudaErrorInvalidValue);
  check_status(ctx, "m<0", {-1, 64, 64}, 64, 64, 64, false, cudaErrorInvalidValue);
  check_status(ctx, "null-a", {64, 64, 64}, 64, 64, 64, true, cudaErrorInvalidValue);
}

// ---------------------------------------------------------------------------------------------
// dgemm and igemm against a CPU reference
// ---------------------------------------------------------------------------------------------

/// The double and int entry points, behind one name per variant, so the checks below are written once.
struct F64Api {
  typedef double T;
  static const char* name() { return "f64"; }
  static cudaError_t nn(int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb, T beta, T* C, int ldc) {
    return tuned::dgemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  static cudaError_t op(tuned::Op a, tuned::Op b, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb,
                        T beta, T* C, int ldc) {
    return tuned::dgemm(a, b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  static cudaError_t batched(tuned::Op a, tuned::Op b, int M, int N, int K, T alpha, const T* A, int lda, long long sa,
                             const T* B, int ldb, long long sb, T beta, T* C, int ldc, long long sc, int batch) {
    return tuned::dgemm_strided_batched(a, b, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
  }
  static cudaError_t colmajor(tuned::Op a, tuned::Op b, int M, int N, int K, T alpha, const T* A, int lda, const T* B,
                              int ldb, T beta, T* C, int ldc) {
    return tuned::dgemm_colmajor(a, b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  static cudaError_t colmajor_batched(tuned::Op a, tuned::Op b, int M, int N, int K, T alpha, const T* A, int lda,
                                      long long sa, const T* B, int ldb, long long sb, T beta, T* C, int ldc,
                                      long long sc, int batch) {
    return tuned::dgemm_colmajor_strided_batched(a, b, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
  }
};

struct I32Api {
  typedef int T;
  static const char* name() { return "i32"; }
  static cudaError_t nn(int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb, T beta, T* C, int ldc) {
    return tuned::igemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  static cudaError_t op(tuned::Op a, tuned::Op b, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb,
                        T beta, T* C, int ldc) {
    return tuned::igemm(a, b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  static cudaError_t batched(tuned::Op a, tuned::Op b, int M, int N, int K, T alpha, const T* A, int lda, long long sa,
                             const T* B, int ldb, long long sb, T beta, T* C, int ldc, long long sc, int batch) {
    return tuned::igemm_strided_batched(a, b, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
  }
  static cudaError_t colmajor(tuned::Op a, tuned::Op b, int M, int N, int K, T alpha, const T* A, int lda, const T* B,
                              int ldb, T beta, T* C, int ldc) {
    return tuned::igemm_colmajor(a, b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  static cudaError_t colmajor_batched(tuned::Op a, tuned::Op b, int M, int N, int K, T alpha, const T* A, int lda,
                                      long long sa, const T* B, int ldb, long long sb, T beta, T* C, int ldc,
                                      long long sc, int batch) {
    return tuned::igemm_colmajor_strided_batched(a, b, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
  }
};

/// A seeded host generator (splitmix64), so the CPU reference sees exactly what the GPU does.
struct HostRandom {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

/// Inputs: doubles in +-[0.25, 1] (never zero, so a dropped or doubled term shows); ints whole numbers
/// in [-8, 8], or with `big` in [-2^20, 2^20], whose products and sums overflow 32 bits and must wrap.
void host_fill(std::vector<double>& v, uint64_t seed, bool) {
  HostRandom r{seed};
  for (double& x : v) {
    const uint64_t bits = r.next();
    const double magnitude = 0.25 + 0.75 * static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
    x = (bits & 1u) ? magnitude : -magnitude;
  }
}
void host_fill(std::vector<int>& v, uint64_t seed, bool big) {
  HostRandom r{seed};
  const uint64_t span = big ? (2u << 20) + 1 : 17;
  for (int& x : v) x = static_cast<int>(r.next() % span) - static_cast<int>(span / 2);
}

/// What beta == 0 must overwrite without reading: NaN for doubles; for ints the 32-bit pattern of a
/// float NaN, which no correct result on the small inputs reaches.
void host_poison(std::vector<double>& v) { std::fill(v.begin(), v.end(), std::nan("")); }
void host_poison(std::vector<int>& v) { std::fill(v.begin(), v.end(), 2143289344); }

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(int a, int b) { return a == b; }

/// beta * c in the element type, as the scale of alpha == 0 or K == 0 computes it (one rounding for
/// doubles; wrapping for ints). beta == 0 gives 0 whatever c is.
double scaled(double beta, double c) { return beta == 0.0 ? 0.0 : beta * c; }
int scaled(int beta, int c) {
  const uint32_t out = static_cast<uint32_t>(beta) * static_cast<uint32_t>(c);
  int value;
  std::memcpy(&value, &out, sizeof value);
  return value;
}

/// One element of the reference and how far from it ours may be: doubles within
/// 2 (K + 4) 2^-53 (|alpha| (|A||B|)ij + |beta| |C0ij|) of a long double sum (the FP32 bound of the
/// sgemm checks with u = 2^-53); ints exact, in uint32 arithmetic (products and sums wrap mod 2^32).
struct TypedReference {
  static void element(const double* a_row, long long a_step, const double* b_col, long long b_step, int K, double alpha,
                      double beta, double c0, double* ref, double* tol) {
    long double acc = 0, abs_acc = 0;
    for (int k = 0; k < K; ++k) {
      const long double x = a_row[k * a_step], y = b_col[k * b_step];
      acc += x * y;
      abs_acc += std::fabs(static_cast<double>(x)) * std::fabs(static_cast<double>(y));
    }
    const long double c_term = beta == 0.0 ? 0.0L : static_cast<long double>(beta) * c0;
    *ref = static_cast<double>(static_cast<long double>(alpha) * acc + c_term);
    const double abs_c = beta == 0.0 ? 0.0 : std::fabs(beta) * std::fabs(c0);
    *tol = 2.0 * (K + 4) * 1.1102230246251565e-16 * (std::fabs(alpha) * static_cast<double>(abs_acc) + abs_c) + 1e-300;
  }
  static void element(const int* a_row, long long a_step, const int* b_col, long long b_step, int K, int alpha, int beta,
                      int c0, int* ref, int* tol) {
    uint32_t acc = 0;
    for (int k = 0; k < K; ++k) acc += static_cast<uint32_t>(a_row[k * a_step]) * static_cast<uint32_t>(b_col[k * b_step]);
    uint32_t out = static_cast<uint32_t>(alpha) * acc;
    if (beta != 0) out += static_cast<uint32_t>(beta) * static_cast<uint32_t>(c0);
    int value;
    std::memcpy(&value, &out, sizeof value);   // two's complement
    *ref = value;
    *tol = 0;
  }
};

/// One call of dgemm or igemm (Api) in its row-major variants or (col_major) its column-major ones,
/// checked element by element against the CPU reference: stored A is M x K (K x M for Op::T), B K x N
/// (N x K), leading dimensions `pad` wider, `batch` matrices each (stride 0 for a broadcast operand)
/// with guard elements between them (none when `packed`, as tune times a batch), and 256 guard
/// elements after C. Everything outside the M x N blocks must be bit-for-bit unchanged. `plain`: an NN
/// call through the plain entry (no op flags).
template <class Api>
void check_typed(Context& ctx, const std::string& label, Size s, tuned::Op op_a, tuned::Op op_b, int batch,
                 bool broadcast_a, bool broadcast_b, int pad, typename Api::T alpha, typename Api::T beta, bool c_poison,
                 bool col_major, bool big, uint64_t seed, bool plain = false, bool packed = false) {
  typedef typename Api::T T;
  const bool ta = op_a == tuned::Op::T, tb = op_b == tuned::Op::T;
  const int a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k;
  const int b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
  const int lda = a_cols + pad, ldb = b_cols + pad, ldc = s.n + pad;
  const int gap = packed ? 0 : 32;
  const long long stride_a = broadcast_a ? 0 : static_cast<long long>(a_rows) * lda + gap;
  const long long stride_b = broadcast_b ? 0 : static_cast<long long>(b_rows) * ldb + gap;
  const long long stride_c = static_cast<long long>(s.m) * ldc + 2 * gap;
  std::vector<T> a(static_cast<size_t>(stride_a * (batch - 1) + static_cast<long long>(a_rows) * lda));
  std::vector<T> b(static_cast<size_t>(stride_b * (batch - 1) + static_cast<long long>(b_rows) * ldb));
  std::vector<T> c0(static_cast<size_t>(stride_c * batch + 256));
  host_fill(a, seed, big);
  host_fill(b, seed + 1, big);
  if (c_poison)
    host_poison(c0);
  else
    host_fill(c0, seed + 2, big);
  T *da = nullptr, *db = nullptr, *dc = nullptr;
  CHECK_CUDA(cudaMalloc(&da, std::max<size_t>(a.size(), 1) * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&db, std::max<size_t>(b.size(), 1) * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&dc, c0.size() * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(da, a.data(), a.size() * sizeof(T), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, b.data(), b.size() * sizeof(T), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dc, c0.data(), c0.size() * sizeof(T), cudaMemcpyHostToDevice));

  std::string name = std::string(Api::name()) + "-" + label + (col_major ? "-colmajor-" : "-") + layout_text(op_a, op_b);
  if (batch > 1) name += "*" + std::to_string(batch) + (broadcast_a ? "-sa0" : broadcast_b ? "-sb0" : "");
  if (c_poison) name += "-poison";
  if (big) name += "-wrap";
  CheckRecord r{name, s, lda, ldb, ldc, 0, static_cast<float>(alpha), static_cast<float>(beta), "", 0, 0, 0, "", false};
  cudaError_t status;
  if (col_major) {
    // The row-major C (M x N) is the column-major C^T (N x M) = op(B)^T op(A)^T, as in check_operands.
    status = batch == 1 ? Api::colmajor(op_b, op_a, s.n, s.m, s.k, alpha, db, ldb, da, lda, beta, dc, ldc)
                        : Api::colmajor_batched(op_b, op_a, s.n, s.m, s.k, alpha, db, ldb, stride_b, da, lda, stride_a,
                                                beta, dc, ldc, stride_c, batch);
    r.kernel = "column-major entry";
  } else {
    const char* kernel = nullptr;
    if (tuned::kernel_name(op_a, op_b, s.m, s.n, s.k, static_cast<const T*>(da), lda, stride_a, static_cast<const T*>(db),
                           ldb, stride_b, static_cast<const T*>(dc), ldc, stride_c, batch, &kernel) == cudaSuccess &&
        kernel)
      r.kernel = kernel;
    if (plain && batch == 1 && !ta && !tb)
      status = Api::nn(s.m, s.n, s.k, alpha, da, lda, db, ldb, beta, dc, ldc);
    else if (batch == 1)
      status = Api::op(op_a, op_b, s.m, s.n, s.k, alpha, da, lda, db, ldb, beta, dc, ldc);
    else
      status = Api::batched(op_a, op_b, s.m, s.n, s.k, alpha, da, lda, stride_a, db, ldb, stride_b, beta, dc, ldc,
                            stride_c, batch);
  }
  note_call_status(ctx, r, status);
  std::vector<T> ours(c0.size());
  CHECK_CUDA(cudaMemcpy(ours.data(), dc, ours.size() * sizeof(T), cudaMemcpyDeviceToHost));
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);

  std::vector<bool> inside(c0.size(), false);
  double worst = 0;
  for (int i = 0; i < batch; ++i) {
    const T* ai = a.data() + i * stride_a;
    const T* bi = b.data() + i * stride_b;
    for (int row = 0; row < s.m; ++row)
      for (int col = 0; col < s.n; ++col) {
        const size_t at = static_cast<size_t>(i * stride_c + static_cast<long long>(row) * ldc + col);
        inside[at] = true;
        // op(A)(row, k) and op(B)(k, col), and the step along k in each.
        const T* a_row = ta ? ai + row : ai + static_cast<long long>(row) * lda;
        const T* b_col = tb ? bi + static_cast<long long>(col) * ldb : bi + col;
        T ref, tol;
        TypedReference::element(a_row, ta ? lda : 1, b_col, tb ? 1 : ldb, s.k, alpha, beta, c0[at], &ref, &tol);
        const double diff = std::fabs(static_cast<double>(ours[at]) - static_cast<double>(ref));
        const bool ok = tol == T(0) ? ours[at] == ref : diff <= static_cast<double>(tol);
        if (!ok) ++r.bad;
        const double ratio = tol == T(0) ? (ok ? 0.0 : INFINITY) : diff / static_cast<double>(tol);
        worst = std::max(worst, ratio == ratio ? ratio : INFINITY);
      }
  }
  for (size_t i = 0; i < c0.size(); ++i)
    if (!inside[i] && !same_bits(ours[i], c0[i])) ++r.outside_written;
  r.max_ratio = worst;
  report(ctx, r);
}

/// alpha == 0 or K == 0 with A and B null: C = beta * C (wrapping for ints), C unread when beta == 0.
template <class Api>
void check_typed_scale(Context& ctx, const std::string& label, Size s, typename Api::T alpha, typename Api::T beta,
                       bool c_poison, bool big) {
  typedef typename Api::T T;
  const int ldc = s.n + 3;
  std::vector<T> c0(static_cast<size_t>(s.m) * ldc + 256);
  if (c_poison)
    host_poison(c0);
  else
    host_fill(c0, 99, big);
  T* dc = nullptr;
  CHECK_CUDA(cudaMalloc(&dc, c0.size() * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(dc, c0.data(), c0.size() * sizeof(T), cudaMemcpyHostToDevice));
  CheckRecord r{std::string(Api::name()) + "-" + label, s, std::max(1, s.k), s.n, ldc, 0, static_cast<float>(alpha),
                static_cast<float>(beta), "scale only (A, B null)", 0, 0, 0, "", false};
  const cudaError_t status = Api::nn(s.m, s.n, s.k, alpha, nullptr, std::max(1, s.k), nullptr, s.n, beta, dc, ldc);
  note_call_status(ctx, r, status);
  std::vector<T> ours(c0.size());
  CHECK_CUDA(cudaMemcpy(ours.data(), dc, ours.size() * sizeof(T), cudaMemcpyDeviceToHost));
  cudaFree(dc);
  for (size_t i = 0; i < c0.size(); ++i) {
    const bool inside = static_cast<int>(i / ldc) < s.m && static_cast<int>(i % ldc) < s.n;
    if (!inside) {
      if (!same_bits(ours[i], c0[i])) ++r.outside_written;
      continue;
    }
    if (!same_bits(ours[i], scaled(beta, c0[i]))) ++r.bad;
  }
  r.max_ratio = r.bad ? INFINITY : 0;
  report(ctx, r);
}

/// Every layout through every entry point of one type: unbatched (the plain NN entry too), strided
/// batches packed and with A or B broadcast, beta = 0 over poison, wider leading dimensions, the
/// column-major entries; for ints one call per layout whose products and sums overflow and wrap.
template <class Api>
void check_typed_layouts(Context& ctx, Size s, uint64_t seed, typename Api::T alpha, typename Api::T beta) {
  typedef typename Api::T T;
  for (const tuned::Op op_a : {tuned::Op::N, tuned::Op::T})
    for (const tuned::Op op_b : {tuned::Op::N, tuned::Op::T}) {
      check_typed<Api>(ctx, "plain", s, op_a, op_b, 1, false, false, 0, T(1), T(0), true, false, false, seed += 3, true);
      check_typed<Api>(ctx, "ab", s, op_a, op_b, 1, false, false, 5, alpha, beta, false, false, false, seed += 3);
      check_typed<Api>(ctx, "batch", s, op_a, op_b, 5, false, false, 3, T(1), T(0), true, false, false, seed += 3);
      check_typed<Api>(ctx, "batch", s, op_a, op_b, 5, true, false, 0, alpha, beta, false, false, false, seed += 3);
      check_typed<Api>(ctx, "batch", s, op_a, op_b, 4, false, true, 4, beta, T(0), true, false, false, seed += 3);
      check_typed<Api>(ctx, "ab", s, op_a, op_b, 1, false, false, 2, alpha, T(1), false, true, false, seed += 3);
      check_typed<Api>(ctx, "batch", s, op_a, op_b, 3, false, false, 1, alpha, beta, false, true, false, seed += 3);
    }
}

/// A tuned dgemm or igemm problem called as it was tuned (tight leading dimensions, packed strides, its
/// batch and broadcast operands), so its measured kernel runs. Skipped (false) when the CPU reference would take
/// more than 2^30 multiply-adds.
template <class Api>
bool check_typed_tuned(Context& ctx, const tuned::TunedProblem& p, uint64_t seed) {
  typedef typename Api::T T;
  if (static_cast<double>(p.m) * p.n * p.k * p.batch > 1073741824.0) return false;
  const tuned::Op op_a = (p.layout & 2) ? tuned::Op::T : tuned::Op::N, op_b = (p.layout & 1) ? tuned::Op::T : tuned::Op::N;
  const bool ba = (p.broadcast & 1) != 0, bb = (p.broadcast & 2) != 0;
  const Size s{p.m, p.n, p.k};
  check_typed<Api>(ctx, "tuned", s, op_a, op_b, p.batch, ba, bb, 0, T(1), T(0), true, false, false, seed, true, true);
  check_typed<Api>(ctx, "tuned", s, op_a, op_b, p.batch, ba, bb, 0, T(3), T(-2), false, false, false, seed + 3, true,
                   true);
  return true;
}

void check_typed_corners(Context& ctx) {
  check_typed_scale<F64Api>(ctx, "alpha0", {300, 200, 100}, 0.0, 2.0, false, false);
  check_typed_scale<F64Api>(ctx, "k0-beta0", {300, 200, 0}, 1.0, 0.0, true, false);   // NaN in C must become 0
  check_typed_scale<F64Api>(ctx, "alpha0-beta1", {300, 200, 100}, 0.0, 1.0, false, false);
  check_typed_scale<I32Api>(ctx, "alpha0", {300, 200, 100}, 0, -3, false, false);
  check_typed_scale<I32Api>(ctx, "k0-wrap", {300, 200, 0}, 5, 4097, false, true);   // beta * C overflows and wraps
  check_typed_scale<I32Api>(ctx, "alpha0-beta0", {300, 200, 100}, 0, 0, true, false);
  check_typed_scale<I32Api>(ctx, "alpha0-beta1", {300, 200, 100}, 0, 1, false, false);
}

// ---------------------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------------------

struct TimeRecord {
  Size size;
  std::string kernel;
  double ours_ms, cublas_ms;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double tflops(Size s, double ms) { return 2.0 * s.m * s.n * s.k / (ms * 1e-3) / 1e12; }

TimeRecord time_size(Context& ctx, Size s, int samples, DeviceBuffer& flush) {
  DeviceBuffer a(static_cast<size_t>(s.m) * s.k), b(static_cast<size_t>(s.k) * s.n), c(static_cast<size_t>(s.m) * s.n);
  random_fill(a, 1);
  random_fill(b, 2);
  random_fill(c, 3);
  TimeRecord r{s, "", 0, 0};
  const char* kernel = nullptr;
  if (tuned::kernel_name(s.m, s.n, s.k, a.p, s.k, b.p, s.n, c.p, s.n, &kernel) == cudaSuccess && kernel) r.kernel = kernel;
  const auto ours = [&] { CHECK_CUDA(tuned::sgemm(s.m, s.n, s.k, 1.0f, a.p, s.k, b.p, s.n, 0.0f, c.p, s.n)); };
  const auto theirs = [&] { cublas_sgemm(ctx.cublas, s.m, s.n, s.k, 1.0f, a.p, s.k, b.p, s.n, 0.0f, c.p, s.n); };
  for (int i = 0; i < 3; ++i) ours(), theirs();   // warm-up: module loading, attribute setup, cuBLAS heuristics
  CHECK_CUDA(cudaDeviceSynchronize());

  cudaEvent_t e[4];
  for (auto& ev : e) CHECK_CUDA(cudaEventCreate(&ev));
  std::vector<double> ours_ms, cublas_ms;
  for (int i = 0; i < samples; ++i) {
    // Alternate which goes first so neither always follows the other.
    for (int j = 0; j < 2; ++j) {
      const bool run_ours = (i + j) % 2 == 0;
      CHECK_CUDA(cudaMemsetAsync(flush.p, i & 0xff, flush.n * sizeof(float)));   // evict A, B, C from L2
      CHECK_CUDA(cudaEventRecord(e[2 * j]));
      if (run_ours) ours(); else theirs();
      CHECK_CUDA(cudaEventRecord(e[2 * j + 1]));
    }
    CHECK_CUDA(cudaEventSynchronize(e[3]));
    float first = 0, second = 0;
    CHECK_CUDA(cudaEventElapsedTime(&first, e[0], e[1]));
    CHECK_CUDA(cudaEventElapsedTime(&second, e[2], e[3]));
    (i % 2 == 0 ? ours_ms : cublas_ms).push_back(first);
    (i % 2 == 0 ? cublas_ms : ours_ms).push_back(second);
  }
  for (auto& ev : e) CHECK_CUDA(cudaEventDestroy(ev));
  r.ours_ms = median(ours_ms);
  r.cublas_ms = median(cublas_ms);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Command line, JSON
// ---------------------------------------------------------------------------------------------

[[noreturn]] void usage(const char* message) {
  std::fprintf(stderr,
               "error: %s\nusage: cmtune_consumer_test [--sizes LIST] [--samples N] [--json FILE] [--no-timing] [--no-tuned] "
               "[--device N]\n  LIST: comma-separated sizes, each N or MxNxK (e.g. 1024,17x33x65)\n",
               message);
  std::exit(2);
}

std::vector<Size> parse_sizes(const std::string& text) {
  std::vector<Size> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int m = 0, n = 0, k = 0;
    char extra = 0;
    if (std::sscanf(item.c_str(), "%dx%dx%d%c", &m, &n, &k, &extra) == 3 && m > 0 && n > 0 && k > 0)
      out.push_back({m, n, k});
    else if (std::sscanf(item.c_str(), "%d%c", &m, &extra) == 1 && m > 0)
      out.push_back({m, m, m});
    else
      usage(("bad size '" + item + "' in --sizes").c_str());
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) out += ' ';
    else out += c;
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void write_json(const std::string& file, const std::string& device, const std::string& table, const Context& ctx,
                const std::vector<TimeRecord>& times, double geomean) {
  FILE* f = std::fopen(file.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "error: cannot write %s\n", file.c_str());
    std::exit(2);
  }
  std::fprintf(f, "{\n  \"device\": %s,\n  \"table\": %s,\n  \"failures\": %d,\n  \"checks\": [\n", json_string(device).c_str(),
               json_string(table).c_str(), ctx.failures);
  for (size_t i = 0; i < ctx.checks.size(); ++i) {
    const CheckRecord& c = ctx.checks[i];
    std::fprintf(f,
                 "    {\"case\": %s, \"m\": %d, \"n\": %d, \"k\": %d, \"lda\": %d, \"ldb\": %d, \"ldc\": %d, \"offset\": %d, "
                 "\"alpha\": %s, \"beta\": %s, \"kernel\": %s, \"max_error_ratio\": %s, \"bad\": %llu, "
                 "\"outside_written\": %llu, \"error\": %s, \"ok\": %s}%s\n",
                 json_string(c.name).c_str(), c.size.m, c.size.n, c.size.k, c.lda, c.ldb, c.ldc, c.offset,
                 json_number(c.alpha).c_str(), json_number(c.beta).c_str(), json_string(c.kernel).c_str(),
                 json_number(c.max_ratio).c_str(), c.bad, c.outside_written, json_string(c.error).c_str(),
                 c.ok ? "true" : "false", i + 1 < ctx.checks.size() ? "," : "");
  }
  std::fprintf(f, "  ],\n  \"timings\": [\n");
  for (size_t i = 0; i < times.size(); ++i) {
    const TimeRecord& t = times[i];
    std::fprintf(f,
                 "    {\"m\": %d, \"n\": %d, \"k\": %d, \"kernel\": %s, \"ours_ms\": %s, \"cublas_ms\": %s, "
                 "\"ours_tflops\": %s, \"cublas_tflops\": %s, \"ratio\": %s}%s\n",
                 t.size.m, t.size.n, t.size.k, json_string(t.kernel).c_str(), json_number(t.ours_ms).c_str(),
                 json_number(t.cublas_ms).c_str(), json_number(tflops(t.size, t.ours_ms)).c_str(),
                 json_number(tflops(t.size, t.cublas_ms)).c_str(), json_number(t.cublas_ms / t.ours_ms).c_str(),
                 i + 1 < times.size() ? "," : "");
  }
  std::fprintf(f, "  ],\n  \"geomean_ratio\": %s\n}\n", json_number(geomean).c_str());
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Size> sizes;
  std::vector<Size> tuned_operand_problems;   // tuned with a transpose or a batch: checked in every layout
  std::vector<tuned::TunedProblem> tuned_batches;   // tuned batches: also checked as tuned
  std::vector<tuned::TunedProblem> tuned_typed;     // tuned f64 and i32 problems: checked as tuned
  bool sizes_given = false, timing = true, with_tuned = true;
  int samples = 30, device = 0;
  std::string json_file;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage((arg + " needs a value").c_str());
      return argv[++i];
    };
    if (arg == "--sizes") sizes = parse_sizes(value()), sizes_given = true;
    else if (arg == "--samples") samples = std::atoi(value().c_str());
    else if (arg == "--json") json_file = value();
    else if (arg == "--device") device = std::atoi(value().c_str());
    else if (arg == "--no-timing") timing = false;
    else if (arg == "--no-tuned") with_tuned = false;
    else if (arg == "--help" || arg == "-h") usage("help requested");
    else usage(("unknown option " + arg).c_str());
  }
  if (samples < 20) usage("--samples must be >= 20 (the median of fewer is noisy)");

  CHECK_CUDA(cudaSetDevice(device));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  const char* table_name = nullptr;
  CHECK_CUDA(tuned::device_table_name(&table_name));
  const std::string table = table_name ? table_name : "";
  std::printf("device %d: %s (sm_%d%d, %d SMs)\n", device, prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  std::printf("dispatch table: %s\n", table_name ? table_name : "none: the generic default kernel runs everything");

  if (!sizes_given) {
    if (with_tuned) {
      int count = 0;
      CHECK_CUDA(tuned::tuned_problems(nullptr, 0, &count));
      std::vector<tuned::TunedProblem> problems(static_cast<size_t>(count));
      CHECK_CUDA(tuned::tuned_problems(problems.data(), count, &count));
      for (const auto& p : problems) {
        if (p.dtype != 0) {   // dgemm and igemm problems
          tuned_typed.push_back(p);
          continue;
        }
        if (p.layout == 0 && p.batch == 1) sizes.push_back({p.m, p.n, p.k});
        else if (p.batch <= 64) tuned_operand_problems.push_back({p.m, p.n, p.k});
        if (p.batch > 1) tuned_batches.push_back(p);
      }
      std::printf("tuned problems for this device: %d\n", count);
    }
    // Untuned and ragged: between tuned sizes, odd edges, and tiny.
    for (const Size s : {Size{1000, 1000, 1000}, Size{1023, 1023, 1023}, Size{1025, 1025, 1025}, Size{2049, 1000, 3000},
                         Size{17, 33, 65}, Size{1, 1, 1}, Size{127, 4099, 33}, Size{3000, 3000, 3000}})
      if (std::none_of(sizes.begin(), sizes.end(), [&](const Size& t) { return t.m == s.m && t.n == s.n && t.k == s.k; }))
        sizes.push_back(s);
  }

  Context ctx;
  CHECK_CUBLAS(cublasCreate(&ctx.cublas));
  CHECK_CUBLAS(cublasSetMathMode(ctx.cublas, CUBLAS_DEFAULT_MATH));   // true FP32, no TF32
  CHECK_CUDA(cudaMalloc(&ctx.result, sizeof(CompareResult)));

  std::printf("\ncorrectness against cuBLAS FP32 (tolerance 2(K+4)2^-24(|alpha||A||B| + |beta||C0|)):\n");
  check_corners(ctx);
  uint64_t seed = 1000;
  for (const Size& s : sizes) check_size(ctx, s, seed += 100);
  std::printf("\nlayouts and batches (op(A) op(B), batch, broadcast, wider leading dimensions, column-major):\n");
  std::vector<Size> operand_sizes = {{257, 129, 300}, {64, 64, 64}, {100, 100, 100}, {1, 77, 33}, {1023, 65, 129}};
  for (const auto& p : tuned_operand_problems)
    if (operand_sizes.size() < 12) operand_sizes.push_back(p);
  for (const Size& s : operand_sizes) check_layouts(ctx, s, seed += 100);
  if (!tuned_batches.empty()) {
    std::printf("\ntuned batches, called as tuned (layout, batch, broadcast), then with wider leading dimensions:\n");
    for (const auto& p : tuned_batches)
      if (!check_tuned_batch(ctx, p, seed += 100))
        std::printf("  skipped %dx%dx%d*%d: its buffers would pass 2^27 floats\n", p.m, p.n, p.k, p.batch);
  }

  std::printf("\nsplit K (a batch of K slices into a stream-ordered workspace, then their sum), forced on batched "
              "kernels:\n");
  check_split_k(ctx, seed += 100);

  std::printf("\ndgemm and igemm against a CPU reference (f64: 2(K+4)2^-53(|alpha||A||B| + |beta||C0|); i32: exact, "
              "wrapping mod 2^32):\n");
  check_typed_corners(ctx);
  for (const Size& s : {Size{257, 129, 300}, Size{64, 64, 64}, Size{1, 77, 33}, Size{100, 100, 100}}) {
    check_typed_layouts<F64Api>(ctx, s, seed += 100, 0.75, -1.25);
    check_typed_layouts<I32Api>(ctx, s, seed += 100, -5, 3);
  }
  // Products and sums past 2^31: a kernel that saturates, or sums in float or 64 bits, fails here.
  for (const tuned::Op op_a : {tuned::Op::N, tuned::Op::T})
    for (const tuned::Op op_b : {tuned::Op::N, tuned::Op::T}) {
      check_typed<I32Api>(ctx, "big", {129, 65, 257}, op_a, op_b, 1, false, false, 1, 7, 3, false, false, true, seed += 3);
      check_typed<I32Api>(ctx, "big", {33, 70, 513}, op_a, op_b, 3, false, true, 0, -7, 0, true, false, true, seed += 3);
    }
  for (const auto& p : tuned_typed) {
    seed += 100;
    const bool done = p.dtype == 1 ? check_typed_tuned<F64Api>(ctx, p, seed) : check_typed_tuned<I32Api>(ctx, p, seed);
    if (!done)
      std::printf("  skipped tuned %dx%dx%d*%d (dtype %d): too large for the CPU reference\n", p.m, p.n, p.k, p.batch,
                  p.dtype);
  }

  std::vector<TimeRecord> times;
  double geomean = NAN;
  if (timing) {
    int l2 = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    DeviceBuffer flush(static_cast<size_t>(std::max(l2, 1 << 20)) * 2 / sizeof(float));
    std::printf("\ntiming: median of %d samples each, L2 flushed before every sample, interleaved with cuBLAS\n", samples);
    std::printf("  %-16s %12s %12s %8s  %s\n", "size", "header TF/s", "cuBLAS TF/s", "ratio", "kernel");
    double log_sum = 0;
    for (const Size& s : sizes) {
      const TimeRecord t = time_size(ctx, s, samples, flush);
      const double ratio = t.cublas_ms / t.ours_ms;
      log_sum += std::log(ratio);
      std::printf("  %-16s %12.2f %12.2f %7.3fx  %s\n", size_text(s).c_str(), tflops(s, t.ours_ms), tflops(s, t.cublas_ms),
                  ratio, t.kernel.c_str());
      times.push_back(t);
    }
    if (!times.empty()) {
      geomean = std::exp(log_sum / static_cast<double>(times.size()));
      std::printf("  geometric mean of header/cuBLAS speed: %.3fx over %zu sizes\n", geomean, times.size());
    }
  }

  if (!json_file.empty()) {
    write_json(json_file, prop.name, table, ctx, times, geomean);
    std::printf("\nwrote %s\n", json_file.c_str());
  }
  cudaFree(ctx.result);
  cublasDestroy(ctx.cublas);
  if (ctx.failures) {
    std::printf("\nFAILED: %d of %zu checks\n", ctx.failures, ctx.checks.size());
    return 1;
  }
  std::printf("\nall %zu checks passed\n", ctx.checks.size());
  return 0;
}
