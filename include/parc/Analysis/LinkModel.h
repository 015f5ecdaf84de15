//===- LinkModel.h - how long a collective takes on a link ------*- C++ -*-===//
//
// The communication half of the cost model: which link a group of ranks
// runs over and how long a collective takes on it. Ranks are laid out TP
// innermost, then FSDP, then the replicas, then PP (as torchtitan's device
// mesh), so a group is described by the span of consecutive ranks it
// covers. A collective is a ring at the link's bandwidth; latency terms are
// not modelled (docs/cost-model.md).
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_LINKMODEL_H
#define PARC_ANALYSIS_LINKMODEL_H

#include "parc/Analysis/HardwareProfile.h"

#include <string>

namespace mlir::parc {

struct Link {
  std::string name;     // "intra-node" or "inter-node"
  double bandwidth = 0; // bytes/s per GPU
};

/// The link of a group spanning `span` consecutive ranks: intra-node when
/// they fit in a node of `gpusPerNode` GPUs, inter-node otherwise.
Link getLink(const HardwareProfile &hardware, int64_t gpusPerNode,
             int64_t span);

/// Seconds a ring all-gather or reduce-scatter of `bytes` (unsharded) over
/// `ranks` ranks takes: (n - 1) / n * bytes / bandwidth; an all-reduce
/// twice that. Free on one rank or with no bandwidth (a link priced free).
double ringSeconds(double bytes, int64_t ranks, double bandwidth,
                   bool allReduce);

/// Seconds a point-to-point transfer of `bytes` takes.
double transferSeconds(double bytes, double bandwidth);

} // namespace mlir::parc

#endif // PARC_ANALYSIS_LINKMODEL_H
