#include "core/thread_pool.hpp"

namespace cmt {

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) threads = 1;
  try {
    for (int i = 0; i < threads; ++i)
      m_workers.emplace_back([this] {
        while (auto task = m_tasks.pop()) (*task)();
      });
  } catch (...) {
    // A thread that failed to start (std::system_error) must not leave the started ones joinable:
    // destroying them would call std::terminate. Stop and join them, then report the failure.
    m_tasks.close();
    for (auto& w : m_workers) w.join();
    throw;
  }
}

ThreadPool::~ThreadPool() {
  m_tasks.close();
  for (auto& w : m_workers) w.join();
}

void ThreadPool::submit(std::function<void()> task) { m_tasks.push(std::move(task)); }

int hardware_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace cmt
