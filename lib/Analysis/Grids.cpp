//===- Grids.cpp - the device grids of a plan -----------------------------===//

#include "parc/Analysis/Grids.h"

using namespace mlir;
using namespace mlir::parc;

int64_t mlir::parc::getGridSize(ModelOp model, StringRef gridName) {
  // Read generically so that analyses need not link the shard dialect.
  for (Operation &op : *model.getBody())
    if (op.getName().getStringRef() == "shard.grid")
      if (auto name = op.getAttrOfType<StringAttr>("sym_name"))
        if (name.getValue() == gridName)
          if (auto shape = op.getAttrOfType<DenseI64ArrayAttr>("shape"))
            if (!shape.empty())
              return shape[0];
  return 0;
}
