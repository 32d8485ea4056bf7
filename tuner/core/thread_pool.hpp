// A fixed pool of worker threads and a blocking queue.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace cmt {

/// Multi-producer multi-consumer FIFO. pop() blocks until an item arrives or the queue is closed.
template <typename T>
class BlockingQueue {
 public:
  void push(T item) {
    {
      std::lock_guard lock(m_mutex);
      m_items.push_back(std::move(item));
    }
    m_cv.notify_one();
  }
  /// Next item, or nullopt once closed and drained.
  std::optional<T> pop() {
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [&] { return !m_items.empty() || m_closed; });
    if (m_items.empty()) return std::nullopt;
    T item = std::move(m_items.front());
    m_items.pop_front();
    return item;
  }
  void close() {
    {
      std::lock_guard lock(m_mutex);
      m_closed = true;
    }
    m_cv.notify_all();
  }

 private:
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<T> m_items;
  bool m_closed = false;
};

/// Runs submitted tasks on `threads` workers; the destructor finishes queued tasks, then joins.
class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void submit(std::function<void()> task);
  int size() const { return static_cast<int>(m_workers.size()); }

 private:
  BlockingQueue<std::function<void()>> m_tasks;
  std::vector<std::thread> m_workers;
};

/// Number of hardware threads, at least 1.
int hardware_threads();

}  // namespace cmt
