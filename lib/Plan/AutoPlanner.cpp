//===- AutoPlanner.cpp - parc-plan --auto: the fastest plan that fits -----===//
//
// Every candidate is a recipe: the user's, with the layout keys it leaves
// open set by the search ("--auto" settings). It is read by the recipe
// reader (so the recipe's own checks refuse what they refuse), planned by
// the same pipeline and predicted by the same analyses as `parc-plan FILE`,
// so the numbers the search ranks on are the numbers the emitted recipe
// plans to.
//
// Candidates are grouped in chains, one per layout (dp x fsdp x tp x pp,
// schedule): micro-batch sizes ascending, remat lightest first. Memory only
// grows with the micro-batch and only shrinks with heavier remat, so the
// first remat mode that fits at a micro-batch size ends that size's ladder
// (the heavier ones are dominated: the same plan with more recompute; a
// selective plan that fits does not end it before budget, which may mix
// whole and selective layers for less), a
// mode that does not fit does not fit at any larger micro-batch size
// either, and a layout the model refuses at its smallest candidate is
// refused for all of them. Chains are planned in parallel, one MLIRContext
// per thread; the result does not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#include "parc/Plan/AutoPlanner.h"

#include "parc/Analysis/Frozen.h"
#include "parc/Analysis/HardwareProfile.h"
#include "parc/Analysis/ModelStats.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <chrono>
#include <map>

using namespace mlir;
using namespace mlir::parc;

namespace {

/// The layout keys the search sets where the recipe leaves them open.
constexpr llvm::StringLiteral kLayoutKeys[] = {
    "parallel.dp",
    "parallel.fsdp",
    "parallel.tp",
    "parallel.pp",
    "parallel.pp_schedule",
    "parallel.pp_chunks",
    "train.micro_batch_size",
    "parallel.remat",
    "parallel.sequence_parallel",
    "parallel.loss_parallel",
    "parallel.fsdp_reshard_after_forward",
    "parallel.fsdp_grad_sync",
};

/// The plans that fit whose FSDP policy variants are planned, fastest
/// first: a fixed number, so that what the search finds does not depend
/// on how many plans it shows.
constexpr size_t kRefined = 16;

/// The refusal reasons the text report lists, most frequent first.
constexpr size_t kRefusalsShown = 6;

/// Remat modes, lightest first; budget (one pipeline stage only) chooses
/// per layer among the others, recomputing least within the device less
/// its margin.
constexpr llvm::StringLiteral kRematLadder[] = {"none", "selective", "budget",
                                                "full"};

/// Whether the user gave `key` (the recipe, --set or a flag), rather than
/// leaving it to parc's or the framework's default.
bool isGiven(const PlanRequest &request, StringRef key) {
  auto it = request.origins.find(key.str());
  if (it == request.origins.end())
    return false;
  if (auto name = dyn_cast<NameLoc>(it->second))
    return !name.getName().getValue().starts_with("torchtitan default");
  return true;
}

SmallVector<int64_t> getDivisors(int64_t n) {
  SmallVector<int64_t> divisors;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0)
      divisors.push_back(d);
  return divisors;
}

/// One layout and the micro-batch sizes and remat modes tried on it.
struct Chain {
  std::vector<RecipeSetting> layout;
  /// The GPUs one replica's parameters and optimizer state shard over:
  /// fsdp x tp x pp.
  int64_t shards = 1;
  SmallVector<int64_t> microBatchSizes;
  SmallVector<StringRef> remats;
};

/// What planning the candidates of one chain found.
struct ChainResult {
  std::vector<PlanCandidate> candidates;
  int64_t enumerated = 0, refused = 0, plannedOom = 0, impliedOom = 0,
          dominated = 0, evaluated = 0;
};

/// Plans one chain in order, skipping what the planned candidates imply.
void runChain(CandidatePlanner &planner, const Chain &chain,
              ChainResult &result) {
  int64_t size = int64_t(chain.microBatchSizes.size() * chain.remats.size());
  result.enumerated = size;
  llvm::SmallDenseSet<size_t> oomRemat;
  bool first = true;
  for (int64_t mbs : chain.microBatchSizes) {
    bool fitted = false;
    StringRef fittedBy;
    for (auto [index, remat] : llvm::enumerate(chain.remats)) {
      // A whole-model selective plan that fits does not dominate the
      // budget's: mixing whole layers and selective ones may recompute less.
      if (fitted && !(remat == "budget" && fittedBy == "selective")) {
        ++result.dominated;
        continue;
      }
      if (oomRemat.contains(index)) {
        ++result.impliedOom;
        continue;
      }
      PlanCandidate candidate;
      candidate.settings = chain.layout;
      candidate.settings.push_back(
          makeAutoSetting("train.micro_batch_size", llvm::Twine(mbs)));
      candidate.settings.push_back(makeAutoSetting("parallel.remat", remat));
      planner.plan(candidate);
      ++result.evaluated;
      if (!candidate.planned) {
        if (first) {
          // The layout itself is refused: the same refusal for every
          // micro-batch size and remat mode.
          result.refused = size;
          result.candidates.push_back(std::move(candidate));
          return;
        }
        ++result.refused;
      } else if (candidate.fits) {
        if (!fitted)
          fittedBy = remat;
        fitted = true;
      } else {
        ++result.plannedOom;
        oomRemat.insert(index);
      }
      first = false;
      result.candidates.push_back(std::move(candidate));
    }
  }
}

/// The chains of every layout `base` leaves open.
std::vector<Chain> enumerateChains(const PlanRequest &base,
                                   const SearchResult &result) {
  auto fixed = [&](StringRef key) {
    return llvm::is_contained(result.fixedKeys, key);
  };
  int64_t world = base.getWorldSize();
  int64_t gbs = result.globalBatchSize;
  std::vector<Chain> chains;
  SmallVector<int64_t> tps;
  for (int64_t tp : getDivisors(world))
    if (fixed("parallel.tp") ? tp == base.tp : tp <= base.gpusPerNode)
      tps.push_back(tp);
  for (int64_t tp : tps)
    for (int64_t pp : getDivisors(world / tp)) {
      if (fixed("parallel.pp") && pp != base.pp)
        continue;
      for (int64_t dp : getDivisors(world / (tp * pp))) {
        int64_t fsdp = world / (tp * pp * dp);
        if ((fixed("parallel.dp") && dp != base.dp) ||
            (fixed("parallel.fsdp") && fsdp != base.fsdp))
          continue;
        // Schedules: 1F1B holds fewer micro-batches than GPipe at the same
        // step time, so GPipe is only planned where the recipe asks.
        SmallVector<std::pair<StringRef, int64_t>> schedules;
        if (pp == 1)
          schedules.push_back({"", 0});
        else if (fixed("parallel.pp_schedule"))
          schedules.push_back({base.ppSchedule, base.ppChunks});
        else if (fixed("parallel.pp_chunks"))
          schedules.push_back(
              {base.ppChunks > 1 ? "interleaved-1f1b" : "1f1b", base.ppChunks});
        else
          schedules = {{"1f1b", 1}, {"interleaved-1f1b", 2}};
        for (auto [schedule, chunks] : schedules) {
          Chain chain;
          auto set = [&](StringRef key, const llvm::Twine &value) {
            if (!fixed(key))
              chain.layout.push_back(makeAutoSetting(key, value));
          };
          set("parallel.dp", llvm::Twine(dp));
          set("parallel.fsdp", llvm::Twine(fsdp));
          set("parallel.tp", llvm::Twine(tp));
          set("parallel.pp", llvm::Twine(pp));
          if (!schedule.empty()) {
            set("parallel.pp_schedule", schedule);
            set("parallel.pp_chunks", llvm::Twine(chunks));
          }
          // Sequence and loss parallel only shrink activations in parc's
          // models: on under TP unless the recipe says otherwise.
          if (tp > 1) {
            set("parallel.sequence_parallel", "true");
            set("parallel.loss_parallel", "true");
          }
          if (!result.globalBatchGiven)
            chain.layout.push_back(
                makeAutoSetting("train.global_batch_size", llvm::Twine(gbs)));
          int64_t dataRanks = dp * fsdp;
          if (fixed("train.micro_batch_size"))
            chain.microBatchSizes.push_back(base.microBatchSize);
          else
            for (int64_t mbs = 1; mbs * dataRanks <= gbs; mbs *= 2)
              if (gbs % (mbs * dataRanks) == 0 &&
                  mbs * base.seqLen <= RecipeLimits::kMaxMicroBatchTokens)
                chain.microBatchSizes.push_back(mbs);
          if (fixed("parallel.remat"))
            chain.remats.push_back(base.remat);
          else
            for (StringRef remat : kRematLadder)
              if (remat != "budget" || pp == 1)
                chain.remats.push_back(remat);
          chain.shards = fsdp * tp * pp;
          if (!chain.microBatchSizes.empty())
            chains.push_back(std::move(chain));
        }
      }
    }
  return chains;
}

bool isFaster(const PlanCandidate &a, const PlanCandidate &b) {
  if (a.stepSeconds != b.stepSeconds)
    return a.stepSeconds < b.stepSeconds;
  return a.peakBytes < b.peakBytes;
}

/// The FSDP policy variants of a candidate that fits: no reshard after
/// forward, gradient sync after the last micro-batch, both.
std::vector<PlanCandidate> getPolicyVariants(const PlanCandidate &parent,
                                             const SearchResult &result) {
  const PlanRequest &request = *parent.request;
  std::vector<PlanCandidate> variants;
  // Without sharding there is nothing to keep gathered or to reduce late.
  if (request.fsdp == 1)
    return variants;
  bool reshard = request.reshardAfterForward &&
                 !llvm::is_contained(result.fixedKeys,
                                     "parallel.fsdp_reshard_after_forward");
  bool sync = request.gradAccumulation > 1 &&
              request.fsdpGradSync == "every-micro-batch" &&
              !llvm::is_contained(result.fixedKeys, "parallel.fsdp_grad_sync");
  auto add = [&](bool noReshard, bool syncLast) {
    PlanCandidate variant;
    variant.settings = parent.settings;
    if (noReshard)
      variant.settings.push_back(
          makeAutoSetting("parallel.fsdp_reshard_after_forward", "false"));
    if (syncLast)
      variant.settings.push_back(
          makeAutoSetting("parallel.fsdp_grad_sync", "last-micro-batch"));
    variants.push_back(std::move(variant));
  };
  if (reshard)
    add(true, false);
  if (sync)
    add(false, true);
  if (reshard && sync)
    add(true, true);
  return variants;
}

void addRefusal(SearchResult &result,
                std::map<std::string, SearchResult::Refusal> &refusals,
                const PlanCandidate &candidate, int64_t count) {
  SearchResult::Refusal &refusal = refusals[candidate.refusal];
  refusal.message = candidate.refusal;
  refusal.count += count;
  if (refusal.example.empty()) {
    // The layout of a candidate the recipe reader refused: its settings.
    if (candidate.request)
      refusal.example = candidate.layout;
    else
      refusal.example = llvm::join(
          llvm::map_range(candidate.settings,
                          [](const RecipeSetting &s) {
                            return StringRef(s.key).rsplit('.').second.str() +
                                   "=" + s.value;
                          }),
          " ");
  }
}

} // namespace

FailureOr<SearchResult>
mlir::parc::searchLayouts(const PlanInvocation &invocation,
                          const PlanRequest &base, MLIRContext *context) {
  auto start = std::chrono::steady_clock::now();
  // What no layout avoids is an error of the request, reported once.
  std::string hardwareDir = invocation.hardwareDir.empty()
                                ? getDefaultHardwareDir()
                                : invocation.hardwareDir;
  FailureOr<HardwareProfile> hardware = loadHardwareProfile(
      base.hardware, hardwareDir, base.getLocation("cluster.hardware"));
  if (failed(hardware))
    return failure();
  OwningOpRef<ModuleOp> module = loadPlanModel(base, context);
  if (!module)
    return failure();
  ModelOp model = *module->getOps<ModelOp>().begin();
  int64_t total = ModelStats::compute(model).totalParameters;
  int64_t trainable = countTrainableParameters(model, total);
  // What every rank holds at the optimizer step, whatever the activations:
  // its shard of the master parameters, and of the gradients and both
  // AdamW moments of the trainable ones (MemoryBreakdown's sharded
  // parameters, gradients and optimizer state). Replicated parameters only
  // add to it, so it is a lower bound of the replay's peak.
  int64_t master = getStorageDtypeBytes(base.masterDtype);
  int64_t gradient =
      std::min(master, getStorageDtypeBytes(base.gradReduceDtype));
  int64_t frozen = std::min(master, getStorageDtypeBytes(base.computeDtype));
  double stateBytes =
      double(total - trainable) * double(frozen) +
      double(trainable) *
          double(master + gradient + 2 * getStorageDtypeBytes(base.optimDtype));

  SearchResult result;
  Chain pruned;
  for (StringRef key : kLayoutKeys)
    (isGiven(base, key) ? result.fixedKeys : result.searchedKeys)
        .push_back(key.str());
  result.globalBatchSize = base.globalBatchSize;
  result.globalBatchGiven = isGiven(base, "train.global_batch_size");

  result.stateBytes = stateBytes;
  std::vector<Chain> chains;
  const Chain *leanest = nullptr; // the chain with the most shards pruned
  for (Chain &chain : enumerateChains(base, result)) {
    if (stateBytes / double(chain.shards) <= double(hardware->memoryBytes)) {
      chains.push_back(std::move(chain));
      continue;
    }
    int64_t size = int64_t(chain.microBatchSizes.size() * chain.remats.size());
    result.enumerated += size;
    result.stateOom += size;
    if (!leanest || chain.shards > leanest->shards)
      pruned = std::move(chain), leanest = &pruned;
  }
  std::vector<ChainResult> chainResults(chains.size());
  planInParallel(invocation, chains.size(),
                 [&](CandidatePlanner &planner, size_t index) {
                   runChain(planner, chains[index], chainResults[index]);
                 });

  std::map<std::string, SearchResult::Refusal> refusals;
  std::vector<PlanCandidate> oom;
  for (ChainResult &chain : chainResults) {
    result.enumerated += chain.enumerated;
    result.refused += chain.refused;
    result.plannedOom += chain.plannedOom;
    result.impliedOom += chain.impliedOom;
    result.dominated += chain.dominated;
    result.evaluated += chain.evaluated;
    bool layoutRefused = chain.refused == chain.enumerated;
    for (PlanCandidate &candidate : chain.candidates) {
      if (!candidate.planned)
        addRefusal(result, refusals, candidate,
                   layoutRefused ? chain.enumerated : 1);
      else if (candidate.fits)
        result.ranked.push_back(std::move(candidate));
      else
        oom.push_back(std::move(candidate));
    }
  }
  llvm::stable_sort(result.ranked, isFaster);

  // The FSDP policies trade memory for communication: tried on the plans
  // that already fit, the fastest first.
  std::vector<PlanCandidate> variants;
  size_t refine = std::min<size_t>(result.ranked.size(), kRefined);
  std::vector<size_t> parents;
  for (size_t index = 0; index < refine; ++index)
    for (PlanCandidate &variant :
         getPolicyVariants(result.ranked[index], result)) {
      variants.push_back(std::move(variant));
      parents.push_back(index);
    }
  planInParallel(invocation, variants.size(),
                 [&](CandidatePlanner &planner, size_t index) {
                   planner.plan(variants[index]);
                 });
  for (auto [variant, parent] : llvm::zip_equal(variants, parents)) {
    ++result.enumerated;
    ++result.evaluated;
    if (!variant.planned) {
      ++result.refused;
      addRefusal(result, refusals, variant, 1);
    } else if (variant.fits) {
      // A policy that costs memory and buys no time is not worth ranking.
      if (variant.stepSeconds < result.ranked[parent].stepSeconds)
        result.ranked.push_back(std::move(variant));
      else
        ++result.dominated;
    } else {
      ++result.plannedOom;
      oom.push_back(std::move(variant));
    }
  }
  llvm::stable_sort(result.ranked, isFaster);

  for (auto &[message, refusal] : refusals)
    result.refusals.push_back(std::move(refusal));
  llvm::stable_sort(result.refusals, [](const auto &a, const auto &b) {
    return a.count > b.count;
  });
  // Every layout pruned: plan the leanest at its smallest micro-batch and
  // heaviest remat, to say how far from fitting it is.
  if (result.ranked.empty() && oom.empty() && leanest) {
    PlanCandidate candidate;
    candidate.settings = leanest->layout;
    candidate.settings.push_back(
        makeAutoSetting("train.micro_batch_size",
                        llvm::Twine(leanest->microBatchSizes.front())));
    candidate.settings.push_back(
        makeAutoSetting("parallel.remat", leanest->remats.back()));
    CandidatePlanner(invocation).plan(candidate);
    ++result.evaluated;
    if (candidate.planned)
      oom.push_back(std::move(candidate));
  }
  if (result.ranked.empty() && !oom.empty())
    result.closest = *llvm::min_element(
        oom, [](const PlanCandidate &a, const PlanCandidate &b) {
          return a.peakBytes < b.peakBytes;
        });
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

int mlir::parc::getSearchExitCode(const SearchResult &result) {
  if (!result.ranked.empty())
    return kPlanFits;
  return result.closest ? kPlanDoesNotFit : kPlanError;
}

namespace {

/// "61.2" or, per rank kind under PP, "61.2/58.3".
std::string formatPeaks(const PlanCandidate &candidate) {
  return llvm::join(
      llvm::map_range(candidate.peaks,
                      [](const auto &peak) { return formatGiB(peak.second); }),
      "/");
}

/// The part of the step on which `candidate` loses most to `winner`.
std::pair<StringRef, double> getLosingPart(const PlanCandidate &candidate,
                                           const PlanCandidate &winner) {
  const StepParts &a = candidate.parts, &b = winner.parts;
  std::pair<StringRef, double> parts[] = {
      {"compute efficiency", a.compute - b.compute},
      {"recompute", a.recompute - b.recompute},
      {"exposed communication",
       a.exposedCommunication - b.exposedCommunication},
      {"optimizer step", a.optimizer - b.optimizer},
      {"pipeline bubble", a.bubble - b.bubble},
  };
  return *llvm::max_element(
      parts, [](const auto &x, const auto &y) { return x.second < y.second; });
}

std::string formatLosingPart(const PlanCandidate &candidate,
                             const PlanCandidate &winner) {
  if (&candidate == &winner)
    return "-";
  if (candidate.stepSeconds == winner.stepSeconds)
    return "ties, more memory";
  auto [name, seconds] = getLosingPart(candidate, winner);
  return (name + " +" + formatSeconds(seconds) + " s").str();
}

/// Prints rows as columns, each as wide as its widest cell; the columns
/// from `firstRight` to `lastRight` right-aligned.
void printTable(ArrayRef<std::vector<std::string>> rows, size_t firstRight,
                size_t lastRight, llvm::raw_ostream &out) {
  std::vector<size_t> widths;
  for (const std::vector<std::string> &row : rows)
    for (auto [column, cell] : llvm::enumerate(row)) {
      widths.resize(std::max(widths.size(), column + 1));
      widths[column] = std::max(widths[column], cell.size());
    }
  for (const std::vector<std::string> &row : rows) {
    std::string line = " ";
    for (auto [column, cell] : llvm::enumerate(row)) {
      line += "  ";
      bool right = column >= firstRight && column <= lastRight;
      bool last = column + 1 == row.size();
      if (right)
        line += std::string(widths[column] - cell.size(), ' ') + cell;
      else
        line +=
            last ? cell : cell + std::string(widths[column] - cell.size(), ' ');
    }
    out << line << "\n";
  }
}

std::vector<std::string> getRow(const std::string &rank,
                                const PlanCandidate &candidate,
                                const PlanCandidate &winner) {
  const PlanRequest &request = *candidate.request;
  return {rank,
          candidate.layout,
          std::to_string(request.microBatchSize),
          request.remat,
          formatPeaks(candidate),
          formatGiB(candidate.capacityBytes - candidate.peakBytes),
          formatSeconds(candidate.stepSeconds),
          formatFixed(candidate.tokensPerSecondPerGpu, 0),
          formatFixed(100 * candidate.mfu, 1),
          formatLosingPart(candidate, winner)};
}

} // namespace

void mlir::parc::printSearch(const SearchResult &result,
                             const PlanRequest &base, int64_t top,
                             llvm::raw_ostream &out) {
  out << "search: " << base.getModelFile() << " on " << base.getWorldSize()
      << " x " << base.hardware << " (" << base.nodes
      << (base.nodes == 1 ? " node" : " nodes") << " x " << base.gpusPerNode
      << ")\n";
  out << "  batch: global batch " << result.globalBatchSize << " x seq "
      << base.seqLen;
  if (!result.globalBatchGiven)
    out << " (train.global_batch_size not given: the recipe's default; set "
           "it to search another)";
  out << "\n";
  out << "  fixed: "
      << (result.fixedKeys.empty() ? std::string("(none)")
                                   : llvm::join(result.fixedKeys, ", "))
      << "\n";
  out << "  searched: "
      << (result.searchedKeys.empty() ? std::string("(none)")
                                      : llvm::join(result.searchedKeys, ", "))
      << "\n";
  out << "candidates: " << result.enumerated << " enumerated, "
      << result.refused << " refused, "
      << result.plannedOom + result.impliedOom + result.stateOom
      << " predicted OOM (" << result.plannedOom << " planned, "
      << result.impliedOom << " implied by a smaller micro-batch, "
      << result.stateOom << " by the sharded state alone), " << result.dominated
      << " dominated (a lighter remat or policy is as fast), "
      << result.ranked.size() << " ranked\n";
  out << "  planned " << result.evaluated << " in "
      << formatFixed(result.seconds, 2) << " s ("
      << formatFixed(result.seconds > 0 ? result.evaluated / result.seconds : 0,
                     0)
      << " per second)\n";

  if (!result.ranked.empty()) {
    const PlanCandidate &winner = result.ranked.front();
    std::vector<std::vector<std::string>> rows = {
        {"#", "layout", "mbs", "remat", "peak GiB", "headroom", "step s",
         "tok/s/GPU", "MFU %", "loses on"}};
    size_t shown = std::min<size_t>(result.ranked.size(), size_t(top));
    for (size_t index = 0; index < shown; ++index)
      rows.push_back(
          getRow(std::to_string(index + 1), result.ranked[index], winner));
    printTable(rows, 4, 8, out);
    if (winner.peaks.size() > 1)
      out << "  peak GiB per rank kind: "
          << llvm::join(
                 llvm::map_range(winner.peaks,
                                 [](const auto &peak) { return peak.first; }),
                 ", ")
          << "\n";
  } else if (result.closest) {
    const PlanCandidate &closest = *result.closest;
    out << "nothing fits: the closest plan, " << closest.layout
        << ", micro-batch " << closest.request->microBatchSize << ", remat "
        << closest.request->remat << ", peaks at "
        << formatFixed(toGiB(closest.peakBytes), 1) << " GiB ("
        << closest.peakKind << ") of "
        << formatFixed(toGiB(closest.capacityBytes), 1) << " GiB\n";
  }
  if (!result.refusals.empty()) {
    out << "refused:\n";
    size_t shown = std::min<size_t>(result.refusals.size(), kRefusalsShown);
    for (const SearchResult::Refusal &refusal :
         ArrayRef(result.refusals).take_front(shown))
      out << "  " << refusal.count << " x " << refusal.message << " (e.g. "
          << refusal.example << ")\n";
    if (shown < result.refusals.size())
      out << "  ... and " << result.refusals.size() - shown
          << " more reasons (--json lists them all)\n";
  }
}

void mlir::parc::writeSearchJson(llvm::json::OStream &j,
                                 const SearchResult &result, int64_t top) {
  j.attribute("global_batch_size", result.globalBatchSize);
  j.attribute("global_batch_given", result.globalBatchGiven);
  j.attributeArray("fixed", [&] {
    for (const std::string &key : result.fixedKeys)
      j.value(key);
  });
  j.attributeArray("searched", [&] {
    for (const std::string &key : result.searchedKeys)
      j.value(key);
  });
  j.attributeObject("counts", [&] {
    j.attribute("enumerated", result.enumerated);
    j.attribute("refused", result.refused);
    j.attribute("predicted_oom",
                result.plannedOom + result.impliedOom + result.stateOom);
    j.attribute("planned_oom", result.plannedOom);
    j.attribute("implied_oom", result.impliedOom);
    j.attribute("state_oom", result.stateOom);
    j.attribute("dominated", result.dominated);
    j.attribute("ranked", int64_t(result.ranked.size()));
    j.attribute("planned", result.evaluated);
  });
  j.attribute("seconds", result.seconds);
  j.attribute("state_bytes", result.stateBytes);
  auto writeCandidate = [&](const PlanCandidate &candidate,
                            const PlanCandidate *winner) {
    const PlanRequest &request = *candidate.request;
    j.attribute("layout", candidate.layout);
    writeSettingsJson(j, candidate.settings);
    j.attribute("dp", request.dp);
    j.attribute("fsdp", request.fsdp);
    j.attribute("tp", request.tp);
    j.attribute("pp", request.pp);
    j.attribute("pp_schedule", request.pp > 1
                                   ? llvm::json::Value(request.ppSchedule)
                                   : llvm::json::Value(nullptr));
    j.attribute("pp_chunks", request.ppChunks);
    j.attribute("micro_batch_size", request.microBatchSize);
    j.attribute("grad_accum", request.gradAccumulation);
    j.attribute("remat", request.remat);
    j.attribute("sequence_parallel", request.sequenceParallel);
    j.attribute("loss_parallel", request.lossParallel);
    j.attribute("fsdp_reshard_after_forward", request.reshardAfterForward);
    j.attribute("fsdp_grad_sync", request.fsdpGradSync);
    j.attributeArray("peaks", [&] {
      for (const auto &[kind, bytes] : candidate.peaks)
        j.object([&] {
          j.attribute("kind", kind);
          j.attribute("peak_bytes", bytes);
        });
    });
    j.attribute("peak_bytes", candidate.peakBytes);
    j.attribute("headroom_bytes",
                candidate.capacityBytes - candidate.peakBytes);
    j.attribute("step_time_s", candidate.stepSeconds);
    j.attribute("tokens_per_s_per_gpu", candidate.tokensPerSecondPerGpu);
    j.attribute("mfu", candidate.mfu);
    j.attributeObject("step_parts_s", [&] {
      j.attribute("compute", candidate.parts.compute);
      j.attribute("recompute", candidate.parts.recompute);
      j.attribute("exposed_communication",
                  candidate.parts.exposedCommunication);
      j.attribute("optimizer", candidate.parts.optimizer);
      j.attribute("bubble", candidate.parts.bubble);
    });
    if (!winner || winner == &candidate) {
      j.attribute("loses_on", nullptr);
      return;
    }
    auto [name, seconds] = getLosingPart(candidate, *winner);
    j.attributeObject("loses_on", [&] {
      j.attribute("part", name);
      j.attribute("seconds", seconds);
    });
  };
  j.attributeArray("ranked", [&] {
    size_t shown = std::min<size_t>(result.ranked.size(), size_t(top));
    for (size_t index = 0; index < shown; ++index)
      j.object([&] {
        j.attribute("rank", int64_t(index + 1));
        writeCandidate(result.ranked[index], &result.ranked.front());
      });
  });
  if (result.closest)
    j.attributeObject("closest",
                      [&] { writeCandidate(*result.closest, nullptr); });
  else
    j.attribute("closest", nullptr);
  j.attributeArray("refusals", [&] {
    for (const SearchResult::Refusal &refusal : result.refusals)
      j.object([&] {
        j.attribute("message", refusal.message);
        j.attribute("count", refusal.count);
        j.attribute("example", refusal.example);
      });
  });
}
