//===- ApplyRemat.cpp - decide activation rematerialisation per layer -----===//
//
// Records for every discovered layer in scope whether backward recomputes it
// (`parc.remat` = "full" | "selective") and, for selective remat, which ops
// recompute (`parc.recompute`); under a budget, which of the two (or none)
// each layer gets, by the exact search of Analysis/RematBudget. The memory
// replay and the runtime read these decisions; nothing is decided at run time.
// Remat with no layer in scope is the silent no-op this pass exists to refuse.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/FlopCount.h"
#include "parc/Analysis/Frozen.h"
#include "parc/Analysis/HardwareProfile.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/MemoryEstimate.h"
#include "parc/Analysis/Parallelism.h"
#include "parc/Analysis/RematBudget.h"
#include "parc/Transforms/Passes.h"

#include "DtypeOption.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::parc {
#define GEN_PASS_DEF_APPLYREMAT
#include "parc/Transforms/Passes.h.inc"

namespace {

enum class RematMode { None, Full, Selective, EveryN, Budget };

struct RematPolicy {
  RematMode mode = RematMode::None;
  int64_t every = 1;
};

FailureOr<RematPolicy> parseRematMode(StringRef text, Operation *where) {
  RematPolicy policy;
  if (text == "none")
    return policy;
  if (text == "full") {
    policy.mode = RematMode::Full;
    return policy;
  }
  if (text == "selective") {
    policy.mode = RematMode::Selective;
    return policy;
  }
  if (text == "budget") {
    policy.mode = RematMode::Budget;
    return policy;
  }
  StringRef count = text;
  if (count.consume_front("every:") && !count.getAsInteger(10, policy.every) &&
      policy.every > 0) {
    policy.mode = RematMode::EveryN;
    return policy;
  }
  return mlir::emitError(where->getLoc())
         << "unknown remat mode '" << text
         << "' (expected full, selective, every:N with "
            "N > 0, budget or none)";
}

bool stackInScope(StringRef stack, StringRef scope) {
  if (scope == "all")
    return true;
  return stack == scope || stack.starts_with((scope + "_").str());
}

/// Marks the ops selective remat recomputes in backward instead of storing
/// what they save: those their AutogradOpInterface calls cheap next to the
/// matmuls and attention whose outputs it keeps.
void markSelective(NNModuleOp layer) {
  UnitAttr unit = UnitAttr::get(layer.getContext());
  layer.walk([&](AutogradOpInterface op) {
    if (op.isCheapToRecompute())
      op->setAttr("parc.recompute", unit);
  });
}

void unmarkSelective(NNModuleOp layer) {
  layer.walk([&](AutogradOpInterface op) { op->removeAttr("parc.recompute"); });
}

void setRemat(NNModuleOp layer, RematKind kind) {
  if (kind == RematKind::None) {
    layer->removeAttr(kRematAttrName);
    return;
  }
  layer->setAttr(kRematAttrName, RematKindAttr::get(layer.getContext(), kind));
  if (kind == RematKind::Selective)
    markSelective(layer);
}

struct ApplyRematPass : public impl::ApplyRematBase<ApplyRematPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(applyTo(getOperation())))
      signalPassFailure();
  }

  LogicalResult applyTo(ModelOp model) {
    FailureOr<RematPolicy> policy = parseRematMode(mode, model);
    if (failed(policy))
      return failure();
    if (scope != "all" && scope != "language" && scope != "vision")
      return mlir::emitError(model->getLoc())
             << "unknown remat scope '" << scope
             << "' (expected all, language or vision)";
    if (failed(markFrozen(model, frozen)))
      return failure();
    if (policy->mode == RematMode::None)
      return success();

    if (failed(ensureLayersDiscovered(model)))
      return failure();
    SmallVector<LayerStack> stacks = getLayerStacks(model);
    if (policy->mode == RematMode::Budget)
      return applyBudget(model, stacks);
    SmallVector<std::string> searched;
    SmallVector<std::string> skipped;
    int64_t wrapped = 0;
    for (const LayerStack &stack : stacks) {
      searched.push_back(stack.path + " (" + stack.name + ")");
      if (!stackInScope(stack.name, scope))
        continue;
      int64_t wrappedHere = 0;
      for (auto [index, layer] : llvm::enumerate(stack.layers)) {
        if (isFrozen(layer)) {
          skipped.push_back(getDottedPath(layer));
          continue;
        }
        bool isFull = policy->mode == RematMode::Full ||
                      (policy->mode == RematMode::EveryN &&
                       (int64_t(index) + 1) % policy->every == 0);
        if (policy->mode == RematMode::EveryN && !isFull)
          continue;
        layer->setAttr(kRematAttrName,
                       RematKindAttr::get(model.getContext(),
                                          isFull ? RematKind::Full
                                                 : RematKind::Selective));
        if (!isFull)
          markSelective(layer);
        ++wrappedHere;
      }
      wrapped += wrappedHere;
      mlir::emitRemark(model->getLoc())
          << mode << " remat on " << wrappedHere << " of "
          << stack.layers.size() << " layers in " << stack.path;
    }
    if (!skipped.empty())
      mlir::emitRemark(model->getLoc())
          << "skipped " << skipped.size()
          << " frozen layers: " << llvm::join(skipped, ", ");
    if (wrapped == 0 && skipped.empty())
      return mlir::emitError(model->getLoc())
             << "remat requested (mode=" << mode << ", scope=" << scope
             << ") but no layer is in scope in @" << model.getSymName()
             << " (stacks searched: "
             << (searched.empty() ? std::string("none; run --discover-layers "
                                                "or name them with "
                                                "--discover-layers=stacks=")
                                  : llvm::join(searched, ", "))
             << ")";
    return success();
  }

  /// mode=budget: every layer's options priced by the activation trace and
  /// the FLOP count the lowering and the cost model use, the exact search,
  /// and its decisions written as the other modes write theirs.
  LogicalResult applyBudget(ModelOp model, ArrayRef<LayerStack> stacks) {
    if (budget < 0)
      return mlir::emitError(model->getLoc())
             << "remat mode=budget needs budget=<bytes> (the activation "
                "bytes per rank the step may keep)";
    if (seqLen <= 0 || microBatch <= 0 || imageTokens < 0)
      return mlir::emitError(model->getLoc())
             << "remat mode=budget needs seq > 0, mbs > 0 and image-tokens "
                ">= 0, got seq="
             << int64_t(seqLen) << ", mbs=" << int64_t(microBatch)
             << ", image-tokens=" << int64_t(imageTokens);
    FailureOr<Type> dtype =
        parseDtypeOption(computeDtype, "compute-dtype", model);
    if (failed(dtype))
      return failure();
    FailureOr<HardwareProfile> profile = loadHardwareProfile(
        hardware, hardwareDir.empty() ? getDefaultHardwareDir() : hardwareDir,
        model->getLoc());
    if (failed(profile))
      return failure();
    int64_t elementBytes = (dtype->getIntOrFloatBitWidth() + 7) / 8;
    TpPlan tp = getTpPlan(model);

    llvm::DenseMap<Operation *, StringRef> inScope;
    for (const LayerStack &stack : stacks)
      if (stackInScope(stack.name, scope))
        for (NNModuleOp layer : stack.layers)
          if (!isFrozen(layer))
            inScope[layer] = stack.path;
    if (inScope.empty())
      return mlir::emitError(model->getLoc())
             << "remat requested (mode=budget, scope=" << scope
             << ") but no trainable layer is in scope in @"
             << model.getSymName();

    SmallVector<NNModuleOp> order = getLayersInExecutionOrder(model);
    SmallVector<LayerRematOptions> options;
    for (NNModuleOp layer : order) {
      auto tag = getLayerTag(layer);
      int64_t tokens =
          tag && isVisionStack(tag->first) ? imageTokens : seqLen.getValue();
      auto price = [&](RematKind kind) {
        RematOption option;
        option.kind = kind;
        if (tokens == 0)
          return option;
        LayerActivationBytes acts =
            estimateLayerActivations(layer, kind, microBatch, tokens,
                                     elementBytes, tp, profile->kernels);
        option.savedBytes = acts.saved;
        option.rebuiltBytes = kind == RematKind::None ? 0 : acts.recomputed;
        option.recomputeFlops =
            countLayerFlops(layer, kind, microBatch, tokens).recompute;
        return option;
      };
      LayerRematOptions &layerOptions = options.emplace_back();
      if (!inScope.count(layer)) {
        layerOptions.push_back(
            price(getRemat(layer).value_or(RematKind::None)));
        continue;
      }
      // The trace prices selective remat by the ops marked to recompute.
      markSelective(layer);
      for (RematKind kind :
           {RematKind::None, RematKind::Selective, RematKind::Full})
        layerOptions.push_back(price(kind));
      unmarkSelective(layer);
    }

    auto result = solveRematBudget(options, budget);
    SmallVector<unsigned> choice;
    if (auto *solution = std::get_if<RematBudgetSolution>(&result)) {
      choice = solution->choice;
    } else if (std::get<RematBudgetFailure>(result) ==
               RematBudgetFailure::TooLarge) {
      return mlir::emitError(model->getLoc())
             << "remat mode=budget: the search over " << order.size()
             << " layers grew past " << kMaxRematFrontier
             << " non-dominated choices; name a remat mode instead";
    } else {
      // The leanest option of every layer in scope: full remat.
      choice.assign(options.size(), 0);
      for (auto [index, layer] : llvm::enumerate(order))
        if (inScope.count(layer))
          choice[index] = 2;
      mlir::emitWarning(model->getLoc())
          << "remat budget of " << int64_t(budget)
          << " bytes is below the least the layers can keep ("
          << getRematPeakBytes(options, choice)
          << " bytes with full remat on every layer in scope): full remat "
             "on every layer in scope";
    }

    // Decisions per stack, reported as the other modes report theirs.
    llvm::MapVector<StringRef, std::array<int64_t, 3>> counts;
    double recompute = 0;
    for (auto [index, layer] : llvm::enumerate(order)) {
      const RematOption &option = options[index][choice[index]];
      recompute += option.recomputeFlops;
      auto scoped = inScope.find(layer);
      if (scoped == inScope.end())
        continue;
      setRemat(layer, option.kind);
      ++counts[scoped->second][static_cast<int>(option.kind)];
    }
    for (auto &[path, kinds] : counts)
      mlir::emitRemark(model->getLoc())
          << "budget remat in " << path << ": full on "
          << kinds[static_cast<int>(RematKind::Full)] << ", selective on "
          << kinds[static_cast<int>(RematKind::Selective)] << ", none on "
          << kinds[static_cast<int>(RematKind::None)] << " layers";
    mlir::emitRemark(model->getLoc())
        << "budget remat keeps at most " << getRematPeakBytes(options, choice)
        << " of " << int64_t(budget) << " activation bytes and recomputes "
        << llvm::formatv("{0:e3}", recompute).str() << " FLOPs per micro-batch";
    return success();
  }
};

} // namespace
} // namespace mlir::parc
