// NVML's energy counter, loaded at run time (cuda/nvml_energy.hpp), without a GPU: a library that is
// missing or is not NVML, an NVML that does not start, a GPU it does not find or whose counter it
// lacks, are each one line and never a crash; with a stand-in NVML (tests/fixtures/nvml), the GPU is
// found by UUID or PCI bus id, the counter is read after its next step, NVML is shut down again, and
// the energy of a loop is worked out from two readings.
#include <gtest/gtest.h>

#include <cstdlib>
#include <dlfcn.h>
#include <string>

#include "cuda/nvml_energy.hpp"

namespace cmt {
namespace {

/// Sets $CMT_FAKE_NVML for one test, unset again after it.
class FakeNvml : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("CMT_FAKE_NVML"); }
  static void mode(const char* m) { setenv("CMT_FAKE_NVML", m, 1); }
  static NvmlEnergy open(const std::string& uuid = "GPU-fake-0000", const std::string& pci = "") {
    return NvmlEnergy(uuid, pci, CMTUNE_FAKE_NVML);
  }
};

TEST(NvmlEnergy, AMissingLibraryIsUnavailableWithTheLoadersReason) {
  const NvmlEnergy energy("GPU-8b2472d4-d3eb-de26-ebbe-95a15406fa93", "0000:3b:00.0", "/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(energy.available());
  EXPECT_EQ(energy.why_unavailable().rfind("NVML cannot be loaded: /nonexistent/libnvidia-ml.so.1", 0), 0u)
      << energy.why_unavailable();
  EXPECT_EQ(energy.why_unavailable().find('\n'), std::string::npos);
  std::string why;
  EXPECT_FALSE(energy.read_millijoules(&why));
  EXPECT_EQ(why, energy.why_unavailable());
  EXPECT_FALSE(energy.read_after_step(10, &why));
  EXPECT_FALSE(energy.power_limit_watts());
}

TEST(NvmlEnergy, TheDriversLibraryIsReadOrSaysWhyNot) {
  // Here (no driver) libnvidia-ml.so.1 is missing; on a GPU machine it loads. Either way the loader
  // answers, and where the library cannot be loaded it says so, naming it.
  void* present = dlopen(k_nvml_library, RTLD_NOW | RTLD_LOCAL);
  const NvmlEnergy energy("GPU-00000000-0000-0000-0000-000000000000");
  if (!present) {
    EXPECT_FALSE(energy.available());
    EXPECT_EQ(energy.why_unavailable().rfind("NVML cannot be loaded: ", 0), 0u) << energy.why_unavailable();
    EXPECT_NE(energy.why_unavailable().find(k_nvml_library), std::string::npos) << energy.why_unavailable();
  } else {
    dlclose(present);
    // No GPU has that UUID: NVML starts (or says why not) and finds none.
    EXPECT_FALSE(energy.available());
    EXPECT_FALSE(energy.why_unavailable().empty());
  }
}

TEST(NvmlEnergy, ALibraryThatIsNotNvmlIsNamed) {
  const NvmlEnergy energy("GPU-fake-0000", "", "libm.so.6");
  EXPECT_FALSE(energy.available());
  EXPECT_EQ(energy.why_unavailable(), "libm.so.6 lacks nvmlInit_v2: not NVML, or an NVML without the total-energy counter");
}

TEST_F(FakeNvml, FindsTheGpuByUuidReadsAfterAStepAndShutsDown) {
  void* library = dlopen(CMTUNE_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);  // held: its sessions count stays readable
  ASSERT_NE(library, nullptr) << dlerror();
  const auto sessions = reinterpret_cast<int (*)()>(dlsym(library, "cmt_fake_nvml_sessions"));
  ASSERT_NE(sessions, nullptr);
  {
    const NvmlEnergy energy = open();
    ASSERT_TRUE(energy.available()) << energy.why_unavailable();
    EXPECT_EQ(energy.why_unavailable(), "");
    EXPECT_EQ(sessions(), 1);
    std::string why;
    const auto first = energy.read_millijoules(&why);
    ASSERT_TRUE(first) << why;
    // The stand-in steps by 250 mJ every 4th read: the reading after the next step is one step on.
    const auto stepped = energy.read_after_step(1000, &why);
    ASSERT_TRUE(stepped) << why;
    EXPECT_EQ(*stepped, *first + 250);
    const auto again = energy.read_after_step(1000, &why);
    ASSERT_TRUE(again) << why;
    EXPECT_EQ(*again, *stepped + 250);
    ASSERT_TRUE(energy.power_limit_watts());
    EXPECT_DOUBLE_EQ(*energy.power_limit_watts(), 700.0);
  }
  EXPECT_EQ(sessions(), 0) << "NvmlEnergy did not call nvmlShutdown";
  dlclose(library);
}

TEST_F(FakeNvml, FallsBackToThePciBusIdAndNamesBothWhenNeitherMatches) {
  const NvmlEnergy by_pci = open("GPU-another-one", "00000000:3b:00.0");
  EXPECT_TRUE(by_pci.available()) << by_pci.why_unavailable();
  const NvmlEnergy none = open("GPU-another-one", "00000000:5e:00.0");
  EXPECT_FALSE(none.available());
  EXPECT_EQ(none.why_unavailable(),
            "NVML finds no GPU with UUID GPU-another-one or PCI bus id 00000000:5e:00.0: Not Found (NVML status 6)");
}

TEST_F(FakeNvml, ACounterTheGpuLacksAndAnNvmlThatDoesNotStartAreReasons) {
  mode("no-energy");
  const NvmlEnergy unsupported = open();
  EXPECT_FALSE(unsupported.available());
  EXPECT_EQ(unsupported.why_unavailable(),
            "the GPU has no total-energy counter (nvmlDeviceGetTotalEnergyConsumption: Not Supported (NVML status 3))");
  mode("init-fails");
  const NvmlEnergy no_driver = open();
  EXPECT_FALSE(no_driver.available());
  EXPECT_EQ(no_driver.why_unavailable(), "NVML does not start: nvmlInit_v2: Driver Not Loaded (NVML status 9)");
}

TEST_F(FakeNvml, AReadThatFailsLaterSaysWhy) {
  mode("lost-later");
  const NvmlEnergy energy = open();
  ASSERT_TRUE(energy.available()) << energy.why_unavailable();
  std::string why;
  EXPECT_FALSE(energy.read_millijoules(&why));
  EXPECT_EQ(why, "nvmlDeviceGetTotalEnergyConsumption: GPU is lost (NVML status 15)");
  why.clear();
  EXPECT_FALSE(energy.read_after_step(10, &why));
  EXPECT_FALSE(why.empty());
}

TEST(EnergyBetween, PerRunAndPowerFromTwoReadings) {
  std::string why;
  const auto use = energy_between(1'000'000, 1'650'000, 260, 1.3, &why);
  ASSERT_TRUE(use) << why;
  EXPECT_EQ(use->runs, 260);
  EXPECT_DOUBLE_EQ(use->joules, 650.0);
  EXPECT_DOUBLE_EQ(use->joules_per_run(), 2.5);
  EXPECT_DOUBLE_EQ(use->watts(), 500.0);
}

TEST(EnergyBetween, ReadingsThatCannotBeOneLoopAreRefused) {
  std::string why;
  EXPECT_FALSE(energy_between(2000, 1000, 10, 1.0, &why));
  EXPECT_EQ(why, "the energy counter went back from 2000 mJ to 1000 mJ (was the driver reloaded?)");
  EXPECT_FALSE(energy_between(1000, 2000, 0, 1.0, &why));
  EXPECT_EQ(why, "no runs between the readings");
  EXPECT_FALSE(energy_between(1000, 2000, 10, 0.0, &why));
  EXPECT_EQ(why, "no time between the readings");
}

}  // namespace
}  // namespace cmt
