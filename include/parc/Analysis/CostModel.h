//===- CostModel.h - per-step time of a plan --------------------*- C++ -*-===//
//
// Predicts the time of one training step of a planned model from its
// lowered programs (--lower-to-schedule): the FLOPs of each compute step
// from the op graph (FlopCount.h: forward, backward, recompute), the bytes
// of each collective from the program over the link its group spans
// (LinkModel.h), timed on a compute and a communication stream in program
// order (ProgramTimeline.h) under a stated compute efficiency and overlap
// assumption.
// --estimate-cost prints this report; parc-plan renders it as text or JSON.
// docs/cost-model.md states every convention.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_COSTMODEL_H
#define PARC_ANALYSIS_COSTMODEL_H

#include "Parc/IR/ParcOps.h"
#include "parc/Analysis/CommOverlap.h"
#include "parc/Analysis/FlopCount.h"
#include "parc/Analysis/HardwareProfile.h"

#include <string>
#include <vector>

namespace mlir::parc {

/// The batch is the programs': seq, mbs and grad-accum here are what the
/// caller expects (0: whatever the programs say); a program for another
/// batch is refused.
struct CostOptions {
  std::string hardware = "h100-80gb";
  std::string hardwareDir; // empty: getDefaultHardwareDir()
  int64_t seqLen = 0;
  int64_t microBatch = 0;
  int64_t gradAccumulation = 0;
  /// Image tokens per sample entering the vision tower (0: text-only).
  int64_t imageTokens = 0;
  /// GPUs per node of the cluster; 0 takes the hardware profile's.
  int64_t gpusPerNode = 0;
  /// The fraction of the dense bf16 peak that compute achieves; 0 takes the
  /// hardware profile's `compute_efficiency`.
  double computeEfficiency = 0;
  /// The two-stream timeline of the programs (the default), or a fixed
  /// fraction of the FSDP communication hidden behind compute.
  CommOverlap overlap;
};

/// One timed program step: a compute step ("forward model.layers.0",
/// "recompute ...", "backward ...", "forward loss", "backward loss",
/// "clip grad norm", "optimizer step") or a collective ("all-gather root",
/// "reduce-scatter model.layers.3", "all-reduce dp root", "send
/// activations"), named as parc-run's trace names it.
struct TimedStep {
  enum Stream { Compute, Communication };
  std::string name;
  Stream stream = Compute;
  /// Seconds from the start of the step.
  double start = 0, duration = 0;
  /// Collectives: when it was issued (it starts once the link is free).
  double issued = 0;
  double flops = 0; // compute
  double bytes = 0; // collectives: unsharded bytes entering
  /// The micro-batch it belongs to; -1 for the optimizer step.
  int64_t microBatch = 0;
  /// The index of the parc.program op it times (what parc-run's trace calls
  /// program_step).
  int64_t programStep = -1;
};

/// The predicted step of one kind of rank (today: every FSDP rank).
struct CostReport {
  HardwareProfile hardware;
  CostOptions options;
  int64_t ranks = 1; // FSDP shards (data-parallel ranks)

  /// Per rank, per optimizer step (all micro-batches).
  FlopCount flops;
  double tokensPerStep = 0; // per rank: grad accum x micro-batch x seq
  double modelFlopsPerToken = 0;

  /// Bytes per rank per step entering the collectives (unsharded sizes: the
  /// ring moves (n-1)/n of them through each rank's link).
  double allGatherBytes = 0;
  double reduceScatterBytes = 0;
  int64_t allGathers = 0, reduceScatters = 0;
  double bandwidth = 0;     // bytes/s of the link the FSDP ring uses
  std::string link;         // "intra-node" or "inter-node"
  double peakFlops = 0;     // hardware bf16 peak
  double achievedFlops = 0; // peak x efficiency

  double computeSeconds = 0;
  double communicationSeconds = 0;
  double exposedCommunicationSeconds = 0;
  double optimizerSeconds = 0;
  double optimizerBytes = 0;
  double stepSeconds = 0;

  /// The whole step of pipeline stage `stage` (0 without PP) as its
  /// program ran on the streams: every compute step and collective.
  std::vector<TimedStep> getStepTimeline(size_t stage = 0) const;

  /// Tensor parallelism: bytes per rank per step entering its collectives
  /// (unsharded sizes) and the time they block compute.
  int64_t tpSize = 1;
  double tpBytes = 0, tpSeconds = 0, tpBandwidth = 0;
  std::string tpLink;
  /// HSDP: the all-reduce of each rank's gradient shards over the
  /// data-parallel replicas, once per step after the last reduce-scatter;
  /// counted as exposed (it waits on the last backward).
  int64_t dpReplicas = 1;
  double dpBytes = 0, dpSeconds = 0, dpBandwidth = 0;
  std::string dpLink;
  /// PP: the all-reduce of tied copies' gradients between the stages that
  /// hold them (embedding and lm_head), once per step, exposed.
  double tiedBytes = 0, tiedSeconds = 0;
  /// Pipeline parallelism, timed from the stages' programs: the pipeline
  /// ends with the last stage's last backward; the bubble is the schedule's
  /// own (the programs timed again with FSDP, replica and tied collectives
  /// free): the last backward's end over the busiest stage's compute, less
  /// one, next to the closed form (p - 1) / (v m).
  int64_t ppStages = 1, ppChunks = 1, microBatches = 1;
  std::string ppSchedule;
  int64_t slowestStage = 0;
  double bubbleFraction = 0, closedFormBubble = 0;
  /// Activations (and their gradients) sent between adjacent stages per
  /// micro-batch, and the link time of one transfer.
  double p2pBytes = 0, p2pSeconds = 0;
  /// Per program (stage): its timed steps in program order.
  std::vector<std::vector<TimedStep>> stageTimelines;
  double pipelineSeconds = 0;

  double tokensPerSecondPerGpu() const {
    return stepSeconds > 0 ? tokensPerStep / stepSeconds : 0;
  }
  /// Model FLOPs utilisation: model FLOPs per token x tokens/s / peak.
  double mfu() const {
    return peakFlops > 0
               ? modelFlopsPerToken * tokensPerSecondPerGpu() / peakFlops
               : 0;
  }

  /// A readable report.
  void print(llvm::raw_ostream &os) const;
};

/// Estimates the step time of `model`'s plan; errors (no FSDP plan, unknown
/// hardware, a bad option) are emitted on the model.
FailureOr<CostReport> estimateCost(ModelOp model, const CostOptions &options);

} // namespace mlir::parc

#endif // PARC_ANALYSIS_COSTMODEL_H
