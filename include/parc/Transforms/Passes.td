//===- Passes.td - parc pass definitions -------------------*- tablegen -*-===//

#ifndef PARC_TRANSFORMS_PASSES_TD
#define PARC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrintModelStats : Pass<"print-model-stats", "::mlir::ModuleOp"> {
  let summary = "Print parameter counts of a model";
  let description = [{
    Prints the total parameter count with tied parameters counted once, as a
    plain integer on the first line, then the count of every module subtree,
    the count per dtype, and the tie groups. The numbers are the ones
    `sum(p.numel() for p in model.parameters())` gives in PyTorch.

    ```
    parc-opt --print-model-stats model.mlir
    ```
  }];
  let options = [
    Option<"maxDepth", "max-depth", "unsigned", /*default=*/"2",
           "Deepest module subtree to list (0 lists only the total)">
  ];
}

#endif // PARC_TRANSFORMS_PASSES_TD
