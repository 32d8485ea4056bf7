// The measure stage on several GPUs of one model: one Measurer per GPU (each a measuring process of
// its own, measure/worker_measurer.hpp), each driven by a thread of its own, taking jobs from one
// queue as it becomes idle, so a slow GPU takes fewer and none waits for another. With one member
// the jobs run on the caller's thread, one at a time, exactly as a single measurer runs them.
//
// A GPU whose measuring process keeps failing is taken out: a job during which a member's process
// faulted (Measurer::faults rose) is held back, not reported, while other members are active. Its
// next clean job shows the fault was the kernel's, and releases what it held; a run of
// `fault_limit` failed jobs in a row sends them to the other members instead. If any of them runs
// cleanly there, the GPU was at fault: it is taken out with a warning and the others' results
// count; if all fail there too, the kernels were, and the GPU goes on. Results are never recorded
// twice: a job's closure writes its results where its submitter reads them, and a job run again
// overwrites what its first run wrote.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "measure/measurer.hpp"

namespace cmt {

struct PoolMember {
  Measurer* measurer = nullptr;
  std::string name;               // for messages: "GPU 1 (GPU-5c41...)"
};

class MeasurerPool {
 public:
  /// What a job does, on the measurer of the member that runs it (on that member's thread).
  using Job = std::function<void(Measurer&)>;

  explicit MeasurerPool(std::vector<PoolMember> members, int fault_limit = 3);
  ~MeasurerPool();
  MeasurerPool(const MeasurerPool&) = delete;
  MeasurerPool& operator=(const MeasurerPool&) = delete;

  size_t size() const { return m_members.size(); }
  /// Members not taken out.
  size_t active() const;
  /// Whether a submitted job would start now: an active member has nothing to do.
  bool has_idle() const;
  /// Queues a job; next() gives back `id` once it has run to an outcome that counts.
  void submit(uint64_t id, Job job);
  /// The id of a finished job, waiting for one; nullopt when none is queued, running or held.
  /// Rethrows what a job threw.
  std::optional<uint64_t> next();
  /// Runs a job before any queued one and waits for it (a problem's baseline, needed before its
  /// first candidate); what other members finish meanwhile waits for next().
  void run(Job job);
  /// Drops the queued jobs that no member has started (a stop), and gives back their ids: next()
  /// never returns them. Jobs running finish and come back.
  std::vector<uint64_t> cancel();
  /// Jobs submitted and not yet given back by next().
  size_t outstanding() const;
  /// Jobs each member has finished, in member order (the progress line's shares).
  std::vector<int64_t> finished() const;
  /// The members' names, in member order.
  std::vector<std::string> names() const;
  /// Warnings not yet shown (a GPU taken out), oldest first; drains them.
  std::vector<std::string> take_warnings();
  /// True when a member's measurer lost its CUDA context (measure/measurer.hpp): the run must stop.
  bool context_lost() const;
  /// Measurer::release_problems on every member; call when no job is outstanding.
  void release_problems();

 private:
  struct Task {
    uint64_t id = 0;
    Job job;
    bool internal = false;        // run(): not given back by next()
    int confirms = -1;            // >= 0: run again for this member's suspended run of faults
  };
  struct Member {
    PoolMember info;
    std::thread thread;
    bool busy = false;
    bool suspended = false;       // its held jobs are being confirmed elsewhere
    bool out = false;             // taken out
    bool faulty = false;          // a confirmation ran cleanly elsewhere
    int pending_confirms = 0;
    int consecutive_faults = 0;
    int64_t finished = 0;
    std::vector<Task> held;       // failed jobs not yet known to be the kernels' fault
  };

  bool threaded() const { return m_members.size() > 1; }
  bool can_take(const Member& m, const Task& t) const;
  /// Takes the next task this member may run, or nullopt (lock held).
  std::optional<Task> take(size_t member);
  /// Runs a task on a member and files its outcome (lock not held while it runs).
  void execute(size_t member, Task task);
  /// Files a finished task (lock held).
  void finish(size_t member, Task task, bool faulted, std::exception_ptr error);
  void done(Task task);
  void release_held(Member& m);
  void loop(size_t member);

  std::vector<Member> m_members;
  int m_fault_limit;
  mutable std::mutex m_mutex;
  std::condition_variable m_work;   // members wait for tasks
  std::condition_variable m_done;   // the caller waits for finished tasks
  std::deque<Task> m_queue;
  std::deque<uint64_t> m_finished;
  std::map<uint64_t, bool> m_internal_done;
  uint64_t m_next_internal = 0;
  size_t m_outstanding = 0;
  std::exception_ptr m_error;
  std::vector<std::string> m_warnings;
  bool m_stopping = false;
};

}  // namespace cmt
