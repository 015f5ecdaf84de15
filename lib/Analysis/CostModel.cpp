//===- CostModel.cpp - per-step time from FLOPs and collectives -----------===//
//
// Prices every step of the lowered programs and times them: compute steps at
// the FLOPs of the model's op graph (FlopCount.h: each layer at its stack's
// tokens under its remat decision, the root's head and tail), collectives
// at the bytes the program gives them over the link their group spans
// (LinkModel.h), the optimizer at the memory bandwidth. ProgramTimeline.h
// runs the programs on a compute and a communication stream; this file
// turns the timed programs into the report. docs/cost-model.md states every
// convention.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/CostModel.h"

#include "parc/Analysis/FsdpUnits.h"
#include "parc/Analysis/Grids.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/LinkModel.h"
#include "parc/Analysis/Parallelism.h"
#include "parc/Analysis/ProgramTimeline.h"
#include "parc/Analysis/Programs.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::parc;

namespace {

/// Refuses options and hardware no estimate can use.
LogicalResult checkOptions(ModelOp model, const CostOptions &options,
                           const HardwareProfile &hardware) {
  if (options.seqLen < 0 || options.microBatch < 0 ||
      options.gradAccumulation < 0 || options.imageTokens < 0 ||
      options.gpusPerNode < 0)
    return mlir::emitError(model->getLoc())
           << "estimate-cost needs positive seq, mbs and gradient "
              "accumulation";
  if (!(options.computeEfficiency >= 0 && options.computeEfficiency <= 1))
    return mlir::emitError(model->getLoc())
           << "estimate-cost needs a compute efficiency in (0, 1] (or 0 for "
              "the hardware profile's), got "
           << options.computeEfficiency;
  if (hardware.bf16Flops <= 0 || hardware.memoryBandwidth <= 0 ||
      hardware.intraNodeBandwidth <= 0 || hardware.interNodeBandwidth <= 0)
    return mlir::emitError(model->getLoc())
           << "hardware profile '" << hardware.name
           << "' needs positive FLOP/s and bandwidths for a cost estimate";
  return success();
}

/// The report's layout: the programs' batch, the ranks of every axis.
CostReport describeLayout(ModelOp model, const HardwareProfile &hardware,
                          const CostOptions &options, const ProgramSet &set,
                          const FsdpUnitSizes &sizes) {
  CostReport report;
  report.hardware = hardware;
  report.options = options;
  if (options.computeEfficiency == 0)
    report.options.computeEfficiency = hardware.computeEfficiency;
  report.options.seqLen = set.seq;
  report.options.microBatch = set.batch;
  report.options.gradAccumulation =
      set.programs.size() == 1 ? set.microBatches : 1;
  report.ranks = sizes.shards;
  PpPlan pp = getPpPlan(model);
  report.tpSize = getTpPlan(model).size;
  report.ppStages = int64_t(set.programs.size());
  report.ppChunks = pp.chunks;
  report.ppSchedule = pp.schedule;
  report.microBatches = set.microBatches;
  report.dpReplicas = std::max<int64_t>(1, getGridSize(model, kDpGridName));
  return report;
}

/// Prices the compute steps of one micro-batch: the root's own ops (the
/// layers stopped at), which also tell whether each layer's input needs a
/// gradient, then every layer at its stack's tokens under its remat
/// decision. Under TP a rank does 1/tp of them (the replicated norms are
/// counted as split too). Returns the whole model's FLOPs of one
/// micro-batch on all TP ranks.
FlopCount priceCompute(ModelOp model, const FsdpUnitSizes &sizes,
                       const CostReport &report, StepPricing &pricing) {
  int64_t batch = report.options.microBatch, seq = report.options.seqLen;
  RootFlops root = countRootFlops(model, batch, seq);
  auto tokensOf = [&](NNModuleOp layer) {
    auto tag = getLayerTag(layer);
    return tag && isVisionStack(tag->first) ? report.options.imageTokens : seq;
  };
  FlopCount modelMicro = root.total;
  double perTpRank = 1.0 / double(report.tpSize);
  for (auto &stageUnits : sizes.layers)
    for (const FsdpUnitSize &unit : stageUnits) {
      auto inputGrad = root.layerInputGrad.find(unit.layer);
      FlopCount flops = countLayerFlops(
          unit.layer, getRemat(unit.layer).value_or(RematKind::None), batch,
          tokensOf(unit.layer),
          inputGrad == root.layerInputGrad.end() || inputGrad->second);
      modelMicro += flops;
      pricing.layers[unit.path] = flops.scaled(perTpRank);
    }
  pricing.head = root.head.scaled(perTpRank);
  pricing.tail = root.tail.scaled(perTpRank);
  return modelMicro;
}

/// Prices the collectives: each group's ranks and the link its ring spans.
void priceLinks(const HardwareProfile &hardware, int64_t gpusPerNode,
                CostReport &report, StepPricing &pricing) {
  int64_t fsdpSpan = report.ranks * report.tpSize;
  int64_t dpSpan = fsdpSpan * report.dpReplicas;
  Link fsdp = getLink(hardware, gpusPerNode, fsdpSpan);
  Link tp = getLink(hardware, gpusPerNode, report.tpSize);
  Link dp = getLink(hardware, gpusPerNode, dpSpan);
  // Tied copies sit on the first and last stage: the furthest-apart ranks.
  Link tied = getLink(hardware, gpusPerNode, dpSpan * report.ppStages);
  Link p2p = getLink(hardware, gpusPerNode, dpSpan * 2);
  report.bandwidth = fsdp.bandwidth;
  report.link = fsdp.name;
  report.tpBandwidth = tp.bandwidth;
  report.tpLink = tp.name;
  report.dpBandwidth = dp.bandwidth;
  report.dpLink = dp.name;
  pricing.bandwidth[kFsdpGridName] = fsdp.bandwidth;
  pricing.bandwidth[kTpGridName] = tp.bandwidth;
  pricing.bandwidth[kDpGridName] = dp.bandwidth;
  pricing.bandwidth[kPpGridName] = tied.bandwidth;
  pricing.bandwidth["p2p"] = p2p.bandwidth;
  pricing.groupSize[kFsdpGridName] = report.ranks;
  pricing.groupSize[kTpGridName] = report.tpSize;
  pricing.groupSize[kDpGridName] = report.dpReplicas;
  pricing.groupSize[kPpGridName] = report.ppStages;
}

/// Prices what runs at the device's rates: compute at the achieved FLOP/s,
/// the gradient clipping and the optimizer at the memory bandwidth.
void priceDevice(const HardwareProfile &hardware, const FsdpUnitSizes &sizes,
                 CostReport &report, StepPricing &pricing) {
  report.peakFlops = hardware.bf16Flops;
  report.achievedFlops = hardware.bf16Flops * report.options.computeEfficiency;
  pricing.achievedFlops = report.achievedFlops;
  pricing.memoryBandwidth = hardware.memoryBandwidth;
  // AdamW reads the parameter, its gradient and both moments and writes the
  // parameter and both moments back.
  const FsdpUnitSize &anyUnit = sizes.roots.front();
  pricing.optimizerBytesPerElement =
      double(3 * anyUnit.masterBytes + 4 * anyUnit.optimBytes);
  pricing.gradientBytesPerElement = double(anyUnit.masterBytes);
}

/// What a fixed overlap fraction hides of each program's FSDP traffic (never
/// more than its compute); nothing under overlap=schedule.
std::vector<double> hiddenByOverlap(ArrayRef<ProgramTime> times,
                                    std::optional<double> overlapFraction) {
  std::vector<double> hidden(times.size(), 0);
  if (overlapFraction)
    for (auto [index, time] : llvm::enumerate(times))
      hidden[index] = std::min(*overlapFraction * (time.allGather.seconds +
                                                   time.reduceScatter.seconds),
                               time.compute);
  return hidden;
}

/// Fills the report from the timed programs: FLOPs, bytes and exposed
/// communication are the busiest stage's, the optimizer step the largest,
/// the step the last program's end.
void reportTimes(std::vector<ProgramTime> &times, ArrayRef<double> hidden,
                 const FlopCount &modelMicro, CostReport &report) {
  double batch = double(report.options.microBatch),
         seq = double(report.options.seqLen);
  // The busiest stage: compute and waits on its own collectives.
  auto busy = [&](size_t index) {
    const ProgramTime &time = times[index];
    return time.compute + time.fsdpWait - hidden[index];
  };
  for (size_t index = 1; index < times.size(); ++index)
    if (busy(index) > busy(report.slowestStage))
      report.slowestStage = index;
  const ProgramTime &slow = times[report.slowestStage];
  double slowHidden = hidden[report.slowestStage];
  report.flops = slow.flops;
  // Tokens per GPU per step: each micro-batch is shared by tp x pp ranks.
  report.tokensPerStep = double(report.microBatches) * batch * seq /
                         double(report.tpSize * report.ppStages);
  report.modelFlopsPerToken = modelMicro.model() / (batch * seq);
  report.allGatherBytes = slow.allGather.bytes;
  report.reduceScatterBytes = slow.reduceScatter.bytes;
  report.allGathers = slow.allGather.count;
  report.reduceScatters = slow.reduceScatter.count;
  report.computeSeconds = slow.compute;
  report.communicationSeconds =
      slow.allGather.seconds + slow.reduceScatter.seconds;
  report.exposedCommunicationSeconds = slow.fsdpWait - slowHidden;
  report.tpBytes = slow.tp.bytes;
  report.tpSeconds = slow.tp.seconds;
  // The optimizer step of the stage with the most parameters.
  for (const ProgramTime &time : times)
    if (time.optimizerSeconds > report.optimizerSeconds) {
      report.optimizerBytes = time.optimizerBytes;
      report.optimizerSeconds = time.optimizerSeconds;
    }
  report.tiedBytes = slow.tied.bytes;
  report.tiedSeconds = slow.tied.seconds;
  report.dpBytes = slow.dp.bytes;
  report.dpSeconds = slow.dp.seconds;
  if (slow.p2p.count > 0) {
    report.p2pBytes = slow.p2p.bytes / double(slow.p2p.count);
    report.p2pSeconds = slow.p2p.seconds / double(slow.p2p.count);
  }
  for (auto [index, time] : llvm::enumerate(times)) {
    report.stepSeconds = std::max(report.stepSeconds, time.end - hidden[index]);
    report.pipelineSeconds =
        std::max(report.pipelineSeconds, time.backwardEnd - hidden[index]);
    report.stageTimelines.push_back(std::move(time.steps));
  }
}

/// The schedule's own bubble: the same programs with the data-parallel
/// collectives free (their exposed time is reported on its own), idle time
/// over the slowest stage's busy time, next to the closed form.
LogicalResult reportBubble(ArrayRef<ProgramOp> programs,
                           const StepPricing &pricing, CostReport &report) {
  StepPricing scheduleOnly = pricing;
  scheduleOnly.timeline = false;
  for (StringRef grid : {kFsdpGridName, kDpGridName, kPpGridName})
    scheduleOnly.bandwidth[grid] = 0;
  FailureOr<std::vector<ProgramTime>> bare =
      simulatePrograms(programs, scheduleOnly);
  if (failed(bare))
    return failure();
  double length = 0, busiest = 0;
  for (const ProgramTime &time : *bare) {
    length = std::max(length, time.backwardEnd);
    busiest = std::max(busiest, time.compute);
  }
  report.bubbleFraction = busiest > 0 ? (length - busiest) / busiest : 0;
  report.closedFormBubble =
      double(report.ppStages - 1) /
      (double(report.ppChunks) * double(report.microBatches));
  return success();
}

} // namespace

FailureOr<CostReport> mlir::parc::estimateCost(ModelOp model,
                                               const CostOptions &options) {
  FailureOr<HardwareProfile> hardware = loadHardwareProfile(
      options.hardware, options.hardwareDir, model.getLoc());
  if (failed(hardware))
    return failure();
  if (failed(checkOptions(model, options, *hardware)))
    return failure();
  std::optional<double> overlapFraction = options.overlap.hiddenFraction;
  FailureOr<ProgramSet> set =
      getPrograms(model, "estimate-cost", options.seqLen, options.microBatch,
                  options.gradAccumulation);
  if (failed(set))
    return failure();
  FailureOr<FsdpUnitSizes> sizes = getFsdpUnitSizes(model, "estimate-cost");
  if (failed(sizes))
    return failure();

  CostReport report = describeLayout(model, *hardware, options, *set, *sizes);
  StepPricing pricing;
  FlopCount modelMicro = priceCompute(model, *sizes, report, pricing);
  priceLinks(*hardware,
             options.gpusPerNode > 0 ? options.gpusPerNode
                                     : hardware->gpusPerNode,
             report, pricing);
  priceDevice(*hardware, *sizes, report, pricing);
  // A fixed fraction hidden is taken off a timeline on which every FSDP
  // collective blocks.
  pricing.blocking = overlapFraction.has_value();

  FailureOr<std::vector<ProgramTime>> times =
      simulatePrograms(set->programs, pricing);
  if (failed(times))
    return failure();
  reportTimes(*times, hiddenByOverlap(*times, overlapFraction), modelMicro,
              report);
  if (report.ppStages > 1 &&
      failed(reportBubble(set->programs, pricing, report)))
    return failure();
  return report;
}

std::vector<TimedStep> CostReport::getStepTimeline(size_t stage) const {
  return stage < stageTimelines.size() ? stageTimelines[stage]
                                       : std::vector<TimedStep>();
}

void CostReport::print(llvm::raw_ostream &os) const {
  // The layout the step is timed on: FSDP shards alone, or every axis.
  os << "step time per rank (";
  if (dpReplicas > 1)
    os << "dp " << dpReplicas << " x ";
  os << "fsdp";
  if (tpSize > 1 || ppStages > 1 || dpReplicas > 1) {
    os << " " << ranks;
    if (tpSize > 1)
      os << " x tp " << tpSize;
    if (ppStages > 1)
      os << " x pp " << ppStages;
    os << ", " << dpReplicas * ranks * tpSize * ppStages;
  } else {
    os << ", " << ranks;
  }
  os << " ranks) on " << hardware.description << ":\n";
  auto flopsRow = [&](StringRef what, double value) {
    os << "  " << llvm::left_justify(what, 26) << llvm::format("%22.0f", value)
       << " FLOPs\n";
  };
  flopsRow("forward", flops.forward);
  flopsRow("backward", flops.backward);
  flopsRow("recompute", flops.recompute);
  flopsRow("total", flops.total());
  flopsRow("model FLOPs per token", modelFlopsPerToken);
  auto timeRow = [&](StringRef what, double seconds, const llvm::Twine &how) {
    os << "  " << llvm::left_justify(what, 26)
       << llvm::format("%14.6g s", seconds) << "  " << how << "\n";
  };
  std::string computeHow, commHow, optimHow;
  llvm::raw_string_ostream(computeHow)
      << "at " << llvm::format("%g", options.computeEfficiency * 100) << "% of "
      << llvm::format("%g", peakFlops / 1e12) << " TFLOP/s";
  llvm::raw_string_ostream(commHow)
      << allGathers << " all-gathers " << llvm::format("%.0f", allGatherBytes)
      << " B, " << reduceScatters << " reduce-scatters "
      << llvm::format("%.0f", reduceScatterBytes) << " B, ring over " << link
      << " " << llvm::format("%g", bandwidth / 1e9) << " GB/s";
  llvm::raw_string_ostream(optimHow)
      << llvm::format("%.0f", optimizerBytes) << " B at "
      << llvm::format("%g", hardware.memoryBandwidth / 1e9) << " GB/s";
  timeRow("compute", computeSeconds, computeHow);
  timeRow("communication", communicationSeconds, commHow);
  timeRow("exposed communication", exposedCommunicationSeconds,
          "overlap " + options.overlap.str());
  if (tpSize > 1)
    timeRow("TP collectives", tpSeconds,
            llvm::formatv("{0:F0} B on the critical path, ring over {1} "
                          "{2} GB/s",
                          tpBytes, tpLink, tpBandwidth / 1e9));
  if (ppStages > 1)
    timeRow("pipeline", pipelineSeconds,
            llvm::formatv("{0} x {1} stages{2}, {3} micro-batches; bubble "
                          "{4:F2}% (closed form {5:F2}%), slowest stage {6}",
                          ppSchedule, ppStages,
                          ppChunks > 1
                              ? llvm::formatv(" x {0} chunks", ppChunks).str()
                              : std::string(),
                          microBatches, bubbleFraction * 100,
                          closedFormBubble * 100, slowestStage));
  if (tiedSeconds > 0)
    timeRow("tied all-reduce", tiedSeconds,
            llvm::formatv("{0:F0} B of tied copies' gradients between the "
                          "first and last stage",
                          tiedBytes));
  if (dpReplicas > 1)
    timeRow("DP all-reduce", dpSeconds,
            llvm::formatv("{0:F0} B gradient shards over {1} replicas, ring "
                          "over {2} {3} GB/s (before the optimizer step)",
                          dpBytes, dpReplicas, dpLink, dpBandwidth / 1e9));
  timeRow("optimizer step", optimizerSeconds, optimHow);
  timeRow("step", stepSeconds,
          "x " + llvm::Twine(microBatches) + " micro-batches");
  os << "  " << llvm::left_justify("tokens/s/GPU", 26)
     << llvm::format("%14.6g", tokensPerSecondPerGpu()) << "\n";
  os << "  " << llvm::left_justify("MFU", 26)
     << llvm::format("%13.2f%%", mfu() * 100) << "\n";
}
