//===- Candidate.h - one recipe variant, planned and predicted --*- C++ -*-===//
//
// The unit of work of the layout search and of the advice for a plan that
// does not fit: the user's recipe with a few keys set over it, read by the
// recipe reader and planned by the same pipeline and analyses as
// `parc-plan FILE`, so a candidate's numbers are the ones the recipe it
// stands for plans to.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_PLAN_CANDIDATE_H
#define PARC_PLAN_CANDIDATE_H

#include "parc/Plan/Planner.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace mlir::parc {

/// Where a candidate's step time goes, in seconds: the parts a runner-up is
/// compared with the winner on.
struct StepParts {
  /// Forward and backward, less what remat recomputes.
  double compute = 0;
  double recompute = 0;
  /// FSDP waits the schedule does not hide, TP, HSDP and tied-weight
  /// collectives.
  double exposedCommunication = 0;
  double optimizer = 0;
  /// The rest of the step: the pipeline's bubble and the stages' waits.
  double bubble = 0;
};

/// One variant of the user's recipe, planned.
struct PlanCandidate {
  /// The keys set over the user's recipe.
  std::vector<RecipeSetting> settings;
  /// The request as read with those settings; its values only (no
  /// origins: they belonged to the planner's context).
  std::optional<PlanRequest> request;
  /// "fsdp 8", "dp 2 x fsdp 4 x tp 2 x pp 2 (interleaved-1f1b x2)".
  std::string layout;
  /// The first error planning reported, when it was refused.
  std::string refusal;
  bool planned = false;
  bool fits = false;
  /// Peak bytes per rank kind (one kind without PP, one per stage under it).
  std::vector<std::pair<std::string, int64_t>> peaks;
  int64_t peakBytes = 0, capacityBytes = 0;
  std::string peakKind;
  /// Predicted for a plan that fits only (0 otherwise).
  double stepSeconds = 0, tokensPerSecondPerGpu = 0, mfu = 0;
  StepParts parts;
};

/// A setting of `key` to the YAML text `value`, spelt "--auto" in
/// diagnostics.
RecipeSetting makeAutoSetting(StringRef key, const llvm::Twine &value);

/// "dp 2 x fsdp 4 x tp 2 x pp 2 (1f1b), no reshard, sync last".
std::string formatLayout(const PlanRequest &request);

double toGiB(int64_t bytes);
/// `value` with `decimals` decimals.
std::string formatFixed(double value, int decimals);
/// Seconds to four significant digits, so that the step of an 8B model and
/// of a toy one both read.
std::string formatSeconds(double seconds);
/// GiB to three significant digits.
std::string formatGiB(int64_t bytes);

/// `settings` as the "settings" object of a JSON document: key to value.
void writeSettingsJson(llvm::json::OStream &j,
                       ArrayRef<RecipeSetting> settings);

/// Plans candidates in an MLIRContext of its own (one per thread), with the
/// model imported once and cloned per candidate; diagnostics are kept, the
/// first error becoming the candidate's refusal.
class CandidatePlanner {
public:
  explicit CandidatePlanner(const PlanInvocation &invocation);
  void plan(PlanCandidate &candidate);

private:
  void refuse(PlanCandidate &candidate);

  const PlanInvocation &invocation;
  MLIRContext context{MLIRContext::Threading::DISABLED};
  std::string firstError;
  ScopedDiagnosticHandler handler;
  OwningOpRef<ModuleOp> model;
};

/// Runs `work(planner, index)` for every index below `count` on up to
/// hardware_concurrency threads, each with a CandidatePlanner of its own.
/// Indices are handed out in order; what `work` writes per index does not
/// depend on the thread that ran it.
template <typename Work>
void planInParallel(const PlanInvocation &invocation, size_t count, Work work) {
  size_t threads = std::max<size_t>(1, std::thread::hardware_concurrency());
  threads = std::min(threads, count);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    CandidatePlanner planner(invocation);
    for (size_t index = next++; index < count; index = next++)
      work(planner, index);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  if (count > 0)
    worker();
  for (std::thread &thread : pool)
    thread.join();
}

} // namespace mlir::parc

#endif // PARC_PLAN_CANDIDATE_H
