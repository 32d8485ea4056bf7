#include "measure/measurer_pool.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace cmt {

MeasurerPool::MeasurerPool(std::vector<PoolMember> members, int fault_limit) : m_fault_limit(std::max(1, fault_limit)) {
  for (auto& info : members) {
    Member m;
    m.info = std::move(info);
    m_members.push_back(std::move(m));
  }
  if (threaded())
    for (size_t i = 0; i < m_members.size(); ++i) m_members[i].thread = std::thread([this, i] { loop(i); });
}

MeasurerPool::~MeasurerPool() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_work.notify_all();
  for (auto& m : m_members)
    if (m.thread.joinable()) m.thread.join();
}

size_t MeasurerPool::active() const {
  std::lock_guard lock(m_mutex);
  return static_cast<size_t>(std::count_if(m_members.begin(), m_members.end(), [](const Member& m) { return !m.out; }));
}

bool MeasurerPool::has_idle() const {
  std::lock_guard lock(m_mutex);
  if (!threaded()) return m_queue.empty();
  const auto idle = std::count_if(m_members.begin(), m_members.end(),
                                  [](const Member& m) { return !m.out && !m.suspended && !m.busy; });
  return static_cast<size_t>(idle) > m_queue.size();
}

void MeasurerPool::submit(uint64_t id, Job job) {
  {
    std::lock_guard lock(m_mutex);
    m_queue.push_back(Task{id, std::move(job), false, -1});
    ++m_outstanding;
  }
  m_work.notify_all();
}

std::vector<uint64_t> MeasurerPool::cancel() {
  std::lock_guard lock(m_mutex);
  std::vector<uint64_t> out;
  for (auto it = m_queue.begin(); it != m_queue.end();) {
    if (it->internal || it->confirms >= 0) {
      ++it;
      continue;
    }
    out.push_back(it->id);
    it = m_queue.erase(it);
    --m_outstanding;
  }
  return out;
}

size_t MeasurerPool::outstanding() const {
  std::lock_guard lock(m_mutex);
  return m_outstanding;
}

std::vector<int64_t> MeasurerPool::finished() const {
  std::lock_guard lock(m_mutex);
  std::vector<int64_t> out;
  for (const auto& m : m_members) out.push_back(m.finished);
  return out;
}

std::vector<std::string> MeasurerPool::names() const {
  std::vector<std::string> out;
  for (const auto& m : m_members) out.push_back(m.info.name);
  return out;
}

std::vector<std::string> MeasurerPool::take_warnings() {
  std::lock_guard lock(m_mutex);
  return std::exchange(m_warnings, {});
}

bool MeasurerPool::context_lost() const {
  std::lock_guard lock(m_mutex);
  return std::any_of(m_members.begin(), m_members.end(), [](const Member& m) { return m.info.measurer->context_lost(); });
}

void MeasurerPool::release_problems() {
  std::lock_guard lock(m_mutex);
  for (auto& m : m_members)
    if (!m.out) m.info.measurer->release_problems();
}

std::optional<uint64_t> MeasurerPool::next() {
  if (!threaded()) {
    Task task;
    {
      std::lock_guard lock(m_mutex);
      if (!m_finished.empty()) {
        const uint64_t id = m_finished.front();
        m_finished.pop_front();
        --m_outstanding;
        return id;
      }
      if (m_queue.empty()) return std::nullopt;
      task = std::move(m_queue.front());
      m_queue.pop_front();
    }
    task.job(*m_members.front().info.measurer);   // throws to the caller as it is
    std::lock_guard lock(m_mutex);
    ++m_members.front().finished;
    --m_outstanding;
    return task.id;
  }
  std::unique_lock lock(m_mutex);
  m_done.wait(lock, [&] { return m_error || !m_finished.empty() || m_outstanding == 0; });
  if (m_error) std::rethrow_exception(std::exchange(m_error, nullptr));
  if (m_finished.empty()) return std::nullopt;
  const uint64_t id = m_finished.front();
  m_finished.pop_front();
  --m_outstanding;
  return id;
}

void MeasurerPool::run(Job job) {
  if (!threaded()) {
    job(*m_members.front().info.measurer);
    return;
  }
  std::unique_lock lock(m_mutex);
  const uint64_t id = m_next_internal++;
  m_queue.push_front(Task{id, std::move(job), true, -1});
  m_work.notify_all();
  m_done.wait(lock, [&] { return m_error || m_internal_done.count(id); });
  m_internal_done.erase(id);
  if (m_error) std::rethrow_exception(std::exchange(m_error, nullptr));
}

bool MeasurerPool::can_take(const Member& m, const Task& t) const {
  if (m.out || m.suspended || m.busy) return false;
  return t.confirms < 0 || &m_members[static_cast<size_t>(t.confirms)] != &m;
}

std::optional<MeasurerPool::Task> MeasurerPool::take(size_t member) {
  for (auto it = m_queue.begin(); it != m_queue.end(); ++it)
    if (can_take(m_members[member], *it)) {
      Task t = std::move(*it);
      m_queue.erase(it);
      return t;
    }
  return std::nullopt;
}

void MeasurerPool::loop(size_t member) {
  std::unique_lock lock(m_mutex);
  for (;;) {
    std::optional<Task> task;
    m_work.wait(lock, [&] { return m_stopping || (task = take(member)).has_value(); });
    if (!task) return;   // stopping
    Member& m = m_members[member];
    m.busy = true;
    lock.unlock();
    Measurer& measurer = *m.info.measurer;
    const int64_t faults_before = measurer.faults();
    std::exception_ptr error;
    try {
      task->job(measurer);
    } catch (...) {
      error = std::current_exception();
    }
    const bool faulted = measurer.faults() > faults_before;
    lock.lock();
    m.busy = false;
    finish(member, std::move(*task), faulted, error);
    m_work.notify_all();
    m_done.notify_all();
  }
}

void MeasurerPool::done(Task task) {
  if (task.internal)
    m_internal_done[task.id] = true;
  else
    m_finished.push_back(task.id);
}

void MeasurerPool::release_held(Member& m) {
  for (auto& t : m.held) done(std::move(t));
  m.held.clear();
}

void MeasurerPool::finish(size_t member, Task task, bool faulted, std::exception_ptr error) {
  Member& m = m_members[member];
  ++m.finished;
  const auto others = [&](size_t self) {
    return std::count_if(m_members.begin(), m_members.end(), [&](const Member& o) {
      return &o != &m_members[self] && !o.out && !o.suspended;
    });
  };
  if (error && others(member) > 0) {
    // Its measuring process cannot serve at all (it cannot start, or its machinery fails): the
    // others take the job and the rest of its share.
    m.out = true;
    std::string why = "an unknown error";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {
    }
    m_warnings.push_back(fmt::format("{}: {}; it is taken out of the run and the other GPUs do its share", m.info.name, why));
    for (auto& t : m.held) m_queue.push_back(std::move(t));
    m.held.clear();
    if (task.internal)
      m_queue.push_front(std::move(task));
    else
      m_queue.push_back(std::move(task));
  } else if (error) {   // the machinery failed, not a kernel, and no other GPU is left: the caller sees it
    if (!m_error) m_error = error;
    done(std::move(task));
  } else if (task.confirms >= 0) {
    Member& g = m_members[static_cast<size_t>(task.confirms)];
    if (!faulted) g.faulty = true;   // ran cleanly here: the failure was the other GPU's
    done(std::move(task));
    if (--g.pending_confirms == 0) {
      g.suspended = false;
      g.consecutive_faults = 0;
      if (g.faulty) {
        g.out = true;
        m_warnings.push_back(fmt::format(
            "{}: its measuring process failed on {} candidates in a row that ran cleanly on another GPU; it is taken "
            "out of the run and the other GPUs do its share",
            g.info.name, m_fault_limit));
      }
    }
  } else if (!faulted) {
    m.consecutive_faults = 0;
    release_held(m);
    done(std::move(task));
  } else if (task.internal || others(member) == 0) {
    done(std::move(task));   // nothing to compare with: the kernel's fault, as on one GPU
  } else {
    m.held.push_back(std::move(task));
    ++m.consecutive_faults;
  }
  // A run of faults, or faults held when nothing is left to run: let the other GPUs run them again.
  const bool idle = m_queue.empty() &&
                    std::none_of(m_members.begin(), m_members.end(), [](const Member& o) { return o.busy; });
  for (size_t i = 0; i < m_members.size(); ++i) {
    Member& g = m_members[i];
    if (g.held.empty() || (g.consecutive_faults < m_fault_limit && !idle)) continue;
    if (others(i) == 0) {
      release_held(g);
      continue;
    }
    g.suspended = true;
    g.pending_confirms = static_cast<int>(g.held.size());
    for (auto& t : g.held) {
      t.confirms = static_cast<int>(i);
      m_queue.push_back(std::move(t));
    }
    g.held.clear();
  }
  // Confirmations nobody else can run any more (the others were taken out): their first outcome stands.
  for (auto it = m_queue.begin(); it != m_queue.end();) {
    if (it->confirms < 0 || others(static_cast<size_t>(it->confirms)) > 0) {
      ++it;
      continue;
    }
    Member& g = m_members[static_cast<size_t>(it->confirms)];
    Task t = std::move(*it);
    it = m_queue.erase(it);
    t.confirms = -1;
    done(std::move(t));
    if (--g.pending_confirms == 0) {
      g.suspended = false;
      g.consecutive_faults = 0;
    }
  }
}

}  // namespace cmt
