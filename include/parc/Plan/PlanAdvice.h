//===- PlanAdvice.h - what makes a plan that does not fit fit ---*- C++ -*-===//
//
// When a plan is predicted not to fit, parc-plan plans the single changes a
// practitioner would try next (heavier remat, the FSDP policies back to
// their lean defaults, a smaller micro-batch, TP or PP doubled, twice the
// nodes) and reports the ones that fit, each with its predicted peak and
// step time: advice that was planned, not guessed.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_PLAN_PLANADVICE_H
#define PARC_PLAN_PLANADVICE_H

#include "parc/Plan/Candidate.h"

#include "llvm/Support/JSON.h"

namespace mlir::parc {

/// One change to the recipe and its plan.
struct PlanAdvice {
  /// "remat full", "micro-batch 1 (grad accumulation 8)", "tp 2 (fsdp 4)".
  std::string change;
  /// Several single changes together, tried when no single one fits.
  bool combined = false;
  PlanCandidate candidate;
};

/// Every single change tried on `request` (read from `invocation`), planned,
/// in the order a practitioner tries them: the same GPUs and layout first,
/// then another layout, then more GPUs.
/// `base`: settings `request` was read with over the invocation's, which
/// every change keeps.
std::vector<PlanAdvice> planAdvice(const PlanInvocation &invocation,
                                   const PlanRequest &request,
                                   ArrayRef<RecipeSetting> base = {});

/// The changes that fit, with their step time against `stepSeconds` (the
/// plan's), and those tried that do not.
void printAdvice(ArrayRef<PlanAdvice> advice, double stepSeconds,
                 llvm::raw_ostream &out);

/// The "advice" array of parc-plan's JSON document.
void writeAdviceJson(llvm::json::OStream &j, ArrayRef<PlanAdvice> advice,
                     double stepSeconds);

} // namespace mlir::parc

#endif // PARC_PLAN_PLANADVICE_H
