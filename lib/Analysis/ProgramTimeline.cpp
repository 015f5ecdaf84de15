//===- ProgramTimeline.cpp - the lowered programs on two streams ----------===//
//
// Each program advances op by op while its dependencies are known; a
// receive whose send another program has not reached yet parks it, and the
// programs are stepped round-robin until every one has finished. That is
// a dataflow simulation: each program owns its streams, so the order in
// which programs are stepped does not change any time.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/ProgramTimeline.h"

#include "parc/Analysis/LinkModel.h"
#include "parc/Analysis/Parallelism.h"
#include "parc/Analysis/Programs.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/TypeSwitch.h"

#include <deque>
#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::parc;

namespace {

BufferOp bufferOf(Value operand) { return operand.getDefiningOp<BufferOp>(); }

/// The name parc-run's trace gives a compute step of `module` / `part`.
StringRef partName(StringRef module, std::optional<StringRef> part) {
  if (!module.empty())
    return module;
  return part && *part == "head" ? "embedding" : "loss";
}

StringRef unitName(StringRef path) { return path.empty() ? "root" : path; }

/// One pipeline transfer: from stage, to stage, gradients or not,
/// micro-batch. Sends and receives of one key pair up in program order.
using TransferKey = std::tuple<int64_t, int64_t, bool, int64_t>;

struct Simulation {
  const StepPricing &pricing;
  std::map<TransferKey, std::deque<double>> sent;
  TimedStep scratch;

  struct Program {
    ProgramOp op;
    int64_t stage = 0;
    std::vector<Operation *> ops;
    size_t next = 0;
    ProgramTime time;
    /// The compute stream's position, and when each other stream frees up.
    double t = 0, commFree = 0, p2pFree = 0;
    /// When the last FSDP collective issued so far ends.
    double fsdpFree = 0;
    /// When each FSDP gather lands (its parc.wait stalls until then); the
    /// receive the next compute step needs.
    llvm::DenseMap<Value, double> landing;
    double received = 0;
    int64_t microBatch = 0;
    size_t lastCompute = SIZE_MAX;
  };
  std::vector<Program> programs;

  explicit Simulation(const StepPricing &pricing) : pricing(pricing) {}

  /// A ring collective over `grid`'s link, among its whole axis or
  /// `group` ranks of it.
  double linkSeconds(StringRef grid, double bytes, bool allReduce,
                     int64_t group = 0) const {
    return ringSeconds(bytes, group ? group : pricing.groupSize.lookup(grid),
                       pricing.bandwidth.lookup(grid), allReduce);
  }

  /// The step's entry on the timeline (a scratch entry when none is kept).
  TimedStep &record(Program &p, size_t index, const Twine &name,
                    TimedStep::Stream stream, double start, double duration) {
    if (!pricing.timeline)
      return scratch = TimedStep();
    TimedStep step;
    step.name = name.str();
    step.stream = stream;
    step.start = start;
    step.duration = duration;
    step.issued = p.t;
    step.microBatch = p.microBatch;
    step.programStep = int64_t(index);
    p.time.steps.push_back(std::move(step));
    return p.time.steps.back();
  }

  /// A collective on the communication stream, issued now.
  double issue(Program &p, size_t index, const Twine &name, double seconds,
               double bytes, bool fsdp) {
    double start = std::max(p.t, p.commFree);
    p.commFree = start + seconds;
    record(p, index, name, TimedStep::Communication, start, seconds)
        .bytes = bytes;
    if (fsdp)
      p.fsdpFree = p.commFree;
    if (fsdp && pricing.blocking) {
      p.time.fsdpWait += p.commFree - p.t;
      p.t = p.commFree;
    }
    return p.commFree;
  }

  /// A compute step: it waits for the receive (its gathers were waited
  /// for by the program's parc.wait steps before it).
  void compute(Program &p, size_t index, const Twine &name, double flops) {
    double start = std::max(p.t, p.received);
    p.time.recvWait += std::max(0.0, p.received - p.t);
    double seconds = flops / pricing.achievedFlops;
    TimedStep &step =
        record(p, index, name, TimedStep::Compute, start, seconds);
    step.flops = flops;
    step.issued = start;
    p.t = start + seconds;
    p.time.compute += seconds;
    p.time.backwardEnd = p.t;
    p.lastCompute = pricing.timeline ? p.time.steps.size() - 1 : SIZE_MAX;
  }

  /// A TP collective blocks the compute step it belongs to: its time joins
  /// that step's.
  void blockCompute(Program &p, double seconds) {
    p.t += seconds;
    p.time.compute += seconds;
    p.time.backwardEnd = p.t;
    if (p.lastCompute != SIZE_MAX)
      p.time.steps[p.lastCompute].duration += seconds;
  }

  FlopCount flopsOf(StringRef module, std::optional<StringRef> part) const {
    if (!module.empty())
      return pricing.layers.lookup(module);
    return part && *part == "head" ? pricing.head : pricing.tail;
  }

  /// Runs `p`'s next op; false when it waits on another program's send.
  bool step(Program &p) {
    Operation *op = p.ops[p.next];
    size_t index = p.next;
    bool ran = true;
    llvm::TypeSwitch<Operation *>(op)
        .Case([&](ForwardStepOp forward) { runForward(p, index, forward); })
        .Case([&](RecomputeStepOp recompute) {
          runRecompute(p, index, recompute);
        })
        .Case([&](BackwardStepOp backward) { runBackward(p, index, backward); })
        .Case([&](shard::AllGatherOp gather) {
          runAllGather(p, index, gather);
        })
        .Case([&](WaitOp wait) { runWait(p, index, wait); })
        .Case([&](shard::ReduceScatterOp scatter) {
          runReduceScatter(p, index, scatter);
        })
        .Case([&](shard::AllReduceOp reduce) {
          runAllReduce(p, index, reduce);
        })
        .Case([&](shard::SendOp send) { runSend(p, index, send); })
        .Case([&](shard::RecvOp recv) { ran = runRecv(p, recv); })
        .Case([&](ClipGradNormOp) {
          // The global norm reads every gradient shard once; the scaling
          // is in place.
          auto update = dyn_cast_or_null<OptimizerStepOp>(op->getNextNode());
          afterReductions(p, index, "clip grad norm",
                          update ? double(update.getParams()) *
                                       pricing.gradientBytesPerElement
                                 : 0);
        })
        .Case([&](OptimizerStepOp optimizer) {
          afterReductions(p, index, "optimizer step",
                          double(optimizer.getParams()) *
                              pricing.optimizerBytesPerElement);
          p.time.end = p.t;
        });
    if (ran)
      ++p.next;
    return ran;
  }

  void runForward(Program &p, size_t index, ForwardStepOp forward) {
    p.microBatch = forward.getMicroBatch();
    FlopCount flops = flopsOf(forward.getModule(), forward.getPart());
    p.time.flops.forward += flops.forward;
    p.time.flops.matmulForward += flops.matmulForward;
    p.time.flops.attentionForward += flops.attentionForward;
    compute(p, index,
            "forward " + partName(forward.getModule(), forward.getPart()),
            flops.forward);
  }

  void runRecompute(Program &p, size_t index, RecomputeStepOp recompute) {
    p.microBatch = recompute.getMicroBatch();
    FlopCount flops = flopsOf(recompute.getModule(), std::nullopt);
    p.time.flops.recompute += flops.recompute;
    compute(p, index, "recompute " + recompute.getModule(), flops.recompute);
  }

  void runBackward(Program &p, size_t index, BackwardStepOp backward) {
    p.microBatch = backward.getMicroBatch();
    FlopCount flops = flopsOf(backward.getModule(), backward.getPart());
    // The root's recompute (none today) runs inside its backward.
    double seconds = flops.backward;
    if (backward.getModule().empty())
      seconds += flops.recompute;
    p.time.flops.backward += flops.backward;
    if (backward.getModule().empty())
      p.time.flops.recompute += flops.recompute;
    compute(p, index,
            "backward " + partName(backward.getModule(), backward.getPart()),
            seconds);
  }

  /// An FSDP gather of a parameter shard, or a TP gather of an activation.
  void runAllGather(Program &p, size_t index, shard::AllGatherOp gather) {
    BufferOp buffer = bufferOf(gather.getInput());
    double bytes = double(getBufferBytes(gather.getResult()));
    if (!buffer || buffer.getKind() != BufferKind::ParamShard)
      return tensorParallel(p, bytes, /*allReduce=*/false);
    p.landing[gather.getResult()] =
        fsdpCollective(p, index, "all-gather ", buffer, bytes,
                       gather.getGrid(), p.time.allGather);
  }

  /// The compute stream stalls for what of the collective the steps since
  /// its issue did not hide.
  void runWait(Program &p, size_t index, WaitOp wait) {
    Value pending = wait.getCollective();
    double stall = std::max(0.0, p.landing.lookup(pending) - p.t);
    Operation *issue = pending.getDefiningOp();
    BufferOp buffer = issue && issue->getNumOperands() == 1
                          ? bufferOf(issue->getOperand(0))
                          : BufferOp();
    record(p, index,
           (isa_and_nonnull<shard::ReduceScatterOp>(issue)
                ? "wait reduce-scatter "
                : "wait all-gather ") +
               unitName(buffer ? buffer.getOf() : ""),
           TimedStep::Compute, p.t, stall);
    p.time.fsdpWait += stall;
    p.t += stall;
  }

  /// An FSDP reduce-scatter of a unit's gradients, or a TP one of an
  /// activation.
  void runReduceScatter(Program &p, size_t index,
                        shard::ReduceScatterOp scatter) {
    BufferOp buffer = bufferOf(scatter.getInput());
    double bytes = double(getBufferBytes(scatter.getInput()));
    if (!buffer || buffer.getKind() != BufferKind::Gradient)
      return tensorParallel(p, bytes, /*allReduce=*/false);
    p.landing[scatter.getResult()] =
        fsdpCollective(p, index, "reduce-scatter ", buffer, bytes,
                       scatter.getGrid(), p.time.reduceScatter);
  }

  /// A TP all-reduce blocks compute; one over the replicas (dp) or the
  /// stages holding a tied copy (pp, over the group in parc.group) runs on
  /// the communication stream.
  void runAllReduce(Program &p, size_t index, shard::AllReduceOp reduce) {
    double bytes = double(getBufferBytes(reduce.getInput()));
    StringRef grid = reduce.getGrid();
    if (grid == kTpGridName)
      return tensorParallel(p, bytes, /*allReduce=*/true);
    BufferOp buffer = bufferOf(reduce.getInput());
    if (!buffer)
      if (auto scatter =
              reduce.getInput().getDefiningOp<shard::ReduceScatterOp>())
        buffer = bufferOf(scatter.getInput());
    int64_t group = 0;
    if (auto holders = reduce->getAttrOfType<DenseI64ArrayAttr>("parc.group"))
      group = holders.size();
    double seconds = linkSeconds(grid, bytes, true, group);
    Traffic &traffic = grid == kPpGridName ? p.time.tied : p.time.dp;
    traffic.bytes += bytes;
    traffic.seconds += seconds;
    ++traffic.count;
    issue(p, index,
          "all-reduce " + grid + " " + unitName(buffer ? buffer.getOf() : ""),
          seconds, bytes, /*fsdp=*/false);
  }

  /// The transfer a pipeline send or receive of `buffer` belongs to.
  TransferKey transferKey(const Program &p, BufferOp buffer, int64_t from,
                          int64_t to) const {
    bool grads = buffer && buffer.getKind() == BufferKind::ActivationGrad;
    int64_t mb = buffer && buffer.getMicroBatch()
                     ? int64_t(*buffer.getMicroBatch())
                     : p.microBatch;
    return {from, to, grads, mb};
  }

  /// A pipeline send on the transfer stream; the receive of the other
  /// stage's program waits until it lands.
  void runSend(Program &p, size_t index, shard::SendOp send) {
    BufferOp buffer = bufferOf(send.getInput());
    TransferKey key =
        transferKey(p, buffer, p.stage, send.getDestination().front());
    double bytes = double(getBufferBytes(send.getInput()));
    double seconds = transferSeconds(bytes, pricing.bandwidth.lookup("p2p"));
    double start = std::max(p.t, p.p2pFree);
    p.p2pFree = start + seconds;
    TimedStep &timed = record(p, index,
                              std::get<2>(key) ? "send activation gradients"
                                               : "send activations",
                              TimedStep::Communication, start, seconds);
    timed.bytes = bytes;
    p.time.p2p.bytes += bytes;
    p.time.p2p.seconds += seconds;
    ++p.time.p2p.count;
    sent[key].push_back(p.p2pFree);
  }

  /// A pipeline receive: false until the matching send has run.
  bool runRecv(Program &p, shard::RecvOp recv) {
    std::optional<ArrayRef<int64_t>> source = recv.getSource();
    int64_t from = source && !source->empty() ? source->front() : -1;
    auto it = sent.find(
        transferKey(p, bufferOf(recv.getInput()), from, p.stage));
    if (it == sent.end() || it->second.empty())
      return false;
    p.received = std::max(p.received, it->second.front());
    it->second.pop_front();
    return true;
  }

  /// An FSDP all-gather or reduce-scatter of `buffer`'s unit; returns when
  /// it lands.
  double fsdpCollective(Program &p, size_t index, StringRef what,
                        BufferOp buffer, double bytes, StringRef grid,
                        Traffic &traffic) {
    double seconds = linkSeconds(grid, bytes, false);
    traffic.bytes += bytes;
    traffic.seconds += seconds;
    ++traffic.count;
    return issue(p, index, what + unitName(buffer.getOf()), seconds, bytes,
                 /*fsdp=*/true);
  }

  /// A memory-bound step of `bytes` that waits for every reduction of the
  /// step: the gradient clipping and the optimizer, reported together as
  /// the optimizer step.
  void afterReductions(Program &p, size_t index, StringRef name,
                       double bytes) {
    double start = std::max(p.t, p.commFree);
    p.time.fsdpWait += std::max(0.0, p.fsdpFree - p.t);
    double seconds = bytes / pricing.memoryBandwidth;
    p.microBatch = -1;
    TimedStep &timed =
        record(p, index, name, TimedStep::Compute, start, seconds);
    timed.bytes = bytes;
    timed.issued = start;
    p.time.optimizerBytes += bytes;
    p.time.optimizerSeconds += seconds;
    p.t = start + seconds;
  }

  void tensorParallel(Program &p, double bytes, bool allReduce) {
    double seconds = linkSeconds(kTpGridName, bytes, allReduce);
    p.time.tp.bytes += bytes;
    p.time.tp.seconds += seconds;
    ++p.time.tp.count;
    blockCompute(p, seconds);
  }
};

} // namespace

FailureOr<std::vector<ProgramTime>>
mlir::parc::simulatePrograms(ArrayRef<ProgramOp> programs,
                             const StepPricing &pricing) {
  Simulation sim(pricing);
  for (ProgramOp op : programs) {
    Simulation::Program &p = sim.programs.emplace_back();
    p.op = op;
    p.stage = getProgramStage(op);
    for (Operation &step : op.getBody()->getOperations())
      p.ops.push_back(&step);
  }
  for (bool progress = true; progress;) {
    progress = false;
    for (Simulation::Program &p : sim.programs)
      while (p.next < p.ops.size() && sim.step(p))
        progress = true;
  }
  std::vector<ProgramTime> result;
  for (Simulation::Program &p : sim.programs) {
    if (p.next < p.ops.size())
      return p.ops[p.next]->emitError()
             << "estimate-cost: parc.program @" << p.op.getSymName()
             << " waits here on a send no program makes";
    result.push_back(std::move(p.time));
  }
  return result;
}
