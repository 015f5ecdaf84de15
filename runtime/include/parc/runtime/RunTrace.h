//===- RunTrace.h - what a rank executed, as Chrome trace events -*- C++
//-*-===//
//
// parc-run --trace FILE: every step of the rank's program as it ran, with
// its measured duration, and the live bytes after it as a counter. Event
// names, tracks (compute, communication) and the counter's name are those of
// `parc-plan --trace`, so the predicted and the measured step open side by
// side in Perfetto. Each event's args give the program step it ran, so a
// test can check that the executed sequence is the program.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_RUNTIME_RUNTRACE_H
#define PARC_RUNTIME_RUNTRACE_H

#include "PlanFormat.h"

#include <cstdint>
#include <string>
#include <vector>

namespace parc::runtime {

class RunTrace {
public:
  RunTrace(const plan::Program &program, int rank);

  /// Step `index` of the program ran in training step `step` from `start`
  /// (steady-clock seconds) for `duration`; `live` bytes were live after it.
  void executed(int64_t step, size_t index, double start, double duration,
                int64_t live);

  /// This rank's events as a JSON array body (comma-separated objects).
  std::string events() const;

  /// Writes {"traceEvents": [...]} of the given ranks' event bodies.
  static void write(const std::string &path,
                    const std::vector<std::string> &rankEvents);

private:
  const plan::Program &program;
  int rank;
  std::vector<std::string> names;
  double origin = -1;
  std::string body;
};

} // namespace parc::runtime

#endif // PARC_RUNTIME_RUNTRACE_H
