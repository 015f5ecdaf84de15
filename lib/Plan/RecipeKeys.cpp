//===- RecipeKeys.cpp - every key a recipe may set ------------------------===//
//
// One row per dotted key: its flag, whether it is required, what it takes,
// its help text and bound. The reader, --set, parc-plan's --help and
// docs/parc-plan.md's key list all read this table.
//
//===----------------------------------------------------------------------===//

#include "RecipeReader.h"

using namespace mlir;
using namespace mlir::parc;

static constexpr RecipeKey kRecipeKeys[] = {
    {"model.hf_config", "model", false, "path",
     "Hugging Face config.json of the model"},
    {"model.mlir", "mlir", false, "path", "parc IR (.mlir) of the model"},
    {"train.seq_len", "seq", false, "n", "Sequence length in tokens",
     RecipeLimits::kMaxSeqLen},
    {"train.micro_batch_size", "mbs", false, "n",
     "Sequences per rank per forward (default 1)",
     RecipeLimits::kMaxMicroBatchTokens},
    {"train.global_batch_size", "gbs", false, "n",
     "Sequences per optimizer step (default: micro-batch x data-parallel "
     "ranks)",
     RecipeLimits::kMaxGlobalBatch},
    {"train.image_tokens", "image-tokens", false, "n",
     "Tokens per sample entering the vision tower: its patches, before any "
     "pooling (default 0: text only)",
     RecipeLimits::kMaxSeqLen},
    {"train.compute_dtype", "dtype", false, "dtype",
     "Dtype of forward/backward compute: bf16, fp16, fp32 (default bf16)"},
    {"train.master_dtype", "master-dtype", false, "dtype",
     "Dtype of the sharded master parameters (default fp32)"},
    {"train.grad_reduce_dtype", "grad-reduce-dtype", false, "dtype",
     "Dtype of the gradient reduce-scatter (default fp32)"},
    {"train.optim_dtype", "optim-dtype", false, "dtype",
     "Dtype of the AdamW moments (default fp32)"},
    {"train.optimizer", "optimizer", false, "name",
     "Optimizer: adamw (default)"},
    {"train.optimizer_impl", "optimizer-impl", false, "name",
     "How AdamW steps: foreach (PyTorch's default on CUDA: one list of "
     "temporaries for every parameter), for-loop (one parameter at a time) or "
     "fused (none)"},
    {"train.max_norm", "max-norm", false, "x",
     "Clip gradients to this global norm before each optimizer step; 0 "
     "disables (default 1.0)"},
    {"train.attention_kernel", "attention-kernel", false, "name",
     "Attention kernel: flash (fused SDPA), eager, or profile (the hardware "
     "profile's; default)"},
    {"train.norm_kernel", "norm-kernel", false, "name",
     "Norm kernel: fused, eager, or profile (default)"},
    {"train.loss_kernel", "loss-kernel", false, "name",
     "Loss kernel: fused (chunked cross-entropy), eager "
     "(cross_entropy(logits.float()) with its fp32 copy and gradient), or "
     "profile (default; torchtitan jobs: eager)"},
    {"train.allocator", "allocator", false, "name",
     "How tensors get device memory: caching (PyTorch's CUDA caching "
     "allocator), expandable-segments (with PYTORCH_CUDA_ALLOC_CONF="
     "expandable_segments:True), direct (one allocation per tensor), or "
     "profile (default: the hardware profile's; torchtitan jobs: "
     "expandable-segments)"},
    {"train.frozen", "freeze", true, "path",
     "Dotted paths of modules to freeze (no gradients, no optimizer state)"},
    {"cluster.hardware", "hardware", false, "name",
     "Hardware profile name (hardware/<name>.json)"},
    {"cluster.nodes", "nodes", false, "n", "Nodes (default 1)",
     RecipeLimits::kMaxGpus},
    {"cluster.gpus_per_node", "gpus-per-node", false, "n", "GPUs per node",
     RecipeLimits::kMaxGpus},
    {"cluster.gpus", "gpus", false, "n",
     "GPUs in all (instead of gpus_per_node: gpus / nodes per node)",
     RecipeLimits::kMaxGpus},
    {"parallel.dp", "dp", false, "n",
     "Data-parallel replicas of the FSDP groups, HSDP (default 1)",
     RecipeLimits::kMaxGpus},
    {"parallel.fsdp", "fsdp", false, "n",
     "FSDP shards (default: every GPU not used by dp x tp x pp)",
     RecipeLimits::kMaxGpus},
    {"parallel.tp", "tp", false, "n", "Tensor-parallel degree (default 1)",
     RecipeLimits::kMaxGpus},
    {"parallel.pp", "pp", false, "n", "Pipeline-parallel degree (default 1)",
     RecipeLimits::kMaxGpus},
    {"parallel.pp_schedule", "schedule", false, "name",
     "Pipeline schedule: gpipe, 1f1b, interleaved-1f1b (default 1f1b)"},
    {"parallel.pp_chunks", "chunks", false, "n",
     "Model chunks per pipeline rank (interleaved-1f1b; default 1)", 1024},
    {"parallel.pp_split", "pp-split", true, "n",
     "Pinned layers per (virtual) pipeline stage, in order (default: the "
     "cost-balanced split)",
     4096},
    {"parallel.microbatches", "microbatches", false, "n",
     "Micro-batches per optimizer step (default: global batch / "
     "(micro-batch x data-parallel ranks), or pp when no global batch)",
     RecipeLimits::kMaxMicrobatches},
    {"parallel.fsdp_prefetch", "fsdp-prefetch", false, "n",
     "FSDP units gathered ahead of the one computing, in forward and "
     "backward (default 1, FSDP2's)",
     64},
    {"parallel.fsdp_grad_sync", "fsdp-grad-sync", false, "name",
     "When FSDP reduce-scatters gradients under gradient accumulation: "
     "every-micro-batch (shards accumulate) or last-micro-batch (unsharded "
     "gradients accumulate, FSDP2 without gradient sync; NeMo's "
     "defer_fsdp_grad_sync) (default every-micro-batch)"},
    {"parallel.fsdp_reshard_after_forward", "reshard-after-forward", false,
     "bool",
     "Free each layer's gathered parameters after its forward and gather "
     "them again for its backward: true or false (default true)"},
    {"parallel.fsdp_reshard_last_layer", "reshard-last-layer", false, "bool",
     "With fsdp_reshard_after_forward, free the last layer's gathered "
     "parameters after its forward too; false keeps them for its backward, "
     "which runs first: true or false (default true; NeMo recipes: false)"},
    {"parallel.sequence_parallel", "sequence-parallel", false, "bool",
     "Sequence parallelism with TP: true or false (default false)"},
    {"parallel.loss_parallel", "loss-parallel", false, "bool",
     "Vocab-parallel loss with TP: true or false (default false)"},
    {"parallel.remat", "remat", false, "mode",
     "Activation remat: full, selective, every:N, budget (per layer, the "
     "least recompute that fits with remat_margin to spare), op "
     "(torchtitan's op-level selective policy), none (default none)"},
    {"parallel.remat_margin", "remat-margin", false, "x",
     "remat budget: the fraction of device memory left free, 0 to 0.5 "
     "(default 0.05)"},
    {"parallel.remat_scope", "remat-scope", false, "scope",
     "Stacks remat applies to: all, language, vision (default all)"},
    {"parallel.stacks", "stacks", true, "path",
     "Dotted paths of the layer containers, overriding layer discovery"},
    {"search.auto", "auto", false, "bool",
     "Search the layouts for the fastest plan that fits, keeping the layout "
     "keys given: true or false (default false)"},
    {"search.top", "top", false, "n",
     "Plans the search shows, fastest first (default 5)", 1000},
};

ArrayRef<RecipeKey> mlir::parc::getRecipeKeys() { return kRecipeKeys; }

const RecipeKey *mlir::parc::recipe::findRecipeKey(StringRef key) {
  for (const RecipeKey &known : kRecipeKeys)
    if (known.key == key)
      return &known;
  return nullptr;
}
