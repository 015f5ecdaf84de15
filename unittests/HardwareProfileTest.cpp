//===- HardwareProfileTest.cpp - loading hardware/*.json ------------------===//

#include "parc/Analysis/HardwareProfile.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::parc;

namespace {

/// Records every diagnostic as "file:line:col: message" (or the message
/// alone when the location is not a file position).
class DiagnosticLog {
public:
  explicit DiagnosticLog(MLIRContext &context)
      : handler(&context, [this](Diagnostic &diag) {
          std::string text;
          if (auto file = dyn_cast<FileLineColLoc>(diag.getLocation()))
            text = (llvm::sys::path::filename(file.getFilename().getValue()) +
                    ":" + llvm::Twine(file.getLine()) + ":" +
                    llvm::Twine(file.getColumn()) + ": ")
                       .str();
          messages.push_back(text + diag.str());
        }) {}

  std::string joined() const {
    std::string all;
    for (const std::string &message : messages)
      all += message + "\n";
    return all;
  }

  std::vector<std::string> messages;

private:
  ScopedDiagnosticHandler handler;
};

/// A temporary profile directory, removed at the end of the test.
class ProfileDir {
public:
  ProfileDir() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("parc-hardware", path));
  }
  ~ProfileDir() { llvm::sys::fs::remove_directories(path); }

  void write(llvm::StringRef name, llvm::StringRef text) {
    llvm::SmallString<256> file(path);
    llvm::sys::path::append(file, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    ASSERT_FALSE(ec);
    os << text;
  }

  llvm::SmallString<256> path;
};

constexpr const char *kValidProfile = R"json({
  "name": "test-gpu",
  "description": "A test GPU",
  "memory_bytes": 1000,
  "bf16_flops": 1e12,
  "memory_bandwidth_bytes_per_s": 1e9,
  "intra_node_bandwidth_bytes_per_s": 1e9,
  "inter_node_bandwidth_bytes_per_s": 1e8,
  "gpus_per_node": 4,
  "fixed_overhead_bytes": 10,
  "compute_efficiency": 0.5,
  "sources": ["made up for the test"]
}
)json";

TEST(HardwareProfileTest, LoadsEveryShippedProfile) {
  MLIRContext context;
  DiagnosticLog log(context);
  std::string dir = getDefaultHardwareDir();
  for (llvm::StringRef name :
       {"h100-80gb", "h200-141gb", "a100-80gb", "b200-192gb", "cpu"}) {
    FailureOr<HardwareProfile> profile =
        loadHardwareProfile(name, dir, UnknownLoc::get(&context));
    ASSERT_TRUE(succeeded(profile)) << name.str() << "\n" << log.joined();
    EXPECT_EQ(profile->name, name);
    EXPECT_FALSE(profile->description.empty());
    EXPECT_GT(profile->memoryBytes, profile->fixedOverheadBytes);
    EXPECT_GT(profile->bf16Flops, 0);
    EXPECT_GT(profile->memoryBandwidth, 0);
    EXPECT_GT(profile->intraNodeBandwidth, profile->interNodeBandwidth);
    EXPECT_FALSE(profile->sources.empty());
  }
}

TEST(HardwareProfileTest, ShippedNumbersAreTheDocumentedOnes) {
  MLIRContext context;
  std::string dir = getDefaultHardwareDir();
  Location loc = UnknownLoc::get(&context);
  FailureOr<HardwareProfile> h100 = loadHardwareProfile("h100-80gb", dir, loc);
  ASSERT_TRUE(succeeded(h100));
  // 79.11 GiB, the total the CUDA runtime reports, rounded down to the MiB.
  EXPECT_EQ(h100->memoryBytes, 81008ll << 20);
  // CUDA context and NCCL buffers; the caching allocator is modelled.
  EXPECT_EQ(h100->fixedOverheadBytes, 3ll << 29);
  EXPECT_EQ(h100->allocator, AllocatorKind::Caching);
  EXPECT_FALSE(h100->glooCollectives);
  EXPECT_DOUBLE_EQ(h100->bf16Flops, 989.4e12);
  EXPECT_EQ(h100->gpusPerNode, 8);

  FailureOr<HardwareProfile> cpu = loadHardwareProfile("cpu", dir, loc);
  ASSERT_TRUE(succeeded(cpu));
  EXPECT_EQ(cpu->memoryBytes, 24ll << 30);
  EXPECT_EQ(cpu->fixedOverheadBytes, 0);
  EXPECT_EQ(cpu->allocator, AllocatorKind::Direct);
  // parc-run's CPU ranks: Gloo's reduce-scatter is an all-to-all.
  EXPECT_TRUE(cpu->glooCollectives);
  EXPECT_EQ(cpu->gpusPerNode, 2);
}

TEST(HardwareProfileTest, DefaultDirIsNextToTheTool) {
  std::string dir = getDefaultHardwareDir();
  EXPECT_TRUE(llvm::StringRef(dir).ends_with("share/parc/hardware")) << dir;
  EXPECT_TRUE(llvm::sys::path::is_absolute(dir)) << dir;
}

TEST(HardwareProfileTest, UnknownNameListsTheKnownProfiles) {
  MLIRContext context;
  DiagnosticLog log(context);
  ProfileDir dir;
  dir.write("test-gpu.json", kValidProfile);
  dir.write("other-gpu.json", kValidProfile);
  dir.write("README.md", "not a profile");
  EXPECT_TRUE(failed(
      loadHardwareProfile("h100-40gb", dir.path, UnknownLoc::get(&context))));
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_NE(log.messages[0].find("unknown hardware profile 'h100-40gb'"),
            std::string::npos);
  EXPECT_NE(log.messages[0].find(": other-gpu, test-gpu)"), std::string::npos)
      << log.messages[0];
}

TEST(HardwareProfileTest, ANameIsNeverAPath) {
  MLIRContext context;
  DiagnosticLog log(context);
  ProfileDir dir;
  dir.write("test-gpu.json", kValidProfile);
  llvm::SmallString<256> traversal("../");
  traversal += llvm::sys::path::filename(dir.path);
  traversal += "/test-gpu";
  EXPECT_TRUE(failed(
      loadHardwareProfile(traversal, dir.path, UnknownLoc::get(&context))));
  EXPECT_NE(log.joined().find("unknown hardware profile"), std::string::npos);
}

TEST(HardwareProfileTest, MissingDirectoryIsSaid) {
  MLIRContext context;
  DiagnosticLog log(context);
  EXPECT_TRUE(failed(loadHardwareProfile("h100-80gb", "/nonexistent/parc",
                                         UnknownLoc::get(&context))));
  EXPECT_NE(log.joined().find("'/nonexistent/parc' does not exist"),
            std::string::npos)
      << log.joined();
}

TEST(HardwareProfileTest, ReadsAValidProfile) {
  MLIRContext context;
  ProfileDir dir;
  dir.write("test-gpu.json", kValidProfile);
  FailureOr<HardwareProfile> profile =
      loadHardwareProfile("test-gpu", dir.path, UnknownLoc::get(&context));
  ASSERT_TRUE(succeeded(profile));
  EXPECT_EQ(profile->memoryBytes, 1000);
  EXPECT_EQ(profile->fixedOverheadBytes, 10);
  EXPECT_DOUBLE_EQ(profile->computeEfficiency, 0.5);
  EXPECT_EQ(profile->gpusPerNode, 4);
  EXPECT_DOUBLE_EQ(profile->interNodeBandwidth, 1e8);
  EXPECT_EQ(profile->sources, std::vector<std::string>{"made up for the test"});
}

TEST(HardwareProfileTest, MalformedJsonReportsTheLine) {
  MLIRContext context;
  DiagnosticLog log(context);
  ProfileDir dir;
  dir.write("broken.json",
            "{\n  \"name\": \"broken\",\n  \"memory_bytes\" 5\n}\n");
  EXPECT_TRUE(failed(
      loadHardwareProfile("broken", dir.path, UnknownLoc::get(&context))));
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_EQ(log.messages[0].rfind("broken.json:3:", 0), 0u) << log.messages[0];
  EXPECT_NE(log.messages[0].find("malformed JSON"), std::string::npos);
}

TEST(HardwareProfileTest, MissingAndWrongTypedKeysNameFileAndKey) {
  MLIRContext context;
  DiagnosticLog log(context);
  ProfileDir dir;
  std::string text = kValidProfile;
  // Drop gpus_per_node, make memory_bytes a string, add a typo'd key.
  text.replace(text.find("  \"gpus_per_node\": 4,\n"),
               strlen("  \"gpus_per_node\": 4,\n"),
               "  \"gpus_pre_node\": 4,\n");
  text.replace(text.find("1000"), 4, "\"80GB\"");
  dir.write("test-gpu.json", text);
  EXPECT_TRUE(failed(
      loadHardwareProfile("test-gpu", dir.path, UnknownLoc::get(&context))));
  std::string all = log.joined();
  EXPECT_NE(all.find("test-gpu.json:9:3: unknown key 'gpus_pre_node'"),
            std::string::npos)
      << all;
  EXPECT_NE(
      all.find("test-gpu.json:4:3: key 'memory_bytes' must be an integer"),
      std::string::npos)
      << all;
  EXPECT_NE(all.find("test-gpu.json:1:1: hardware profile is missing key "
                     "'gpus_per_node'"),
            std::string::npos)
      << all;
}

TEST(HardwareProfileTest, ImpossibleValuesAreRefused) {
  MLIRContext context;
  DiagnosticLog log(context);
  ProfileDir dir;
  std::string text = kValidProfile;
  text.replace(text.find("\"fixed_overhead_bytes\": 10"),
               strlen("\"fixed_overhead_bytes\": 10"),
               "\"fixed_overhead_bytes\": 2000");
  text.replace(text.find("\"name\": \"test-gpu\""),
               strlen("\"name\": \"test-gpu\""), "\"name\": \"other\"");
  text.replace(text.find("\"compute_efficiency\": 0.5"),
               strlen("\"compute_efficiency\": 0.5"),
               "\"compute_efficiency\": 1.5");
  dir.write("test-gpu.json", text);
  EXPECT_TRUE(failed(
      loadHardwareProfile("test-gpu", dir.path, UnknownLoc::get(&context))));
  std::string all = log.joined();
  EXPECT_NE(all.find("profile name 'other' does not match its file name"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("'fixed_overhead_bytes' must be at least 0 and below "
                     "memory_bytes (1000), got 2000"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("key 'compute_efficiency' must be in (0, 1], got 1.5"),
            std::string::npos)
      << all;
}

/// Loads a valid profile with `entry` added; returns the diagnostics, which
/// must refuse it.
std::string refusalOf(const char *entry) {
  MLIRContext context;
  DiagnosticLog log(context);
  ProfileDir dir;
  std::string text = kValidProfile;
  const char *anchor = "\"fixed_overhead_bytes\": 10";
  text.replace(text.find(anchor), strlen(anchor),
               std::string(anchor) + ",\n  " + entry);
  dir.write("test-gpu.json", text);
  EXPECT_TRUE(failed(
      loadHardwareProfile("test-gpu", dir.path, UnknownLoc::get(&context))));
  return log.joined();
}

TEST(HardwareProfileTest, AnUnknownAllocatorIsRefused) {
  std::string all = refusalOf("\"allocator\": \"cuda\"");
  EXPECT_NE(all.find("key 'allocator' must be \"caching\", "
                     "\"expandable-segments\" or \"direct\""),
            std::string::npos)
      << all;
}

TEST(HardwareProfileTest, AnUnknownCollectiveBackendIsRefused) {
  std::string all = refusalOf("\"collectives\": \"mpi\"");
  EXPECT_NE(all.find("key 'collectives' must be \"nccl\" or \"gloo\""),
            std::string::npos)
      << all;
}

} // namespace
