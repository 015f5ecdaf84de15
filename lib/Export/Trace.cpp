//===- Trace.cpp - a plan's schedule as Chrome trace-event JSON -----------===//
//
// Both analyses walk the same parc.program: the cost model's timeline
// gives each program step's time on its stream, the memory replay the live
// bytes at each of its notes with the step it was taken at. A note is drawn
// at that step (a compute step's start, a collective's issue); notes stay in
// program order: one that would fall before the previous note is placed
// just after it. Events carry the program step as parc-run's trace does.
//
//===----------------------------------------------------------------------===//

#include "parc/Export/Trace.h"

#include "llvm/ADT/DenseMap.h"
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

/// Where each program step was timed: a memory note is drawn at the op
/// it was taken at, both replays walking the same program.
struct StepIndex {
  llvm::DenseMap<int64_t, const TimedStep *> byStep;
  explicit StepIndex(const std::vector<TimedStep> &steps) {
    for (const TimedStep &step : steps)
      if (step.programStep >= 0)
        byStep.try_emplace(step.programStep, &step);
  }

  /// The time of `note`: a compute step's start, a collective's issue;
  /// none for an op nothing times (a save, a free).
  std::optional<double> anchor(const MemorySample &note) const {
    if (note.step < 0)
      return 0.0;
    const TimedStep *step = byStep.lookup(note.step);
    if (!step)
      return std::nullopt;
    if (step->stream == TimedStep::Communication)
      return step->issued;
    return step->start;
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
          if (step.programStep >= 0)
            j.attribute("program_step", step.programStep);
        });
      });
    }

  // The memory counter: every note of the replay, at the program step it
  // was taken at.
  StepIndex index(stepTimeline);
  double previous = -std::numeric_limits<double>::infinity();
  std::optional<double> peakTime;
  for (const MemorySample &note : rank.timeline) {
    std::optional<double> anchor = index.anchor(note);
    double at = previous == -std::numeric_limits<double>::infinity()
                    ? anchor.value_or(0)
                    : std::max(anchor.value_or(previous), previous + kNudge);
    previous = at;
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
  }

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
  llvm::json::OStream j(os);
  j.object([&] {
    j.attribute("displayTimeUnit", "ms");
    j.attributeArray("traceEvents", [&] {
      for (auto [index, rank] : llvm::enumerate(memory.ranks))
        writeRank(j, int(index) + 1, rank, cost.getStepTimeline(index));
    });
    j.attributeObject("otherData", [&] {
      j.attribute("hardware", memory.hardware.name);
      j.attribute("peak_bytes", memory.peakBytes());
      j.attribute("step_time_s", cost.stepSeconds);
      j.attribute("overlap", cost.options.overlap.str());
    });
  });
  os << "\n";
}
