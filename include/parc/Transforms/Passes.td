//===- Passes.td - parc pass definitions -------------------*- tablegen -*-===//

#ifndef PARC_TRANSFORMS_PASSES_TD
#define PARC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

/// The precisions a dtype option accepts, MLIR's names first (printed back).
defvar kStorageDtypeValues = [{::llvm::cl::values(
    clEnumValN(::mlir::parc::StorageDtype::BF16, "bf16", "bfloat16"),
    clEnumValN(::mlir::parc::StorageDtype::BF16, "bfloat16", "bfloat16"),
    clEnumValN(::mlir::parc::StorageDtype::FP16, "f16", "IEEE half"),
    clEnumValN(::mlir::parc::StorageDtype::FP16, "fp16", "IEEE half"),
    clEnumValN(::mlir::parc::StorageDtype::FP16, "float16", "IEEE half"),
    clEnumValN(::mlir::parc::StorageDtype::FP32, "f32", "IEEE single"),
    clEnumValN(::mlir::parc::StorageDtype::FP32, "fp32", "IEEE single"),
    clEnumValN(::mlir::parc::StorageDtype::FP32, "float32", "IEEE single"))}];

/// A kernel choice over the hardware profile's (KernelChoice).
defvar kKernelChoiceValues = [{::llvm::cl::values(
    clEnumValN(::mlir::parc::KernelChoice::Profile, "profile",
               "the hardware profile's"),
    clEnumValN(::mlir::parc::KernelChoice::Fused, "fused",
               "the fused kernel (flash / SDPA for attention)"),
    clEnumValN(::mlir::parc::KernelChoice::Eager, "eager",
               "the composite eager path"))}];

def PrintModelStats : Pass<"print-model-stats", "::mlir::parc::ModelOp"> {
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

def DiscoverLayers : Pass<"discover-layers", "::mlir::parc::ModelOp"> {
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

    Records `parc.stacks = [#parc.stack<name, path, layers>]` on the model
    and `parc.stack` / `parc.layer_index` on every layer, and remarks each
    stack. A model without layers is valid:
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

def ApplyRemat : Pass<"apply-remat", "::mlir::parc::ModelOp"> {
  let summary = "Decide activation rematerialisation per layer";
  let description = [{
    Marks every discovered layer in scope with `parc.remat`: `full` keeps only
    the layer input for backward and recomputes the rest; `selective` keeps
    matmul and attention outputs and marks `parc.recompute` on the ops whose
    `AutogradOpInterface` says they are cheap to recompute (norms, rope,
    elementwise ops, activations, softcap); `every` (with `every=N`) applies
    full remat to every N-th layer; `op` is torchtitan's op-level selective
    checkpointing (its `_op_sac_save_list` and every-second-matmul rule):
    the layer is rerun in backward, except the outputs of attention and of
    the 1st, 3rd, 5th, ... bias-free linear of each layer call (aten.mm; a
    linear with a bias is addmm, which the policy recomputes), which are
    kept and marked `parc.remat_save`; `budget` chooses per layer among none, selective and
    full the decisions that recompute the fewest FLOPs while the activations
    the step keeps (every layer's saved bytes at the end of forward, and
    during each layer's backward the saved bytes of the layers before it
    with what remat rebuilds for it) stay within `budget` bytes, traced at
    `seq` x `mbs` in `compute-dtype` with the kernels of `hardware`. The
    search is exact (docs/memory-model.md); layers out of scope or frozen count
    with the decision they have. A budget no decision meets gets full remat
    on every layer in scope and a warning saying what the least is;
    parc-plan derives the budget from the device and `remat_margin`.
    Requesting remat when no layer is in scope is an error naming the model
    and the stacks searched. Frozen modules are skipped and reported.
  }];
  let options = [
    Option<"mode", "mode", "::mlir::parc::RematMode",
           /*default=*/"::mlir::parc::RematMode::Full",
           "What the layers in scope recompute",
           [{::llvm::cl::values(
             clEnumValN(::mlir::parc::RematMode::None, "none",
                        "nothing: every layer keeps its activations"),
             clEnumValN(::mlir::parc::RematMode::Full, "full",
                        "every layer keeps its input only"),
             clEnumValN(::mlir::parc::RematMode::Selective, "selective",
                        "the ops cheap to recompute are recomputed"),
             clEnumValN(::mlir::parc::RematMode::Every, "every",
                        "full remat on every N-th layer (option every)"),
             clEnumValN(::mlir::parc::RematMode::Budget, "budget",
                        "per layer, the least recompute within budget"),
             clEnumValN(::mlir::parc::RematMode::Op, "op",
                        "torchtitan's op-level selective checkpointing"))}]>,
    Option<"every", "every", "int64_t", /*default=*/"0",
           "mode=every: full remat on every N-th layer of a stack">,
    Option<"budget", "budget", "int64_t", /*default=*/"-1",
           "mode=budget: activation bytes per rank the step may keep">,
    Option<"seqLen", "seq", "int64_t", /*default=*/"4096",
           "mode=budget: sequence length the layers are traced at">,
    Option<"microBatch", "mbs", "int64_t", /*default=*/"1",
           "mode=budget: micro-batch size the layers are traced at">,
    Option<"imageTokens", "image-tokens", "int64_t", /*default=*/"0",
           "mode=budget: image tokens per sample for vision layers">,
    Option<"computeDtype", "compute-dtype", "::mlir::parc::StorageDtype",
           /*default=*/"::mlir::parc::StorageDtype::BF16",
           "mode=budget: dtype of the activations", kStorageDtypeValues>,
    Option<"hardware", "hardware", "std::string", /*default=*/"\"h100-80gb\"",
           "mode=budget: hardware profile whose kernels decide what is saved">,
    Option<"hardwareDir", "hardware-dir", "std::string", /*default=*/"\"\"",
           "mode=budget: directory of hardware profiles">,
    Option<"attentionKernel", "attention-kernel", "::mlir::parc::KernelChoice",
           /*default=*/"::mlir::parc::KernelChoice::Profile",
           "mode=budget: attention kernel, over the hardware profile's", kKernelChoiceValues>,
    Option<"normKernel", "norm-kernel", "::mlir::parc::KernelChoice",
           /*default=*/"::mlir::parc::KernelChoice::Profile",
           "mode=budget: norm kernel, over the hardware profile's", kKernelChoiceValues>,
    Option<"lossKernel", "loss-kernel", "::mlir::parc::KernelChoice",
           /*default=*/"::mlir::parc::KernelChoice::Profile",
           "mode=budget: loss kernel, over the hardware profile's", kKernelChoiceValues>,

    Option<"scope", "scope", "::mlir::parc::RematScope",
           /*default=*/"::mlir::parc::RematScope::All",
           "The stacks remat decides for",
           [{::llvm::cl::values(
             clEnumValN(::mlir::parc::RematScope::All, "all", "every stack"),
             clEnumValN(::mlir::parc::RematScope::Language, "language",
                        "the language stacks"),
             clEnumValN(::mlir::parc::RematScope::Vision, "vision",
                        "the vision stacks"))}]>,
    ListOption<"frozen", "frozen", "std::string",
               "Dotted paths of frozen modules (no gradients, no remat)">
  ];
}

def ApplyFsdp : Pass<"apply-fsdp", "::mlir::parc::ModelOp"> {
  let summary = "Group parameters into FSDP units sharded over a shard.grid";
  let description = [{
    Creates one `parc.fsdp_unit` per discovered layer plus a root unit for
    the parameters outside the layers, shards every parameter along dim 0
    over the `fsdp` grid axis (padding dim 0 up to a multiple of `shards`,
    padding counted), keeps tied parameters in one unit stored once, and
    records the mixed-precision policy, reshard-after-forward, prefetch and
    gradient sync (`grad_sync = #parc.grad_sync<last_micro_batch>` when
    gradients are reduce-scattered after the last micro-batch only) on each
    unit.
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
  let options = [
    Option<"shards", "shards", "int64_t", /*default=*/"1",
           "Number of FSDP shards (ranks on the fsdp axis)">,
    Option<"replicas", "replicas", "int64_t", /*default=*/"1",
           "Data-parallel replicas of each FSDP group (HSDP; ranks on a "
           "shard.grid @dp whose gradient shards are all-reduced)">,
    Option<"reshardAfterForward", "reshard-after-forward", "bool",
           /*default=*/"true", "Free unsharded parameters after forward">,
    Option<"reshardLastLayer", "reshard-last-layer", "bool",
           /*default=*/"true",
           "With reshard-after-forward, free the last layer's too (false: "
           "the last layer in execution order keeps its gathered parameters "
           "into its backward, which runs first; NeMo Automodel's default)">,
    Option<"prefetch", "prefetch", "int64_t", /*default=*/"1",
           "Units all-gathered ahead of the one computing">,
    Option<"gradSync", "grad-sync", "::mlir::parc::GradSync",
           /*default=*/"::mlir::parc::GradSync::EveryMicroBatch",
           "When gradients are reduce-scattered under gradient accumulation",
           [{::llvm::cl::values(
             clEnumValN(::mlir::parc::GradSync::EveryMicroBatch,
                        "every-micro-batch",
                        "after each micro-batch; shards accumulate"),
             clEnumValN(::mlir::parc::GradSync::LastMicroBatch,
                        "last-micro-batch",
                        "after the last only; unsharded gradients "
                        "accumulate in the reduce dtype (FSDP2 without "
                        "gradient sync, NeMo's defer_fsdp_grad_sync)"))}]>,
    Option<"computeDtype", "compute-dtype", "::mlir::parc::StorageDtype",
           /*default=*/"::mlir::parc::StorageDtype::BF16",
           "Dtype of unsharded parameters", kStorageDtypeValues>,
    Option<"masterDtype", "master-dtype", "::mlir::parc::StorageDtype",
           /*default=*/"::mlir::parc::StorageDtype::FP32",
           "Dtype of sharded parameter storage", kStorageDtypeValues>,
    Option<"reduceDtype", "reduce-dtype", "::mlir::parc::StorageDtype",
           /*default=*/"::mlir::parc::StorageDtype::FP32",
           "Dtype of gradient reduce-scatter", kStorageDtypeValues>,
    Option<"optimDtype", "optim-dtype", "::mlir::parc::StorageDtype",
           /*default=*/"::mlir::parc::StorageDtype::FP32",
           "Dtype of the AdamW moments", kStorageDtypeValues>
  ];
}

def EstimateMemory : Pass<"estimate-memory", "::mlir::parc::ModelOp"> {
  let summary = "Replay a training step per rank and report peak memory";
  let description = [{
    Replays the `parc.program` of each rank kind op by op: its all-gathers
    and frees of FSDP units, saved activations and their frees, recomputes,
    forwards and backwards (with the working set, loss and gradients each
    holds), reduce-scatters and the optimizer step. It reports the true
    peak, when it happens and what it is made of, against a hardware
    profile. A model without programs is lowered first
    (--lower-to-schedule with this pass's seq, mbs and grad-accum); a
    program lowered for another batch than an explicit seq, mbs or
    grad-accum is refused. Prints the
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
           "Image tokens per sample entering the vision tower">,
    Option<"allocator", "allocator", "::mlir::parc::AllocatorChoice",
           /*default=*/"::mlir::parc::AllocatorChoice::Profile",
           "How tensors get device memory", [{::llvm::cl::values(
      clEnumValN(::mlir::parc::AllocatorChoice::Profile, "profile",
                 "the hardware profile's"),
      clEnumValN(::mlir::parc::AllocatorChoice::Caching, "caching",
                 "PyTorch's CUDA caching allocator"),
      clEnumValN(::mlir::parc::AllocatorChoice::ExpandableSegments,
                 "expandable-segments",
                 "the caching allocator with expandable_segments:True"),
      clEnumValN(::mlir::parc::AllocatorChoice::Direct, "direct",
                 "one allocation per tensor, no cache"))}]>,
    Option<"optimizerImpl", "optimizer-impl", "::mlir::parc::OptimizerImpl",
           /*default=*/"::mlir::parc::OptimizerImpl::Foreach",
           "How AdamW steps: the temporaries the allocator replay places",
           [{::llvm::cl::values(
      clEnumValN(::mlir::parc::OptimizerImpl::Foreach, "foreach",
                 "one list of square roots for every parameter at once"),
      clEnumValN(::mlir::parc::OptimizerImpl::ForLoop, "for-loop",
                 "one parameter's square root at a time"),
      clEnumValN(::mlir::parc::OptimizerImpl::Fused, "fused",
                 "one fused kernel, no temporaries"))}]>
  ];
}

def EstimateCost : Pass<"estimate-cost", "::mlir::parc::ModelOp"> {
  let summary = "Predict the step time, tokens/s/GPU and MFU of a plan";
  let description = [{
    Times the `parc.program` of each rank kind op by op: each compute step
    at the FLOPs of its op graph (the layer's forward traced at the
    program's batch x seq, its backward, its recompute) under the compute
    efficiency, each collective at the ring cost of the bytes the program
    gives it (over the intra-node link when its group fits in a node, the
    inter-node link otherwise), FSDP collectives on a communication stream
    in program order overlapping compute, TP collectives blocking it,
    pipeline transfers waiting on the other stage's send, and a memory-bound
    AdamW step (docs/cost-model.md). A model without programs is lowered
    first, as --estimate-memory does. Prints the report and records
    `parc.predicted_step_time_s`, `parc.predicted_tokens_per_s_per_gpu`,
    `parc.predicted_mfu` and `parc.predicted_flops_per_step` on the model.
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
           "Image tokens per sample entering the vision tower">,
    Option<"gpusPerNode", "gpus-per-node", "int64_t", /*default=*/"0",
           "GPUs per node (0: the hardware profile's)">,
    Option<"computeEfficiency", "compute-efficiency", "double",
           /*default=*/"0", "Fraction of the dense bf16 peak compute achieves "
           "(0: the hardware profile's compute_efficiency)">,
    Option<"overlap", "overlap", "::mlir::parc::CommOverlap",
           /*default=*/"::mlir::parc::CommOverlap()",
           "schedule | none | a fraction in [0, 1] of communication hidden">
  ];
}

def ApplyTp : Pass<"apply-tp", "::mlir::parc::ModelOp"> {
  let summary = "Derive a tensor-parallel plan from the op graph of the layers";
  let description = [{
    Plans Megatron-style tensor parallelism over a `shard.grid @tp` of `size`
    ranks from the op graph of every discovered layer (through the forwards
    it calls), never from class or module names: linears feeding an
    attention's q / k / v (through norms and rope) and linears whose output
    feeds an activation or a gating mul are column-parallel; the linear
    consuming an attention output or that activation / mul result is
    row-parallel; the root's embedding tables and the linear producing the
    logits of `parc.cross_entropy` (through a softcap) are vocab-parallel,
    their vocab padded up to a multiple of `size`; norms are replicated, or
    sequence-parallel on the residual stream with `sequence-parallel`. Other
    linears stay replicated and are counted. Sequence parallelism splits the
    residual stream the vocab embedding scatters; a vision stack's layers,
    whose patch embeddings nothing scatters, run tensor-parallel without it
    (row-parallel linears all-reduce, norms replicated), and
    `parc.merge_image_features` places the whole image features into each
    rank's sequence shard.

    Records `parc.tp = #parc.tp<colwise | rowwise | vocab | replicated |
    sequence>` on every `parc.param` (a column-parallel bias is split with
    its output, a row-parallel bias is replicated), `parc.tp_padded_dim0` on
    vocab-parallel parameters, and `parc.tp_size`,
    `parc.tp_sequence_parallel`, `parc.tp_loss_parallel` on the model.

    Then every op of the forwards records, from its
    `TpShardingOpInterface`, `parc.tp_shards = #parc.tp_shards<values =
    [...], comms = [...], gather = [...]>`: what a TP rank holds of each
    result (`full`, `features`, `vocab`, `sequence`), the collectives its
    kernel runs (`copy_input`, `reduce`, `gather_sequence`,
    `scatter_sequence`, `weight_grad`, `bias_grad`, `vocab_loss`) and the
    vocab-split operands it all-gathers; each forward records its arguments'
    splits. A module's forward is split one way for all its calls. What no
    rule allows (a split value passed to or returned from a module, attention
    on a sequence shard, sequence-parallel values mixed with replicated
    ones) is an error on the op. Collectives are recorded, not inserted (a
    real `shard.all_reduce` in the forward would change the value types the
    other passes read); the record is the only statement of them: the
    remark's per-token traffic, the lowering's collectives and parc-run all
    read it. Linears reading one input in a row (q, k, v) copy or gather it
    once.

    Before anything is written, attention heads, KV heads (per layer, so a
    separate count on full-attention layers is checked), the intermediate
    size and the head groups of rope and q/k norms must divide by `size`;
    each refusal is an error on the model naming the `parc.hf_config` key
    (or the op attribute and layer for hand-written IR) and its value.
    `size=1` records only `parc.tp_size = 1`. Without discovered stacks it
    is an error; an attention whose output no linear consumes keeps its
    projections replicated, with a warning.

    ```
    parc-opt --discover-layers "--apply-tp=size=4 sequence-parallel=true" m.mlir
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
  let options = [
    Option<"size", "size", "int64_t", /*default=*/"1",
           "Tensor-parallel degree (ranks on the tp axis)">,
    Option<"sequenceParallel", "sequence-parallel", "bool",
           /*default=*/"false",
           "Shard norms and residuals along the sequence between TP regions">,
    Option<"lossParallel", "loss-parallel", "bool", /*default=*/"false",
           "Compute the cross-entropy on vocab-sharded logits">
  ];
}

def ApplyPp : Pass<"apply-pp", "::mlir::parc::ModelOp"> {
  let summary = "Split the layers into pipeline stages with an explicit schedule";
  let description = [{
    Cuts the discovered language layers, in execution order, into `stages` x
    `chunks` contiguous (virtual) stages minimising the slowest one under the
    cost model (forward + backward + recompute FLOPs of each layer at `mbs`
    x `seq`; the root's ops before the last layer and a vision stack at
    `image-tokens` on the first stage, the final norm, lm_head and loss on
    the last) with an exact linear-partition DP, or as pinned by `split`.
    Virtual stage g goes to rank g mod `stages`.

    Records `shard.grid @pp`, `parc.pp_stage` (and `parc.pp_chunk` when
    interleaved) on each layer, `parc.pp` on the model (stages, schedule,
    chunks, microbatches, stage_layers, stage_costs, in_flight, bubble =
    (p - 1) / m, or (p - 1) / (v m) interleaved; in_flight is counted
    from the steps), `parc.pp_schedule`: per stage a
    `#parc.pp_steps<stage, steps = [F3, B0, F3.c1, ...]>` of the ordered
    steps (`.c1`: chunk 1) of GPipe, 1F1B or Megatron-LM's interleaved
    1F1B, and `parc.pp_tied_copies` for a tie group spanning stages (two
    copies, gradients all-reduced over pp).

    ```
    parc-opt --discover-layers "--apply-pp=stages=2 schedule=1f1b microbatches=8" m.mlir
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"1",
           "Pipeline stages (ranks on the pp axis)">,
    Option<"schedule", "schedule", "::mlir::parc::PpSchedule",
           /*default=*/"::mlir::parc::PpSchedule::OneFOneB",
           "Pipeline schedule", [{::llvm::cl::values(
             clEnumValN(::mlir::parc::PpSchedule::Gpipe, "gpipe",
                        "every forward, then every backward"),
             clEnumValN(::mlir::parc::PpSchedule::OneFOneB, "1f1b",
                        "one forward, one backward (PipeDream-flush)"),
             clEnumValN(::mlir::parc::PpSchedule::Interleaved1F1B,
                        "interleaved-1f1b",
                        "1F1B over `chunks` virtual stages per rank"))}]>,
    Option<"chunks", "chunks", "int64_t", /*default=*/"1",
           "Virtual stages per rank (interleaved-1f1b)">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Micro-batches per step">,
    ListOption<"split", "split", "int64_t",
               "Pinned layers per (virtual) stage">,
    Option<"seq", "seq", "int64_t", /*default=*/"4096",
           "Sequence length for the cost weights">,
    Option<"mbs", "mbs", "int64_t", /*default=*/"1",
           "Micro-batch size for the cost weights">,
    Option<"imageTokens", "image-tokens", "int64_t", /*default=*/"0",
           "Image tokens per sample entering a vision stack">
  ];
}

def LowerToSchedule : Pass<"lower-to-schedule", "::mlir::parc::ModelOp"> {
  let summary = "Lower a planned model to one straight-line program per rank kind";
  let description = [{
    Turns the plan the earlier passes recorded (discovered layers, the TP
    collectives, remat decisions, FSDP units, the pipeline schedule) into a
    `parc.program` per kind of rank: ranks doing the same work share one
    (without PP every rank is one kind, `@all_ranks`; with PP one per stage,
    `@stage_<s>`, covering `pp = [s]`). A program is the ordered steps of one
    training step: FSDP all-gathers (with prefetch) and frees of each unit,
    forwards of the root's head, each layer and the root's tail per
    micro-batch (and chunk), saved activations and their frees, pipeline
    sends and receives of activations and their gradients, recomputes,
    backwards, gradient reduce-scatters, all-reduces (TP collectives,
    tied copies over pp, data-parallel replicas over a `shard.grid @dp`),
    gradient clipping to `max-norm` (torchtitan's `max_norm`, 1.0 by
    default) and the optimizer step. Collectives are `shard` ops on the model's grids over
    `parc.buffer`s of the exact size; collectives over an axis of size 1 are
    omitted. docs/schedule.md lists the vocabulary.

    The bytes a `parc.save` keeps are what the layer's ops save on one TP
    rank with the kernels of `hardware` (flash or eager attention, fused or
    eager norms): --estimate-memory replays these programs and reads them
    back. --estimate-memory and --estimate-cost lower a model that has no
    programs yet with their own seq, mbs and grad-accum.

    Needs --discover-layers and --apply-fsdp (shards=1 for none); refuses
    attributes that disagree (a pipeline schedule that misses or repeats a
    micro-batch, a layer on no stage, a grid whose size disagrees with its
    plan). Re-running replaces the programs.

    ```
    parc-opt m.mlir --discover-layers --apply-remat=mode=full \
        --apply-fsdp=shards=8 "--lower-to-schedule=seq=4096 mbs=1"
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
  let options = [
    Option<"seqLen", "seq", "int64_t", /*default=*/"4096", "Sequence length">,
    Option<"microBatch", "mbs", "int64_t", /*default=*/"1",
           "Micro-batch size per rank">,
    Option<"gradAccumulation", "grad-accum", "int64_t", /*default=*/"1",
           "Micro-batches per optimizer step without a pipeline">,
    Option<"imageTokens", "image-tokens", "int64_t", /*default=*/"0",
           "Image tokens per sample entering a vision stack">,
    Option<"maxNorm", "max-norm", "double", /*default=*/"1.0",
           "Clip gradients to this global norm before the optimizer step "
           "(0: no clipping)">,
    Option<"hardware", "hardware", "std::string", /*default=*/"\"h100-80gb\"",
           "Hardware profile whose kernels decide what a forward saves">,
    Option<"hardwareDir", "hardware-dir", "std::string", /*default=*/"\"\"",
           "Directory of hardware profiles (default: next to the tool)">,
    Option<"attentionKernel", "attention-kernel", "::mlir::parc::KernelChoice",
           /*default=*/"::mlir::parc::KernelChoice::Profile",
           "Attention kernel, over the hardware profile's", kKernelChoiceValues>,
    Option<"normKernel", "norm-kernel", "::mlir::parc::KernelChoice",
           /*default=*/"::mlir::parc::KernelChoice::Profile",
           "Norm kernel, over the hardware profile's", kKernelChoiceValues>,
    Option<"lossKernel", "loss-kernel", "::mlir::parc::KernelChoice",
           /*default=*/"::mlir::parc::KernelChoice::Profile",
           "Loss kernel (eager: cross_entropy(logits.float())), over the "
           "hardware profile's", kKernelChoiceValues>
  ];
}

#endif // PARC_TRANSFORMS_PASSES_TD
