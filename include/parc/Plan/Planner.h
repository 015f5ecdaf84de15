//===- Planner.h - parc-plan: a recipe in, a checked plan out ---*- C++ -*-===//
//
// The driver behind parc-plan: reads the recipe, imports the model, runs the
// planning pipeline the recipe asks for, estimates every rank's memory and
// renders the result as a report or a JSON document (docs/parc-plan.md).
//
//===----------------------------------------------------------------------===//

#ifndef PARC_PLAN_PLANNER_H
#define PARC_PLAN_PLANNER_H

#include "parc/Analysis/CostModel.h"
#include "parc/Analysis/MemoryEstimate.h"
#include "parc/Plan/Recipe.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::parc {

/// parc-plan's exit codes.
enum PlanExitCode : int {
  /// The plan is valid and predicted to fit.
  kPlanFits = 0,
  /// Any error: the recipe, the model or the plan.
  kPlanError = 1,
  /// The plan is valid but predicted not to fit in device memory.
  kPlanDoesNotFit = 2,
};

/// What parc-plan was asked, apart from the recipe's contents.
struct PlanInvocation {
  /// The recipe file; empty when the request is made of flags alone.
  std::string recipePath;
  /// The arguments of `--set` (`key=value`), applied over the recipe in
  /// order, then `flagSettings`.
  std::vector<std::string> setOptions;
  std::vector<RecipeSetting> flagSettings;
  bool json = false;
  /// Where to write the planned IR; empty for nowhere.
  std::string emitMlirPath;
  /// Where to write plan.bin; empty for nowhere.
  std::string emitPlanPath;
  /// Where to write the Chrome trace-event JSON of the schedule; empty for
  /// nowhere.
  std::string tracePath;
  /// The hardware profile directory; empty for the one next to the tool.
  std::string hardwareDir;
  /// Under search.auto: where to write the winner as a recipe; empty for
  /// nowhere.
  std::string emitRecipePath;
};

/// The request `invocation` makes (its recipe, then its --set options and
/// flags), with `extra` applied last.
FailureOr<PlanRequest> readPlanRequest(const PlanInvocation &invocation,
                                       ArrayRef<RecipeSetting> extra,
                                       MLIRContext *context);

/// The model `request` names, imported (or parsed) with its frozen modules
/// marked; null after an error.
OwningOpRef<ModuleOp> loadPlanModel(const PlanRequest &request,
                                    MLIRContext *context);

/// What planning predicted; each part present once it was computed.
struct PlanPrediction {
  bool pipelineRan = false;
  /// remat budget: the activation bytes apply-remat was given (-1: another
  /// remat mode).
  int64_t rematBudgetBytes = -1;
  std::optional<MemoryReport> memory;
  std::optional<CostReport> cost;
};

/// The memory replay's options for `request`'s batch and hardware.
MemoryOptions getMemoryOptions(const PlanRequest &request,
                               llvm::StringRef hardwareDir);

/// Runs the planning pipeline `request` asks for on `module` (loadPlanModel's)
/// and predicts every rank's memory and the step time (with `costIfOom`
/// false, only for a plan that fits: the search needs no step time of a
/// plan it discards); what was predicted before a failure stays in
/// `prediction`.
LogicalResult predictPlan(ModuleOp module, const PlanRequest &request,
                          llvm::StringRef hardwareDir,
                          PlanPrediction &prediction, bool costIfOom = true);

/// Adds the passes `request` asks for to `pm` (on builtin.module; the
/// passes run nested on each parc.model), in the order torchtitan
/// applies them: discover layers, remat, FSDP; then the lowering to the
/// per-rank programs, with the kernels of the hardware profile in
/// `hardwareDir` (empty: the one next to the tool). Under remat budget,
/// `rematBudgetBytes` is what apply-remat may keep (fitRematBudget's).
void buildPlanPipeline(OpPassManager &pm, const PlanRequest &request,
                       llvm::StringRef hardwareDir = "",
                       int64_t rematBudgetBytes = -1);

/// remat budget: the activation budget that makes `request`'s plan of
/// `module` peak within the device less the recipe's remat_margin. Starts
/// from the plan without remat (its peak less the activations there) and
/// plans again with the budget lowered by each overshoot (doubled on each
/// retry), up to six times;
/// the plans it tries are not reported (the plan made with the budget is).
/// Fails when the plan without remat does not plan.
FailureOr<int64_t> fitRematBudget(ModuleOp module, const PlanRequest &request,
                                  llvm::StringRef hardwareDir);

/// Runs parc-plan: writes the report (or the JSON document) to `out` and, in
/// text mode, diagnostics to `err`. Returns a PlanExitCode.
int runPlanner(const PlanInvocation &invocation, llvm::raw_ostream &out,
               llvm::raw_ostream &err);

} // namespace mlir::parc

#endif // PARC_PLAN_PLANNER_H
