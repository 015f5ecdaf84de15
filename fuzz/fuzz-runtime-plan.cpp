//===- fuzz-runtime-plan.cpp - parc-run's plan loader and verifier --------===//
//
// What parc-run does with plan.bin before any process group exists
// (runtime/tools/parc-run/parc-run.cpp: main, planWorld): the checks of
// PlanFile::load (plan::verifyPlan on the file's bytes; load itself takes a
// path), `--describe` (describePlan), then readRankLayout and
// verifyPrograms, and for every rank its program, step names and batch as
// the interpreter and the run trace read them. FlatBuffers only: no
// LibTorch, no MLIR (the executor is not fuzzed).

#include "parc/runtime/PlanFile.h"
#include "parc/runtime/Program.h"

#include <cstddef>
#include <cstdint>
#include <fcntl.h>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace parc;
using namespace parc::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size); // as PlanFile::load holds it
  std::string error;
  const plan::Plan *plan = plan::verifyPlan(bytes.data(), bytes.size(), error);
  if (!plan)
    return 0;
  std::ostringstream described;
  describePlan(*plan, described);
  RankLayout layout;
  if (!readRankLayout(*plan, layout, error) ||
      !verifyPrograms(*plan, layout, error))
    return 0;
  // A verified plan's ranks, as each worker places itself (bounded: a plan
  // for 16384 ranks has a handful of distinct programs).
  for (int rank = 0; rank < layout.world && rank < 256; ++rank) {
    RankLayout mine = layout;
    mine.place(rank);
    const plan::Program *program = rankProgram(*plan, mine);
    if (!program)
      continue;
    (void)programBatch(*program);
    if (program->steps())
      for (size_t i = 0; i < program->steps()->size(); ++i) {
        (void)stepName(*program, i);
        (void)stepTrack(*program->steps()->Get(i));
      }
  }
  return 0;
}
