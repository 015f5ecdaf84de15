//===- CostModel.cpp - per-step time from FLOPs and collectives -----------===//
//
// FLOPs come from the model's own op graph (FlopCount.h): each layer at its
// stack's tokens under its remat decision, the root's head and tail.
// Communication comes from the FSDP units: the bytes every all-gather and reduce-scatter
// moves over a ring. A two-stream timeline of one micro-batch (compute on
// one stream, collectives in issue order on the other) gives the exposed
// communication. docs/cost-model.md states every convention.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/CostModel.h"

#include "parc/Analysis/FsdpUnits.h"
#include "parc/Analysis/Parallelism.h"
#include "parc/Analysis/Grids.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/ProgramTimeline.h"
#include "parc/Analysis/Programs.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::parc;

FailureOr<CostReport> mlir::parc::estimateCost(ModelOp model,
                                               const CostOptions &options) {
  FailureOr<HardwareProfile> hardware = loadHardwareProfile(
      options.hardware, options.hardwareDir, model.getLoc());
  if (failed(hardware))
    return failure();
  if (options.seqLen < 0 || options.microBatch < 0 ||
      options.gradAccumulation < 0 || options.imageTokens < 0 ||
      options.gpusPerNode < 0)
    return mlir::emitError(model->getLoc())
           << "estimate-cost needs positive seq, mbs and gradient "
              "accumulation";
  if (!(options.computeEfficiency > 0 && options.computeEfficiency <= 1))
    return mlir::emitError(model->getLoc())
           << "estimate-cost needs a compute efficiency in (0, 1], got "
           << options.computeEfficiency;
  std::optional<double> overlapFraction;
  if (options.overlap == "none") {
    overlapFraction = 0;
  } else if (options.overlap != "schedule") {
    double fraction = 0;
    if (StringRef(options.overlap).getAsDouble(fraction) || fraction < 0 ||
        fraction > 1)
      return mlir::emitError(model->getLoc())
             << "estimate-cost overlap must be 'schedule', 'none' or a "
                "fraction in [0, 1], got '"
             << options.overlap << "'";
    overlapFraction = fraction;
  }
  if (hardware->bf16Flops <= 0 || hardware->memoryBandwidth <= 0 ||
      hardware->intraNodeBandwidth <= 0 || hardware->interNodeBandwidth <= 0)
    return mlir::emitError(model->getLoc())
           << "hardware profile '" << hardware->name
           << "' needs positive FLOP/s and bandwidths for a cost estimate";

  FailureOr<ProgramSet> set =
      getPrograms(model, "estimate-cost", options.seqLen, options.microBatch,
                  options.gradAccumulation);
  if (failed(set))
    return failure();
  ArrayRef<ProgramOp> programs = set->programs;
  int64_t seq = set->seq, batch = set->batch,
          microBatches = set->microBatches;

  CostReport report;
  report.hardware = *hardware;
  report.options = options;
  report.options.seqLen = seq;
  report.options.microBatch = batch;
  report.options.gradAccumulation = programs.size() == 1 ? microBatches : 1;
  FailureOr<FsdpUnitSizes> sizes = getFsdpUnitSizes(model, "estimate-cost");
  if (failed(sizes))
    return failure();
  report.ranks = sizes->shards;
  TpPlan tp = getTpPlan(model);
  PpPlan pp = getPpPlan(model);
  int64_t stages = int64_t(programs.size());
  report.tpSize = tp.size;
  report.ppStages = stages;
  report.ppChunks = pp.chunks;
  report.ppSchedule = pp.schedule;
  report.microBatches = microBatches;

  // FLOPs of one micro-batch: the root's own ops (the layers stopped at),
  // which also tells whether each layer's input needs a gradient, then
  // every layer at its stack's tokens under its remat decision. Under TP a
  // rank does 1/tp of them (the replicated norms are counted as split too).
  RootFlops root = countRootFlops(model, batch, seq);
  auto tokensOf = [&](NNModuleOp layer) {
    auto tag = getLayerTag(layer);
    return tag && StringRef(tag->first).starts_with("vision")
               ? options.imageTokens
               : seq;
  };
  FlopCount modelMicro = root.total; // the whole model, one micro-batch
  double perTpRank = 1.0 / double(tp.size);
  StepPricing pricing;
  for (auto &stageUnits : sizes->layers)
    for (const FsdpUnitSize &unit : stageUnits) {
      auto remat = unit.layer->getAttrOfType<StringAttr>("parc.remat");
      auto inputGrad = root.layerInputGrad.find(unit.layer);
      FlopCount flops = countLayerFlops(
          unit.layer, remat ? remat.getValue() : "none", batch,
          tokensOf(unit.layer),
          inputGrad == root.layerInputGrad.end() || inputGrad->second);
      modelMicro += flops;
      pricing.layers[unit.path] = flops.scaled(perTpRank);
    }
  pricing.head = root.head.scaled(perTpRank);
  pricing.tail = root.tail.scaled(perTpRank);

  int64_t gpusPerNode =
      options.gpusPerNode > 0 ? options.gpusPerNode : hardware->gpusPerNode;
  // Ranks are laid out TP innermost, then FSDP, then the replicas, then PP
  // (as torchtitan's device mesh): a group is intra-node when its span fits
  // in a node.
  auto linkFor = [&](int64_t span, double &bandwidth, std::string &link) {
    bool intra = span <= gpusPerNode;
    link = intra ? "intra-node" : "inter-node";
    bandwidth =
        intra ? hardware->intraNodeBandwidth : hardware->interNodeBandwidth;
  };
  report.dpReplicas = std::max<int64_t>(1, getGridSize(model, kDpGridName));
  linkFor(report.ranks * tp.size, report.bandwidth, report.link);
  linkFor(tp.size, report.tpBandwidth, report.tpLink);
  linkFor(report.ranks * tp.size * report.dpReplicas, report.dpBandwidth,
          report.dpLink);
  double tiedBandwidth = 0, p2pBandwidth = 0;
  std::string tiedLink, p2pLink;
  // Tied copies sit on the first and last stage: the furthest-apart ranks.
  linkFor(report.ranks * tp.size * report.dpReplicas * stages, tiedBandwidth,
          tiedLink);
  linkFor(report.ranks * tp.size * report.dpReplicas * 2, p2pBandwidth,
          p2pLink);
  pricing.bandwidth[kFsdpGridName] = report.bandwidth;
  pricing.bandwidth[kTpGridName] = report.tpBandwidth;
  pricing.bandwidth[kDpGridName] = report.dpBandwidth;
  pricing.bandwidth[kPpGridName] = tiedBandwidth;
  pricing.bandwidth["p2p"] = p2pBandwidth;
  pricing.groupSize[kFsdpGridName] = report.ranks;
  pricing.groupSize[kTpGridName] = tp.size;
  pricing.groupSize[kDpGridName] = report.dpReplicas;
  pricing.groupSize[kPpGridName] = stages;
  report.peakFlops = hardware->bf16Flops;
  report.achievedFlops = hardware->bf16Flops * options.computeEfficiency;
  pricing.achievedFlops = report.achievedFlops;
  pricing.memoryBandwidth = hardware->memoryBandwidth;
  // AdamW reads the parameter, its gradient and both moments and writes the
  // parameter and both moments back.
  const FsdpUnitSize &anyUnit = sizes->roots.front();
  pricing.optimizerBytesPerElement =
      double(3 * anyUnit.masterBytes + 4 * anyUnit.optimBytes);
  pricing.gradientBytesPerElement = double(anyUnit.masterBytes);
  // A fixed fraction hidden is taken off a timeline on which every FSDP
  // collective blocks.
  pricing.blocking = overlapFraction.has_value();

  FailureOr<std::vector<ProgramTime>> times =
      simulatePrograms(programs, pricing);
  if (failed(times))
    return failure();
  // What a fixed overlap fraction hides of each program's FSDP traffic.
  std::vector<double> hidden(times->size(), 0);
  if (overlapFraction)
    for (auto [index, time] : llvm::enumerate(*times))
      hidden[index] =
          std::min(*overlapFraction * (time.allGather.seconds +
                                       time.reduceScatter.seconds),
                   time.compute);
  // The busiest stage: compute and waits on its own collectives.
  auto busy = [&](size_t index) {
    const ProgramTime &time = (*times)[index];
    return time.compute + time.fsdpWait - hidden[index];
  };
  for (size_t index = 1; index < times->size(); ++index)
    if (busy(index) > busy(report.slowestStage))
      report.slowestStage = index;
  const ProgramTime &slow = (*times)[report.slowestStage];
  double slowHidden = hidden[report.slowestStage];
  report.flops = slow.flops;
  // Tokens per GPU per step: each micro-batch is shared by tp x pp ranks.
  report.tokensPerStep = double(microBatches) * double(batch) * double(seq) /
                         double(tp.size * stages);
  report.modelFlopsPerToken =
      modelMicro.model() / (double(batch) * double(seq));
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
  for (const ProgramTime &time : *times)
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
  for (auto [index, time] : llvm::enumerate(*times)) {
    report.stepSeconds = std::max(report.stepSeconds, time.end - hidden[index]);
    report.pipelineSeconds =
        std::max(report.pipelineSeconds, time.backwardEnd - hidden[index]);
    report.stageTimelines.push_back(std::move(time.steps));
  }
  if (stages > 1) {
    // The schedule's own bubble: the same programs with the data-parallel
    // collectives free (their exposed time is reported on its own), idle
    // time over the slowest stage's busy time.
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
        double(stages - 1) / (double(pp.chunks) * double(microBatches));
  }
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
          "overlap " + options.overlap);
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
                          ppChunks > 1 ? llvm::formatv(" x {0} chunks",
                                                       ppChunks).str()
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
