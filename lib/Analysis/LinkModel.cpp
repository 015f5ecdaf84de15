//===- LinkModel.cpp - how long a collective takes on a link --------------===//

#include "parc/Analysis/LinkModel.h"

using namespace mlir;
using namespace mlir::parc;

Link mlir::parc::getLink(const HardwareProfile &hardware, int64_t gpusPerNode,
                         int64_t span) {
  bool intra = span <= gpusPerNode;
  return {intra ? "intra-node" : "inter-node",
          intra ? hardware.intraNodeBandwidth : hardware.interNodeBandwidth};
}

double mlir::parc::ringSeconds(double bytes, int64_t ranks, double bandwidth,
                               bool allReduce) {
  if (ranks <= 1 || bandwidth <= 0)
    return 0;
  double ring = (allReduce ? 2.0 : 1.0) * double(ranks - 1) / double(ranks);
  return ring * bytes / bandwidth;
}

double mlir::parc::transferSeconds(double bytes, double bandwidth) {
  return bytes / bandwidth;
}
