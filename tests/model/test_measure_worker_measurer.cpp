// Fault isolation: the tuner's side of the measuring process against a real child process that
// speaks the real protocol over real pipes (tests/worker/scripted_worker.cpp scripts the
// measurements, since there is no GPU here). Each way a kernel can fail on a GPU (the context
// broken, a launch that never ends, the process killed or stuck) costs one trial and a restart.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "test_support.hpp"
#include "measure/worker_measurer.hpp"

namespace cmt {
namespace {

struct Kernel {
  BinaryRecord binary;
  KernelUnderTest kut;
  explicit Kernel(const std::string& label) {
    binary.key = "key-" + label;
    binary.lowered_name = "_Z6kernelv";
    binary.cubin = {'\x7f', 'E', 'L', 'F', '\0', '\x01', '\xff'};  // bytes, zeros included, travel intact
    binary.ok = true;
    kut = {&binary, LaunchShape{256, 64, 64, 0, 1}, Requirements{}, label};
  }
};

class WorkerMeasurerTest : public ::testing::Test {
 protected:
  WorkerOptions options(const std::string& device = "0") {
    WorkerOptions o;
    o.command = {CMTUNE_SCRIPTED_WORKER};
    o.hello.device = device;
    o.hello.seed = 7;
    o.grace_ms = 1000;
    setenv("CMTUNE_SCRIPT_LOG", m_log.c_str(), 1);
    return o;
  }
  /// Distinct worker processes that logged a request.
  std::set<std::string> worker_pids() const {
    std::set<std::string> pids;
    std::ifstream in(m_log);
    for (std::string line; std::getline(in, line);) pids.insert(line.substr(0, line.find(' ')));
    return pids;
  }
  void TearDown() override {
    unsetenv("CMTUNE_SCRIPT_LOG");
    unsetenv("CMTUNE_SCRIPT_DELAY_MS");
  }
  test::TempDir m_dir;
  std::string m_log = (m_dir / "worker.log").string();
  const Problem m_problem{64, 64, 64};
  const MeasureLimits m_limits{0.0, 50.0};
};

TEST(WorkerProtocol, RequestsAndRepliesRoundTrip) {
  Kernel k("coalesced[BLOCK=32]");
  WorkerRequest r;
  r.kind = WorkerRequest::Kind::measure;
  r.kernels = {k.kut};
  r.problem = {100, 50, 30};
  r.limits = {1.5, 2000};
  const WorkerRequest back = decode_request(encode(r));
  ASSERT_EQ(back.kernels.size(), 1u);
  EXPECT_EQ(back.kind, WorkerRequest::Kind::measure);
  EXPECT_EQ(back.kernels[0].binary->cubin, k.binary.cubin);
  EXPECT_EQ(back.kernels[0].binary->key, k.binary.key);
  EXPECT_EQ(back.kernels[0].binary->lowered_name, k.binary.lowered_name);
  EXPECT_EQ(back.kernels[0].shape.tile_m, 64);
  EXPECT_EQ(back.kernels[0].shape.problems_per_block, 1);
  EXPECT_EQ(back.kernels[0].label, k.kut.label);
  // A kernel with several problems per block launches with them in the worker too.
  r.kernels[0].shape.problems_per_block = 8;
  EXPECT_EQ(decode_request(encode(r)).kernels.at(0).shape.problems_per_block, 8);
  EXPECT_EQ(back.problem, r.problem);
  EXPECT_EQ(back.limits.abandon_above_ms, 1.5);
  EXPECT_EQ(back.limits.kernel_timeout_ms, 2000);

  WorkerReply reply;
  reply.measurement.outcome = Outcome::wrong;
  reply.measurement.reason = "3 of 100 elements wrong";
  reply.measurement.max_error_ratio = 4.5;
  reply.measurement.timing = SampleStats{1, 0.9, 1.1, 0.02, 12};
  reply.context_lost = true;
  const WorkerReply got = decode_reply(encode(reply));
  EXPECT_EQ(got.measurement.outcome, Outcome::wrong);
  EXPECT_EQ(got.measurement.reason, reply.measurement.reason);
  EXPECT_EQ(got.measurement.max_error_ratio, 4.5);
  EXPECT_FALSE(got.measurement.max_abs_error.has_value());
  ASSERT_TRUE(got.measurement.timing.has_value());
  EXPECT_EQ(got.measurement.timing->count, 12);
  EXPECT_TRUE(got.context_lost);

  EXPECT_THROW(decode_reply("not msgpack at all"), InfraError);
}

// The problem's element type travels with every request that names a problem.
TEST(WorkerProtocol, ProblemsKeepTheirElementType) {
  Kernel k("blocktile2d[BM=64,BN=64,BK=8,TM=8,TN=4,TRANS_A=1,TRANS_B=0,DTYPE=1]");
  for (const DType t : {DType::f32, DType::f64, DType::i32}) {
    for (const auto kind : {WorkerRequest::Kind::measure, WorkerRequest::Kind::cublas, WorkerRequest::Kind::retime}) {
      WorkerRequest r;
      r.kind = kind;
      if (kind != WorkerRequest::Kind::cublas) r.kernels = {k.kut};
      r.problem = Problem::make(100, 50, 30, true, false, 7, t);
      r.problem.stride_b = 0;
      const WorkerRequest back = decode_request(encode(r));
      EXPECT_EQ(back.problem, r.problem) << back.problem.to_string();
      EXPECT_EQ(back.problem.dtype, t);
    }
  }
}

TEST_F(WorkerMeasurerTest, HelloReportsTheDeviceAndMeasures) {
  WorkerMeasurer w(options());
  EXPECT_EQ(w.device().name, "Scripted H100");
  EXPECT_EQ(w.device().arch(), "sm_90");
  Kernel k("coalesced[BLOCK=32]");
  const Measurement m = w.measure(k.kut, m_problem, m_limits);
  EXPECT_EQ(m.outcome, Outcome::ok) << m.reason;
  ASSERT_TRUE(m.timing.has_value());
  EXPECT_DOUBLE_EQ(m.timing->median, 0.5);
  EXPECT_DOUBLE_EQ(w.measure_cublas(m_problem).median, 1.0);
  EXPECT_EQ(w.retime({k.kut, k.kut}, m_problem, 100).size(), 3u);
  EXPECT_EQ(w.stats().restarts, 0);
  EXPECT_FALSE(w.context_lost());
}

// An i32 problem reaches the worker as i32: it has no cuBLAS baseline there (the scripted worker
// answers as the GPU measurer does), while f64 has one.
TEST_F(WorkerMeasurerTest, TypedProblemsReachTheWorker) {
  WorkerMeasurer w(options());
  Kernel k("blocktile2d[DTYPE=2]");
  const Problem i32 = Problem::make(64, 64, 64, false, false, 1, DType::i32);
  const Problem f64 = Problem::make(64, 64, 64, false, false, 1, DType::f64);
  EXPECT_EQ(w.measure(k.kut, i32, m_limits).outcome, Outcome::ok);
  EXPECT_DOUBLE_EQ(w.measure_cublas(f64).median, 1.0);
  try {
    w.measure_cublas(i32);
    ADD_FAILURE() << "an i32 baseline";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("64x64x64:i32: cuBLAS has no i32 GEMM"), std::string::npos) << e.what();
  }
  const auto retimed = w.retime({k.kut}, i32, 100);
  ASSERT_EQ(retimed.size(), 2u);
  EXPECT_TRUE(retimed[0].ok);
  EXPECT_FALSE(retimed[1].ok);
  EXPECT_NE(retimed[1].error.find("no baseline"), std::string::npos) << retimed[1].error;
  std::ifstream log(m_log);
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find("measure blocktile2d[DTYPE=2] 64x64x64:i32"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("cublas - 64x64x64:f64"), std::string::npos) << text.str();
}

TEST_F(WorkerMeasurerTest, HelloErrorsKeepTheirKind) {
  EXPECT_THROW(WorkerMeasurer w(options("none")), NoDeviceError);
  EXPECT_THROW(WorkerMeasurer w(options("7")), UsageError);
  WorkerOptions missing = options();
  missing.command = {(m_dir / "no-such-worker").string()};
  EXPECT_THROW(WorkerMeasurer w(missing), StartError);
}

TEST_F(WorkerMeasurerTest, EachFaultCostsOneTrialAndARestart) {
  WorkerMeasurer w(options());
  Kernel good("coalesced[BLOCK=32]");
  const struct {
    const char* label;
    Outcome outcome;
    const char* reason;
  } faults[] = {
      {"segv", Outcome::crashed, "killed by signal 11"},         // the process dies
      {"exit", Outcome::crashed, "exited with status 7"},
      {"lost", Outcome::crashed, "illegal memory access"},       // a sticky CUDA error
      {"hang", Outcome::timeout, "the kernel timeout"},          // the launch watchdog
      {"stuck", Outcome::timeout, "did not answer within"},      // the tuner's own deadline
  };
  int restarts = 0;
  for (const auto& f : faults) {
    Kernel bad(f.label);
    const Measurement m = w.measure(bad.kut, m_problem, m_limits);
    EXPECT_EQ(m.outcome, f.outcome) << f.label << ": " << m.reason;
    EXPECT_NE(m.reason.find(f.reason), std::string::npos) << f.label << ": " << m.reason;
    EXPECT_NE(m.reason.find("restarted"), std::string::npos) << f.label << ": " << m.reason;
    const Measurement after = w.measure(good.kut, m_problem, m_limits);
    EXPECT_EQ(after.outcome, Outcome::ok) << "after " << f.label << ": " << after.reason;
    EXPECT_EQ(w.stats().restarts, ++restarts) << f.label;
  }
  EXPECT_FALSE(w.context_lost());
  // Six processes: the first, and one after each fault.
  EXPECT_EQ(worker_pids().size(), 6u);
}

TEST_F(WorkerMeasurerTest, DestructionEndsAndReapsTheWorker) {
  std::set<std::string> pids;
  {
    WorkerMeasurer w(options());
    Kernel good("naive[BLOCK=16]");
    EXPECT_EQ(w.measure(good.kut, m_problem, m_limits).outcome, Outcome::ok);
    pids = worker_pids();
  }
  ASSERT_EQ(pids.size(), 1u);
  const pid_t pid = std::stoi(*pids.begin());
  // Reaped: no such process (not even a zombie) is left.
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

}  // namespace
}  // namespace cmt
