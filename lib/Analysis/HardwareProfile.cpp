//===- HardwareProfile.cpp - accelerator data sheets from JSON ------------===//
//
// A profile is a flat JSON object. Every problem in one file is reported in
// one run, each at the line of its key, so that a hand-edited profile is fixed
// in one pass.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/HardwareProfile.h"
#include "parc/Support/JSONSource.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::parc;
namespace json = llvm::json;

std::string mlir::parc::getDefaultDataDir(StringRef kind, const char *argv0) {
  // On Linux getMainExecutable reads /proc/self/exe and ignores both
  // arguments; elsewhere it needs argv0 and an address inside the binary.
  static int anchor;
  std::string executable =
      llvm::sys::fs::getMainExecutable(argv0 ? argv0 : "", &anchor);
  llvm::SmallString<256> dir;
  if (!executable.empty())
    dir = llvm::sys::path::parent_path(executable);
  else if (argv0 && *argv0) {
    dir = llvm::sys::path::parent_path(argv0);
    llvm::sys::fs::make_absolute(dir);
  } else {
    // No way to find the tool: look in the working directory, as a tool run
    // from the build directory would.
    llvm::sys::fs::current_path(dir);
    llvm::sys::path::append(dir, "bin");
  }
  llvm::sys::path::append(dir, "..", "share", "parc", kind);
  llvm::sys::path::remove_dots(dir, /*remove_dot_dot=*/true);
  return std::string(dir);
}

std::string mlir::parc::getDefaultHardwareDir(const char *argv0) {
  return getDefaultDataDir("hardware", argv0);
}

namespace {

/// The profile names (file stems of `*.json`) found in `dir`, sorted.
std::vector<std::string> listProfiles(StringRef dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".json")
      names.push_back(llvm::sys::path::stem(it->path()).str());
  llvm::sort(names);
  return names;
}

/// Reads one profile file, recording every problem before giving up.
class ProfileReader {
public:
  ProfileReader(MLIRContext *context, StringRef filename, StringRef text)
      : source(context, filename, text) {}

  FailureOr<HardwareProfile> read(StringRef expectedName);

private:
  Location fileLoc() const { return source.fileLoc(); }
  /// Profiles are flat: the first `"key":` is the key.
  Location locate(StringRef key) const { return source.locate(key); }
  InFlightDiagnostic error(StringRef key) {
    failed = true;
    return emitError(key.empty() ? fileLoc() : locate(key));
  }

  const json::Value *require(StringRef key);
  void readInteger(StringRef key, int64_t &out);
  void readNumber(StringRef key, double &out);
  void readString(StringRef key, std::string &out);
  void readStrings(StringRef key, std::vector<std::string> &out);
  void readChoice(StringRef key, StringRef fused, bool &eager);

  JSONSource source;
  const json::Object *object = nullptr;
  bool failed = false;
};

const json::Value *ProfileReader::require(StringRef key) {
  const json::Value *value = object->get(key);
  if (!value)
    error("") << "hardware profile is missing key '" << key << "'";
  return value;
}

void ProfileReader::readInteger(StringRef key, int64_t &out) {
  if (const json::Value *value = require(key)) {
    if (std::optional<int64_t> integer = value->getAsInteger())
      out = *integer;
    else
      error(key) << "key '" << key << "' must be an integer";
  }
}

void ProfileReader::readNumber(StringRef key, double &out) {
  if (const json::Value *value = require(key)) {
    if (std::optional<double> number = value->getAsNumber())
      out = *number;
    else
      error(key) << "key '" << key << "' must be a number";
  }
}

void ProfileReader::readString(StringRef key, std::string &out) {
  if (const json::Value *value = require(key)) {
    if (std::optional<StringRef> string = value->getAsString())
      out = string->str();
    else
      error(key) << "key '" << key << "' must be a string";
  }
}

void ProfileReader::readStrings(StringRef key, std::vector<std::string> &out) {
  const json::Value *value = require(key);
  if (!value)
    return;
  const json::Array *array = value->getAsArray();
  bool allStrings = array != nullptr;
  if (array)
    for (const json::Value &entry : *array) {
      std::optional<StringRef> string = entry.getAsString();
      allStrings &= string.has_value();
      if (string)
        out.push_back(string->str());
    }
  if (!allStrings)
    error(key) << "key '" << key << "' must be a list of strings";
}

/// An optional kernel key: absent or `fused` keeps the default (fused GPU
/// kernels), "eager" selects the composite LibTorch path.
void ProfileReader::readChoice(StringRef key, StringRef fused, bool &eager) {
  const json::Value *value = object->get(key);
  if (!value)
    return;
  std::optional<StringRef> choice = value->getAsString();
  if (choice && (*choice == fused || *choice == "eager")) {
    eager = *choice == "eager";
    return;
  }
  error(key) << "key '" << key << "' must be \"" << fused << "\" or \"eager\"";
}

FailureOr<HardwareProfile> ProfileReader::read(StringRef expectedName) {
  FailureOr<json::Value> parsed = source.parse();
  if (mlir::failed(parsed))
    return failure();
  object = parsed->getAsObject();
  if (!object) {
    emitError(fileLoc()) << "hardware profile must be a JSON object";
    return failure();
  }

  static constexpr llvm::StringLiteral kKnownKeys[] = {
      "name",
      "description",
      "memory_bytes",
      "bf16_flops",
      "memory_bandwidth_bytes_per_s",
      "intra_node_bandwidth_bytes_per_s",
      "inter_node_bandwidth_bytes_per_s",
      "gpus_per_node",
      "fixed_overhead_bytes",
      "compute_efficiency",
      "attention_kernel",
      "norm_kernel",
      "loss_kernel",
      "allocator",
      "collectives",
      "sources",
      "notes"};
  // Sorted so that the report does not depend on the hash order of keys.
  std::vector<std::string> keys;
  for (const auto &entry : *object)
    keys.push_back(entry.first.str());
  llvm::sort(keys);
  for (const std::string &key : keys)
    if (!llvm::is_contained(kKnownKeys, key))
      error(key) << "unknown key '" << key << "' in hardware profile (known: "
                 << llvm::join(ArrayRef(kKnownKeys), ", ") << ")";

  HardwareProfile profile;
  readString("name", profile.name);
  readString("description", profile.description);
  readInteger("memory_bytes", profile.memoryBytes);
  readNumber("bf16_flops", profile.bf16Flops);
  readNumber("memory_bandwidth_bytes_per_s", profile.memoryBandwidth);
  readNumber("intra_node_bandwidth_bytes_per_s", profile.intraNodeBandwidth);
  readNumber("inter_node_bandwidth_bytes_per_s", profile.interNodeBandwidth);
  readInteger("gpus_per_node", profile.gpusPerNode);
  readInteger("fixed_overhead_bytes", profile.fixedOverheadBytes);
  readNumber("compute_efficiency", profile.computeEfficiency);
  readStrings("sources", profile.sources);
  readChoice("attention_kernel", "flash", profile.kernels.eagerAttention);
  readChoice("norm_kernel", "fused", profile.kernels.eagerNorm);
  readChoice("loss_kernel", "fused", profile.kernels.eagerLoss);
  if (const json::Value *value = object->get("allocator")) {
    std::optional<StringRef> name = value->getAsString();
    std::optional<AllocatorKind> kind =
        name ? parseAllocatorName(name->str()) : std::nullopt;
    if (kind)
      profile.allocator = *kind;
    else
      error("allocator") << "key 'allocator' must be \"caching\", "
                            "\"expandable-segments\" or \"direct\"";
  }
  if (const json::Value *value = object->get("collectives")) {
    std::optional<StringRef> name = value->getAsString();
    if (name && (*name == "nccl" || *name == "gloo"))
      profile.glooCollectives = *name == "gloo";
    else
      error("collectives") << "key 'collectives' must be \"nccl\" or "
                              "\"gloo\"";
  }
  // Notes are for the reader of the file only.
  if (const json::Value *notes = object->get("notes"))
    if (!notes->getAsArray() && !notes->getAsString())
      error("notes") << "key 'notes' must be a string or a list of strings";
  if (failed)
    return failure();

  // Values that would make every estimate meaningless.
  if (profile.name != expectedName)
    error("name") << "profile name '" << profile.name
                  << "' does not match its file name '" << expectedName
                  << ".json'";
  auto requirePositive = [&](StringRef key, double value) {
    if (!(value > 0))
      error(key) << "key '" << key << "' must be positive, got " << value;
  };
  requirePositive("memory_bytes", profile.memoryBytes);
  requirePositive("bf16_flops", profile.bf16Flops);
  requirePositive("memory_bandwidth_bytes_per_s", profile.memoryBandwidth);
  requirePositive("intra_node_bandwidth_bytes_per_s",
                  profile.intraNodeBandwidth);
  requirePositive("inter_node_bandwidth_bytes_per_s",
                  profile.interNodeBandwidth);
  requirePositive("gpus_per_node", profile.gpusPerNode);
  if (!(profile.computeEfficiency > 0 && profile.computeEfficiency <= 1))
    error("compute_efficiency")
        << "key 'compute_efficiency' must be in (0, 1], got "
        << profile.computeEfficiency;
  if (profile.fixedOverheadBytes < 0 ||
      profile.fixedOverheadBytes >= profile.memoryBytes)
    error("fixed_overhead_bytes")
        << "key 'fixed_overhead_bytes' must be at least 0 and below "
           "memory_bytes ("
        << profile.memoryBytes << "), got " << profile.fixedOverheadBytes;
  if (profile.sources.empty())
    error("sources") << "key 'sources' must name where the numbers come from";
  if (failed)
    return failure();
  return profile;
}

} // namespace

FailureOr<HardwareProfile> mlir::parc::loadHardwareProfile(StringRef name,
                                                           StringRef dirOrEmpty,
                                                           Location loc) {
  std::string dir =
      dirOrEmpty.empty() ? getDefaultHardwareDir() : dirOrEmpty.str();
  std::vector<std::string> known = listProfiles(dir);
  // A name is a file stem, never a path: "../x" must not reach other files.
  bool isPlainName = !name.empty() && !name.contains('/') &&
                     !name.contains('\\') && name != "." && name != "..";
  if (!isPlainName || !llvm::is_contained(known, name)) {
    InFlightDiagnostic diag = emitError(loc)
                              << "unknown hardware profile '" << name << "' ";
    if (!llvm::sys::fs::is_directory(dir))
      return diag << "(profile directory '" << dir << "' does not exist)";
    if (known.empty())
      return diag << "(no profiles in '" << dir << "')";
    return diag << "(profiles in '" << dir << "': " << llvm::join(known, ", ")
                << ")";
  }

  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name + ".json");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return emitError(loc) << "cannot read hardware profile '" << path
                          << "': " << buffer.getError().message();
  ProfileReader reader(loc.getContext(), path, (*buffer)->getBuffer());
  return reader.read(name);
}

KernelProfile mlir::parc::chooseKernels(KernelProfile kernels,
                                        KernelChoice attention,
                                        KernelChoice norm, KernelChoice loss) {
  auto apply = [](KernelChoice choice, bool &eager) {
    if (choice != KernelChoice::Profile)
      eager = choice == KernelChoice::Eager;
  };
  apply(attention, kernels.eagerAttention);
  apply(norm, kernels.eagerNorm);
  apply(loss, kernels.eagerLoss);
  return kernels;
}
