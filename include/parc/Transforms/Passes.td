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

def DiscoverLayers : Pass<"discover-layers", "::mlir::ModuleOp"> {
  let summary = "Find the repeated layer stacks of a model from its structure";
  let description = [{
    Finds the layers of every `parc.model` from its structure, never from
    class names. A layer is a non-container module reached through
    ModuleList / ModuleDict / Sequential containers, flattened at any depth
    (a ModuleDict keyed "0".."59" is the same as a ModuleList), whose
    forward runs `parc.attention` (directly or through `parc.call`) and maps
    one tensor to a tensor of the same type. Consecutive layers of one class
    form a stack whatever their attributes or shapes (sliding and full
    attention stay one stack). A stack is named `language` when its
    attention is causal and `vision` when not (`language_1`, ... for more of
    a kind); its path is the outermost container holding only its layers.

    Records `parc.stacks` on the model and `parc.stack` / `parc.layer_index`
    on every layer, and remarks each stack. A model without layers is valid:
    it gets an empty `parc.stacks` and a warning naming the containers
    searched. Running the pass again gives the same IR.

    `stacks=` names the stacks' containers instead, in the order given:
    every layer below a path joins that stack, whatever its class. A path
    that resolves to nothing, holds no layers, mixes causal and
    bidirectional layers or shares a layer with another path is an error.

    ```
    parc-opt --discover-layers model.mlir
    parc-opt --discover-layers=stacks=model.language_model.layers model.mlir
    ```
  }];
  let options = [
    ListOption<"stackPaths", "stacks", "std::string",
               "Dotted paths of the layer containers, overriding discovery">
  ];
}

def ApplyRemat : Pass<"apply-remat", "::mlir::ModuleOp"> {
  let summary = "Decide activation rematerialisation per layer";
  let description = [{
    Marks every discovered layer in scope with `parc.remat`: `full` keeps only
    the layer input for backward and recomputes the rest; `selective` keeps
    matmul and attention outputs and marks norms, elementwise ops and
    activations `parc.recompute`; `every:N` applies full remat to every N-th
    layer. Requesting remat when no layer is in scope is an error naming the
    model and the stacks searched. Frozen modules are skipped and reported.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"full\"",
           "full | selective | every:N | none">,
    Option<"scope", "scope", "std::string", /*default=*/"\"all\"",
           "all | language | vision">,
    ListOption<"frozen", "frozen", "std::string",
               "Dotted paths of frozen modules (no gradients, no remat)">
  ];
}

def ApplyFsdp : Pass<"apply-fsdp", "::mlir::ModuleOp"> {
  let summary = "Group parameters into FSDP units sharded over a shard.grid";
  let description = [{
    Creates one `parc.fsdp_unit` per discovered layer plus a root unit for
    the parameters outside the layers, shards every parameter along dim 0
    over the `fsdp` grid axis (padding dim 0 up to a multiple of `shards`,
    padding counted), keeps tied parameters in one unit stored once, and
    records the mixed-precision policy.
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
  let options = [
    Option<"shards", "shards", "int64_t", /*default=*/"1",
           "Number of FSDP shards (ranks on the fsdp axis)">,
    Option<"reshardAfterForward", "reshard-after-forward", "bool",
           /*default=*/"true", "Free unsharded parameters after forward">,
    Option<"prefetch", "prefetch", "int64_t", /*default=*/"1",
           "Units all-gathered ahead of the one computing">,
    Option<"computeDtype", "compute-dtype", "std::string",
           /*default=*/"\"bf16\"", "Dtype of unsharded parameters">,
    Option<"masterDtype", "master-dtype", "std::string",
           /*default=*/"\"f32\"", "Dtype of sharded parameter storage">,
    Option<"reduceDtype", "reduce-dtype", "std::string",
           /*default=*/"\"f32\"", "Dtype of gradient reduce-scatter">,
    Option<"optimDtype", "optim-dtype", "std::string",
           /*default=*/"\"f32\"", "Dtype of the AdamW moments">
  ];
}

def EstimateMemory : Pass<"estimate-memory", "::mlir::ModuleOp"> {
  let summary = "Replay a training step per rank and report peak memory";
  let description = [{
    Replays the allocations and frees of one training step in schedule order
    (forward per unit: all-gather, compute, save or drop activations,
    reshard; backward in reverse: all-gather, recompute, gradients,
    reduce-scatter; optimizer step) and reports the true peak, when it
    happens and what it is made of, against a hardware profile. Prints the
    report and records `parc.predicted_peak_bytes`, `parc.predicted_peak_phase`
    and `parc.predicted_fits` on the model.
  }];
  let options = [
    Option<"hardware", "hardware", "std::string", /*default=*/"\"h100-80gb\"",
           "Hardware profile name (a file in the profile directory)">,
    Option<"hardwareDir", "hardware-dir", "std::string", /*default=*/"\"\"",
           "Directory of hardware profiles (default: next to the tool)">,
    Option<"seqLen", "seq", "int64_t", /*default=*/"4096", "Sequence length">,
    Option<"microBatch", "mbs", "int64_t", /*default=*/"1",
           "Micro-batch size per rank">,
    Option<"gradAccumulation", "grad-accum", "int64_t", /*default=*/"1",
           "Micro-batches per optimizer step">,
    Option<"imageTokens", "image-tokens", "int64_t", /*default=*/"0",
           "Image tokens per sample entering the vision tower">
  ];
}

#endif // PARC_TRANSFORMS_PASSES_TD
