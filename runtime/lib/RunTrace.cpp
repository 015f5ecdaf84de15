//===- RunTrace.cpp - what a rank executed, as Chrome trace events --------===//

#include "parc/runtime/RunTrace.h"

#include "parc/runtime/Program.h"

#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

using namespace parc;
using namespace parc::runtime;

namespace {

/// The tracks of `parc-plan --trace`, and one for bookkeeping steps.
constexpr int kComputeTid = 1, kCommunicationTid = 2, kMemoryTid = 3;

std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string metadata(int pid, int tid, const char *what,
                     const std::string &name) {
  std::ostringstream os;
  os << "{\"ph\": \"M\", \"pid\": " << pid;
  if (tid)
    os << ", \"tid\": " << tid;
  os << ", \"name\": \"" << what << "\", \"args\": {\"name\": " << quoted(name)
     << "}}";
  return os.str();
}

} // namespace

RunTrace::RunTrace(const plan::Program &program, int rank)
    : program(program), rank(rank) {
  size_t count = program.steps() ? program.steps()->size() : 0;
  for (size_t i = 0; i < count; ++i)
    names.push_back(stepName(program, i));
  int pid = rank + 1;
  std::string process = "rank " + std::to_string(rank) + " (@" +
                        program.name()->str() + ")";
  body = metadata(pid, 0, "process_name", process) + ",\n" +
         metadata(pid, kComputeTid, "thread_name", "compute") + ",\n" +
         metadata(pid, kCommunicationTid, "thread_name", "communication") +
         ",\n" + metadata(pid, kMemoryTid, "thread_name", "memory");
}

void RunTrace::executed(int64_t step, size_t index, double start,
                        double duration, int64_t live) {
  if (origin < 0)
    origin = start;
  const plan::Step &s = *program.steps()->Get(index);
  int tid = stepTrack(s) == StepTrack::Compute         ? kComputeTid
            : stepTrack(s) == StepTrack::Communication ? kCommunicationTid
                                                       : kMemoryTid;
  double ts = (start - origin) * 1e6, dur = duration * 1e6;
  std::ostringstream os;
  os << std::setprecision(15);
  os << ",\n{\"ph\": \"X\", \"pid\": " << rank + 1 << ", \"tid\": " << tid
     << ", \"name\": " << quoted(names[index]) << ", \"ts\": " << ts
     << ", \"dur\": " << dur << ", \"args\": {\"step\": " << step + 1
     << ", \"program_step\": " << index;
  if (s.micro_batch() >= 0)
    os << ", \"micro_batch\": " << s.micro_batch();
  if (s.bytes() > 0)
    os << ", \"bytes\": " << s.bytes();
  os << "}}";
  os << ",\n{\"ph\": \"C\", \"pid\": " << rank + 1
     << ", \"name\": \"memory\", \"ts\": " << ts + dur
     << ", \"args\": {\"total\": " << live << "}}";
  body += os.str();
}

std::string RunTrace::events() const { return body; }

void RunTrace::write(const std::string &path,
                     const std::vector<std::string> &rankEvents) {
  std::ofstream out(path, std::ios::trunc);
  if (!out)
    throw std::runtime_error(path + ": cannot write trace");
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  for (const std::string &events : rankEvents) {
    if (events.empty())
      continue;
    out << (first ? "" : ",\n") << events;
    first = false;
  }
  out << "\n]}\n";
  if (!out)
    throw std::runtime_error(path + ": cannot write trace");
}
