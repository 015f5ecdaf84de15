//===- AutoPlanner.h - parc-plan --auto: the fastest plan that fits -*- C++
//-*-===//
//
// The search behind `parc-plan --auto` (recipe key `search.auto`): every
// layout the recipe leaves open is planned through the same pipeline and
// analyses as a hand-written recipe, and the plans that fit are ranked by
// predicted step time (docs/parc-plan.md, "Searching the layouts").
//
//===----------------------------------------------------------------------===//

#ifndef PARC_PLAN_AUTOPLANNER_H
#define PARC_PLAN_AUTOPLANNER_H

#include "parc/Plan/Candidate.h"

#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::parc {

/// What the search found and how much it looked at.
struct SearchResult {
  /// The recipe's keys that fixed the layout, and the keys searched.
  std::vector<std::string> fixedKeys;
  std::vector<std::string> searchedKeys;
  /// The global batch every candidate trains on; whether the recipe gave it.
  int64_t globalBatchSize = 0;
  bool globalBatchGiven = false;
  int64_t enumerated = 0, refused = 0, plannedOom = 0, impliedOom = 0,
          dominated = 0;
  /// Candidates whose layout shards the parameters, gradients and
  /// optimizer state over too few GPUs for them alone to fit: not planned.
  int64_t stateOom = 0;
  /// Bytes of the parameters, gradients and optimizer state of one replica
  /// (the lower bound a layout divides by its shards).
  double stateBytes = 0;
  /// The refusals, one per distinct message, most frequent first: the
  /// message, how many candidates it refused and one of their layouts.
  struct Refusal {
    std::string message;
    int64_t count = 0;
    std::string example;
  };
  std::vector<Refusal> refusals;
  /// The plans that fit, fastest first.
  std::vector<PlanCandidate> ranked;
  /// When nothing fits: the planned candidate with the smallest peak.
  std::optional<PlanCandidate> closest;
  double seconds = 0;
  int64_t evaluated = 0;
};

/// Searches the layouts `base` (read from `invocation`) leaves open. Errors
/// that no layout can avoid (the model, the hardware profile) are emitted
/// on `context` and fail the search; a layout the model refuses is counted.
FailureOr<SearchResult> searchLayouts(const PlanInvocation &invocation,
                                      const PlanRequest &base,
                                      MLIRContext *context);

/// The exit code of a search: kPlanFits with a winner, kPlanDoesNotFit when
/// layouts were planned but none fits, kPlanError when all were refused.
int getSearchExitCode(const SearchResult &result);

/// The search as a table: the counts, the top `top` plans, the refusals.
void printSearch(const SearchResult &result, const PlanRequest &base,
                 int64_t top, llvm::raw_ostream &out);

/// The search as the "search" object of parc-plan's JSON document.
void writeSearchJson(llvm::json::OStream &j, const SearchResult &result,
                     int64_t top);

} // namespace mlir::parc

#endif // PARC_PLAN_AUTOPLANNER_H
