//===- ApplyRemat.cpp - decide activation rematerialisation per layer -----===//
//
// Records for every discovered layer in scope whether backward recomputes it
// (`parc.remat` = "full" | "selective" | "op"), for selective remat which ops
// recompute (`parc.recompute`), for torchtitan's op policy which outputs are
// kept (`parc.remat_save`); under a budget, which of the two (or none)
// each layer gets, by the exact search of Analysis/RematBudget. The memory
// replay and the runtime read these decisions; nothing is decided at run time.
// Remat with no layer in scope is the silent no-op this pass exists to refuse.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/FlopCount.h"
#include "parc/Analysis/ForwardWalk.h"
#include "parc/Analysis/Frozen.h"
#include "parc/Analysis/HardwareProfile.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/MemoryEstimate.h"
#include "parc/Analysis/Parallelism.h"
#include "parc/Analysis/RematBudget.h"
#include "parc/Transforms/Passes.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::parc {
#define GEN_PASS_DEF_APPLYREMAT
#include "parc/Transforms/Passes.h.inc"

namespace {

/// What mode=budget chooses among for a layer in scope, in this order.
constexpr RematKind kBudgetChoices[] = {RematKind::None, RematKind::Selective,
                                        RematKind::Full};

StringRef getScopeName(RematScope scope) {
  switch (scope) {
  case RematScope::All:
    return "all";
  case RematScope::Language:
    return "language";
  case RematScope::Vision:
    return "vision";
  }
  llvm_unreachable("unknown remat scope");
}

bool stackInScope(StringRef stack, RematScope scope) {
  if (scope == RematScope::All)
    return true;
  StringRef name = getScopeName(scope);
  return stack == name || stack.starts_with((name + "_").str());
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

/// Marks what torchtitan's op-level policy keeps of one call of the layer:
/// the outputs of its attention and of its 1st, 3rd, 5th, ... `aten.mm`,
/// counted in execution order through the modules it calls (the policy's
/// per-call mm counter).
class SaveListMarker : public ForwardWalker<SaveListMarker, char> {
public:
  SaveListMarker() : ForwardWalker(/*stopAtLayers=*/false) {}

  void mark(NNModuleOp layer) {
    SmallVector<char> args(layer.getForward().getNumArguments(), 0);
    walk(layer.getForward(), args);
  }

  SmallVector<char> visitOp(Operation &op, ArrayRef<char>) {
    auto autograd = dyn_cast<AutogradOpInterface>(op);
    SaveListClass kind =
        autograd ? autograd.getSaveListClass() : SaveListClass::Other;
    if (kind == SaveListClass::Attention ||
        (kind == SaveListClass::Matmul && ++matmuls % 2 == 1))
      op.setAttr(kRematSaveAttrName, UnitAttr::get(op.getContext()));
    return SmallVector<char>(op.getNumResults(), 0);
  }

  SmallVector<char> visitOpaqueCall(CallOp call, NNModuleOp, ArrayRef<char>) {
    return SmallVector<char>(call->getNumResults(), 0);
  }

private:
  int64_t matmuls = 0;
};

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
  if (kind == RematKind::Op)
    SaveListMarker().mark(layer);
}

struct ApplyRematPass : public impl::ApplyRematBase<ApplyRematPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(applyTo(getOperation())))
      signalPassFailure();
  }

  LogicalResult applyTo(ModelOp model) {
    if ((mode == RematMode::Every) != (every > 0))
      return mlir::emitError(model->getLoc())
             << "remat every=N needs mode=every and N > 0, got mode="
             << (mode == RematMode::Every ? std::string("every")
                                          : getRematModeName(mode, 0))
             << " every=" << int64_t(every);
    if (failed(markFrozen(model, frozen)))
      return failure();
    if (mode == RematMode::None)
      return success();

    if (failed(ensureLayersDiscovered(model)))
      return failure();
    SmallVector<LayerStack> stacks = getLayerStacks(model);
    if (mode == RematMode::Budget)
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
        bool isFull =
            mode == RematMode::Full ||
            (mode == RematMode::Every && (int64_t(index) + 1) % every == 0);
        if (mode == RematMode::Every && !isFull)
          continue;
        setRemat(layer, mode == RematMode::Op ? RematKind::Op
                        : isFull              ? RematKind::Full
                                              : RematKind::Selective);
        ++wrappedHere;
      }
      wrapped += wrappedHere;
      mlir::emitRemark(model->getLoc())
          << getRematModeName(mode, every) << " remat on " << wrappedHere
          << " of " << stack.layers.size() << " layers in " << stack.path;
    }
    if (!skipped.empty())
      mlir::emitRemark(model->getLoc())
          << "skipped " << skipped.size()
          << " frozen layers: " << llvm::join(skipped, ", ");
    if (wrapped == 0 && skipped.empty())
      return mlir::emitError(model->getLoc())
             << "remat requested (mode=" << getRematModeName(mode, every)
             << ", scope=" << getScopeName(scope)
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
    FailureOr<HardwareProfile> profile = loadHardwareProfile(
        hardware, hardwareDir.empty() ? getDefaultHardwareDir() : hardwareDir,
        model->getLoc());
    if (failed(profile))
      return failure();
    int64_t elementBytes = getStorageDtypeBytes(computeDtype);
    KernelProfile kernels = chooseKernels(profile->kernels, attentionKernel,
                                          normKernel, lossKernel);
    TpPlan tp = getTpPlan(model);

    llvm::DenseMap<Operation *, StringRef> inScope;
    for (const LayerStack &stack : stacks)
      if (stackInScope(stack.name, scope))
        for (NNModuleOp layer : stack.layers)
          if (!isFrozen(layer))
            inScope[layer] = stack.path;
    if (inScope.empty())
      return mlir::emitError(model->getLoc())
             << "remat requested (mode=budget, scope=" << getScopeName(scope)
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
        LayerActivationBytes acts = estimateLayerActivations(
            layer, kind, microBatch, tokens, elementBytes, tp, kernels);
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
      for (RematKind kind : kBudgetChoices)
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
      // Full remat on every layer in scope; the others keep their one option.
      unsigned full = llvm::find(kBudgetChoices, RematKind::Full) -
                      std::begin(kBudgetChoices);
      for (NNModuleOp layer : order)
        choice.push_back(inScope.count(layer) ? full : 0);
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

bool setRematMode(ApplyRematOptions &options, StringRef text) {
  options.every = 0;
  for (RematMode mode : {RematMode::None, RematMode::Full, RematMode::Selective,
                         RematMode::Budget, RematMode::Op})
    if (text == getRematModeName(mode, 0)) {
      options.mode = mode;
      return true;
    }
  int64_t every;
  if (!text.consume_front("every:") || text.getAsInteger(10, every) ||
      every <= 0)
    return false;
  options.mode = RematMode::Every;
  options.every = every;
  return true;
}

std::string getRematModeName(RematMode mode, int64_t every) {
  switch (mode) {
  case RematMode::None:
    return "none";
  case RematMode::Full:
    return "full";
  case RematMode::Selective:
    return "selective";
  case RematMode::Every:
    return "every:" + std::to_string(every);
  case RematMode::Budget:
    return "budget";
  case RematMode::Op:
    return "op";
  }
  llvm_unreachable("unknown remat mode");
}

} // namespace mlir::parc
