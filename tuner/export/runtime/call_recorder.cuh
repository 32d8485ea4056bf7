// Recording the calls an application makes (docs/EXPORT.md, "Recording the calls"). With
// $CMTUNE_RECORD naming a file, each distinct GEMM call that dispatches a kernel is appended to it
// once, as a line `cm-tune tune --sizes @FILE` reads. Pasted by `cm-tune export` inside the header's
// namespace NS, after the tables and before header_api.cuh, whose detail::gemm calls it;
// tests/cuda/test_header_runtime.cu compiles it as code. Host code only.
//
// Off (the variable unset or empty), a call costs one load and one predictable branch: the state
// cached_recorder() reads is recording_off() once the first call has read the environment
// (resolve_recorder, through call_recorder's thread-safe static initialisation). On, a call looks its key up in a per-thread
// cache of the last few keys, and only a key new to the thread takes a mutex to insert it into the
// process's set; a key new to the process is formatted there and queued, and a background thread
// appends the queue to the file. No call waits for I/O. The rest of the queue is written at exit
// (std::atexit); the recorder is never destroyed, so static destruction cannot reach it; a forked
// child keeps the parent's set, drops the parent's queue (the parent writes it) and starts its own
// writer when it records a new call.

namespace detail {

/// The environment variable naming the file calls are recorded to.
constexpr const char* k_record_variable = "CMTUNE_RECORD";

/// The fields of a recorded call, as indices into RecordKey::v.
enum RecordField {
  rf_m, rf_n, rf_k,
  rf_layout,       // layout_index: nn 0, nt 1, tn 2, tt 3
  rf_batch,        // 1: not batched
  rf_dtype,        // 0 f32, 1 f64, 2 i32, 3 tf32x3 (an opted-in FP32 call)
  rf_lda, rf_ldb, rf_ldc,
  rf_stride_a, rf_stride_b, rf_stride_c,   // elements; 0 when the batch is 1
  rf_alignment,    // alignment_of the call's addresses and byte strides
  rf_count
};

/// What makes a recorded call distinct: every field of its line.
struct RecordKey {
  long long v[rf_count];
  bool operator==(const RecordKey& o) const {
    for (int i = 0; i < rf_count; ++i)
      if (v[i] != o.v[i]) return false;
    return true;
  }
};

/// FNV-1a over a key's fields.
struct RecordKeyHash {
  size_t operator()(const RecordKey& k) const {
    unsigned long long h = 1469598103934665603ull;
    for (int i = 0; i < rf_count; ++i) {
      h ^= static_cast<unsigned long long>(k.v[i]);
      h *= 1099511628211ull;
    }
    return static_cast<size_t>(h);
  }
};

/// The line that records a call (with its '\n'), into out[size]; returns its length, or 0 when it
/// does not fit. First the row-major problem as `cm-tune tune --sizes` spells it (Problem::to_string:
/// MxNxK[:LAYOUT][:DTYPE][*BATCH][:sa=0][:sb=0]), with the packed strides' spelling unless a stride
/// of A or B is 0: the dispatch keys a problem by which operands are broadcast, not by its strides,
/// so this is the key of the header's exact entry (exact_entry). Then a comment, which tune ignores,
/// with the leading dimensions, the strides of a batch and the alignment the dispatch saw.
inline int record_line(const RecordKey& key, char* out, int size) {
  static const char* const k_layouts[4] = {"", ":nt", ":tn", ":tt"};
  static const char* const k_dtypes[4] = {"", ":f64", ":i32", ":tf32x3"};
  const long long* v = key.v;
  const char* layout = v[rf_layout] >= 0 && v[rf_layout] < 4 ? k_layouts[v[rf_layout]] : ":?";
  const char* dtype = v[rf_dtype] >= 0 && v[rf_dtype] < 4 ? k_dtypes[v[rf_dtype]] : ":?";
  int n = 0;
  if (v[rf_batch] > 1)
    n = std::snprintf(out, static_cast<size_t>(size),
                      "%lldx%lldx%lld%s%s*%lld%s%s  # lda=%lld ldb=%lld ldc=%lld sa=%lld sb=%lld sc=%lld align=%lld\n",
                      v[rf_m], v[rf_n], v[rf_k], layout, dtype, v[rf_batch], v[rf_stride_a] == 0 ? ":sa=0" : "",
                      v[rf_stride_b] == 0 ? ":sb=0" : "", v[rf_lda], v[rf_ldb], v[rf_ldc], v[rf_stride_a],
                      v[rf_stride_b], v[rf_stride_c], v[rf_alignment]);
  else
    n = std::snprintf(out, static_cast<size_t>(size), "%lldx%lldx%lld%s%s  # lda=%lld ldb=%lld ldc=%lld align=%lld\n",
                      v[rf_m], v[rf_n], v[rf_k], layout, dtype, v[rf_lda], v[rf_ldb], v[rf_ldc], v[rf_alignment]);
  return n > 0 && n < size ? n : 0;
}

/// Appends each distinct call's line to a file once, from a background thread (see the top of this
/// file). Made once per process by call_recorder(); never destroyed.
class CallRecorder {
 public:
  /// Records to `path` from now on: the lines already in the file count as recorded. nullptr, after
  /// one warning on stderr, when the file cannot be opened for appending (recording stays off).
  static CallRecorder* open(const char* path) {
    CallRecorder* r = new (std::nothrow) CallRecorder();
    if (r == nullptr) return nullptr;
    if (!r->open_file(path)) {
      delete r;
      return nullptr;
    }
    r->read_existing(path);
    slot() = r;
    std::atexit(&CallRecorder::at_exit);
#if defined(__unix__) || defined(__APPLE__)
    pthread_atfork(&CallRecorder::before_fork, &CallRecorder::after_fork_in_parent, &CallRecorder::after_fork_in_child);
#endif
    return r;
  }

  /// Records a call unless it was recorded before. Never blocks on I/O and never throws (a line that
  /// cannot be allocated is dropped).
  void record(const RecordKey& key) {
    // The last keys this thread recorded: a loop of the same few calls never takes the lock.
    constexpr int k_recent = 4;
    static thread_local RecordKey recent[k_recent];   // zero: M = 0 is never recorded
    static thread_local unsigned next_recent = 0;
    for (int i = 0; i < k_recent; ++i)
      if (recent[i] == key) return;
    recent[next_recent++ % k_recent] = key;
    try {
      std::unique_lock<std::mutex> lock(m_mutex);
      if (m_failed || !m_seen.insert(key).second) return;
      char text[400];
      const int length = record_line(key, text, static_cast<int>(sizeof text));
      if (length == 0 || m_in_file.count(std::string(text, static_cast<size_t>(length) - 1)) != 0) return;
      if (m_exiting) {  // the exit handler ran: nobody writes the queue any more
        lock.unlock();
        append(std::string(text, static_cast<size_t>(length)));
        return;
      }
      m_queue.push_back(std::string(text, static_cast<size_t>(length)));
      if (!m_writer_running && !m_writer_failed) {
        try {
          std::thread(&CallRecorder::write_loop, this).detach();
          m_writer_running = true;
        } catch (...) {
          m_writer_failed = true;   // no threads (e.g. not linked with them): the exit handler writes
        }
      }
      m_wake.notify_one();
    } catch (...) {
    }
  }

  /// Writes whatever is queued now and waits (up to `timeout_ms`) until the file holds it. For tests
  /// and programs that want the file complete before exit.
  void flush(int timeout_ms) {
    std::unique_lock<std::mutex> lock(m_mutex);
    if (!m_writer_running) {
      std::string batch = take_queue();
      lock.unlock();
      append(batch);
      return;
    }
    m_idle.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return m_queue.empty() && !m_writing; });
  }

 private:
  CallRecorder() = default;

  static CallRecorder*& slot() {
    static CallRecorder* recorder = nullptr;
    return recorder;
  }

  bool open_file(const char* path) {
    m_path = path;
#if defined(__unix__) || defined(__APPLE__)
    m_fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    const bool ok = m_fd >= 0;
#else
    m_file = std::fopen(path, "ab");
    const bool ok = m_file != nullptr;
    if (ok) std::setvbuf(m_file, nullptr, _IONBF, 0);
#endif
    if (!ok)
      std::fprintf(stderr, "cmtune: cannot record GEMM calls to '%s' ($%s): %s; recording is off\n", path,
                   k_record_variable, std::strerror(errno));
    return ok;
  }

  /// The lines a previous run left in the file, so that a rerun appends only new calls.
  void read_existing(const char* path) {
    std::FILE* f = std::fopen(path, "r");
    if (f == nullptr) return;
    std::string line;
    char chunk[512];
    while (std::fgets(chunk, sizeof chunk, f) != nullptr) {
      line += chunk;
      if (line.empty() || line.back() != '\n') continue;
      line.pop_back();
      m_in_file.insert(line);
      line.clear();
    }
    if (!line.empty()) m_in_file.insert(line);
    std::fclose(f);
  }

  /// Appends text to the file; on an error, warns once and stops recording.
  void append(const std::string& text) {
    if (text.empty()) return;
    size_t done = 0;
    while (done < text.size()) {
#if defined(__unix__) || defined(__APPLE__)
      const ssize_t n = ::write(m_fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
#else
      const long n = static_cast<long>(std::fwrite(text.data() + done, 1, text.size() - done, m_file));
      if (n == 0) errno = EIO;
#endif
      if (n <= 0) {
        const int error = errno;
        std::lock_guard<std::mutex> lock(m_mutex);
        if (!m_failed)
          std::fprintf(stderr, "cmtune: writing recorded GEMM calls to '%s' failed: %s; recording stops\n",
                       m_path.c_str(), std::strerror(error));
        m_failed = true;
        return;
      }
      done += static_cast<size_t>(n);
    }
  }

  /// The queued lines as one text (written with one write call, so lines of processes appending to
  /// one file do not interleave), the queue emptied. Holds m_mutex.
  std::string take_queue() {
    std::string batch;
    for (const std::string& line : m_queue) batch += line;
    m_queue.clear();
    return batch;
  }

  /// The background writer: appends queued lines until the exit handler runs.
  void write_loop() {
    std::unique_lock<std::mutex> lock(m_mutex);
    for (;;) {
      m_wake.wait(lock, [this] { return !m_queue.empty() && !m_exiting; });
      std::string batch = take_queue();
      m_writing = true;
      lock.unlock();
      append(batch);
      lock.lock();
      m_writing = false;
      m_idle.notify_all();
    }
  }

  /// At exit: stop the writer, wait (briefly) for the batch it is writing, write the rest here.
  static void at_exit() {
    CallRecorder* r = slot();
    if (r == nullptr) return;
    std::unique_lock<std::mutex> lock(r->m_mutex);
    r->m_exiting = true;
    r->m_idle.wait_for(lock, std::chrono::seconds(2), [r] { return !r->m_writing; });
    std::string batch = r->take_queue();
    lock.unlock();
    r->append(batch);
  }

#if defined(__unix__) || defined(__APPLE__)
  // fork: the child must not inherit a locked mutex or wait for a writer thread it does not have.
  static void before_fork() {
    if (CallRecorder* r = slot()) r->m_mutex.lock();
  }
  static void after_fork_in_parent() {
    if (CallRecorder* r = slot()) r->m_mutex.unlock();
  }
  static void after_fork_in_child() {
    CallRecorder* r = slot();
    if (r == nullptr) return;
    // The parent's writer may have been waiting on these: fresh ones, the old never destroyed.
    new (&r->m_wake) std::condition_variable();
    new (&r->m_idle) std::condition_variable();
    r->m_queue.clear();   // the parent writes them
    r->m_writer_running = false;
    r->m_writing = false;
    r->m_mutex.unlock();
  }
#endif

  std::string m_path;
#if defined(__unix__) || defined(__APPLE__)
  int m_fd = -1;
#else
  std::FILE* m_file = nullptr;
#endif
  std::mutex m_mutex;                   // guards everything below
  std::condition_variable m_wake;       // lines queued
  std::condition_variable m_idle;       // the writer finished a batch
  std::unordered_set<RecordKey, RecordKeyHash> m_seen;   // every call recorded by this process
  std::unordered_set<std::string> m_in_file;             // lines (without '\n') in the file before
  std::deque<std::string> m_queue;      // lines not yet handed to the writer
  bool m_writer_running = false;
  bool m_writer_failed = false;         // no thread could be started: lines wait for exit
  bool m_writing = false;               // the writer holds a batch it has not finished writing
  bool m_exiting = false;               // the exit handler ran
  bool m_failed = false;                // a write failed: recording stopped
};

/// The process's recorder, made at the first call from $CMTUNE_RECORD (thread-safe static
/// initialisation); nullptr when recording is off, or the file could not be opened.
inline CallRecorder* call_recorder() {
  static CallRecorder* const recorder = [] {
    const char* path = std::getenv(k_record_variable);
    return path == nullptr || *path == '\0' ? static_cast<CallRecorder*>(nullptr) : CallRecorder::open(path);
  }();
  return recorder;
}

/// What the dispatch path tests: nullptr until a call has read the environment, then the recorder,
/// or recording_off(). A static member of a template, so it is one object in the program (also
/// across translation units, in C++14) and constant-initialised: reading it needs no guard.
template <class Unused = void>
struct RecorderCache {
  static CallRecorder* state;
};
template <class Unused>
CallRecorder* RecorderCache<Unused>::state = nullptr;

/// The state that means recording is off.
inline CallRecorder* recording_off() {
  static char off;
  return reinterpret_cast<CallRecorder*>(&off);
}

/// RecorderCache's state (acquire).
inline CallRecorder* cached_recorder() {
#if defined(__GNUC__) || defined(__clang__)
  return __atomic_load_n(&RecorderCache<>::state, __ATOMIC_ACQUIRE);
#else
  return *static_cast<CallRecorder* const volatile*>(&RecorderCache<>::state);
#endif
}

/// The recorder (nullptr: off), reading the environment at the first call and caching the answer
/// for cached_recorder (threads racing here store the same value).
inline CallRecorder* resolve_recorder() {
  CallRecorder* recorder = call_recorder();
  CallRecorder* state = recorder != nullptr ? recorder : recording_off();
#if defined(__GNUC__) || defined(__clang__)
  __atomic_store_n(&RecorderCache<>::state, state, __ATOMIC_RELEASE);
#else
  *static_cast<CallRecorder* volatile*>(&RecorderCache<>::state) = state;
#endif
  return recorder;
}

}  // namespace detail
