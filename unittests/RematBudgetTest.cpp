//===- RematBudgetTest.cpp - the budgeted remat search against brute force
//-===//
//
// solveRematBudget claims the optimum: the least recompute FLOPs whose
// activation peak fits the budget, ties broken by the fewer bytes kept at
// the end of forward. Enumerating every choice of small random instances
// (fixed seed) must find the same optimum, the same infeasibility, and never
// a choice the solver missed.
//
//===----------------------------------------------------------------------===//

#include "parc/Analysis/RematBudget.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <random>

using namespace mlir;
using namespace mlir::parc;

namespace {

struct Best {
  bool found = false;
  double recompute = 0;
  int64_t kept = 0;
};

int64_t getKeptBytes(ArrayRef<LayerRematOptions> layers,
                     ArrayRef<unsigned> choice) {
  int64_t kept = 0;
  for (auto [options, index] : llvm::zip_equal(layers, choice))
    kept += options[index].savedBytes;
  return kept;
}

/// Every choice of every layer, compared lexicographically on (recompute,
/// bytes kept).
Best bruteForce(ArrayRef<LayerRematOptions> layers, int64_t budget) {
  Best best;
  SmallVector<unsigned> choice(layers.size(), 0);
  while (true) {
    if (getRematPeakBytes(layers, choice) <= budget) {
      double recompute = 0;
      for (auto [options, index] : llvm::zip_equal(layers, choice))
        recompute += options[index].recomputeFlops;
      int64_t kept = getKeptBytes(layers, choice);
      if (!best.found || recompute < best.recompute ||
          (recompute == best.recompute && kept < best.kept))
        best = {true, recompute, kept};
    }
    size_t layer = 0;
    while (layer < layers.size() && ++choice[layer] == layers[layer].size())
      choice[layer++] = 0;
    if (layer == layers.size())
      return best;
  }
}

/// A layer whose options trade bytes for FLOPs as remat does (none keeps
/// most and recomputes nothing, full keeps least and rebuilds most), or
/// options drawn with no structure at all.
LayerRematOptions drawLayer(std::mt19937_64 &rng, bool structured) {
  auto draw = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  LayerRematOptions options;
  if (structured) {
    int64_t all = draw(20, 100);
    int64_t input = draw(1, 5);
    int64_t kept = draw(input, all);
    double flops = double(draw(10, 60));
    options.push_back({RematKind::None, all, 0, 0});
    options.push_back({RematKind::Selective, kept, all - kept,
                       flops * double(all - kept) / double(all)});
    options.push_back({RematKind::Full, input, all, flops});
    // Some layers offer fewer options (selective not applicable).
    options.resize(draw(1, 3));
    return options;
  }
  for (int64_t i = 0, e = draw(1, 3); i < e; ++i)
    options.push_back(
        {RematKind::None, draw(0, 80), draw(0, 80), double(draw(0, 40))});
  return options;
}

TEST(RematBudgetTest, MatchesExhaustiveEnumeration) {
  std::mt19937_64 rng(20261206);
  int feasible = 0, infeasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    bool structured = trial % 2 == 0;
    SmallVector<LayerRematOptions> layers;
    int64_t layerCount = std::uniform_int_distribution<int64_t>(1, 8)(rng);
    for (int64_t i = 0; i < layerCount; ++i)
      layers.push_back(drawLayer(rng, structured));
    int64_t budget =
        std::uniform_int_distribution<int64_t>(0, 100 * layerCount)(rng);
    Best best = bruteForce(layers, budget);
    auto result = solveRematBudget(layers, budget);
    SCOPED_TRACE("trial " + std::to_string(trial) + ", budget " +
                 std::to_string(budget));
    if (!best.found) {
      ++infeasible;
      ASSERT_TRUE(std::holds_alternative<RematBudgetFailure>(result));
      EXPECT_EQ(std::get<RematBudgetFailure>(result),
                RematBudgetFailure::OverBudget);
      continue;
    }
    ++feasible;
    ASSERT_TRUE(std::holds_alternative<RematBudgetSolution>(result));
    const auto &solution = std::get<RematBudgetSolution>(result);
    ASSERT_EQ(solution.choice.size(), layers.size());
    EXPECT_LE(solution.peakBytes, budget);
    EXPECT_EQ(solution.peakBytes, getRematPeakBytes(layers, solution.choice));
    EXPECT_EQ(solution.recomputeFlops, best.recompute);
    EXPECT_EQ(getKeptBytes(layers, solution.choice), best.kept);
  }
  // Both outcomes were exercised.
  EXPECT_GT(feasible, 100);
  EXPECT_GT(infeasible, 10);
}

/// A 126-layer stack of one shape (Llama 3.1 405B's) is solved at every
/// budget from the leanest to the heaviest, and more budget never costs
/// more recompute.
TEST(RematBudgetTest, DeepUniformStackIsMonotone) {
  LayerRematOptions layer = {{RematKind::None, 1000, 0, 0},
                             {RematKind::Selective, 600, 400, 10},
                             {RematKind::Full, 20, 1000, 35}};
  SmallVector<LayerRematOptions> layers(126, layer);
  double previous = std::numeric_limits<double>::infinity();
  int solved = 0;
  for (int64_t budget = 0; budget <= 130000; budget += 2500) {
    auto result = solveRematBudget(layers, budget);
    if (auto *failure = std::get_if<RematBudgetFailure>(&result)) {
      EXPECT_EQ(*failure, RematBudgetFailure::OverBudget);
      EXPECT_TRUE(std::isinf(previous)) << "budget " << budget;
      continue;
    }
    const auto &solution = std::get<RematBudgetSolution>(result);
    EXPECT_LE(solution.peakBytes, budget);
    EXPECT_LE(solution.recomputeFlops, previous) << "budget " << budget;
    previous = solution.recomputeFlops;
    ++solved;
  }
  EXPECT_GT(solved, 40);
  // With room for everything nothing is recomputed.
  EXPECT_EQ(previous, 0);
}

} // namespace
