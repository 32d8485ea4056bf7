// Seeded random testing of the input parsers (test_fuzz_*.cpp): input generators and the checks
// every fuzzed call shares. Header-only, so that tests/cli can use it too.
//
// Each iteration draws its own generator from the base seed and its index, so a failure report
// (the iteration and the input, escaped) is enough to replay it. The base seed is fixed, so CI runs
// the same inputs every time; CMTUNE_FUZZ_SEED and CMTUNE_FUZZ_ITERATIONS explore further:
//   CMTUNE_FUZZ_SEED=7 CMTUNE_FUZZ_ITERATIONS=1000000 build/tests/cmt_model_tests --gtest_filter='*Fuzz*'
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "core/error.hpp"

namespace cmt::fuzz {

/// The seed CI runs with.
constexpr uint64_t k_default_seed = 20240518;

/// $CMTUNE_FUZZ_SEED, else the fixed default.
inline uint64_t base_seed() {
  if (const char* env = std::getenv("CMTUNE_FUZZ_SEED"); env && *env) return std::strtoull(env, nullptr, 10);
  return k_default_seed;
}

/// $CMTUNE_FUZZ_ITERATIONS, else the test's own count (chosen so each test takes a few seconds in
/// the sanitizer build).
inline int iterations(int default_count) {
  if (const char* env = std::getenv("CMTUNE_FUZZ_ITERATIONS"); env && *env) return std::atoi(env);
  return default_count;
}

/// Prints the seed and the count, so a failing run says how to replay it.
inline void announce(const std::string& what, int count) {
  std::cout << fmt::format("fuzz {}: seed {} (CMTUNE_FUZZ_SEED), {} iterations (CMTUNE_FUZZ_ITERATIONS)\n", what,
                           base_seed(), count);
  ::testing::Test::RecordProperty("fuzz_seed", std::to_string(base_seed()));
}

/// The input as a C string literal's body (control characters and non-ASCII escaped), cut to a
/// readable length, for failure messages.
inline std::string escaped(std::string_view text, size_t limit = 300) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < limit; ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    if (text[i] == '\\' || text[i] == '"') {
      out += '\\';
      out += text[i];
    } else if (u >= 0x20 && u < 0x7f) {
      out += text[i];
    } else {
      out += fmt::format("\\x{:02x}", u);
    }
  }
  if (text.size() > limit) out += fmt::format("... ({} bytes in all)", text.size());
  return out;
}

/// A random source for one iteration; every draw is deterministic in (seed, iteration).
class Rng {
 public:
  Rng(uint64_t seed, uint64_t iteration) : m_engine(mix(seed ^ mix(iteration + 0x9e3779b97f4a7c15ULL))) {}

  /// Uniform in [0, n); n > 0.
  size_t below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(m_engine); }
  /// Uniform in [lo, hi].
  int64_t between(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(m_engine); }
  bool chance(double p) { return std::bernoulli_distribution(p)(m_engine); }
  uint64_t bits() { return m_engine(); }
  template <typename T>
  const T& pick(const std::vector<T>& items) { return items[below(items.size())]; }

 private:
  // splitmix64's finalizer: neighbouring iterations get unrelated generators.
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::mt19937_64 m_engine;
};

/// Numbers at the edges of every range the parsers check (int, int64, the size limit), as text.
inline const std::vector<std::string>& edge_numbers() {
  static const std::vector<std::string> numbers = {
      "0", "1", "-1", "2", "7", "8", "32", "48", "64", "128", "1023", "1024", "4096", "65536",
      "1048575", "1048576", "1048577", "2147483647", "2147483648", "-2147483648", "4294967296",
      "9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551616",
      "99999999999999999999999999999999", "00000000000000000000001", "1e999", "-0", "+1", "0x10", "1.5",
      "inf", "nan", "-inf"};
  return numbers;
}

/// Changes input by one to four random edits: a byte replaced, inserted or deleted, a dictionary
/// token or edge number inserted, a range deleted, repeated or truncated, or a splice with another
/// corpus entry.
inline std::string mutate(Rng& rng, std::string text, const std::vector<std::string>& dictionary,
                          const std::vector<std::string>& corpus) {
  const size_t edits = 1 + rng.below(4);
  for (size_t e = 0; e < edits; ++e) {
    const size_t at = text.empty() ? 0 : rng.below(text.size() + 1);
    switch (rng.below(9)) {
      case 0:   // replace a byte with any byte
        if (!text.empty()) text[rng.below(text.size())] = static_cast<char>(rng.below(256));
        break;
      case 1:   // insert a printable byte
        text.insert(at, 1, static_cast<char>(0x20 + rng.below(0x5f)));
        break;
      case 2:
      case 3:   // insert a token of the input's language
        text.insert(at, rng.pick(dictionary));
        break;
      case 4: { // replace a run of digits (or insert) with a number at some edge
        size_t begin = at;
        while (begin > 0 && std::isdigit(static_cast<unsigned char>(text[begin - 1]))) --begin;
        size_t end = at;
        while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
        text.replace(begin, end - begin, rng.pick(edge_numbers()));
        break;
      }
      case 5:   // delete a range
        if (!text.empty()) text.erase(rng.below(text.size()), 1 + rng.below(16));
        break;
      case 6: { // repeat a range (long inputs, deep nesting)
        if (text.empty()) break;
        const size_t begin = rng.below(text.size());
        const std::string piece = text.substr(begin, 1 + rng.below(8));
        std::string run;
        for (size_t n = rng.chance(0.1) ? 2000 : 1 + rng.below(16); n > 0; --n) run += piece;
        text.insert(begin, run);
        break;
      }
      case 7:   // truncate
        text.resize(at);
        break;
      case 8: { // splice: this input's head, another's tail
        const std::string& other = rng.pick(corpus);
        text = text.substr(0, at) + (other.empty() ? "" : other.substr(rng.below(other.size())));
        break;
      }
    }
  }
  return text;
}

/// Input that owes nothing to a valid one: random bytes, random dictionary tokens, or one token
/// repeated thousands of times (deep nesting, long strings).
inline std::string garbage(Rng& rng, const std::vector<std::string>& dictionary) {
  std::string text;
  switch (rng.below(4)) {
    case 0:
      for (size_t n = rng.below(64); n > 0; --n) text += static_cast<char>(rng.below(256));
      break;
    case 1:
      for (size_t n = rng.below(40); n > 0; --n) text += rng.chance(0.8) ? rng.pick(dictionary) : rng.pick(edge_numbers());
      break;
    case 2: {
      const std::string& token = rng.pick(dictionary);
      for (size_t n = 1000 + rng.below(20000); n > 0 && text.size() < 100000; --n) text += token;
      break;
    }
    case 3:
      text = std::string(1 + rng.below(5000), static_cast<char>(0x20 + rng.below(0x5f)));
      break;
  }
  return text;
}

/// The outcome of one fuzzed call: accepted, or refused with a UsageError (its message).
struct Outcome {
  bool accepted = false;
  std::string message;
};

/// What a refusal must look like: a UsageError whose message is one non-empty line that contains
/// one of `names` (the option, file or expression at fault). Anything else thrown (out_of_range,
/// bad_alloc, filesystem_error, ...) fails the test naming its type. Returns false on a failure.
inline bool run_checked(const std::function<void()>& call, const std::vector<std::string>& names, int iteration,
                        const std::string& input, Outcome& outcome) {
  outcome = {};
  try {
    call();
    outcome.accepted = true;
    return true;
  } catch (const UsageError& e) {
    outcome.message = e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "iteration " << iteration << ": " << typeid(e).name() << " escaped (not a UsageError): " << e.what()
                  << "\n  input: \"" << escaped(input) << "\"";
    return false;
  } catch (...) {
    ADD_FAILURE() << "iteration " << iteration << ": a non-std exception escaped\n  input: \"" << escaped(input) << "\"";
    return false;
  }
  const std::string& m = outcome.message;
  bool named = false;
  std::string listed;
  for (const std::string& name : names) {
    named = named || m.find(name) != std::string::npos;
    listed += (listed.empty() ? "" : ", ") + escaped(name);
  }
  if (m.empty() || m.find('\n') != std::string::npos || m.find('\r') != std::string::npos || !named) {
    ADD_FAILURE() << "iteration " << iteration << ": the UsageError is not one non-empty line naming one of {"
                  << listed << "}: \"" << escaped(m, 2000) << "\"\n  input: \""
                  << escaped(input) << "\"";
    return false;
  }
  return true;
}

/// Stops a fuzz loop after a few failures, so one bug does not print thousands of reports.
constexpr int k_max_reported_failures = 5;

}  // namespace cmt::fuzz
