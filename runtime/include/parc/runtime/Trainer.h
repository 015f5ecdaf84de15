//===- Trainer.h - the training loop of parc-run ----------------*- C++ -*-===//
//
// One rank's training: data, forward and backward through the Executor,
// gradient clipping by global norm, AdamW on the sharded fp32 masters,
// per-step reports, checkpoints; and the CPU allocator that measures the
// memory the plan predicted.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_RUNTIME_TRAINER_H
#define PARC_RUNTIME_TRAINER_H

#include "parc/runtime/Executor.h"
#include "parc/runtime/PlanFile.h"

#include <cstdint>
#include <string>

namespace parc::runtime {

struct TrainOptions {
  int64_t steps = 5;
  uint64_t seed = 1234;
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weightDecay = 0.01;
  std::string dataPath;
  int dataBits = 16;
  std::string logPath;
  /// Chrome trace of the executed program steps (RunTrace.h); with several
  /// ranks each writes FILE.rank-R and the launcher joins them.
  std::string tracePath;
  /// Step 1 as a safetensors file, for an independent reference to
  /// recompute (world 1 only): its batch (`input_ids`, `labels`, [global
  /// batch, seq]), every parameter before the update under its Hugging
  /// Face name, its gradient before clipping (`grad.<name>`) and the loss.
  std::string dumpPath;
  /// Initial weights: a safetensors file of Hugging Face-named tensors,
  /// each sliced as the plan shards it (Executor::materialise).
  std::string weightsPath;
  std::string saveDir;
  int64_t saveEvery = 0;
  std::string resumeDir;
  /// Fault injection for tests: on `faultRank` at `faultStep`, after the
  /// first forward: "kill" (SIGKILL itself), "hang" (stop making progress)
  /// or "exit" (exit 7).
  int faultRank = -1;
  int64_t faultStep = -1;
  std::string faultKind;
  bool quiet = false;
};

/// Installs the tracking CPU allocator and the heap policy under it; call
/// before any tensor exists.
void installTrackingAllocator();
int64_t liveBytes();
int64_t peakBytes();
void resetPeakBytes();

/// Trains this rank for `options.steps` steps; throws on errors, with
/// messages that name the file, key or rank.
void train(const PlanFile &plan, Executor &exec, const TrainOptions &options);

} // namespace parc::runtime

#endif // PARC_RUNTIME_TRAINER_H
