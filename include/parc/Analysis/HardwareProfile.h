//===- HardwareProfile.h - accelerator data sheets --------------*- C++ -*-===//
//
// Hardware profiles are data files (hardware/NAME.json), one per accelerator,
// with the numbers the memory and cost models need and the sources they come
// from. The build copies them next to the tools (build/share/parc/hardware).
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_HARDWAREPROFILE_H
#define PARC_ANALYSIS_HARDWAREPROFILE_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

#include <string>
#include <vector>

namespace mlir::parc {

/// The kernels the training backend runs for the ops whose autograd saves
/// depend on the implementation. The memory model charges each op's saved
/// tensors by these; the defaults are the fused GPU kernels.
struct KernelProfile {
  /// `parc.attention`: flash-style (keeps q, k, v, the output and an fp32
  /// logsumexp) or eager (matmul, softmax, matmul: keeps the b x H x s x s
  /// probabilities, K and V expanded to every query head, a contiguous copy
  /// of q, the mask). Key `attention_kernel`: "flash" | "eager".
  bool eagerAttention = false;
  /// `parc.rms_norm`: fused (keeps its input and an fp32 rstd) or eager
  /// composite (x.float(), x^2 for the mean, x * rstd for the weight, rstd).
  /// Key `norm_kernel`: "fused" | "eager".
  bool eagerNorm = false;
  /// The logit softcap and cross-entropy: fused (the loss path as a fused
  /// kernel sees it) or eager (tanh(x / c) * c keeping the tanh, and
  /// log_softmax + nll_loss whose backward holds two fp32 logit gradients).
  /// Key `loss_kernel`: "fused" | "eager".
  bool eagerLoss = false;
};

struct HardwareProfile {
  std::string name;        // "h100-80gb"
  std::string description; // "NVIDIA H100 SXM5 80 GB"
  int64_t memoryBytes = 0; // device memory capacity
  double bf16Flops = 0;    // dense bf16 peak, FLOP/s
  double memoryBandwidth = 0;    // bytes/s
  double intraNodeBandwidth = 0; // bytes/s per GPU (NVLink)
  double interNodeBandwidth = 0; // bytes/s per GPU (network)
  int64_t gpusPerNode = 8;
  /// Memory the framework cannot use for tensors: CUDA context, NCCL
  /// communication buffers, allocator reserve.
  int64_t fixedOverheadBytes = 0;
  KernelProfile kernels;
  std::vector<std::string> sources;
};

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
