//===- ApplyPp.cpp - split the layers into pipeline stages ----------------===//
//
// Cuts the language layers (in execution order) into stages x chunks
// contiguous groups minimising the slowest group under the cost model
// (forward + backward + recompute FLOPs of each layer; the root's ops before
// the last layer, with a vision tower and its stack, on the first stage, the
// ops after it - final norm, lm_head, loss - on the last), by an exact
// linear-partition DP. Emits the per-stage schedule (GPipe, 1F1B, or
// Megatron's interleaved 1F1B) explicitly and derives the micro-batches in
// flight per stage from it. A tie group spanning stages is kept as two copies
// whose gradients are all-reduced over the pp axis.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/CostModel.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/Parallelism.h"
#include "parc/Transforms/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include <cstdio>
#include <limits>

namespace mlir::parc {
#define GEN_PASS_DEF_APPLYPP
#include "parc/Transforms/Passes.h.inc"

namespace {

constexpr llvm::StringLiteral kGridName = kPpGridName;
constexpr llvm::StringLiteral kPlanAttr = kPpPlanAttrName;
constexpr llvm::StringLiteral kStageAttr = kPpStageAttrName;
constexpr llvm::StringLiteral kChunkAttr = kPpChunkAttrName;
constexpr llvm::StringLiteral kScheduleAttr = kPpScheduleAttrName;
constexpr llvm::StringLiteral kTiedAttr = kPpTiedCopiesAttrName;

using Step = PipelineStep;

/// GPipe: every forward, then every backward.
SmallVector<Step> gpipe(int64_t m) {
  SmallVector<Step> steps;
  for (int64_t i = 0; i < m; ++i)
    steps.push_back({true, i, 0});
  for (int64_t i = 0; i < m; ++i)
    steps.push_back({false, i, 0});
  return steps;
}

/// 1F1B (PipeDream-flush): p - s - 1 warm-up forwards, then one forward and
/// one backward in turn, then the remaining backwards.
SmallVector<Step> oneFOneB(int64_t p, int64_t s, int64_t m) {
  SmallVector<Step> steps;
  int64_t warmup = std::min(p - s - 1, m);
  int64_t f = 0, b = 0;
  for (; f < warmup; ++f)
    steps.push_back({true, f, 0});
  while (f < m) {
    steps.push_back({true, f++, 0});
    steps.push_back({false, b++, 0});
  }
  while (b < m)
    steps.push_back({false, b++, 0});
  return steps;
}

/// Megatron-LM's interleaved 1F1B: micro-batches in groups of p run through
/// the v local chunks in turn; (p - s - 1) * 2 + (v - 1) * p warm-up
/// forwards, steady 1F1B, cool-down backwards.
SmallVector<Step> interleaved(int64_t p, int64_t s, int64_t v, int64_t m) {
  int64_t total = m * v;
  auto chunkOf = [&](int64_t k, bool forward) {
    int64_t chunk = (k % (p * v)) / p;
    return forward ? chunk : v - 1 - chunk;
  };
  auto microBatchOf = [&](int64_t k) { return (k / (p * v)) * p + k % p; };
  int64_t warmup = std::min((p - s - 1) * 2 + (v - 1) * p, total);
  SmallVector<Step> steps;
  int64_t f = 0, b = 0;
  for (; f < warmup; ++f)
    steps.push_back({true, microBatchOf(f), chunkOf(f, true)});
  while (f < total) {
    steps.push_back({true, microBatchOf(f), chunkOf(f, true)});
    ++f;
    steps.push_back({false, microBatchOf(b), chunkOf(b, false)});
    ++b;
  }
  for (; b < total; ++b)
    steps.push_back({false, microBatchOf(b), chunkOf(b, false)});
  return steps;
}

/// The most micro-batch chunks whose activations are alive at once.
int64_t maxInFlight(ArrayRef<Step> steps) {
  int64_t alive = 0, peak = 0;
  for (const Step &step : steps) {
    alive += step.forward ? 1 : -1;
    peak = std::max(peak, alive);
  }
  return peak;
}

/// Exact linear partition of `costs` into `groups` non-empty contiguous
/// groups minimising the largest group (plus `first` on group 0 and `last`
/// on the last group); returns the sizes.
SmallVector<int64_t> partition(ArrayRef<double> costs, int64_t groups,
                               double first, double last) {
  int64_t n = costs.size();
  SmallVector<double> prefix(n + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + costs[i];
  constexpr double inf = std::numeric_limits<double>::infinity();
  // best[g][i]: the bottleneck of the first i layers in g groups.
  std::vector<std::vector<double>> best(groups + 1,
                                        std::vector<double>(n + 1, inf));
  std::vector<std::vector<int64_t>> cut(groups + 1,
                                        std::vector<int64_t>(n + 1, 0));
  best[0][0] = 0;
  for (int64_t g = 1; g <= groups; ++g)
    for (int64_t i = g; i <= n - (groups - g); ++i)
      for (int64_t j = g - 1; j < i; ++j) {
        if (best[g - 1][j] == inf)
          continue;
        double group = prefix[i] - prefix[j];
        if (g == 1)
          group += first;
        if (g == groups)
          group += last;
        double value = std::max(best[g - 1][j], group);
        if (value < best[g][i]) {
          best[g][i] = value;
          cut[g][i] = j;
        }
      }
  SmallVector<int64_t> sizes(groups);
  for (int64_t g = groups, i = n; g >= 1; --g) {
    sizes[g - 1] = i - cut[g][i];
    i = cut[g][i];
  }
  return sizes;
}

struct ApplyPpPass : public impl::ApplyPpBase<ApplyPpPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(applyTo(getOperation())))
      signalPassFailure();
  }

  void clearPlan(ModelOp model) {
    for (Operation &op : llvm::make_early_inc_range(*model.getBody()))
      if (auto grid = dyn_cast<shard::GridOp>(op);
          grid && grid.getSymName() == kGridName)
        op.erase();
    model.walk([](Operation *op) {
      for (StringRef name :
           {kPlanAttr.data(), kStageAttr.data(), kChunkAttr.data(),
            kScheduleAttr.data(), kTiedAttr.data()})
        op->removeAttr(name);
    });
  }

  LogicalResult applyTo(ModelOp model) {
    Location loc = model->getLoc();
    int64_t p = stages, v = chunks, m = microbatches;
    if (p < 1)
      return mlir::emitError(loc) << "apply-pp needs stages >= 1, got " << p;
    if (schedule == PpSchedule::None)
      return mlir::emitError(loc)
             << "apply-pp: schedule none is no pipeline (expected gpipe, "
                "1f1b or interleaved-1f1b)";
    if (v < 1)
      return mlir::emitError(loc) << "apply-pp needs chunks >= 1, got " << v;
    bool isInterleaved = schedule == PpSchedule::Interleaved1F1B;
    if (v > 1 && !isInterleaved)
      return mlir::emitError(loc)
             << "apply-pp: chunks = " << v << " needs schedule "
             << "interleaved-1f1b, got '" << stringifyPpSchedule(schedule)
             << "'";
    if (seq < 1 || mbs < 1 || imageTokens < 0)
      return mlir::emitError(loc) << "apply-pp needs positive seq and mbs";
    if (m < p)
      return mlir::emitError(loc)
             << "apply-pp: " << m << " micro-batches cannot fill " << p
             << " pipeline stages (microbatches must be >= stages)";
    if (isInterleaved && m % p != 0)
      return mlir::emitError(loc)
             << "apply-pp: interleaved-1f1b needs the micro-batches (" << m
             << ") to be a multiple of the stages (" << p << ")";

    if (failed(ensureLayersDiscovered(model)))
      return failure();
    SmallVector<NNModuleOp> all = getLayersInExecutionOrder(model);
    SmallVector<NNModuleOp> layers, vision;
    for (NNModuleOp layer : all) {
      auto tag = getLayerTag(layer);
      if (tag && isVisionStack(tag->first))
        vision.push_back(layer);
      else
        layers.push_back(layer);
    }
    if (layers.empty())
      return mlir::emitError(loc) << "apply-pp needs layers, and @"
                                  << model.getSymName() << " has none";
    int64_t groups = p * v;
    int64_t n = layers.size();
    if (groups > n)
      return mlir::emitError(loc)
             << "apply-pp: " << groups << (v > 1 ? " virtual" : "")
             << " stages for " << n << " layers (at most one stage per layer)";

    // Costs: forward + backward + recompute FLOPs of one micro-batch.
    auto layerCost = [&](NNModuleOp layer, int64_t tokens) {
      return countLayerFlops(layer, getRemat(layer).value_or(RematKind::None),
                             mbs, tokens)
          .total();
    };
    SmallVector<double> costs;
    for (NNModuleOp layer : layers)
      costs.push_back(layerCost(layer, seq));
    RootFlops root = countRootFlops(model, mbs, seq);
    double first = root.head.total(), last = root.tail.total();
    for (NNModuleOp layer : vision)
      first += layerCost(layer, imageTokens);

    SmallVector<int64_t> sizes;
    if (!split.empty()) {
      if (int64_t(split.size()) != groups)
        return mlir::emitError(loc)
               << "apply-pp: split has " << split.size() << " entries, "
               << "expected " << groups << " (stages x chunks)";
      int64_t sum = 0;
      for (int64_t size : split) {
        if (size < 1)
          return mlir::emitError(loc)
                 << "apply-pp: every split entry must be >= 1, got " << size;
        sum += size;
      }
      if (sum != n)
        return mlir::emitError(loc)
               << "apply-pp: split sums to " << sum << " layers, but @"
               << model.getSymName() << " has " << n;
      sizes.assign(split.begin(), split.end());
    } else {
      sizes = partition(costs, groups, first, last);
    }

    // Write the plan.
    clearPlan(model);
    Builder b(model.getContext());
    OpBuilder builder = OpBuilder::atBlockBegin(model.getBody());
    shard::GridOp::create(builder, loc, kGridName, ArrayRef<int64_t>{p});

    SmallVector<int64_t> stageLayers;
    SmallVector<double> stageCosts;
    for (NNModuleOp layer : vision) {
      layer->setAttr(kStageAttr, b.getI64IntegerAttr(0));
      if (isInterleaved)
        layer->setAttr(kChunkAttr, b.getI64IntegerAttr(0));
    }
    int64_t next = 0;
    for (int64_t group = 0; group < groups; ++group) {
      double cost = group == 0 ? first : 0;
      if (group == groups - 1)
        cost += last;
      for (int64_t i = 0; i < sizes[group]; ++i, ++next) {
        NNModuleOp layer = layers[next];
        layer->setAttr(kStageAttr, b.getI64IntegerAttr(group % p));
        if (isInterleaved)
          layer->setAttr(kChunkAttr, b.getI64IntegerAttr(group / p));
        cost += costs[next];
      }
      stageLayers.push_back(sizes[group]);
      stageCosts.push_back(cost);
    }

    // The schedules, and what is in flight from them.
    SmallVector<Attribute> schedules;
    SmallVector<int64_t> inFlight;
    for (int64_t s = 0; s < p; ++s) {
      SmallVector<Step> steps = schedule == PpSchedule::Gpipe ? gpipe(m)
                                : isInterleaved ? interleaved(p, s, v, m)
                                                : oneFOneB(p, s, m);
      inFlight.push_back(maxInFlight(steps));
      schedules.push_back(PipelineStepsAttr::get(
          b.getContext(), s, ArrayRef<PipelineStep>(steps)));
    }
    double bubble = double(p - 1) / double((isInterleaved ? v : 1) * m);
    model->setAttr(kPlanAttr,
                   PipelinePlanAttr::get(b.getContext(), p, schedule, v, m,
                                         b.getDenseI64ArrayAttr(stageLayers),
                                         b.getDenseF64ArrayAttr(stageCosts),
                                         b.getDenseI64ArrayAttr(inFlight),
                                         b.getF64FloatAttr(bubble)));
    model->setAttr(kScheduleAttr, b.getArrayAttr(schedules));

    // Which stage holds each parameter, as every later reader sees it.
    PipelinePlacement placement(model);
    auto stageOf = [&](ParamOp param) { return placement.getStage(param); };
    SmallVector<Attribute> tiedCopies;
    for (TieOp tie : model.getBody()->getOps<TieOp>()) {
      SmallVector<int64_t> tieStages;
      for (auto ref : tie.getParams().getAsRange<SymbolRefAttr>()) {
        auto param = cast<ParamOp>(SymbolTable::lookupSymbolIn(model, ref));
        int64_t s = stageOf(param);
        if (!llvm::is_contained(tieStages, s))
          tieStages.push_back(s);
      }
      if (tieStages.size() < 2)
        continue;
      llvm::sort(tieStages);
      tiedCopies.push_back(
          PpTiedCopiesAttr::get(b.getContext(), tie.getParams(), tieStages));
      InFlightDiagnostic remark = mlir::emitRemark(loc);
      remark << "PP: tied parameters";
      for (auto ref : tie.getParams().getAsRange<SymbolRefAttr>())
        remark << " "
               << getDottedPath(
                      cast<ParamOp>(SymbolTable::lookupSymbolIn(model, ref)));
      remark << " span stages";
      for (int64_t s : tieStages)
        remark << " " << s;
      remark << ": kept as " << tieStages.size()
             << " copies with gradients all-reduced over @" << kGridName;
    }
    if (!tiedCopies.empty())
      model->setAttr(kTiedAttr, b.getArrayAttr(tiedCopies));

    InFlightDiagnostic remark = mlir::emitRemark(loc);
    remark << "PP " << p << " (" << stringifyPpSchedule(schedule);
    if (isInterleaved)
      remark << ", " << v << " chunks";
    remark << ", " << m << " micro-batches): " << (v > 1 ? "virtual " : "")
           << "stages of ";
    for (int64_t g = 0; g < groups; ++g)
      remark << (g == 0 ? "" : g == groups - 1 ? " and " : ", ") << sizes[g];
    char percent[32];
    std::snprintf(percent, sizeof(percent), "%g", bubble * 100);
    remark << " layers; bubble " << percent << "%";
    return success();
  }
};

} // namespace
} // namespace mlir::parc
