//===- RecipeCheck.cpp - the recipe's checks across keys ------------------===//
//
// After every key has its typed value: the cluster's GPUs, the layout that
// must use every one of them, the global batch that must divide into whole
// micro-batches, and the policies that depend on those (remat budget, the
// interleaved schedule). Each error names the key and line it blames.
//
//===----------------------------------------------------------------------===//

#include "RecipeReader.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::parc;
using namespace mlir::parc::recipe;

void RecipeReader::check(PlanRequest &request) {
  if (checkCluster(request) && checkMicroBatchTokens(request) &&
      checkLayout(request) && checkBatch(request))
    checkPolicies(request);
}

bool RecipeReader::checkCluster(PlanRequest &request) {
  int64_t gpus = totalGpus;
  const Entry *gpusEntry = lookup("cluster.gpus");
  const Entry *perNodeEntry = lookup("cluster.gpus_per_node");
  if (gpusEntry && gpus > 0) {
    // GPUs and GPUs per node without nodes: as many nodes as that makes.
    if (perNodeEntry && !lookup("cluster.nodes") && request.gpusPerNode > 0) {
      if (gpus % request.gpusPerNode != 0) {
        error(*gpusEntry) << "cluster.gpus " << gpus
                          << " is not a whole number of nodes of "
                             "gpus_per_node "
                          << request.gpusPerNode;
        return false;
      }
      request.nodes = gpus / request.gpusPerNode;
    }
    if (gpus % request.nodes != 0) {
      error(*gpusEntry) << "cluster.gpus " << gpus
                        << " does not divide over cluster.nodes "
                        << request.nodes;
      return false;
    }
    if (perNodeEntry && request.gpusPerNode * request.nodes != gpus) {
      error(*gpusEntry) << "cluster.gpus " << gpus << " disagrees with "
                        << request.nodes << " nodes x gpus_per_node "
                        << request.gpusPerNode;
      return false;
    }
    request.gpusPerNode = gpus / request.nodes;
  } else if (!perNodeEntry) {
    error(fileLoc()) << "missing required key 'cluster.gpus_per_node' or "
                        "'cluster.gpus' (flag --gpus-per-node or --gpus)";
  }
  if (failed)
    return false;

  int64_t world = request.getWorldSize();
  if (world > RecipeLimits::kMaxGpus) {
    const Entry *nodes = lookup("cluster.nodes");
    error(gpusEntry ? gpusEntry->loc
          : nodes   ? nodes->loc
                    : fileLoc())
        << request.nodes << " nodes x " << request.gpusPerNode << " = " << world
        << " GPUs, at most " << RecipeLimits::kMaxGpus << " are supported";
    return false;
  }
  return true;
}

bool RecipeReader::checkMicroBatchTokens(const PlanRequest &request) {
  if (int64_t tokens = request.microBatchSize * request.seqLen;
      tokens > RecipeLimits::kMaxMicroBatchTokens) {
    const Entry *mbs = lookup("train.micro_batch_size");
    error(mbs ? mbs->loc : lookup("train.seq_len")->loc)
        << "micro_batch_size " << request.microBatchSize << " x seq_len "
        << request.seqLen << " = " << tokens
        << " tokens per micro-batch, at most "
        << RecipeLimits::kMaxMicroBatchTokens << " are supported";
    return false;
  }
  if (int64_t tokens = request.microBatchSize * request.imageTokens;
      tokens > RecipeLimits::kMaxMicroBatchTokens) {
    error(lookup("train.image_tokens")->loc)
        << "micro_batch_size " << request.microBatchSize << " x image_tokens "
        << request.imageTokens << " = " << tokens
        << " vision tokens per micro-batch, at most "
        << RecipeLimits::kMaxMicroBatchTokens << " are supported";
    return false;
  }
  return true;
}

bool RecipeReader::checkLayout(PlanRequest &request) {
  int64_t world = request.getWorldSize();
  std::string cluster =
      (llvm::Twine(world) + " GPUs (" + llvm::Twine(request.nodes) + " node" +
       (request.nodes == 1 ? "" : "s") + " x " +
       llvm::Twine(request.gpusPerNode) + ")")
          .str();
  const Entry *parallelEntry = lookup("parallel.fsdp");
  if (!parallelEntry)
    parallelEntry = lookup("parallel.dp");
  if (!parallelEntry)
    parallelEntry = lookup("parallel.tp");
  if (!parallelEntry)
    parallelEntry = lookup("parallel.pp");
  Location parallelLoc = parallelEntry ? parallelEntry->loc : fileLoc();
  int64_t others = request.dp * request.tp * request.pp;
  std::string othersText =
      (request.dp > 1 ? "dp " + std::to_string(request.dp) + " x " : "") +
      "tp " + std::to_string(request.tp) + " x pp " +
      std::to_string(request.pp);
  if (!lookup("parallel.fsdp")) {
    // FSDP takes every GPU that replication, tensor and pipeline
    // parallelism leave.
    if (world % others != 0) {
      error(parallelLoc) << othersText << " does not divide the " << cluster;
      return false;
    }
    request.fsdp = world / others;
  }
  int64_t used;
  bool wraps = llvm::MulOverflow(request.fsdp, others, used);
  if (wraps || used != world) {
    error(parallelLoc) << (request.dp > 1
                               ? "dp " + std::to_string(request.dp) + " x "
                               : std::string())
                       << "fsdp " << request.fsdp << " x tp " << request.tp
                       << " x pp " << request.pp << " = "
                       << (wraps ? std::string("over 2^63")
                                 : std::to_string(used))
                       << " GPUs, but the cluster has " << cluster
                       << "; the product must use every GPU";
    return false;
  }
  return true;
}

bool RecipeReader::checkBatch(PlanRequest &request) {
  int64_t perStep = request.microBatchSize * request.getDataParallelRanks();
  const Entry *gbsEntry = lookup("train.global_batch_size");
  const Entry *microEntry = lookup("parallel.microbatches");
  if (!gbsEntry) {
    // A pipeline needs micro-batches to fill it: one per stage by default.
    int64_t micro = microEntry ? request.microbatches : request.pp;
    request.globalBatchSize = perStep * micro;
  } else if (request.globalBatchSize % perStep != 0) {
    error(*gbsEntry) << "global_batch_size " << request.globalBatchSize
                     << " is not a multiple of micro_batch_size "
                     << request.microBatchSize << " x data-parallel ranks "
                     << request.getDataParallelRanks() << " = " << perStep
                     << "; gradient accumulation must be a whole number";
    return false;
  }
  if (request.globalBatchSize > RecipeLimits::kMaxGlobalBatch) {
    error(gbsEntry ? gbsEntry->loc : fileLoc())
        << "global batch of " << request.globalBatchSize
        << " sequences, at most " << RecipeLimits::kMaxGlobalBatch
        << " are supported";
    return false;
  }
  request.gradAccumulation = request.globalBatchSize / perStep;
  if (request.gradAccumulation > RecipeLimits::kMaxMicrobatches) {
    error(gbsEntry ? gbsEntry->loc : fileLoc())
        << "global_batch_size " << request.globalBatchSize
        << " / (micro_batch_size " << request.microBatchSize
        << " x data-parallel ranks " << request.getDataParallelRanks()
        << ") = " << request.gradAccumulation
        << " micro-batches per step, at most " << RecipeLimits::kMaxMicrobatches
        << " are supported (the program unrolls them): raise "
           "micro_batch_size";
    return false;
  }
  if (microEntry && request.microbatches != request.gradAccumulation) {
    error(*microEntry) << "microbatches " << request.microbatches
                       << " disagrees with global_batch_size "
                       << request.globalBatchSize << " / (micro_batch_size "
                       << request.microBatchSize << " x data-parallel ranks "
                       << request.getDataParallelRanks()
                       << ") = " << request.gradAccumulation;
    return false;
  }
  request.microbatches = request.gradAccumulation;
  return true;
}

void RecipeReader::checkPolicies(const PlanRequest &request) {
  if (const Entry *margin = lookup("parallel.remat_margin");
      margin && request.rematMargin > 0.5) {
    error(*margin) << "key 'parallel.remat_margin' must be at most 0.5 (the "
                      "fraction of device memory left free), got '"
                   << margin->value.Scalar() << "'";
    return;
  }
  if (request.remat == "budget" && request.pp > 1) {
    const Entry *remat = lookup("parallel.remat");
    error(remat ? remat->loc : fileLoc())
        << "remat budget needs pp 1, got pp " << request.pp
        << ": pipeline stages keep different numbers of micro-batches in "
           "flight; name full, selective or every:N";
    return;
  }
  if (request.ppChunks > 1 && request.ppSchedule != "interleaved-1f1b") {
    const Entry *chunks = lookup("parallel.pp_chunks");
    error(chunks ? chunks->loc : fileLoc())
        << "pp_chunks " << request.ppChunks
        << " needs pp_schedule interleaved-1f1b, got '" << request.ppSchedule
        << "'";
    return;
  }
}
