//===- PlanAdvice.cpp - what makes a plan that does not fit fit -----------===//
//
// Each change is a few recipe keys set over the user's recipe and planned
// as a CandidatePlanner candidate, so the advice's numbers are what the
// recipe with that change plans to. The global batch stays the user's: a
// change that shrinks the data-parallel ranks or the micro-batch runs more
// micro-batches per step instead.
//
//===----------------------------------------------------------------------===//

#include "parc/Plan/PlanAdvice.h"

#include "llvm/ADT/StringExtras.h"

#include <optional>

using namespace mlir;
using namespace mlir::parc;

namespace {

/// One change to the request, as what it sets; what it leaves unset keeps
/// the request's value. Changes compose: factors multiply, and two changes
/// that set the same value do not combine.
struct Change {
  std::optional<std::string> remat;
  std::optional<bool> reshardAfterForward;
  std::optional<std::string> gradSync;
  std::optional<int64_t> microBatchSize;
  /// TP and PP take their factor from the FSDP shards; more nodes add to
  /// them.
  int64_t tpFactor = 1, ppFactor = 1, nodeFactor = 1;

  bool combines(const Change &other) const {
    return !(remat && other.remat) &&
           !(reshardAfterForward && other.reshardAfterForward) &&
           !(gradSync && other.gradSync) &&
           !(microBatchSize && other.microBatchSize);
  }
  Change operator+(const Change &other) const {
    Change sum = *this;
    if (other.remat)
      sum.remat = other.remat;
    if (other.reshardAfterForward)
      sum.reshardAfterForward = other.reshardAfterForward;
    if (other.gradSync)
      sum.gradSync = other.gradSync;
    if (other.microBatchSize)
      sum.microBatchSize = other.microBatchSize;
    sum.tpFactor *= other.tpFactor;
    sum.ppFactor *= other.ppFactor;
    sum.nodeFactor *= other.nodeFactor;
    return sum;
  }
};

/// `change` applied to `request` as settings over `base`, named by what it
/// changes; nothing when the layout or the batch does not divide. The
/// global batch stays the request's unless more nodes cannot split it, when
/// each rank keeps its batch.
std::optional<PlanAdvice> compose(const PlanRequest &request,
                                  ArrayRef<RecipeSetting> base,
                                  const Change &change) {
  int64_t tp = request.tp * change.tpFactor, pp = request.pp * change.ppFactor;
  int64_t nodes = request.nodes * change.nodeFactor;
  int64_t shards = request.fsdp * change.nodeFactor;
  int64_t split = change.tpFactor * change.ppFactor;
  if (shards % split != 0 || tp > request.gpusPerNode)
    return std::nullopt;
  int64_t fsdp = shards / split;
  int64_t mbs = change.microBatchSize.value_or(request.microBatchSize);
  int64_t perStep = mbs * request.dp * fsdp;
  int64_t gbs = request.globalBatchSize;
  if (gbs % perStep != 0)
    gbs *= change.nodeFactor;
  if (gbs % perStep != 0)
    return std::nullopt;

  PlanAdvice advice;
  std::vector<RecipeSetting> &settings = advice.candidate.settings;
  settings.assign(base.begin(), base.end());
  SmallVector<std::string> names;
  auto set = [&](StringRef key, const llvm::Twine &value) {
    settings.push_back(makeAutoSetting(key, value));
  };
  if (change.remat) {
    names.push_back("remat " + *change.remat);
    set("parallel.remat", *change.remat);
    set("parallel.remat_scope", "all");
  }
  if (change.reshardAfterForward) {
    names.push_back("reshard after forward");
    set("parallel.fsdp_reshard_after_forward", "true");
  }
  if (change.gradSync) {
    names.push_back("gradient sync " + *change.gradSync);
    set("parallel.fsdp_grad_sync", *change.gradSync);
  }
  if (change.microBatchSize) {
    names.push_back("micro-batch " + std::to_string(mbs) +
                    " (grad accumulation " + std::to_string(gbs / perStep) +
                    ")");
    set("train.micro_batch_size", llvm::Twine(mbs));
  }
  if (tp != request.tp) {
    names.push_back("tp " + std::to_string(tp));
    set("parallel.tp", llvm::Twine(tp));
    set("parallel.sequence_parallel", "true");
    set("parallel.loss_parallel", "true");
  }
  if (pp != request.pp) {
    names.push_back("pp " + std::to_string(pp));
    set("parallel.pp", llvm::Twine(pp));
  }
  if (fsdp != request.fsdp) {
    names.push_back("fsdp " + std::to_string(fsdp));
    set("parallel.fsdp", llvm::Twine(fsdp));
  }
  if (nodes != request.nodes) {
    names.push_back(std::to_string(nodes) + " nodes (" +
                    std::to_string(nodes * request.gpusPerNode) + " GPUs)");
    set("cluster.nodes", llvm::Twine(nodes));
    set("cluster.gpus_per_node", llvm::Twine(request.gpusPerNode));
    set("cluster.gpus", llvm::Twine(nodes * request.gpusPerNode));
  }
  if (gbs != request.globalBatchSize)
    names.push_back("global batch " + std::to_string(gbs));
  set("train.global_batch_size", llvm::Twine(gbs));
  set("parallel.microbatches", llvm::Twine(gbs / perStep));
  advice.change = llvm::join(names, ", ");
  return advice;
}

int getRematWeight(StringRef remat) {
  if (remat == "none")
    return 0;
  if (remat == "selective")
    return 1;
  return remat == "full" ? 3 : 2; // every:N and budget sit between
}

/// The single changes worth trying on `request`, in the order a
/// practitioner tries them: the same GPUs and layout (recompute, the FSDP
/// policies that hold memory for speed off, a smaller micro-batch), another
/// layout of the same GPUs (half the FSDP shards to TP or PP), twice the
/// nodes.
std::vector<Change> getSingleChanges(const PlanRequest &request) {
  std::vector<Change> changes;
  for (StringRef remat : {"selective", "budget", "full"}) {
    // The budget recomputes least among the plans that fit with the
    // margin; it is no help where full remat is already asked for, and
    // needs one pipeline stage.
    if (remat == "budget") {
      if (request.pp == 1 && request.remat != "full" &&
          request.remat != "budget")
        changes.push_back(Change{remat.str()});
      continue;
    }
    if (getRematWeight(remat) > getRematWeight(request.remat) ||
        (remat == request.remat && request.rematScope != "all"))
      changes.push_back(Change{remat.str()});
  }
  if (!request.reshardAfterForward)
    changes.push_back(Change{std::nullopt, true});
  if (request.fsdpGradSync == "last-micro-batch")
    changes.push_back(
        Change{std::nullopt, std::nullopt, std::string("every-micro-batch")});
  if (request.microBatchSize > 1)
    changes.push_back(Change{std::nullopt, std::nullopt, std::nullopt,
                             request.microBatchSize / 2});
  Change tp, pp, nodes;
  tp.tpFactor = 2;
  pp.ppFactor = 2;
  nodes.nodeFactor = 2;
  llvm::append_range(changes, std::initializer_list<Change>{tp, pp, nodes});
  return changes;
}

} // namespace

std::vector<PlanAdvice> mlir::parc::planAdvice(const PlanInvocation &invocation,
                                               const PlanRequest &request,
                                               ArrayRef<RecipeSetting> base) {
  std::vector<Change> changes;
  std::vector<PlanAdvice> advice;
  for (const Change &change : getSingleChanges(request))
    if (std::optional<PlanAdvice> one = compose(request, base, change)) {
      changes.push_back(change);
      advice.push_back(std::move(*one));
    }
  planInParallel(invocation, advice.size(),
                 [&](CandidatePlanner &planner, size_t index) {
                   planner.plan(advice[index].candidate);
                 });
  if (llvm::any_of(advice,
                   [](const PlanAdvice &a) { return a.candidate.fits; }))
    return advice;

  // No single change is enough: combine them, the one that saves most
  // first, keeping each that lowers the peak, until the plan fits.
  SmallVector<size_t> order;
  for (auto [index, a] : llvm::enumerate(advice))
    if (a.candidate.planned)
      order.push_back(index);
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    return advice[a].candidate.peakBytes < advice[b].candidate.peakBytes;
  });
  if (order.empty())
    return advice;
  Change sum = changes[order.front()];
  int64_t peak = advice[order.front()].candidate.peakBytes;
  CandidatePlanner planner(invocation);
  for (size_t index : ArrayRef(order).drop_front()) {
    if (!sum.combines(changes[index]))
      continue;
    std::optional<PlanAdvice> combined =
        compose(request, base, sum + changes[index]);
    if (!combined)
      continue;
    planner.plan(combined->candidate);
    if (!combined->candidate.planned || combined->candidate.peakBytes >= peak)
      continue;
    sum = sum + changes[index];
    peak = combined->candidate.peakBytes;
    combined->combined = true;
    bool fits = combined->candidate.fits;
    advice.push_back(std::move(*combined));
    if (fits)
      break;
  }
  return advice;
}

namespace {

std::string formatStepChange(double seconds, double base) {
  if (base <= 0)
    return "";
  double percent = 100 * (seconds - base) / base;
  return (percent >= 0 ? "+" : "") + formatFixed(percent, 1) + " %";
}

} // namespace

void mlir::parc::printAdvice(ArrayRef<PlanAdvice> advice, double stepSeconds,
                             llvm::raw_ostream &out) {
  SmallVector<const PlanAdvice *> fitting, notFitting;
  for (const PlanAdvice &a : advice)
    (a.candidate.fits ? fitting : notFitting).push_back(&a);
  if (fitting.empty()) {
    out << "advice: no single change fits";
  } else {
    out << (fitting.front()->combined
                ? "advice: no single change fits; together, planned"
                : "advice: changes that fit, each planned")
        << (stepSeconds > 0 ? " (step time against this plan's):\n" : ":\n");
    size_t width = 0;
    for (const PlanAdvice *a : fitting)
      width = std::max(width, a->change.size());
    for (const PlanAdvice *a : fitting) {
      const PlanCandidate &c = a->candidate;
      out << "  " << llvm::left_justify(a->change, width) << "  fits, peak "
          << formatGiB(c.peakBytes) << " GiB, headroom "
          << formatGiB(c.capacityBytes - c.peakBytes) << " GiB, step "
          << formatSeconds(c.stepSeconds) << " s";
      if (stepSeconds > 0)
        out << " (" << formatStepChange(c.stepSeconds, stepSeconds) << ")";
      out << "\n";
    }
    if (notFitting.empty())
      return;
    out << "  not enough";
  }
  if (!notFitting.empty())
    out << ": "
        << llvm::join(llvm::map_range(notFitting,
                                      [](const PlanAdvice *a) {
                                        const PlanCandidate &c = a->candidate;
                                        if (!c.planned)
                                          return a->change +
                                                 " (refused: " + c.refusal +
                                                 ")";
                                        return a->change + " (" +
                                               formatGiB(c.peakBytes) + " GiB)";
                                      }),
                      ", ");
  out << "\n";
}

void mlir::parc::writeAdviceJson(llvm::json::OStream &j,
                                 ArrayRef<PlanAdvice> advice,
                                 double stepSeconds) {
  j.attributeArray("advice", [&] {
    for (const PlanAdvice &a : advice)
      j.object([&] {
        const PlanCandidate &c = a.candidate;
        j.attribute("change", a.change);
        j.attribute("combined", a.combined);
        writeSettingsJson(j, c.settings);
        j.attribute("planned", c.planned);
        j.attribute("fits", c.fits);
        j.attribute("refusal", c.planned ? llvm::json::Value(nullptr)
                                         : llvm::json::Value(c.refusal));
        j.attribute("peak_bytes", c.planned ? llvm::json::Value(c.peakBytes)
                                            : llvm::json::Value(nullptr));
        j.attribute("step_time_s", c.fits ? llvm::json::Value(c.stepSeconds)
                                          : llvm::json::Value(nullptr));
        j.attribute(
            "step_change",
            c.fits && stepSeconds > 0
                ? llvm::json::Value((c.stepSeconds - stepSeconds) / stepSeconds)
                : llvm::json::Value(nullptr));
      });
  });
}
