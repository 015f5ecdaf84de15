//===- RematBudget.cpp - least recompute under an activation budget ------===//

#include "parc/Analysis/RematBudget.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace mlir::parc;

int64_t mlir::parc::getRematPeakBytes(ArrayRef<LayerRematOptions> layers,
                                      ArrayRef<unsigned> choice) {
  int64_t kept = 0, peak = 0;
  for (auto [options, index] : llvm::zip_equal(layers, choice)) {
    const RematOption &option = options[index];
    kept += option.savedBytes;
    peak = std::max(peak, kept + option.rebuiltBytes);
  }
  return std::max(peak, kept);
}

namespace {

/// One non-dominated way to decide a prefix of the layers: the bytes it
/// keeps, the FLOPs it recomputes, and how it was reached (for the
/// walk back).
struct FrontierPoint {
  int64_t kept = 0;
  double recompute = 0;
  uint32_t parent = 0;
  uint32_t option = 0;
};

} // namespace

std::variant<RematBudgetSolution, RematBudgetFailure>
mlir::parc::solveRematBudget(ArrayRef<LayerRematOptions> layers,
                             int64_t budgetBytes) {
  // frontiers[i]: the frontier after layers 0..i-1, kept ascending and
  // recompute strictly descending.
  std::vector<std::vector<FrontierPoint>> frontiers(1);
  frontiers[0].push_back({});
  std::vector<FrontierPoint> next;
  for (const LayerRematOptions &options : layers) {
    const std::vector<FrontierPoint> &current = frontiers.back();
    next.clear();
    for (auto [parent, point] : llvm::enumerate(current)) {
      for (auto [index, option] : llvm::enumerate(options)) {
        // Layer i's backward runs with layers 0..i's saved bytes and what
        // it rebuilds; overflow-safe since both are at most the budget.
        if (option.savedBytes > budgetBytes - point.kept ||
            option.rebuiltBytes > budgetBytes - point.kept - option.savedBytes)
          continue;
        next.push_back({point.kept + option.savedBytes,
                        point.recompute + option.recomputeFlops,
                        uint32_t(parent), uint32_t(index)});
      }
    }
    if (next.empty())
      return RematBudgetFailure::OverBudget;
    if (next.size() > kMaxRematFrontier)
      return RematBudgetFailure::TooLarge;
    llvm::sort(next, [](const FrontierPoint &a, const FrontierPoint &b) {
      return a.kept != b.kept ? a.kept < b.kept : a.recompute < b.recompute;
    });
    std::vector<FrontierPoint> pruned;
    double least = std::numeric_limits<double>::infinity();
    for (const FrontierPoint &point : next) {
      if (point.recompute >= least)
        continue;
      least = point.recompute;
      pruned.push_back(point);
    }
    frontiers.push_back(std::move(pruned));
  }

  // The last point recomputes least; no other with as little keeps less.
  RematBudgetSolution solution;
  solution.choice.resize(layers.size());
  uint32_t at = frontiers.back().size() - 1;
  solution.recomputeFlops = frontiers.back()[at].recompute;
  for (size_t layer = layers.size(); layer > 0; --layer) {
    const FrontierPoint &point = frontiers[layer][at];
    solution.choice[layer - 1] = point.option;
    at = point.parent;
  }
  solution.peakBytes = getRematPeakBytes(layers, solution.choice);
  return solution;
}
