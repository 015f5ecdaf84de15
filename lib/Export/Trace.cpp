//===- Trace.cpp - a plan's schedule as Chrome trace-event JSON -----------===//
//
// The cost model's replay gives the times of the compute steps and the
// collectives; the memory replay gives the live bytes at each of its notes,
// in the same order of events. A note is placed at the step it describes:
// "forward P" at the start of P's forward, "backward P" at the start of P's
// recompute (or backward), "reduce-scatter P" when P's reduce-scatter is
// issued, the loss notes inside the root's compute. Notes stay in replay
// order: one that would fall before the previous note is placed just after
// it.
//
//===----------------------------------------------------------------------===//

#include "parc/Export/Trace.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

#include <limits>

using namespace mlir;
using namespace mlir::parc;

namespace {

constexpr int kComputeTid = 1, kCommunicationTid = 2;
/// Seconds between two notes that would otherwise share a time, so that
/// each one is seen (a nanosecond).
constexpr double kNudge = 1e-9;

double toMicros(double seconds) { return seconds * 1e6; }

/// Where each named step of one micro-batch is, first occurrence.
struct StepIndex {
  llvm::StringMap<const TimedStep *> compute, communication;
  explicit StepIndex(const std::vector<TimedStep> &steps) {
    for (const TimedStep &step : steps)
      (step.stream == TimedStep::Compute ? compute : communication)
          .try_emplace(step.name, &step);
  }

  /// The time of memory note `phase` within the micro-batch; none when no
  /// step matches.
  std::optional<double> anchor(StringRef phase) const {
    auto start = [&](const llvm::StringMap<const TimedStep *> &map,
                     StringRef name) -> std::optional<double> {
      auto it = map.find(name);
      if (it == map.end())
        return std::nullopt;
      return it->second->start;
    };
    if (phase == "forward all-gather root")
      return start(communication, "all-gather root");
    if (phase == "backward lm_head") {
      auto it = compute.find("backward loss");
      if (it == compute.end())
        return std::nullopt;
      return it->second->start + it->second->duration / 2;
    }
    if (phase == "forward loss" || phase == "backward loss")
      return start(compute, phase);
    if (phase.consume_front("backward ")) {
      if (auto recompute = start(compute, ("recompute " + phase).str()))
        return recompute;
      return start(compute, ("backward " + phase).str());
    }
    if (phase.starts_with("forward "))
      return start(compute, phase);
    if (phase.consume_front("reduce-scatter ")) {
      auto it = communication.find(("reduce-scatter " + phase).str());
      if (it != communication.end())
        return it->second->issued;
      auto backward = compute.find(("backward " + phase).str());
      if (backward != compute.end())
        return backward->second->start + backward->second->duration;
    }
    return std::nullopt;
  }
};

void writeBreakdown(llvm::json::OStream &j, int64_t total,
                    const MemoryBreakdown &b) {
  j.attribute("total", total);
  j.attribute("sharded_parameters", b.shardedParameters);
  j.attribute("unsharded_parameters", b.unshardedParameters);
  j.attribute("gradients", b.gradients);
  j.attribute("optimizer_state", b.optimizerState);
  j.attribute("saved_activations", b.savedActivations);
  j.attribute("recompute_working_set", b.recomputeWorkingSet);
  j.attribute("logits_and_loss", b.logitsAndLoss);
  j.attribute("fixed_overhead", b.fixedOverhead);
}

void writeMetadata(llvm::json::OStream &j, int pid, std::optional<int> tid,
                   StringRef what, StringRef name) {
  j.object([&] {
    j.attribute("ph", "M");
    j.attribute("pid", pid);
    if (tid)
      j.attribute("tid", *tid);
    j.attribute("name", what);
    j.attributeObject("args", [&] { j.attribute("name", name); });
  });
}

void writeRank(llvm::json::OStream &j, int pid, const RankMemory &rank,
               const CostReport &cost,
               const std::vector<TimedStep> &stepTimeline) {
  writeMetadata(j, pid, std::nullopt, "process_name",
                (rank.rankKind + " (" + llvm::Twine(rank.rankCount) +
                 (rank.rankCount == 1 ? " rank)" : " ranks)"))
                    .str());
  writeMetadata(j, pid, kComputeTid, "thread_name", "compute");
  writeMetadata(j, pid, kCommunicationTid, "thread_name", "communication");

  for (TimedStep::Stream stream :
       {TimedStep::Compute, TimedStep::Communication})
    for (const TimedStep &step : stepTimeline) {
      if (step.stream != stream)
        continue;
      j.object([&] {
        bool isCompute = stream == TimedStep::Compute;
        j.attribute("ph", "X");
        j.attribute("pid", pid);
        j.attribute("tid", isCompute ? kComputeTid : kCommunicationTid);
        j.attribute("name", step.name);
        j.attribute("cat", isCompute ? "compute" : "communication");
        double ts = toMicros(step.start);
        j.attribute("ts", ts);
        j.attribute("dur",
                    std::max(0.0, toMicros(step.start + step.duration) - ts));
        j.attributeObject("args", [&] {
          if (step.microBatch >= 0)
            j.attribute("micro_batch", step.microBatch);
          if (isCompute && step.microBatch >= 0)
            j.attribute("flops", step.flops);
          else
            j.attribute("bytes", step.bytes);
          if (!isCompute)
            j.attribute("issued_us", toMicros(step.issued));
        });
      });
    }

  // The memory counter: every note of the replay, each micro-batch's notes
  // repeated at its offset; the start of the step once, the optimizer step
  // after the last micro-batch.
  // A pipelined step is replayed whole per stage: its notes name their
  // micro-batch and are anchored once each.
  bool pipelined = cost.ppStages > 1;
  StepIndex index(pipelined ? stepTimeline : cost.microBatchTimeline);
  double previous = -std::numeric_limits<double>::infinity();
  std::optional<double> peakTime;
  auto place = [&](std::optional<double> anchor) {
    double at = previous == -std::numeric_limits<double>::infinity()
                    ? anchor.value_or(0)
                    : std::max(anchor.value_or(previous), previous + kNudge);
    previous = at;
    return at;
  };
  auto sample = [&](const MemorySample &note, double at) {
    int64_t total = note.live.total();
    if (!peakTime && note.phase == rank.peakPhase && total == rank.peakBytes)
      peakTime = at;
    j.object([&] {
      j.attribute("ph", "C");
      j.attribute("pid", pid);
      j.attribute("name", "memory");
      j.attribute("ts", toMicros(at));
      j.attributeObject("args", [&] { writeBreakdown(j, total, note.live); });
    });
  };
  int64_t microBatches =
      pipelined ? 1 : std::max<int64_t>(1, cost.options.gradAccumulation);
  double optimizerStart = pipelined
                              ? cost.pipelineSeconds
                              : double(microBatches) * cost.microBatchSeconds;
  for (const MemorySample &note : rank.timeline)
    if (note.phase == "start of step")
      sample(note, place(0.0));
  for (int64_t micro = 0; micro < microBatches; ++micro) {
    double offset = double(micro) * cost.microBatchSeconds;
    for (const MemorySample &note : rank.timeline) {
      if (note.phase == "start of step" || note.phase == "optimizer step")
        continue;
      std::optional<double> anchor = index.anchor(note.phase);
      sample(note, place(anchor ? std::optional<double>(*anchor + offset)
                                : std::nullopt));
    }
  }
  for (const MemorySample &note : rank.timeline)
    if (note.phase == "optimizer step")
      sample(note, place(optimizerStart));

  if (peakTime)
    j.object([&] {
      j.attribute("ph", "i");
      j.attribute("s", "t");
      j.attribute("pid", pid);
      j.attribute("tid", kComputeTid);
      j.attribute("name", "peak: " + rank.peakPhase);
      j.attribute("ts", toMicros(*peakTime));
      j.attributeObject(
          "args", [&] { writeBreakdown(j, rank.peakBytes, rank.atPeak); });
    });
}

} // namespace

void mlir::parc::writeTrace(llvm::raw_ostream &os, const MemoryReport &memory,
                            const CostReport &cost) {
  std::vector<TimedStep> stepTimeline = cost.getStepTimeline();
  llvm::json::OStream j(os);
  j.object([&] {
    j.attribute("displayTimeUnit", "ms");
    j.attributeArray("traceEvents", [&] {
      for (auto [index, rank] : llvm::enumerate(memory.ranks))
        writeRank(j, int(index) + 1, rank, cost,
                  cost.ppStages > 1 ? cost.getStepTimeline(index)
                                    : stepTimeline);
    });
    j.attributeObject("otherData", [&] {
      j.attribute("hardware", memory.hardware.name);
      j.attribute("peak_bytes", memory.peakBytes());
      j.attribute("step_time_s", cost.stepSeconds);
      j.attribute("overlap", cost.options.overlap);
    });
  });
  os << "\n";
}
