//===- MemoryEstimate.h - per-rank peak memory of a plan --------*- C++ -*-===//
//
// Replays the parc.program of each rank kind (what --lower-to-schedule
// writes and parc-run executes) as allocations and frees in program order
// and reports the true peak per rank kind. --estimate-memory prints this
// report; parc-plan renders it as text or JSON.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_MEMORYESTIMATE_H
#define PARC_ANALYSIS_MEMORYESTIMATE_H

#include "Parc/IR/ParcOps.h"
#include "parc/Analysis/HardwareProfile.h"
#include "parc/Analysis/Parallelism.h"

#include <string>
#include <vector>

namespace mlir::parc {

/// Bytes live at one moment, by what holds them.
struct MemoryBreakdown {
  int64_t shardedParameters = 0;   // master copy, this rank's shards
  int64_t unshardedParameters = 0; // all-gather buffers: current + prefetched
  int64_t gradients = 0;           // sharded gradients (+ unsharded in flight)
  int64_t optimizerState = 0;      // AdamW moments of this rank's shards
  int64_t savedActivations = 0;    // kept for backward, all layers so far
  int64_t recomputeWorkingSet = 0; // activations of the layer being recomputed
  int64_t logitsAndLoss = 0;       // logits, softmax and loss gradient
  int64_t fixedOverhead = 0;       // CUDA context, NCCL buffers (profile)

  int64_t total() const {
    return shardedParameters + unshardedParameters + gradients +
           optimizerState + savedActivations + recomputeWorkingSet +
           logitsAndLoss + fixedOverhead;
  }
};

/// The live bytes at one note of the replay, in replay order.
struct MemorySample {
  std::string phase; // "forward model.layers.0", "reduce-scatter root", ...
  MemoryBreakdown live;
  /// The parc.program op it is taken at (-1: before the first): where
  /// --trace draws it.
  int64_t step = -1;
};

/// The replay of one kind of rank (ranks doing the same work share one).
struct RankMemory {
  std::string rankKind;  // "fsdp" for a plain FSDP plan
  int64_t rankCount = 1; // ranks of this kind
  int64_t layers = 0;    // layer units the rank holds (its stage's)
  bool pipelined = false;
  /// The most the rank's tensors hold at one moment, with the fixed
  /// overhead.
  int64_t peakBytes = 0;
  std::string peakPhase; // "backward model.layers.0", "forward lm_head", ...
  MemoryBreakdown atPeak;
  /// The most the allocator reserves over the steps it replays
  /// (CachingAllocator.h), without the fixed overhead; with direct
  /// allocation, what the tensors hold.
  int64_t reservedBytes = 0;
  std::string reservedPhase;
  /// A request the caching allocator could not meet even after releasing
  /// its cache: the run stops there with CUDA out of memory.
  bool allocatorOutOfMemory = false;
  std::string outOfMemoryPhase;
  int64_t outOfMemoryRequest = 0;
  /// What the device must hold: what the allocator reserves and the fixed
  /// overhead beside it.
  int64_t devicePeakBytes() const {
    return std::max(peakBytes, reservedBytes + atPeak.fixedOverhead);
  }
  /// Every note of the replay, in program order: what --trace draws as the
  /// memory counter.
  std::vector<MemorySample> timeline;
};

/// The batch is the programs': seq, mbs and grad-accum here are what the
/// caller expects them to be (0: whatever the programs say), and a program
/// that disagrees is refused rather than replayed for another batch.
struct MemoryOptions {
  std::string hardware = "h100-80gb";
  std::string hardwareDir; // empty: getDefaultHardwareDir()
  int64_t seqLen = 0;
  int64_t microBatch = 0;
  /// Micro-batches per optimizer step; above 1 the sharded gradients live
  /// through the whole step.
  int64_t gradAccumulation = 0;
  /// Image tokens per sample entering the vision tower (0: text-only).
  int64_t imageTokens = 0;
  /// Over the hardware profile's.
  std::optional<AllocatorKind> allocator;
  /// How AdamW steps (the temporaries it allocates; the allocator replay's).
  OptimizerImpl optimizerImpl = OptimizerImpl::Foreach;
};

struct MemoryReport {
  HardwareProfile hardware;
  /// The batch the programs train on: micro-batches of `microBatch`
  /// sequences of `seqLen` tokens.
  int64_t seqLen = 0, microBatch = 0;
  AllocatorKind allocator = AllocatorKind::Caching;
  std::vector<RankMemory> ranks;
  /// Index into `ranks` of the rank kind whose tensors hold the most, and
  /// of the one whose device memory is fullest.
  size_t peakRank = 0, deviceRank = 0;
  int64_t peakBytes() const {
    return ranks.empty() ? 0 : ranks[peakRank].peakBytes;
  }
  int64_t devicePeakBytes() const {
    return ranks.empty() ? 0 : ranks[deviceRank].devicePeakBytes();
  }
  /// Verdicts are the device's: reserved memory, not allocated.
  bool fits() const {
    for (const RankMemory &rank : ranks)
      if (rank.allocatorOutOfMemory)
        return false;
    return devicePeakBytes() <= hardware.memoryBytes;
  }
  int64_t headroomBytes() const {
    return hardware.memoryBytes - devicePeakBytes();
  }

  /// A readable table per rank kind.
  void print(llvm::raw_ostream &os) const;
};

/// Activation bytes one layer keeps for backward (`saved`), rebuilds in
/// backward (`recomputed`) and holds transiently while one op runs
/// (`working`) under a remat decision, with
/// its op graph traced at `batch` x `tokens`, activations of `elementBytes`
/// each, on one rank of `tp` and with the kernels of a hardware profile.
/// The lowering writes all three into the program (saves, recomputes and
/// each step's #parc.peak); the replay reads them back from there.
struct LayerActivationBytes {
  int64_t saved = 0, recomputed = 0, working = 0;
};
LayerActivationBytes estimateLayerActivations(NNModuleOp layer, RematKind remat,
                                              int64_t batch, int64_t tokens,
                                              int64_t elementBytes,
                                              TpPlan tp = {},
                                              KernelProfile kernels = {});

/// Records the prediction on the model (parc.predicted_peak_bytes,
/// _peak_phase, _fits, _hardware, _seq_len, _micro_batch), where plan.bin
/// export and the runtime's comparison find it.
void recordPrediction(ModelOp model, const MemoryReport &report,
                      const MemoryOptions &options);

/// Estimates the memory of `model`'s plan by replaying its parc.program ops
/// (--lower-to-schedule); errors (no programs, a program for another batch,
/// unknown hardware) are emitted on the model or the program.
FailureOr<MemoryReport> estimateMemory(ModelOp model,
                                       const MemoryOptions &options);

} // namespace mlir::parc

#endif // PARC_ANALYSIS_MEMORYESTIMATE_H
