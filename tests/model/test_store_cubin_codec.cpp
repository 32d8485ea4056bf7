// The compile cache's cubins as stored: compressed on write and byte-exact on read, rows an earlier
// cm-tune wrote uncompressed still read, and a damaged frame a one-line error (find_binary) or a
// failed check (db check), never a crash.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "store/cubin_codec.hpp"
#include "store/maintenance.hpp"
#include "store/store.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;

namespace cmt {
namespace {

/// A stand-in for a cubin: an ELF header, then 16-byte "instructions" drawn from a small set with
/// random operands, so it compresses about as well as machine code does; every byte value occurs.
std::vector<char> fake_cubin(size_t bytes, unsigned seed = 7) {
  std::mt19937 random(seed);
  std::vector<char> out = {'\x7f', 'E', 'L', 'F', '\x02', '\x01', '\x01', '\x33'};
  while (out.size() < bytes) {
    const unsigned opcode = random() % 24;
    for (int i = 0; i < 12; ++i) out.push_back(static_cast<char>((opcode * 37 + i * 11) & 0xff));
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(random() & 0xff));
  }
  out.resize(bytes);
  return out;
}

BinaryRecord make_binary(const std::string& key, std::vector<char> cubin) {
  BinaryRecord b;
  b.key = key;
  b.template_name = "warptile";
  b.params = "BM=128,BN=128";
  b.arch = "sm_90";
  b.nvrtc_version = "13.0";
  b.options = "--gpu-architecture=sm_90";
  b.source_hash = "abc";
  b.ok = true;
  b.log = "ptxas info: Used 128 registers";
  b.cubin = std::move(cubin);
  b.lowered_name = "_Z8warptileILi128EEvv";
  return b;
}

std::vector<char> stored_blob(Store& store, const std::string& key) {
  Statement s = store.db().prepare("SELECT cubin FROM binaries WHERE key = ?");
  s.bind(1, key);
  EXPECT_TRUE(s.step());
  return s.column_blob(0);
}

void set_stored_blob(Store& store, const std::string& key, const std::vector<char>& blob) {
  store.db().prepare("UPDATE binaries SET cubin = ? WHERE key = ?").bind(1, blob).bind(2, key).run();
}

/// The "cubins" check of db check.
CheckResult cubins_check(Store& store) {
  for (const auto& c : check_database(store))
    if (c.name == "cubins") return c;
  throw std::runtime_error("no check cubins");
}

TEST(CubinStore, CubinRoundTripsByteExactlyAndIsStoredCompressed) {
  test::TempDir dir;
  const std::vector<char> cubin = fake_cubin(300 * 1024);
  {
    Store store(dir / "t.db");
    store.put_binary(make_binary("k", cubin));
  }
  Store store(dir / "t.db", OpenMode::read);
  const auto found = store.find_binary("k");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->cubin, cubin);

  const std::vector<char> stored = stored_blob(store, "k");
  EXPECT_TRUE(is_packed_cubin({stored.data(), stored.size()}));
  EXPECT_LT(stored.size(), cubin.size() / 2) << "the cubin was not compressed";
  EXPECT_EQ(unpacked_cubin_size({stored.data(), 18}, static_cast<int64_t>(stored.size())),
            static_cast<int64_t>(cubin.size()));

  const DatabaseInfo info = database_info(store);
  EXPECT_EQ(info.cubins, 1);
  EXPECT_EQ(info.cubin_bytes, static_cast<int64_t>(stored.size()));
  EXPECT_EQ(info.cubin_raw_bytes, static_cast<int64_t>(cubin.size()));
  const CheckResult check = cubins_check(store);
  EXPECT_TRUE(check.ok) << check.detail;
  EXPECT_EQ(check.detail, "1 cubin read back (1 compressed, 0 stored uncompressed by an earlier cm-tune)");
}

TEST(CubinStore, IncompressibleAndTinyCubinsRoundTrip) {
  test::TempDir dir;
  Store store(dir / "t.db");
  std::mt19937 random(3);
  std::vector<char> noise(70'000);
  for (char& c : noise) c = static_cast<char>(random() & 0xff);
  const std::vector<std::vector<char>> cubins = {noise, {'\x7f'}, {'\x28', '\xb5', '\x2f'}, fake_cubin(5)};
  for (size_t i = 0; i < cubins.size(); ++i) store.put_binary(make_binary(fmt::format("k{}", i), cubins[i]));
  for (size_t i = 0; i < cubins.size(); ++i) {
    const auto found = store.find_binary(fmt::format("k{}", i));
    ASSERT_TRUE(found) << i;
    EXPECT_EQ(found->cubin, cubins[i]) << i;
  }
  // A compile failure stores no cubin, compressed or not.
  BinaryRecord failed = make_binary("failed", {});
  failed.ok = false;
  store.put_binary(failed);
  EXPECT_TRUE(stored_blob(store, "failed").empty());
  EXPECT_TRUE(store.find_binary("failed")->cubin.empty());
}

TEST(CubinStore, CubinStoredUncompressedByAnEarlierVersionIsStillRead) {
  test::TempDir dir;
  const std::vector<char> old_cubin = fake_cubin(40'000, 1);
  const std::vector<char> new_cubin = fake_cubin(40'000, 2);
  {
    Store store(dir / "t.db");
    store.put_binary(make_binary("old", {'x'}));
    set_stored_blob(store, "old", old_cubin);   // as cm-tune stored every cubin before it compressed
    store.put_binary(make_binary("new", new_cubin));
  }
  Store store(dir / "t.db", OpenMode::read);
  EXPECT_EQ(stored_blob(store, "old"), old_cubin);
  ASSERT_TRUE(store.find_binary("old"));
  EXPECT_EQ(store.find_binary("old")->cubin, old_cubin);
  EXPECT_EQ(store.find_binary("new")->cubin, new_cubin);

  const DatabaseInfo info = database_info(store);
  EXPECT_EQ(info.cubins, 2);
  EXPECT_EQ(info.cubin_raw_bytes, 80'000);
  EXPECT_EQ(info.cubin_bytes, static_cast<int64_t>(old_cubin.size() + stored_blob(store, "new").size()));
  const CheckResult check = cubins_check(store);
  EXPECT_TRUE(check.ok) << check.detail;
  EXPECT_EQ(check.detail, "2 cubins read back (1 compressed, 1 stored uncompressed by an earlier cm-tune)");
}

TEST(CubinStore, DamagedCompressedCubinIsAOneLineErrorAndFailsTheCheck) {
  test::TempDir dir;
  Store store(dir / "t.db");
  const std::vector<char> cubin = fake_cubin(100'000);
  store.put_binary(make_binary("k", cubin));
  store.put_binary(make_binary("sound", cubin));
  const std::vector<char> stored = stored_blob(store, "k");

  std::vector<char> flipped = stored;
  flipped[flipped.size() / 2] ^= 0x5a;   // caught by the frame's checksum if not by its blocks
  std::vector<char> truncated(stored.begin(), stored.begin() + static_cast<long>(stored.size() / 2));
  std::vector<char> trailing = stored;
  trailing.insert(trailing.end(), {'j', 'u', 'n', 'k'});
  std::vector<char> bad_header(stored.begin(), stored.begin() + 5);   // the magic and a frame header cut short
  std::vector<char> huge = stored;   // a size field claiming 4 GiB: refused before anything is allocated
  for (size_t i = 5; i < 10; ++i) huge[i] = '\xff';
  for (const auto& [what, blob] : std::vector<std::pair<std::string, std::vector<char>>>{
           {"flipped", flipped}, {"truncated", truncated}, {"trailing", trailing}, {"bad header", bad_header},
           {"huge", huge}}) {
    SCOPED_TRACE(what);
    set_stored_blob(store, "k", blob);
    EXPECT_THROW(unpack_cubin(blob), CubinCodecError);
    const std::string message = test::usage_error([&] { store.find_binary("k"); });
    EXPECT_EQ(message.rfind(fmt::format("database {}: the cubin of warptile[BM=128,BN=128] (binary k) is damaged: ",
                                        (dir / "t.db").string()),
                            0),
              0u)
        << message;
    EXPECT_NE(message.find("; cm-tune db check lists every damaged cubin"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;

    const CheckResult check = cubins_check(store);
    EXPECT_FALSE(check.ok);
    EXPECT_EQ(check.detail.rfind("the cubin of warptile[BM=128,BN=128] (binary k) is damaged: ", 0), 0u) << check.detail;
    EXPECT_EQ(store.find_binary("sound")->cubin, cubin) << "one damaged row spoils no other";
    database_info(store);   // sizes the damaged row without throwing
  }
}

}  // namespace
}  // namespace cmt
