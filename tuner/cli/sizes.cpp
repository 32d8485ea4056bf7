#include "cli/sizes.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <set>
#include <string>
#include <unistd.h>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/stop_signal.hpp"

namespace cmt {

namespace {

[[noreturn]] void bad(std::string_view token, std::string_view why) {
  throw UsageError(fmt::format("bad size '{}' in --sizes: {}", printable(token), printable(why)));
}

/// Problems in the order first given, each once (a set beside the list: a file of 100,000 lines
/// was quadratic when each was looked up in the list).
class UniqueProblems {
 public:
  void add(const Problem& p) {
    if (m_seen.insert(p).second) m_list.push_back(p);
  }
  bool empty() const { return m_list.empty(); }
  std::vector<Problem> take() { return std::move(m_list); }

 private:
  std::vector<Problem> m_list;
  std::set<Problem> m_seen;
};

/// The longest line a sizes file may have. Without a bound, a file with no line break
/// (@/dev/zero, a binary named by mistake) was read into memory until it ran out.
constexpr size_t k_max_line = 4096;

/// A sizes file read in blocks through poll(), which wakes every 100 ms to look for a stop signal:
/// a pipe or FIFO whose writer is slow, or never comes, still stops on SIGINT or SIGTERM.
class SizesFile {
 public:
  explicit SizesFile(const std::string& path) : m_path(path) {
    // O_NONBLOCK: opening a FIFO that has no writer returns at once instead of blocking.
    m_fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (m_fd < 0) throw UsageError(fmt::format("--sizes @{}: cannot read it: {}", printable(path), std::strerror(errno)));
  }
  ~SizesFile() { ::close(m_fd); }
  SizesFile(const SizesFile&) = delete;
  SizesFile& operator=(const SizesFile&) = delete;

  /// Reads one line, without its '\n', into `line`; false at the end of the file.
  bool line(std::string& line, int number) {
    line.clear();
    for (;;) {
      const size_t end = m_buffer.find('\n', m_pos);
      const size_t stop = end == std::string::npos ? m_buffer.size() : end;
      if (stop - m_pos > k_max_line)
        throw UsageError(fmt::format("{}:{}: the line is longer than {} characters (is it a sizes file?)",
                                     printable(m_path), number, k_max_line));
      if (end != std::string::npos || m_eof) {
        line.assign(m_buffer, m_pos, stop - m_pos);
        const bool any = end != std::string::npos || stop > m_pos;
        m_pos = end == std::string::npos ? m_buffer.size() : end + 1;
        return any;
      }
      m_buffer.erase(0, m_pos);
      m_pos = 0;
      fill();
    }
  }

 private:
  void fill() {
    for (;;) {
      if (stop_signal()) throw StoppedBySignal(fmt::format("while reading --sizes @{}", printable(m_path)));
      pollfd p{m_fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, 100);
      if (ready < 0 && errno != EINTR) throw read_error();
      if (ready <= 0) continue;
      char block[65536];
      const ssize_t got = ::read(m_fd, block, sizeof block);
      if (got > 0) {
        m_buffer.append(block, static_cast<size_t>(got));
        return;
      }
      if (got == 0) {   // poll() said ready: the end (a FIFO with no writer yet is not ready)
        m_eof = true;
        return;
      }
      if (errno == EAGAIN || errno == EINTR) continue;
      throw read_error();
    }
  }
  UsageError read_error() const {
    return UsageError(fmt::format("--sizes @{}: read error: {}", printable(m_path), std::strerror(errno)));
  }

  std::string m_path;
  int m_fd = -1;
  std::string m_buffer;
  size_t m_pos = 0;
  bool m_eof = false;
};

int64_t parse_dim(std::string_view text, std::string_view token, std::string_view what = "sizes") {
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (!text.empty() && ec == std::errc::result_out_of_range && ptr == text.data() + text.size())
    bad(token, fmt::format("'{}' is out of range (the largest supported dimension is {})", text, k_max_dimension));
  if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size()) bad(token, fmt::format("'{}' is not a whole number", text));
  if (value < 1) bad(token, fmt::format("{} must be at least 1", what));
  if (value > k_max_dimension) bad(token, fmt::format("{} exceeds the largest supported dimension {}", value, k_max_dimension));
  return value;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

/// The comma-separated items of a list, each trimmed (an empty item stays, to be reported).
std::vector<std::string_view> split_list(std::string_view text) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    out.push_back(trim(text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos)));
    pos = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
  }
  return out;
}

}  // namespace

std::vector<Problem> read_sizes_file(const std::string& path) {
  if (path.empty()) throw UsageError("--sizes @FILE: no file named after '@'");
  const std::string shown = printable(path);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UsageError(fmt::format("--sizes @{}: is a directory, not a file", shown));
  SizesFile in(path);
  UniqueProblems out;
  std::string line;
  int number = 0;
  while (in.line(line, number + 1)) {
    ++number;
    std::string_view item = line;
    if (const size_t hash = item.find('#'); hash != std::string_view::npos) item = item.substr(0, hash);
    while (!item.empty() && (item.back() == '\r' || item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    item = trim(item);
    if (item.empty()) continue;
    // Anywhere in the line, not only first: "1,@self" named the file itself and recursed until the
    // stack overflowed.
    if (item.find('@') != std::string_view::npos)
      throw UsageError(fmt::format("{}:{}: a sizes file may not name another (@)", shown, number));
    try {
      for (const Problem& p : parse_sizes(item)) out.add(p);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{}:{}: {}", shown, number, e.what()));
    }
  }
  if (out.empty()) throw UsageError(fmt::format("--sizes @{}: holds no sizes (only comments or blank lines)", shown));
  return out.take();
}

std::vector<Problem> parse_sizes(std::string_view text) {
  UniqueProblems out;
  const auto add = [&](const Problem& p) { out.add(p); };
  if (trim(text).empty()) throw UsageError("--sizes is empty");

  for (const std::string_view token : split_list(text)) {
    if (token.empty()) bad(token, "empty item (two commas in a row?)");
    if (token.front() == '@') {
      for (const Problem& p : read_sizes_file(std::string(token.substr(1)))) add(p);
      continue;
    }

    if (const size_t dots = token.find(".."); dots != std::string_view::npos) {
      const std::string_view lo_text = token.substr(0, dots);
      std::string_view hi_text = token.substr(dots + 2);
      std::string_view step_text;
      if (const size_t colon = hi_text.find(':'); colon != std::string_view::npos) {
        step_text = hi_text.substr(colon + 1);
        hi_text = hi_text.substr(0, colon);
      }
      const int64_t lo = parse_dim(lo_text, token), hi = parse_dim(hi_text, token);
      if (lo > hi) bad(token, "the range runs backwards");
      if (step_text.empty()) {
        for (int64_t s = lo; s <= hi; s *= 2) add({s, s, s});
      } else {
        const int64_t step = parse_dim(step_text, token, "the step");
        if ((hi - lo) / step > 10000) bad(token, "more than 10000 sizes");
        for (int64_t s = lo; s <= hi; s += step) add({s, s, s});
      }
      continue;
    }
    if (token.find_first_of("xX:*") != std::string_view::npos) {
      add(parse_problem(token, k_max_dimension, k_max_batch, "in --sizes"));
      continue;
    }
    const int64_t n = parse_dim(token, token);
    add({n, n, n});
  }
  return out.take();
}

std::vector<DType> parse_dtype_list(std::string_view dtypes) {
  if (trim(dtypes) == "all") return all_types();
  std::vector<DType> out;
  for (const std::string_view item : split_list(dtypes)) {
    const auto d = parse_dtype(item);
    if (!d) throw UsageError(fmt::format("--dtype: unknown type '{}' ({} or all)", printable(item), type_names(",")));
    if (std::find(out.begin(), out.end(), *d) == out.end()) out.push_back(*d);
  }
  return out;
}

std::vector<Problem> expand_problems(const std::vector<Problem>& problems, std::string_view layouts,
                                     std::string_view batches, std::string_view broadcast, std::string_view dtypes) {
  const std::vector<DType> types = dtypes.empty() ? std::vector<DType>{} : parse_dtype_list(dtypes);
  std::vector<std::pair<bool, bool>> ops;
  if (trim(layouts) == "all") layouts = "nn,nt,tn,tt";
  if (!layouts.empty()) {
    for (const std::string_view item : split_list(layouts)) {
      const auto l = parse_layout(item);
      if (!l) throw UsageError(fmt::format("--layout: unknown layout '{}' (nn, nt, tn, tt or all)", printable(item)));
      if (std::find(ops.begin(), ops.end(), *l) == ops.end()) ops.push_back(*l);
    }
  }
  std::vector<int64_t> counts;
  if (!batches.empty()) {
    for (const std::string_view item : split_list(batches)) {
      int64_t v = 0;
      const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
      if (item.empty() || ec != std::errc{} || ptr != item.data() + item.size() || v < 1 || v > k_max_batch)
        throw UsageError(fmt::format("--batch: '{}' is not a batch count from 1 to {}", printable(item), k_max_batch));
      if (std::find(counts.begin(), counts.end(), v) == counts.end()) counts.push_back(v);
    }
  }
  const std::string_view b = trim(broadcast);
  if (!b.empty() && b != "a" && b != "b")
    throw UsageError(fmt::format("--broadcast: '{}' is not a or b (the operand whose stride is 0)", printable(b)));

  UniqueProblems out;
  const auto add = [&](Problem p) {
    if (!b.empty()) {
      if (p.batch < 2) throw UsageError(fmt::format("--broadcast {} needs a batch above 1 ({})", b, p.to_string()));
      (b == "a" ? p.stride_a : p.stride_b) = 0;
    }
    out.add(p);
  };
  for (const Problem& given : problems) {
    const std::vector<std::pair<bool, bool>> lay = ops.empty() ? std::vector{std::make_pair(given.trans_a, given.trans_b)} : ops;
    const std::vector<DType> typ = types.empty() ? std::vector{given.dtype} : types;
    for (const DType t : typ) {
      for (const auto& [ta, tb] : lay) {
        if (counts.empty()) {
          Problem p = given;
          p.trans_a = ta, p.trans_b = tb, p.dtype = t;
          add(p);
        } else {
          for (const int64_t c : counts) add(Problem::make(given.m, given.n, given.k, ta, tb, c, t));
        }
      }
    }
  }
  return out.take();
}

}  // namespace cmt
