//===- MemoryEstimate.cpp - replay one training step per rank -------------===//
//
// The estimate is a replay, not a sum of maxima: it walks each rank kind's
// parc.program (the step parc-run executes, in its order) and keeps a
// running breakdown of live bytes, so the peak is the largest total that
// exists at one moment and the phase it happens in is known. What each step
// allocates and its highest point were sized by the lowering
// (StepMemory.cpp, ActivationTrace.cpp); of the hardware profile the replay
// reads only which collectives the ranks use (Gloo's reduce-scatter
// buffers) and the allocator it models.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/MemoryEstimate.h"

#include "parc/Analysis/FsdpUnits.h"
#include "parc/Analysis/Parallelism.h"
#include "parc/Analysis/Programs.h"
#include "parc/Analysis/StepMemory.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::parc;

namespace {

/// Steps of training the allocator replays: the first allocates AdamW's
/// moments after its backward, the second is the first to run with them
/// placed, and a third still moves some layouts (a budgeted remat's, some
/// of the layout search's); every plan of the lit suite reserves the same
/// with five.
constexpr int kAllocatorSteps = 3;

struct StepUnits {
  /// Per stage: the root's part there, then the stage's layers in
  /// execution order.
  SmallVector<UnitFootprint> roots;
  SmallVector<SmallVector<UnitFootprint>> layers;
};

FailureOr<StepUnits> collectUnits(ModelOp model) {
  FailureOr<FsdpUnitSizes> sizes = getFsdpUnitSizes(model, "estimate-memory");
  if (failed(sizes))
    return failure();
  StepUnits result;
  for (const FsdpUnitSize &root : sizes->roots)
    result.roots.push_back(getFootprint(root, sizes->shards));
  for (const auto &stage : sizes->layers) {
    auto &units = result.layers.emplace_back();
    for (const FsdpUnitSize &unit : stage)
      units.push_back(getFootprint(unit, sizes->shards));
  }
  return result;
}

/// The buffer a collective reads, when it is one of `kind`.
BufferOp bufferOf(Value operand, BufferKind kind) {
  auto buffer = operand.getDefiningOp<BufferOp>();
  return buffer && buffer.getKind() == kind ? buffer : BufferOp();
}

/// One rank kind's replay: walks its program op by op. Live bytes are the
/// program's allocations not yet freed (gathered units, saved activations,
/// what compute steps leave behind); a step with a #parc.peak reaches live
/// + peak, and a recompute's bytes join the backward that follows it.
class ProgramReplay {
public:
  ProgramReplay(RankMemory &rank, CachingAllocatorModel *allocator,
                bool glooCollectives)
      : rank(rank), allocator(allocator), glooCollectives(glooCollectives) {}

  /// The first pass counts live bytes and feeds the allocator; later passes
  /// (`counting` false) only feed it, so that a step finds the blocks the
  /// steps before it left cached.
  void run(ProgramOp program, bool counting = true) {
    this->counting = counting;
    index = 0;
    for (Operation &op : program.getBody()->getOperations()) {
      step(op);
      ++index;
    }
    // The step's gradient shards are dropped before the next (the
    // optimizer's zero_grad), as is anything else still held.
    for (auto &entry : blocks)
      release(entry.second);
    blocks.clear();
    ++pass;
  }

  MemoryBreakdown live;

  /// The allocator's view of what lives through every step: this rank's
  /// parameter shards from the start, the optimizer's moments from its
  /// first step on (AdamW creates them lazily, when the step's gradients
  /// have been made), and the temporaries of one optimizer step.
  struct Persistent {
    /// Per FSDP unit (one tensor each, where the frameworks have one per
    /// parameter: what a unit's parameters hold is contiguous and freed
    /// together, so they land where one tensor of their sum would).
    SmallVector<int64_t> parameterShards, moments, optimizerTemporaries;
    /// The for-loop AdamW's: one parameter's temporary at a time.
    int64_t largestMoment = 0;
  };
  void setPersistent(Persistent state) {
    persistent = std::move(state);
    for (int64_t bytes : persistent.parameterShards)
      place(bytes);
  }

  void note(const std::string &phase, std::optional<int64_t> at = {}) {
    currentPhase = phase;
    if (!counting)
      return;
    rank.timeline.push_back({phase, live, at.value_or(index)});
    if (live.total() > rank.peakBytes) {
      rank.peakBytes = live.total();
      rank.atPeak = live;
      rank.peakPhase = phase;
    }
  }

private:
  /// Micro-batch attributes are I64Attr, read as uint64_t.
  std::string suffix(std::optional<uint64_t> microBatch) const {
    return rank.pipelined && microBatch
               ? " (micro-batch " + std::to_string(*microBatch) + ")"
               : "";
  }

  static std::string unitName(StringRef path) {
    return path.empty() ? std::string("root") : path.str();
  }

  /// The allocator's block for `bytes` (-1: none, or out of memory, which
  /// is recorded once with the phase and the request).
  int64_t place(int64_t bytes, unsigned stream = 0) {
    if (!allocator || rank.allocatorOutOfMemory)
      return -1;
    std::optional<int64_t> address = allocator->allocate(bytes, stream);
    if (!address) {
      // What it would have reserved at least: its cache is released
      // already, so every byte on top is new.
      rank.allocatorOutOfMemory = true;
      rank.outOfMemoryPhase = currentPhase;
      rank.outOfMemoryRequest = bytes;
      rank.reservedBytes = std::max(
          rank.reservedBytes,
          allocator->reservedBytes() + CachingAllocatorModel::roundSize(bytes));
      rank.reservedPhase = currentPhase + " (out of memory)";
      return -1;
    }
    if (allocator->reservedBytes() > rank.reservedBytes) {
      rank.reservedBytes = allocator->reservedBytes();
      rank.reservedPhase =
          currentPhase +
          (pass ? " (step " + std::to_string(pass + 1) + ")" : std::string());
    }
    return *address;
  }
  void release(int64_t address) {
    if (allocator && address >= 0 && !rank.allocatorOutOfMemory)
      allocator->free(address);
  }
  /// A step's tensors exist for the step only.
  void placeTransient(StepPeakAttr peak) {
    SmallVector<int64_t> made;
    if (peak)
      for (int64_t bytes : peak.getTensors())
        made.push_back(place(bytes));
    for (int64_t address : made)
      release(address);
  }

  /// Notes `phase` with the step's peak (and `extraWorking`) added.
  void noteAtPeak(const std::string &phase, StepPeakAttr peak,
                  int64_t extraWorking = 0, std::optional<int64_t> at = {}) {
    currentPhase = phase;
    placeTransient(peak);
    MemoryBreakdown before = live;
    live.recomputeWorkingSet += extraWorking;
    if (peak) {
      live.recomputeWorkingSet += peak.getWorking();
      live.logitsAndLoss += peak.getLogits();
      live.savedActivations += peak.getSaved();
      live.gradients += peak.getGradients();
    }
    note(phase, at);
    live = before;
  }

  /// What holds a program allocation in the breakdown.
  using Holder = int64_t MemoryBreakdown::*;

  /// Notes `phase` with `bytes` more held by `holder` for that moment only
  /// (a collective's copies).
  void noteTransient(const std::string &phase, Holder holder, int64_t bytes) {
    MemoryBreakdown before = live;
    live.*holder += bytes;
    note(phase);
    live = before;
  }

  void allocate(Value value, Holder holder, bool placed = true) {
    int64_t bytes = getBufferBytes(value);
    if (placed)
      blocks[value] = place(bytes);
    if (!counting)
      return;
    live.*holder += bytes;
    allocated[value] = {bytes, holder};
  }

  void drop(Value value) {
    auto block = blocks.find(value);
    if (block != blocks.end()) {
      release(block->second);
      blocks.erase(block);
    }
  }

  /// A compute step's target as the phase names it.
  static std::string target(StringRef module, std::optional<StringRef> part) {
    if (!module.empty())
      return module.str();
    if (!part || *part == "head")
      return "head";
    return "loss";
  }

  void step(Operation &op) {
    llvm::TypeSwitch<Operation *>(&op)
        .Case([&](shard::AllGatherOp gather) {
          // FSDP2 gathers a unit into one flat tensor on its all-gather
          // stream and, once it has arrived, copies it out into the
          // parameters (on the compute stream), as parc-run does: the
          // replay counts the unit from the issue and twice at the wait,
          // the allocator places the flat buffer at the issue and the
          // copies at the wait.
          BufferOp shard = bufferOf(gather.getInput(), BufferKind::ParamShard);
          if (!shard)
            return;
          computeType[shard.getOf()] = shard.getType().getElementType();
          allocate(gather.getResult(), &MemoryBreakdown::unshardedParameters,
                   /*placed=*/false);
          flat[gather.getResult()] =
              place(getBufferBytes(gather.getResult()), /*stream=*/1);
        })
        .Case([&](shard::ReduceScatterOp scatter) {
          // The copy-in: the unit's gradients (in the compute dtype) are
          // copied into one flat buffer in the reduce dtype and dropped.
          // Where the two dtypes are one, the program's gradients are the
          // gradients alone and the buffer is a second copy for the moment;
          // otherwise it is the reduce-dtype copy they already count. Over
          // Gloo an all-to-all's receive buffer of the buffer's size and the
          // summed slice follow, with the gradients gone.
          BufferOp grad = bufferOf(scatter.getInput(), BufferKind::Gradient);
          if (!grad)
            return;
          auto compute = computeType.find(grad.getOf());
          if (compute == computeType.end())
            return;
          int64_t bytes = getBufferBytes(grad.getResult());
          bool copy = compute->second == grad.getType().getElementType();
          int64_t extra = copy ? bytes : 0;
          if (glooCollectives) {
            // The gradients the program counts, in the compute dtype.
            int64_t dropped = grad.getType().getNumElements() *
                              getElementBytes(compute->second);
            extra = std::max(extra, extra + bytes +
                                        getBufferBytes(scatter.getResult()) -
                                        dropped);
          }
          if (extra <= 0)
            return;
          noteTransient("reduce-scatter " + unitName(grad.getOf()) +
                            suffix(grad.getMicroBatch()) + " (copy-in)",
                        &MemoryBreakdown::gradients, extra);
          release(place(extra));
        })
        .Case([&](SaveOp save) {
          allocate(save.getResult(), &MemoryBreakdown::savedActivations);
        })
        .Case([&](AllocOp alloc) {
          allocate(alloc.getResult(), alloc.getKind() == AllocKind::Logits
                                          ? &MemoryBreakdown::logitsAndLoss
                                          : &MemoryBreakdown::gradients);
        })
        .Case([&](FreeOp free) {
          drop(free.getBuffer());
          auto it = allocated.find(free.getBuffer());
          if (it == allocated.end())
            return;
          // Unsharded gradients leave once reduced or added in: the moment
          // before is the one to note (the root's once per step, unnamed).
          if (auto alloc = free.getBuffer().getDefiningOp<AllocOp>();
              alloc && alloc.getKind() == AllocKind::Gradients)
            note("gradients " + unitName(alloc.getOf()) +
                 (alloc.getOf().empty() ? "" : suffix(alloc.getMicroBatch())));
          live.*it->second.second -= it->second.first;
          allocated.erase(it);
        })
        .Case([&](RecomputeStepOp recompute) {
          recomputed += recompute.getBytes();
          recomputeStep = index;
          rebuilt.push_back(place(recompute.getBytes()));
        })
        .Case([&](ForwardStepOp forward) {
          noteAtPeak("forward " +
                         target(forward.getModule(), forward.getPart()) +
                         suffix(forward.getMicroBatch()),
                     forward.getPeakAttr());
        })
        .Case([&](BackwardStepOp backward) {
          noteAtPeak("backward " +
                         target(backward.getModule(), backward.getPart()) +
                         suffix(backward.getMicroBatch()),
                     backward.getPeakAttr(), recomputed,
                     // Drawn where the rebuilding starts.
                     recomputeStep);
          recomputed = 0;
          recomputeStep.reset();
          for (int64_t address : rebuilt)
            release(address);
          rebuilt.clear();
        })
        .Case([&](WaitOp wait) {
          if (auto it = flat.find(wait.getCollective()); it != flat.end()) {
            // The copy-out: the parameters are made while the flat buffer
            // they are copied from still holds the unit. (Only gathers of
            // a param_shard have a flat buffer.)
            int64_t bytes = getBufferBytes(it->first);
            auto gather = it->first.getDefiningOp<shard::AllGatherOp>();
            BufferOp shard =
                bufferOf(gather.getInput(), BufferKind::ParamShard);
            noteTransient("all-gather " + unitName(shard.getOf()) +
                              " (copy-out)",
                          &MemoryBreakdown::unshardedParameters, bytes);
            blocks[it->first] = place(bytes);
            release(it->second);
            flat.erase(it);
            return;
          }
          auto scatter =
              wait.getCollective().getDefiningOp<shard::ReduceScatterOp>();
          BufferOp grad =
              scatter ? bufferOf(scatter.getInput(), BufferKind::Gradient)
                      : BufferOp();
          if (!grad)
            return;
          noteAtPeak("reduce-scatter " + unitName(grad.getOf()) +
                         suffix(grad.getMicroBatch()),
                     wait.getPeakAttr());
        })
        .Case([&](OptimizerStepOp) {
          note("optimizer step");
          if (pass == 0)
            for (int64_t bytes : persistent.moments) {
              place(bytes / 2);
              place(bytes - bytes / 2);
            }
          SmallVector<int64_t> temporaries;
          for (int64_t bytes : persistent.optimizerTemporaries)
            temporaries.push_back(place(bytes));
          temporaries.push_back(place(persistent.largestMoment));
          for (int64_t address : temporaries)
            release(address);
        });
  }

  RankMemory &rank;
  CachingAllocatorModel *allocator;
  /// The reduce-scatter's receive buffer and sum (HardwareProfile).
  bool glooCollectives;
  Persistent persistent;
  bool counting = true;
  /// Passes over the program done so far: steps of training.
  int pass = 0;
  std::string currentPhase = "start of step";
  /// What the program allocated and has not freed: bytes and holder.
  llvm::DenseMap<Value, std::pair<int64_t, Holder>> allocated;
  /// The allocator's blocks: the program's allocations, the flat buffers of
  /// gathers in flight, what a recompute rebuilt.
  llvm::DenseMap<Value, int64_t> blocks, flat;
  /// Each FSDP unit's compute dtype (its gathers' element type), by path.
  llvm::StringMap<Type> computeType;
  SmallVector<int64_t> rebuilt;
  int64_t recomputed = 0;
  std::optional<int64_t> recomputeStep;
  /// The program op being replayed.
  int64_t index = 0;
};

} // namespace

FailureOr<MemoryReport>
mlir::parc::estimateMemory(ModelOp model, const MemoryOptions &options) {
  FailureOr<HardwareProfile> hardware = loadHardwareProfile(
      options.hardware, options.hardwareDir, model.getLoc());
  if (failed(hardware))
    return failure();
  FailureOr<ProgramSet> set =
      getPrograms(model, "estimate-memory", options.seqLen, options.microBatch,
                  options.gradAccumulation);
  if (failed(set))
    return failure();
  ArrayRef<ProgramOp> programs = set->programs;
  int64_t seq = set->seq, batch = set->batch;
  FailureOr<StepUnits> units = collectUnits(model);
  if (failed(units))
    return failure();
  if (int64_t(programs.size()) != int64_t(units->roots.size()))
    return mlir::emitError(model->getLoc())
           << "estimate-memory: @" << model.getSymName() << " has "
           << programs.size() << " parc.program ops for " << units->roots.size()
           << " pipeline stages: run --lower-to-schedule again";
  AllocatorKind allocatorKind = options.allocator.value_or(hardware->allocator);
  MemoryReport report;
  report.hardware = *hardware;
  report.allocator = allocatorKind;
  report.seqLen = seq;
  report.microBatch = batch;
  for (ProgramOp program : programs) {
    int64_t stage = getProgramStage(program);
    if (stage < 0 || stage >= int64_t(units->roots.size()))
      // Not program.emitError(): that would print the whole program.
      return mlir::emitError(program.getLoc())
             << "estimate-memory: covers pp stage " << stage << " of "
             << units->roots.size();
    RankMemory &rank = report.ranks.emplace_back();
    bool pipelined = units->roots.size() > 1;
    rank.rankKind = pipelined ? "pp stage " + std::to_string(stage) : "fsdp";
    rank.rankCount = program.getRanks();
    rank.layers = units->layers[stage].size();
    rank.pipelined = pipelined;
    const UnitFootprint &root = units->roots[stage];
    ArrayRef<UnitFootprint> layers = units->layers[stage];
    std::optional<CachingAllocatorModel> allocator;
    if (allocatorKind != AllocatorKind::Direct)
      allocator.emplace(allocatorKind,
                        hardware->memoryBytes - hardware->fixedOverheadBytes);
    ProgramReplay replay(rank, allocator ? &*allocator : nullptr,
                         hardware->glooCollectives);
    if (allocator) {
      ProgramReplay::Persistent persistent;
      for (const UnitFootprint &unit :
           llvm::concat<const UnitFootprint>(ArrayRef(root), layers)) {
        persistent.parameterShards.push_back(unit.shardedParameters);
        persistent.moments.push_back(unit.optimizerState);
        if (options.optimizerImpl == OptimizerImpl::Foreach)
          persistent.optimizerTemporaries.push_back(unit.optimizerState / 2);
        else if (options.optimizerImpl == OptimizerImpl::ForLoop)
          persistent.largestMoment =
              std::max(persistent.largestMoment, unit.largestMoment);
      }
      replay.setPersistent(std::move(persistent));
    }
    // What lives through the whole step.
    MemoryBreakdown &live = replay.live;
    live.fixedOverhead = hardware->fixedOverheadBytes;
    live.shardedParameters += root.shardedParameters;
    live.optimizerState += root.optimizerState;
    for (const UnitFootprint &unit : layers) {
      live.shardedParameters += unit.shardedParameters;
      live.optimizerState += unit.optimizerState;
    }
    replay.note("start of step", -1);
    replay.run(program);
    if (!allocator) {
      rank.reservedBytes = rank.peakBytes - hardware->fixedOverheadBytes;
      continue;
    }
    // Later steps start from the blocks the first left cached, with the
    // optimizer's moments placed among them; a rank whose tensors alone
    // are over the device is out of memory whatever they reserve.
    for (int step = 1; step < kAllocatorSteps && !rank.allocatorOutOfMemory &&
                       rank.peakBytes <= hardware->memoryBytes;
         ++step)
      replay.run(program, /*counting=*/false);
  }
  for (size_t index = 1; index < report.ranks.size(); ++index) {
    if (report.ranks[index].peakBytes > report.ranks[report.peakRank].peakBytes)
      report.peakRank = index;
    if (report.ranks[index].devicePeakBytes() >
        report.ranks[report.deviceRank].devicePeakBytes())
      report.deviceRank = index;
  }
  return report;
}

static std::string formatBytes(int64_t bytes) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.2f GiB", double(bytes) / double(1ll << 30));
  return text;
}

void MemoryReport::print(llvm::raw_ostream &os) const {
  for (const RankMemory &rank : ranks) {
    os << "memory per rank (" << rank.rankKind << ", ";
    if (rank.pipelined)
      os << rank.layers << (rank.layers == 1 ? " layer, " : " layers, ");
    os << rank.rankCount << " ranks) on " << hardware.description << ":\n";
    auto row = [&](StringRef what, int64_t bytes) {
      os << "  " << llvm::left_justify(what, 26)
         << llvm::right_justify(formatBytes(bytes), 12) << "  "
         << llvm::format_decimal(bytes, 16) << " bytes\n";
    };
    const MemoryBreakdown &b = rank.atPeak;
    row("sharded parameters", b.shardedParameters);
    row("unsharded parameters", b.unshardedParameters);
    row("gradients", b.gradients);
    row("optimizer state", b.optimizerState);
    row("saved activations", b.savedActivations);
    row("recompute working set", b.recomputeWorkingSet);
    row("logits and loss", b.logitsAndLoss);
    row("fixed overhead", b.fixedOverhead);
    row("peak", rank.peakBytes);
    os << "  peak during: " << rank.peakPhase << "\n";
    if (allocator == AllocatorKind::Direct)
      continue;
    row("reserved by allocator", rank.reservedBytes);
    row("device peak", rank.devicePeakBytes());
    os << "  reserved (" << getAllocatorName(allocator)
       << " allocator) peaks during: " << rank.reservedPhase << "\n";
    if (rank.allocatorOutOfMemory)
      os << "  out of memory: the allocator cannot place "
         << formatBytes(rank.outOfMemoryRequest) << " during "
         << rank.outOfMemoryPhase << "\n";
  }
  os << "capacity " << formatBytes(hardware.memoryBytes) << ": "
     << (fits() ? "fits" : "DOES NOT FIT") << ", headroom "
     << formatBytes(headroomBytes());
  if (ranks.size() > 1)
    os << " on the most loaded rank (" << ranks[deviceRank].rankKind << ")";
  os << "\n";
}

void mlir::parc::recordPrediction(ModelOp model, const MemoryReport &report,
                                  const MemoryOptions &options) {
  Builder b(model.getContext());
  model->setAttr("parc.predicted_peak_bytes",
                 b.getI64IntegerAttr(report.peakBytes()));
  model->setAttr("parc.predicted_peak_phase",
                 b.getStringAttr(report.ranks[report.peakRank].peakPhase));
  model->setAttr("parc.predicted_fits", b.getBoolAttr(report.fits()));
  model->setAttr("parc.predicted_hardware", b.getStringAttr(options.hardware));
  model->setAttr("parc.predicted_seq_len", b.getI64IntegerAttr(report.seqLen));
  model->setAttr("parc.predicted_micro_batch",
                 b.getI64IntegerAttr(report.microBatch));
  // One rank kind per pipeline stage, in stage order.
  if (report.ranks.size() > 1) {
    SmallVector<int64_t> peaks;
    for (const RankMemory &rank : report.ranks)
      peaks.push_back(rank.peakBytes);
    model->setAttr("parc.predicted_stage_peak_bytes",
                   b.getDenseI64ArrayAttr(peaks));
  } else {
    model->removeAttr("parc.predicted_stage_peak_bytes");
  }
}
