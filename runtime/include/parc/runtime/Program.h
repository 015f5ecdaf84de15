//===- Program.h - the per-rank programs of plan.bin ------------*- C++ -*-===//
//
// `--lower-to-schedule` writes one program per kind of rank: every step of
// one optimizer step, in order (docs/schedule.md). The runtime trusts a
// program only after checking it here, before any process group exists: a
// plan.bin is written by another tool and may be stale, hand-edited or
// damaged in ways the FlatBuffers verifier (which checks structure, not
// meaning) cannot see.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_RUNTIME_PROGRAM_H
#define PARC_RUNTIME_PROGRAM_H

#include "PlanFormat.h"
#include "parc/runtime/PlanFile.h"

#include <cstdint>
#include <string>

namespace parc::runtime {

/// The batch one optimizer step trains on, as the program was lowered for:
/// `microBatches` micro-batches of `batch` sequences of `seq` tokens on each
/// data shard.
struct ProgramBatch {
  int64_t microBatches = 1;
  int64_t batch = 0;
  int64_t seq = 0;
  /// Sequences per step over all `dataShards` data-parallel ranks.
  int64_t global(int64_t dataShards) const {
    return microBatches * batch * dataShards;
  }
};

/// Checks every program of `plan` against the plan and the rank layout:
/// each on its own (tensors defined before they are read, every saved
/// activation and gathered unit freed exactly once, each layer's forward,
/// recompute and backward once per micro-batch and in that order, micro-batch
/// indices below the program's count, collectives on grids of the plan, one
/// optimizer step at the end), that each rank runs exactly one program, that
/// every program trains on the same batch, and that every send of one
/// pipeline stage is received by the stage it names. Returns false and sets
/// `error`, naming the program and the step, on the first problem.
bool verifyPrograms(const plan::Plan &plan, const RankLayout &layout,
                    std::string &error);

/// The program the rank at `layout`'s coordinates runs (verifyPrograms has
/// passed); null when the plan has none.
const plan::Program *rankProgram(const plan::Plan &plan,
                                 const RankLayout &layout);

/// The name a step has in traces ("forward model.layers.3", "all-gather
/// root", "send activations"), the names the cost model gives the same work
/// in `parc-plan --trace`, so that the predicted and the executed step line
/// up; bookkeeping steps get their own ("buffer gradient model.layers.0",
/// "save model.layers.3", "free model.layers.3").
std::string stepName(const plan::Program &program, size_t index);

/// Which track a step belongs on: compute (forward, recompute, backward,
/// optimizer), communication (collectives, sends, receives) or memory
/// (buffers, saves, frees).
enum class StepTrack { Compute, Communication, Memory };
StepTrack stepTrack(const plan::Step &step);

/// The batch of a verified program.
ProgramBatch programBatch(const plan::Program &program);

} // namespace parc::runtime

#endif // PARC_RUNTIME_PROGRAM_H
