//===- Candidate.cpp - one recipe variant, planned and predicted ----------===//

#include "parc/Plan/Candidate.h"

#include "Parc/IR/ParcDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace mlir::parc;

double mlir::parc::toGiB(int64_t bytes) {
  return double(bytes) / double(int64_t(1) << 30);
}

std::string mlir::parc::formatFixed(double value, int decimals) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.*f", decimals, value);
  return text;
}

/// Seconds to four significant digits: a step of a 8B model and of a toy
/// one both read.
std::string mlir::parc::formatSeconds(double seconds) {
  std::string text;
  if (seconds >= 1000)
    llvm::raw_string_ostream(text) << llvm::format("%.0f", seconds);
  else
    llvm::raw_string_ostream(text) << llvm::format("%#.4g", seconds);
  return text;
}

/// GiB to three significant digits.
std::string mlir::parc::formatGiB(int64_t bytes) {
  std::string text;
  double gib = toGiB(bytes);
  if (std::abs(gib) >= 100)
    llvm::raw_string_ostream(text) << llvm::format("%.0f", gib);
  else
    llvm::raw_string_ostream(text) << llvm::format("%#.3g", gib);
  return text;
}

RecipeSetting mlir::parc::makeAutoSetting(StringRef key,
                                          const llvm::Twine &value) {
  RecipeSetting setting;
  setting.key = key.str();
  setting.value = value.str();
  setting.isYaml = true;
  setting.origin = "--auto";
  return setting;
}

std::string mlir::parc::formatLayout(const PlanRequest &request) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (request.dp > 1)
    os << "dp " << request.dp << " x ";
  os << "fsdp " << request.fsdp;
  if (request.tp > 1)
    os << " x tp " << request.tp;
  if (request.pp > 1) {
    os << " x pp " << request.pp << " (" << request.ppSchedule;
    if (request.ppChunks > 1)
      os << " x" << request.ppChunks;
    os << ")";
  }
  if (request.getDataParallelRanks() > 1 && !request.reshardAfterForward)
    os << ", no reshard";
  if (request.getDataParallelRanks() > 1 && request.gradAccumulation > 1 &&
      request.fsdpGradSync == "last-micro-batch")
    os << ", sync last";
  return text;
}

void mlir::parc::writeSettingsJson(llvm::json::OStream &j,
                                   ArrayRef<RecipeSetting> settings) {
  j.attributeObject("settings", [&] {
    for (const RecipeSetting &setting : settings)
      j.attribute(setting.key, setting.value);
  });
}

CandidatePlanner::CandidatePlanner(const PlanInvocation &invocation)
    : invocation(invocation), handler(&context, [this](Diagnostic &diag) {
        if (diag.getSeverity() == DiagnosticSeverity::Error &&
            firstError.empty())
          firstError = diag.str();
        return success();
      }) {
  context.loadDialect<ParcDialect, func::FuncDialect, shard::ShardDialect,
                      arith::ArithDialect>();
}

void CandidatePlanner::refuse(PlanCandidate &candidate) {
  candidate.refusal =
      firstError.empty() ? std::string("planning failed") : firstError;
}

void CandidatePlanner::plan(PlanCandidate &candidate) {
  firstError.clear();
  FailureOr<PlanRequest> request =
      readPlanRequest(invocation, candidate.settings, &context);
  if (failed(request)) {
    refuse(candidate);
    return;
  }
  candidate.request = *request;
  // Its locations belong to this planner's context, which dies with the
  // thread: the copy keeps the values only.
  candidate.request->origins.clear();
  candidate.request->recipeLoc = {};
  candidate.layout = formatLayout(*request);
  if (!model) {
    model = loadPlanModel(*request, &context);
    if (!model) {
      refuse(candidate);
      return;
    }
  }
  OwningOpRef<ModuleOp> module = model->clone();
  PlanPrediction prediction;
  if (failed(predictPlan(*module, *request, invocation.hardwareDir, prediction,
                         /*costIfOom=*/false)) ||
      !prediction.memory || (prediction.memory->fits() && !prediction.cost)) {
    refuse(candidate);
    return;
  }
  const MemoryReport &memory = *prediction.memory;
  candidate.planned = true;
  candidate.fits = memory.fits();
  // Device memory, as the verdict is: what the allocator reserves.
  for (const RankMemory &rank : memory.ranks)
    candidate.peaks.emplace_back(rank.rankKind, rank.devicePeakBytes());
  candidate.peakBytes = memory.devicePeakBytes();
  candidate.capacityBytes = memory.hardware.memoryBytes;
  if (!memory.ranks.empty())
    candidate.peakKind = memory.ranks[memory.deviceRank].rankKind;
  if (!prediction.cost)
    return; // over capacity: no step time predicted
  const CostReport &cost = *prediction.cost;
  candidate.stepSeconds = cost.stepSeconds;
  candidate.tokensPerSecondPerGpu = cost.tokensPerSecondPerGpu();
  candidate.mfu = cost.mfu();
  StepParts &parts = candidate.parts;
  // computeSeconds holds the TP collectives that block compute; they are
  // communication here.
  double flops = cost.flops.total();
  double kernels = cost.computeSeconds - cost.tpSeconds;
  parts.recompute = flops > 0 ? kernels * cost.flops.recompute / flops : 0;
  parts.compute = kernels - parts.recompute;
  parts.exposedCommunication = cost.exposedCommunicationSeconds +
                               cost.tpSeconds + cost.dpSeconds +
                               cost.tiedSeconds;
  parts.optimizer = cost.optimizerSeconds;
  parts.bubble =
      std::max(0.0, cost.stepSeconds - parts.compute - parts.recompute -
                        parts.exposedCommunication - parts.optimizer);
}
