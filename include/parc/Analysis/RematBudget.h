//===- RematBudget.h - least recompute under an activation budget -*- C++
//-*-===//
//
// Chooses per layer among none / selective / full remat so that the
// activations a step keeps fit a budget and backward recomputes the fewest
// FLOPs. The model of the step is the one the memory replay plays for one
// micro-batch without a pipeline: forward keeps every layer's saved bytes;
// backward walks the layers in reverse, and while layer i runs its backward
// the saved bytes of layers 0..i are alive together with what remat rebuilds
// for layer i. The search is exact (a Pareto frontier over layers), so two
// budgets never give a worse plan for the larger one.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_REMATBUDGET_H
#define PARC_ANALYSIS_REMATBUDGET_H

#include "Parc/IR/ParcEnums.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <variant>

namespace mlir::parc {

/// What one remat decision costs a layer: the bytes it keeps from forward
/// to its backward, the bytes backward rebuilds for it (alive while its
/// backward runs) and the FLOPs that rebuilding takes.
struct RematOption {
  RematKind kind = RematKind::None;
  int64_t savedBytes = 0;
  int64_t rebuiltBytes = 0;
  double recomputeFlops = 0;
};

/// The options of one layer, in forward order of the layers.
using LayerRematOptions = llvm::SmallVector<RematOption, 3>;

struct RematBudgetSolution {
  /// Per layer, the index of the chosen option.
  llvm::SmallVector<unsigned> choice;
  /// The largest activation bytes alive at once under `choice`.
  int64_t peakBytes = 0;
  double recomputeFlops = 0;
};

/// The activation bytes alive at the worst moment of the step under
/// `choice`: the end of forward (every layer's saved bytes) or the backward
/// of some layer i (the saved bytes of layers 0..i and i's rebuilt bytes).
int64_t getRematPeakBytes(llvm::ArrayRef<LayerRematOptions> layers,
                          llvm::ArrayRef<unsigned> choice);

/// Why no choice came back.
enum class RematBudgetFailure {
  /// Even the leanest option of every layer is over the budget.
  OverBudget,
  /// The frontier grew past `kMaxRematFrontier` pairs (thousands of layers
  /// of distinct shapes): refused rather than searched for minutes.
  TooLarge,
};
constexpr size_t kMaxRematFrontier = 1 << 22;

/// The choice with the least recompute FLOPs whose peak is at most
/// `budgetBytes` (ties: the fewer bytes kept at the end of forward). Exact:
/// every non-dominated (kept bytes, recompute) pair of each prefix of the
/// layers is carried forward, and a pair's future depends on nothing else.
std::variant<RematBudgetSolution, RematBudgetFailure>
solveRematBudget(llvm::ArrayRef<LayerRematOptions> layers, int64_t budgetBytes);

} // namespace mlir::parc

#endif // PARC_ANALYSIS_REMATBUDGET_H
