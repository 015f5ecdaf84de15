//===- PlanReport.h - parc-plan's report and JSON document ------*- C++ -*-===//
//
// How far planning got, and its two renderings: the text report and the
// JSON document of docs/parc-plan.md. Private to lib/Plan.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_LIB_PLAN_PLANREPORT_H
#define PARC_LIB_PLAN_PLANREPORT_H

#include "parc/Analysis/LayerStacks.h"
#include "parc/Plan/PlanAdvice.h"
#include "parc/Plan/Planner.h"

#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::parc {

/// One diagnostic as the JSON document and the text report show it.
struct PlanDiagnostic {
  std::string severity;
  std::string message;
  /// "file:line:col", a --set or flag, or empty when there is none.
  std::string location;
  /// The dotted path of the module or parameter the diagnostic is on, or
  /// empty.
  std::string path;
};

/// What the report says about the model.
struct ModelSummary {
  std::string name;
  std::string className;
  std::string source;
  std::string file;
  int64_t parameters = 0;
  int64_t trainableParameters = 0;
  /// Empty until discover-layers has run.
  std::optional<SmallVector<LayerStack>> stacks;
};

/// How far planning got; rendered whatever the outcome.
struct PlanOutcome {
  std::optional<PlanRequest> request;
  std::optional<ModelSummary> model;
  std::string pipeline;
  std::optional<MemoryReport> memory;
  std::optional<CostReport> cost;
  /// Whether planning got as far as writing --trace.
  bool traceAttempted = false;
  int exitCode = kPlanError;
  /// Under kPlanDoesNotFit: the single changes tried, planned.
  std::vector<PlanAdvice> advice;
};

/// 31273342464 -> "31,273,342,464".
std::string formatCount(int64_t count);
/// A string, or null where it is empty.
llvm::json::Value stringOrNull(StringRef text);
/// "fits", "does_not_fit" or "error".
StringRef getStatusName(int exitCode);
void writeDiagnostics(llvm::json::OStream &j,
                      ArrayRef<PlanDiagnostic> diagnostics);

/// The text report of `outcome` (nothing before the model was loaded).
void printText(const PlanOutcome &outcome, llvm::raw_ostream &out);
/// The JSON document of `outcome`, whatever the outcome.
void printJson(const PlanInvocation &invocation, const PlanOutcome &outcome,
               ArrayRef<PlanDiagnostic> diagnostics, llvm::raw_ostream &out);

} // namespace mlir::parc

#endif // PARC_LIB_PLAN_PLANREPORT_H
