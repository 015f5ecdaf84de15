//===- HardwareProfile.h - accelerator data sheets --------------*- C++ -*-===//
//
// Hardware profiles are data files (hardware/NAME.json), one per accelerator,
// with the numbers the memory and cost models need and the sources they come
// from. The build copies them next to the tools (build/share/parc/hardware).
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_HARDWAREPROFILE_H
#define PARC_ANALYSIS_HARDWAREPROFILE_H

#include "Parc/IR/ParcInterfaces.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "parc/Analysis/CachingAllocator.h"

#include <string>
#include <vector>

namespace mlir::parc {

/// The kernels the training backend runs are KernelProfile
/// (Parc/IR/ParcInterfaces.h): the ops' autograd interface says what each
/// saves under them.
struct HardwareProfile {
  std::string name;              // "h100-80gb"
  std::string description;       // "NVIDIA H100 SXM5 80 GB"
  int64_t memoryBytes = 0;       // device memory capacity
  double bf16Flops = 0;          // dense bf16 peak, FLOP/s
  double memoryBandwidth = 0;    // bytes/s
  double intraNodeBandwidth = 0; // bytes/s per GPU (NVLink)
  double interNodeBandwidth = 0; // bytes/s per GPU (network)
  int64_t gpusPerNode = 8;
  /// Memory outside the tensor allocator: CUDA context, NCCL communication
  /// buffers, library workspaces.
  int64_t fixedOverheadBytes = 0;
  /// How tensors get device memory: the CUDA caching allocator on GPUs (what
  /// a run's reserved memory measures), one allocation per tensor on CPUs.
  AllocatorKind allocator = AllocatorKind::Caching;
  /// The ranks talk over Gloo (LibTorch 1.13's has no reduce_scatter): a
  /// reduce-scatter is an all-to-all into a receive buffer of its input's
  /// size and a sum of the slices, both made while the input lives.
  bool glooCollectives = false;
  /// The fraction of `bf16Flops` training compute achieves on this part,
  /// calibrated from published throughput (each profile names its source).
  double computeEfficiency = 0;
  KernelProfile kernels;
  std::vector<std::string> sources;
};

/// A kernel a recipe (or a pass option) picks for the ops whose saved
/// tensors depend on the implementation, over the hardware profile's: the
/// framework, not the device, decides whether the loss is fused or
/// `cross_entropy(logits.float())`.
enum class KernelChoice { Profile, Fused, Eager };

/// `kernels` with each choice that is not Profile applied: attention
/// (fused: flash / SDPA), norms and the loss.
KernelProfile chooseKernels(KernelProfile kernels, KernelChoice attention,
                            KernelChoice norm, KernelChoice loss);

/// The directory of the data of `kind` shipped with parc ("hardware",
/// "models"), next to the running tool (`<bin>/../share/parc/<kind>`);
/// `argv0` locates the tool.
std::string getDefaultDataDir(StringRef kind, const char *argv0 = nullptr);

/// The directory of the profiles shipped with parc, next to the running tool
/// (`<bin>/../share/parc/hardware`); `argv0` locates the tool.
std::string getDefaultHardwareDir(const char *argv0 = nullptr);

/// Loads `dir/name.json` (an empty `dir`: getDefaultHardwareDir()); an
/// unknown name is an error that lists the profiles
/// found in `dir`, a malformed file one that names the file, line and key.
FailureOr<HardwareProfile> loadHardwareProfile(StringRef name, StringRef dir,
                                               Location loc);

} // namespace mlir::parc

#endif // PARC_ANALYSIS_HARDWAREPROFILE_H
