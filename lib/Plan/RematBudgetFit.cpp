//===- RematBudgetFit.cpp - the activation budget that makes a plan fit ---===//
//
// apply-remat mode=budget decides per layer within an activation budget;
// what that budget must be for the whole step to fit the device is known
// only after the rest of the step (parameters, gradients, optimizer state,
// gathered units, the loss) is planned. So the planner plans the layout
// without remat, takes the device less the margin less everything but the
// activations at that plan's peak as the first budget, and plans again
// with the budget lowered by each overshoot the replay reports.
//
//===----------------------------------------------------------------------===//

#include "parc/Plan/Planner.h"

#include "parc/Analysis/HardwareProfile.h"
#include "parc/Analysis/MemoryEstimate.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::parc;

namespace {

constexpr int kMaxAttempts = 6;

/// The peak of `request` planned on a copy of `module` with `remat` and
/// `budget`, or nothing when it does not plan.
std::optional<MemoryReport> tryPlan(ModuleOp module, PlanRequest request,
                                    StringRef remat, int64_t budget,
                                    StringRef hardwareDir) {
  request.remat = remat.str();
  OwningOpRef<ModuleOp> copy = module.clone();
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  buildPlanPipeline(pm, request, hardwareDir, budget);
  if (failed(pm.run(*copy)))
    return std::nullopt;
  FailureOr<MemoryReport> memory = estimateMemory(
      *copy->getOps<ModelOp>().begin(), getMemoryOptions(request, hardwareDir));
  if (failed(memory) || memory->ranks.empty())
    return std::nullopt;
  return *memory;
}

} // namespace

FailureOr<int64_t> mlir::parc::fitRematBudget(ModuleOp module,
                                              const PlanRequest &request,
                                              StringRef hardwareDir) {
  // The trials speak through the plan made with their answer.
  ScopedDiagnosticHandler quiet(module.getContext(),
                                [](Diagnostic &) { return success(); });
  std::optional<MemoryReport> plain =
      tryPlan(module, request, "none", -1, hardwareDir);
  if (!plain)
    return failure();
  auto target =
      static_cast<int64_t>(static_cast<double>(plain->hardware.memoryBytes) *
                           (1 - request.rematMargin));
  // The budget bounds what the tensors hold; the target is the device's
  // (what the allocator reserves), so the first try leaves room for the
  // allocator's reserve at the plain plan's ratio.
  const RankMemory &rank = plain->ranks[plain->deviceRank];
  int64_t rest = rank.devicePeakBytes() - rank.atPeak.savedActivations -
                 rank.atPeak.recomputeWorkingSet;
  // Fitting without remat, the whole target is the budget: every layer's
  // saved bytes, alive together at the end of forward, are under it.
  if (plain->devicePeakBytes() <= target)
    return target;
  int64_t budget = std::max<int64_t>(0, target - rest);
  // The replay's peak answers a lower budget in steps (a layer changes its
  // decision), so each retry lowers it by twice the last overshoot's share.
  // Once one fits, the budgets between it and the last that did not are
  // halved while tries are left: what the allocator reserves on top of the
  // tensors is known only from a plan, and the largest budget that fits
  // recomputes least.
  int64_t over = -1; // the lowest budget that was tried and did not fit
  int attempt = 0;
  for (; attempt < kMaxAttempts && budget > 0; ++attempt) {
    std::optional<MemoryReport> fitted =
        tryPlan(module, request, "budget", budget, hardwareDir);
    if (!fitted || fitted->devicePeakBytes() <= target)
      break;
    over = budget;
    int64_t overshoot = fitted->devicePeakBytes() - target;
    budget =
        overshoot > budget >> attempt ? 0 : budget - (overshoot << attempt);
  }
  if (over < 0 || budget <= 0)
    return budget;
  for (; attempt < kMaxAttempts && over - budget > (int64_t(1) << 28);
       ++attempt) {
    int64_t middle = budget + (over - budget) / 2;
    std::optional<MemoryReport> fitted =
        tryPlan(module, request, "budget", middle, hardwareDir);
    if (fitted && fitted->devicePeakBytes() <= target)
      budget = middle;
    else
      over = middle;
  }
  return budget;
}
