//===- ParcTpShardings.cpp - how each forward op runs under TP ------------===//
//
// The TP sharding rules of the forward ops (TpShardingOpInterface), in one
// place: Megatron's column- and row-parallel linears, vocab-parallel
// embedding and loss, sequence parallelism between the TP regions. apply-tp
// asks each op once and records the answer; docs/runtime.md describes what
// parc-run does with each collective.
//
//===----------------------------------------------------------------------===//

#include "Parc/IR/ParcOps.h"

using namespace mlir;
using namespace mlir::parc;

LogicalResult TpShardQuery::inferElementwise() {
  if (any(TpShard::Features) && any(TpShard::Full))
    return refuse("mixes values split over TP ranks with replicated ones");
  if (any(TpShard::Sequence) &&
      llvm::any_of(operands, [](TpShard s) { return s != TpShard::Sequence; }))
    return refuse("mixes sequence-parallel values with others");
  for (TpShard shard : {TpShard::Features, TpShard::Sequence, TpShard::Vocab})
    if (any(shard)) {
      result = shard;
      break;
    }
  return success();
}

namespace {
bool isSplit(TpRole role) {
  return role == TpRole::Colwise || role == TpRole::Rowwise ||
         role == TpRole::Vocab;
}
} // namespace

LogicalResult LinearOp::inferTpShards(TpShardQuery &query) {
  bool features = query.any(TpShard::Features);
  bool sequence = query.any(TpShard::Sequence);
  switch (query.weight) {
  case TpRole::Colwise:
  case TpRole::Vocab:
    if (features)
      return query.refuse("is column-parallel on an input that is already "
                          "split over TP ranks");
    // Sequence parallel all-gathers the sequence shards first (backward:
    // reduce-scatter); a replicated input's gradient is all-reduced.
    query.comms.push_back(sequence ? TpComm::GatherSequence
                                   : TpComm::CopyInput);
    query.result =
        query.weight == TpRole::Vocab ? TpShard::Vocab : TpShard::Features;
    return success();
  case TpRole::Rowwise:
    if (!features)
      return query.refuse(
          "is row-parallel on an input that is not split over TP ranks");
    if (query.hasBias && query.bias != TpRole::Replicated)
      return query.refuse("has a split bias after a row-parallel linear");
    // The replicated bias is added once after the reduction: to the whole
    // output, or under sequence parallel to each rank's sequence shard (its
    // gradient then sums over the shards).
    query.comms.push_back(query.sequenceParallel ? TpComm::ScatterSequence
                                                 : TpComm::Reduce);
    if (query.hasBias && query.sequenceParallel)
      query.comms.push_back(TpComm::BiasGrad);
    query.result =
        query.sequenceParallel ? TpShard::Sequence : TpShard::Full;
    return success();
  default:
    if (features)
      return query.refuse("is replicated on an input split over TP ranks");
    // Token by token on sequence shards: the gradients sum over the shards.
    if (sequence) {
      query.result = TpShard::Sequence;
      query.comms.push_back(TpComm::WeightGrad);
      if (query.hasBias)
        query.comms.push_back(TpComm::BiasGrad);
    }
    return success();
  }
}

LogicalResult EmbeddingOp::inferTpShards(TpShardQuery &query) {
  if (query.weight == TpRole::Colwise || query.weight == TpRole::Rowwise)
    return query.refuse("is an embedding split " +
                        stringifyTpRole(query.weight) +
                        "; embeddings split over the vocabulary");
  bool vocab = query.weight == TpRole::Vocab;
  if (query.sequenceParallel && !vocab)
    return query.refuse("is a replicated embedding under sequence parallel; "
                        "the sequence shards start at a vocab-parallel "
                        "embedding");
  // Each rank looks up its rows of the table; the partial embeddings sum
  // (or, under sequence parallel, sum into sequence shards).
  if (vocab)
    query.comms.push_back(query.sequenceParallel ? TpComm::ScatterSequence
                                                 : TpComm::Reduce);
  query.result = query.sequenceParallel ? TpShard::Sequence : TpShard::Full;
  return success();
}

LogicalResult MatmulOp::inferTpShards(TpShardQuery &query) {
  if (isSplit(query.weight) || query.any(TpShard::Features) ||
      query.any(TpShard::Sequence))
    return query.refuse("is a TP-split matmul, which parc-run does not run");
  return success();
}

namespace {
/// A norm on local heads (q/k norms) or on sequence shards: each rank's
/// weight gradient sums its own part only, so the gradients all-reduce.
LogicalResult inferNormShards(TpShardQuery &query) {
  if (isSplit(query.weight))
    return query.refuse("is a norm with a TP-split weight");
  query.result = query.operands.front();
  if (query.result == TpShard::Features || query.result == TpShard::Sequence) {
    query.comms.push_back(TpComm::WeightGrad);
    if (query.hasBias)
      query.comms.push_back(TpComm::BiasGrad);
  }
  return success();
}

/// Rope and attention run per head on whole sequences.
LogicalResult inferHeadwiseShards(TpShardQuery &query, bool checkMix) {
  if (query.any(TpShard::Sequence))
    return query.refuse(
        "needs the whole sequence but gets a sequence shard (no "
        "column-parallel linear gathered its input)");
  bool features = query.any(TpShard::Features);
  if (checkMix && features && query.any(TpShard::Full))
    return query.refuse(
        "mixes values split over TP ranks with replicated ones");
  query.result = features ? TpShard::Features : TpShard::Full;
  return success();
}
} // namespace

LogicalResult RmsNormOp::inferTpShards(TpShardQuery &query) {
  return inferNormShards(query);
}

LogicalResult LayerNormOp::inferTpShards(TpShardQuery &query) {
  return inferNormShards(query);
}

LogicalResult RopeOp::inferTpShards(TpShardQuery &query) {
  return inferHeadwiseShards(query, /*checkMix=*/false);
}

LogicalResult AttentionOp::inferTpShards(TpShardQuery &query) {
  return inferHeadwiseShards(query, /*checkMix=*/true);
}

bool SoftcapOp::keepsVocabShards(unsigned operand, bool) {
  return operand == 0;
}

bool CrossEntropyOp::keepsVocabShards(unsigned operand, bool lossParallel) {
  return operand == 0 && lossParallel;
}

LogicalResult CrossEntropyOp::inferTpShards(TpShardQuery &query) {
  TpShard logits = query.operands.front();
  if (logits == TpShard::Features || logits == TpShard::Sequence)
    return query.refuse("takes logits split over features or the sequence");
  if (logits == TpShard::Vocab)
    query.comms.push_back(TpComm::VocabLoss);
  return success();
}

LogicalResult MergeImageFeaturesOp::inferTpShards(TpShardQuery &query) {
  TpShard text = query.operands[0], image = query.operands[1];
  if (text == TpShard::Features || text == TpShard::Vocab ||
      image != TpShard::Full)
    return query.refuse("merges values split over TP ranks");
  // Under sequence parallel the text embeddings are sequence shards; the
  // vision tower (run without sequence parallelism) gives every rank all
  // image features, and each places those at its own positions.
  query.result = text;
  return success();
}
