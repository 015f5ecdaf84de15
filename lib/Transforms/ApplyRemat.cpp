//===- ApplyRemat.cpp - decide activation rematerialisation per layer -----===//
//
// Records for every discovered layer in scope whether backward recomputes it
// (`parc.remat` = "full" | "selective") and, for selective remat, which ops
// recompute (`parc.recompute`). The memory replay and the runtime read these
// decisions; nothing is decided at run time. Remat with no layer in scope is
// the silent no-op this pass exists to refuse.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/Frozen.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"

namespace mlir::parc {
#define GEN_PASS_DEF_APPLYREMAT
#include "parc/Transforms/Passes.h.inc"

namespace {

enum class RematMode { None, Full, Selective, EveryN };

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
  StringRef count = text;
  if (count.consume_front("every:") && !count.getAsInteger(10, policy.every) &&
      policy.every > 0) {
    policy.mode = RematMode::EveryN;
    return policy;
  }
  return mlir::emitError(where->getLoc())
         << "unknown remat mode '" << text
         << "' (expected full, selective, every:N with "
            "N > 0, or none)";
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
};

} // namespace
} // namespace mlir::parc
