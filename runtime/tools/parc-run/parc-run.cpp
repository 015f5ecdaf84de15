//===- parc-run.cpp - run a plan.bin: launcher and worker -----------------===//
//
// parc-run [--nproc N] [--steps K] [--log FILE] [--data FILE] [--save DIR]
//          [--resume DIR] plan.bin
//
// With --nproc N it is a launcher: it checks the plan, starts N workers (this
// same binary, with torchrun's RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR /
// MASTER_PORT), watches them, and when one dies or hangs stops the others and
// names it. Without --nproc it is one worker, its rank taken from the
// environment (world size 1 when there is none).
//
//===----------------------------------------------------------------------===//

#include "parc/runtime/Collectives.h"
#include "parc/runtime/Executor.h"
#include "parc/runtime/PlanFile.h"
#include "parc/runtime/Program.h"
#include "parc/runtime/RunTrace.h"
#include "parc/runtime/Trainer.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <fstream>
#include <iostream>
#include <map>
#include <netinet/in.h>
#include <poll.h>
#include <sstream>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace parc;
using namespace parc::runtime;

namespace {

/// Workers one launcher starts on this host.
constexpr int kMaxLocalRanks = 1024;

constexpr const char *kUsage =
    "usage: parc-run [options] plan.bin\n"
    "\n"
    "Trains the planned model on LibTorch + c10d (Gloo on CPU).\n"
    "\n"
    "  --nproc N          spawn N local workers on 127.0.0.1 (the plan's "
    "world);\n"
    "                     they meet through a FileStore in a private /tmp\n"
    "                     directory, so no port is opened for the rendezvous\n"
    "  --steps K          training steps (default 5)\n"
    "  --log FILE         JSON lines: one object per rank per step\n"
    "  --trace FILE       Chrome trace of every program step each rank ran\n"
    "  --load-weights F   initial weights from a safetensors file of Hugging\n"
    "                     Face-named tensors, sharded as the plan says\n"
    "  --dump FILE        step 1 as safetensors (world 1): the batch, the\n"
    "                     parameters by their Hugging Face names, their\n"
    "                     gradients before clipping and the loss\n"
    "  --data FILE        token ids (nanoGPT .bin); default: seeded synthetic\n"
    "  --data-dtype T     uint16 (default) or uint32\n"
    "  --lr X --weight-decay X --seed N\n"
    "  --save DIR         write a checkpoint at the end (and every K steps)\n"
    "  --save-every K\n"
    "  --resume DIR       continue from a checkpoint\n"
    "  --timeout S        bound on every collective and on a silent worker\n"
    "                     (default 300)\n"
    "  --backend B        gloo (default) or nccl\n"
    "  --master-port P    rendezvous through a TCPStore on port P instead\n"
    "                     (c10d's TCPStore listens on every interface)\n"
    "  --describe         print the plan (parameters, units, forwards) and "
    "exit\n"
    "  --fault R:S:KIND   testing: rank R at step S does KIND (kill, hang, "
    "exit)\n"
    "  --quiet            no per-step lines\n";

[[noreturn]] void fail(const std::string &message, int code = 1) {
  std::cerr << "parc-run: error: " << printable(message) << std::endl;
  std::exit(code);
}

struct Args {
  TrainOptions train;
  std::string planPath;
  int nproc = 0;
  bool describe = false;
  int timeoutS = 300;
  std::string backend = "gloo";
  int masterPort = 0;
  /// The worker's command line: everything but --nproc and its value.
  std::vector<std::string> workerArgs;
};

/// An integer flag in [lo, hi]; anything else (a sign, a fraction, a value
/// that does not fit) is refused rather than truncated.
int64_t toInt(const std::string &flag, const std::string &value, int64_t lo = 0,
              int64_t hi = INT32_MAX) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end || errno == ERANGE || v < lo || v > hi)
    fail(flag + " takes an integer in [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "], not '" + value + "'");
  return v;
}

/// A finite number flag in [lo, hi].
double toDouble(const std::string &flag, const std::string &value, double lo,
                double hi) {
  char *end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end || !std::isfinite(v) || v < lo || v > hi)
    fail(flag + " takes a finite number in [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "], not '" + value + "'");
  return v;
}

Args parseArgs(int argc, char **argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    int first = i;
    std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        fail(flag + " needs a value");
      return argv[++i];
    };
    bool keep = true;
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (flag == "--nproc") {
      args.nproc = toInt(flag, value(), 1, kMaxLocalRanks);
      keep = false;
    } else if (flag == "--master-port") {
      args.masterPort = toInt(flag, value(), 1, 65535);
      keep = false;
    } else if (flag == "--steps")
      args.train.steps = toInt(flag, value(), 1, int64_t(1) << 40);
    else if (flag == "--log")
      args.train.logPath = value();
    else if (flag == "--trace")
      args.train.tracePath = value();
    else if (flag == "--dump")
      args.train.dumpPath = value();
    else if (flag == "--load-weights")
      args.train.weightsPath = value();
    else if (flag == "--data")
      args.train.dataPath = value();
    else if (flag == "--data-dtype") {
      std::string v = value();
      if (v != "uint16" && v != "uint32")
        fail("--data-dtype is uint16 or uint32, not '" + v + "'");
      args.train.dataBits = v == "uint16" ? 16 : 32;
    } else if (flag == "--seq" || flag == "--mbs" || flag == "--gbs")
      fail(flag +
           ": parc-run trains on the batch its plan was made for "
           "(see --describe); plan another batch with parc-plan " +
           flag);
    else if (flag == "--lr")
      args.train.lr = toDouble(flag, value(), 0, 1);
    else if (flag == "--weight-decay")
      args.train.weightDecay = toDouble(flag, value(), 0, 1);
    else if (flag == "--clip")
      fail(flag + ": the plan carries its gradient clipping (its program's "
                  "clip_grad_norm step, see --describe); plan another with "
                  "parc-plan --max-norm");
    else if (flag == "--seed")
      args.train.seed = toInt(flag, value(), 0, INT64_MAX);
    else if (flag == "--save")
      args.train.saveDir = value();
    else if (flag == "--save-every")
      args.train.saveEvery = toInt(flag, value(), 1, int64_t(1) << 40);
    else if (flag == "--resume")
      args.train.resumeDir = value();
    else if (flag == "--timeout") {
      args.timeoutS = toInt(flag, value(), 1, 7 * 24 * 3600);
    } else if (flag == "--backend") {
      args.backend = value();
      if (args.backend != "gloo" && args.backend != "nccl")
        fail("--backend is gloo or nccl, not '" + args.backend + "'");
    } else if (flag == "--describe")
      args.describe = true;
    else if (flag == "--quiet")
      args.train.quiet = true;
    else if (flag == "--fault") {
      std::string v = value();
      std::istringstream in(v);
      std::string rank, step, kind;
      if (!std::getline(in, rank, ':') || !std::getline(in, step, ':') ||
          !std::getline(in, kind) ||
          (kind != "kill" && kind != "hang" && kind != "exit"))
        fail("--fault takes RANK:STEP:kill|hang|exit, not '" + v + "'");
      args.train.faultRank = toInt(flag, rank);
      args.train.faultStep = toInt(flag, step, 1, INT64_MAX);
      args.train.faultKind = kind;
    } else if (!flag.empty() && flag[0] == '-')
      fail("unknown option '" + flag + "' (see --help)");
    else if (!args.planPath.empty())
      fail("more than one plan given ('" + args.planPath + "' and '" + flag +
           "')");
    else
      args.planPath = flag;
    if (keep)
      for (int j = first; j <= i; ++j)
        args.workerArgs.push_back(argv[j]);
  }
  if (args.planPath.empty())
    fail("no plan.bin given (see --help)");
  return args;
}

/// The world size a plan was made for: the product of its rank axes (pp,
/// dp, fsdp, tp). A layout this runtime does not execute, or a program that
/// fails verification, is refused here, before any process or process group
/// exists.
int planWorld(const PlanFile &file) {
  RankLayout layout;
  std::string error;
  if (!readRankLayout(file.plan(), layout, error) ||
      !verifyPrograms(file.plan(), layout, error))
    fail(file.path() + ": " + error);
  return layout.world;
}

int envInt(const char *name, int fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (*end || n < 0)
    fail(std::string("environment variable ") + name + "='" + v +
         "' is not a non-negative integer");
  return n;
}

//===----------------------------------------------------------------------===//
// Worker
//===----------------------------------------------------------------------===//

/// Intra-op threads per rank when nothing says otherwise: the host's cores
/// over the ranks it runs, at least one.
int getThreadsPerRank(int localRanks) {
  int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, localRanks));
}

/// Splits the rank's share of the cores between ATen's intra-op pool and the
/// BLAS, and says what it chose and why (rank 0, unless --quiet). With
/// OpenBLAS (Debian's LibTorch), which runs its own thread pool, the matrix
/// products take the share and ATen's pool one thread: OpenBLAS started
/// inside ATen's parallel regions oversubscribes the cores, and ATen's pool
/// cannot split one matrix product (world 1 on 2 cores: 0.19-0.21 s a step,
/// against 0.31-0.37 with the share on ATen's pool and 0.63-0.70 with both;
/// PyTorch eager's own default here is the first; benchmarks/parc-run).
/// A BLAS without its own pool (MKL, on ATen's OpenMP) gets the share through
/// ATen's pool. OMP_NUM_THREADS, when set, is ATen's pool, and the BLAS then
/// runs one thread unless OPENBLAS_NUM_THREADS says otherwise; what OpenBLAS
/// runs is read back from it for the report.
void setComputeThreads(const Args &args, int rank) {
  int localRanks = envInt("LOCAL_WORLD_SIZE", 1);
  int share = getThreadsPerRank(localRanks);
  const char *omp = std::getenv("OMP_NUM_THREADS");
  const char *blasEnv = std::getenv("OPENBLAS_NUM_THREADS");
  auto setBlasThreads = reinterpret_cast<void (*)(int)>(
      ::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  auto getBlasThreads = reinterpret_cast<int (*)()>(
      ::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  // OpenBLAS read OPENBLAS_NUM_THREADS itself when it was loaded.
  if (setBlasThreads && !blasEnv)
    setBlasThreads(omp ? 1 : share);
  if (!omp)
    at::set_num_threads(setBlasThreads ? 1 : share);
  if (rank != 0 || args.train.quiet)
    return;
  int threads = at::get_num_threads();
  std::cout << "parc-run: " << threads << " intra-op thread"
            << (threads == 1 ? "" : "s") << " per rank";
  if (setBlasThreads && getBlasThreads) {
    int blasThreads = getBlasThreads();
    std::cout << ", " << blasThreads << " OpenBLAS thread"
              << (blasThreads == 1 ? "" : "s");
  }
  std::cout << " (";
  if (omp)
    std::cout << "OMP_NUM_THREADS=" << omp;
  else
    std::cout << std::max(1u, std::thread::hardware_concurrency())
              << " cores / " << localRanks << " local rank"
              << (localRanks == 1 ? "" : "s");
  if (blasEnv && setBlasThreads)
    std::cout << ", OPENBLAS_NUM_THREADS=" << blasEnv;
  std::cout << ")" << std::endl;
}

int runWorker(const Args &args, const PlanFile &file) {
  WorldConfig world;
  world.rank = envInt("RANK", 0);
  world.size = envInt("WORLD_SIZE", 1);
  world.localRank = envInt("LOCAL_RANK", world.rank);
  if (const char *addr = std::getenv("MASTER_ADDR"))
    world.masterAddr = addr;
  world.masterPort = envInt("MASTER_PORT", 29500);
  world.timeout = std::chrono::milliseconds(args.timeoutS * 1000LL);
  world.backend = args.backend;
  if (const char *store = std::getenv("PARC_STORE_FILE"))
    world.storePath = store;
  int expected = planWorld(file);
  if (world.size != expected)
    fail(file.path() + ": the plan is for " + std::to_string(expected) +
         " ranks, this run has WORLD_SIZE " + std::to_string(world.size) +
         (expected > 1
              ? " (run it with --nproc " + std::to_string(expected) + ")"
              : ""));
  if (world.rank >= world.size)
    fail("RANK " + std::to_string(world.rank) + " is not below WORLD_SIZE " +
         std::to_string(world.size));
  std::string prefix = "rank " + std::to_string(world.rank) + ": ";
  setComputeThreads(args, world.rank);

  std::string error;
  auto comm = connectWorld(world, error);
  if (!comm)
    fail(error);
  int heartbeat = envInt("PARC_HEARTBEAT_FD", -1);
  if (heartbeat >= 0)
    comm->onCollective = [heartbeat](uint64_t seq) {
      std::string line = std::to_string(seq) + "\n";
      ssize_t ignored = ::write(heartbeat, line.data(), line.size());
      (void)ignored;
    };
  auto exec = Executor::create(file.plan(), *comm, error);
  if (!exec)
    fail(file.path() + ": " + error);
  if (std::getenv("PARC_RUN_MEMORY_DEBUG"))
    exec->memoryProbe = liveBytes;
  try {
    exec->connectGroups();
    std::vector<std::string> unused =
        exec->materialise(args.train.seed, args.train.weightsPath);
    if (!unused.empty() && comm->rank() == 0 && !args.train.quiet)
      std::cerr << "parc-run: " << printable(args.train.weightsPath) << ": "
                << unused.size()
                << " tensors the plan has no parameter for, not loaded "
                   "(first: "
                << printable(unused.front()) << ")" << std::endl;
    train(file, *exec, args.train);
  } catch (const CollectiveError &e) {
    // A peer's failure seen from here: a launcher reports it only when no
    // rank failed on its own (the root cause), so it goes to the launcher.
    std::string message = "parc-run: error: " + prefix + e.what();
    if (heartbeat >= 0) {
      std::string line = "E " + printable(message) + "\n";
      if (::write(heartbeat, line.data(), line.size()) == ssize_t(line.size()))
        return kPeerFailureExit;
    }
    std::cerr << printable(message) << std::endl;
    return kPeerFailureExit;
  } catch (const c10::Error &e) {
    std::cerr << "parc-run: error: " << prefix
              << printable(e.what_without_backtrace()) << std::endl;
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "parc-run: error: " << prefix << printable(e.what())
              << std::endl;
    return 1;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Launcher
//===----------------------------------------------------------------------===//

/// The signals a launcher forwards to its workers by stopping them.
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
volatile std::sig_atomic_t gStopSignal = 0;

void installStopHandlers() {
  struct sigaction action {};
  action.sa_handler = [](int sig) { gStopSignal = sig; };
  sigemptyset(&action.sa_mask);
  for (int sig : kStopSignals)
    ::sigaction(sig, &action, nullptr);
}

struct Worker {
  pid_t pid = -1;
  int heartbeat = -1;
  uint64_t sequence = 0;
  std::string partial;
  /// What the worker said about a peer's failure ("E ..." lines).
  std::string peerError;
  bool exited = false;
  int status = 0;
};

std::string describeExit(int status) {
  if (WIFSIGNALED(status))
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) +
           " (" + strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

/// Every worker wrote its events to FILE.rank-R; the launcher joins them
/// into FILE, one process per rank.
void mergeTraces(const std::string &path, int ranks) {
  std::vector<std::string> events;
  for (int r = 0; r < ranks; ++r) {
    std::string part = path + ".rank-" + std::to_string(r);
    std::ifstream in(part);
    if (!in)
      fail(part + ": rank " + std::to_string(r) + " wrote no trace");
    events.emplace_back(std::istreambuf_iterator<char>(in),
                        std::istreambuf_iterator<char>());
    ::unlink(part.c_str());
  }
  RunTrace::write(path, events);
}

/// Creates (or truncates) the JSON log the workers append to.
void createLog(const std::string &path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    fail(path + ": cannot create log: " + std::strerror(errno));
  ::close(fd);
}

/// The rendezvous: a FileStore in a directory only this user can read (no
/// port, so no collision with another run and nothing listening on the
/// network).
std::string makeStoreDir() {
  char tmpl[] = "/tmp/parc-run-XXXXXX";
  if (!::mkdtemp(tmpl))
    fail(std::string("cannot create a rendezvous directory in /tmp: ") +
         std::strerror(errno));
  return tmpl;
}

void removeStoreDir(const std::string &dir) {
  if (dir.empty())
    return;
  ::unlink((dir + "/store").c_str());
  ::rmdir(dir.c_str());
}

/// The child's side of starting rank `rank`: torchrun's environment, then
/// this binary again as a worker reporting on `heartbeat`.
[[noreturn]] void execWorker(const Args &args, int rank,
                             std::vector<std::string> &argvStrings,
                             const std::string &storeDir, int port,
                             int heartbeat, pid_t launcher) {
  // A worker does not outlive its launcher, even one killed before this
  // line ran.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher)
    std::_Exit(1);
  for (int sig : kStopSignals)
    ::signal(sig, SIG_DFL);
  if (!storeDir.empty())
    ::setenv("PARC_STORE_FILE", (storeDir + "/store").c_str(), 1);
  ::setenv("RANK", std::to_string(rank).c_str(), 1);
  ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(args.nproc).c_str(), 1);
  ::setenv("LOCAL_WORLD_SIZE", std::to_string(args.nproc).c_str(), 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  ::setenv("PARC_HEARTBEAT_FD", std::to_string(heartbeat).c_str(), 1);
  std::vector<char *> argvPtrs;
  for (std::string &s : argvStrings)
    argvPtrs.push_back(s.data());
  argvPtrs.push_back(nullptr);
  ::execv("/proc/self/exe", argvPtrs.data());
  std::cerr << "parc-run: error: cannot exec a worker: " << std::strerror(errno)
            << std::endl;
  std::_Exit(127);
}

/// Starts the --nproc workers, each with a heartbeat pipe to read.
std::vector<Worker> startWorkers(const Args &args, char *self,
                                 const std::string &storeDir) {
  int port = args.masterPort ? args.masterPort : 29500;
  pid_t launcher = ::getpid();
  std::vector<Worker> workers(args.nproc);
  std::vector<std::string> argvStrings{self};
  argvStrings.insert(argvStrings.end(), args.workerArgs.begin(),
                     args.workerArgs.end());
  for (int rank = 0; rank < args.nproc; ++rank) {
    int fds[2];
    if (::pipe(fds) != 0)
      fail("cannot create a pipe for rank " + std::to_string(rank));
    pid_t pid = ::fork();
    if (pid < 0)
      fail("cannot start rank " + std::to_string(rank) + ": " +
           std::strerror(errno));
    if (pid == 0) {
      ::close(fds[0]);
      execWorker(args, rank, argvStrings, storeDir, port, fds[1], launcher);
    }
    ::close(fds[1]);
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    workers[rank].pid = pid;
    workers[rank].heartbeat = fds[0];
  }
  return workers;
}

/// Stops every worker still running (SIGTERM, SIGKILL after 2 s) and reaps
/// it.
void stopWorkers(std::vector<Worker> &workers) {
  for (Worker &w : workers)
    if (!w.exited)
      ::kill(w.pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (Worker &w : workers) {
    while (!w.exited) {
      int status;
      pid_t got = ::waitpid(w.pid, &status, WNOHANG);
      if (got == w.pid) {
        w.exited = true;
        w.status = status;
      } else if (std::chrono::steady_clock::now() > deadline) {
        ::kill(w.pid, SIGKILL);
        ::waitpid(w.pid, &status, 0);
        w.exited = true;
        w.status = status;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
}

/// Waits up to 100 ms for heartbeats and reads them: each worker's last
/// collective sequence number and its report of a peer's failure.
void readHeartbeats(std::vector<Worker> &workers) {
  std::vector<pollfd> polls;
  for (Worker &w : workers)
    polls.push_back({w.heartbeat, POLLIN, 0});
  ::poll(polls.data(), polls.size(), 100);
  for (Worker &w : workers) {
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(w.heartbeat, buffer, sizeof buffer)) > 0) {
      w.partial.append(buffer, n);
      size_t newline;
      while ((newline = w.partial.find('\n')) != std::string::npos) {
        std::string line = w.partial.substr(0, newline);
        w.partial.erase(0, newline + 1);
        if (line.rfind("E ", 0) == 0)
          w.peerError = line.substr(2);
        else
          w.sequence = std::strtoull(line.c_str(), nullptr, 10);
      }
    }
  }
}

/// The rank a failed run is blamed on, and why.
struct Blame {
  int culprit = -1;
  std::string reason;
  /// Whether the culprit was inferred from progress (a peer's timeout)
  /// rather than from its own exit, and when.
  bool byProgress = false;
  std::chrono::steady_clock::time_point at;
};

/// Reaps the workers that exited and blames a failure on a rank; returns
/// whether every worker has exited.
bool reapWorkers(std::vector<Worker> &workers, int timeoutS, Blame &blame) {
  bool allDone = true;
  for (int rank = 0; rank < int(workers.size()); ++rank) {
    Worker &w = workers[rank];
    if (w.exited)
      continue;
    int status;
    if (::waitpid(w.pid, &status, WNOHANG) == w.pid) {
      w.exited = true;
      w.status = status;
      bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      bool peer = WIFEXITED(status) && WEXITSTATUS(status) == kPeerFailureExit;
      if (!ok && !peer && (blame.culprit < 0 || blame.byProgress)) {
        // A rank's own failure outranks a peer's report of it.
        blame.culprit = rank;
        blame.reason = describeExit(status);
        blame.byProgress = false;
      } else if (peer && blame.culprit < 0) {
        // This rank saw a collective fail: the rank at fault is the one
        // that reached the fewest collectives, unless a rank exits with
        // its own error within the grace period.
        uint64_t least = UINT64_MAX;
        for (int r = 0; r < int(workers.size()); ++r)
          if (workers[r].sequence < least) {
            least = workers[r].sequence;
            blame.culprit = r;
          }
        blame.reason = "stopped making progress (it reached collective #" +
                       std::to_string(least) + ", rank " +
                       std::to_string(rank) + " timed out waiting in #" +
                       std::to_string(w.sequence) + " after " +
                       std::to_string(timeoutS) + " s)";
        blame.byProgress = true;
        blame.at = std::chrono::steady_clock::now();
      }
    }
    allDone &= w.exited;
  }
  return allDone;
}

/// Watches the workers until every one has exited or one is blamed (then
/// stops the others); returns the signal that interrupted the launcher, or
/// 0.
int superviseWorkers(std::vector<Worker> &workers, int timeoutS, Blame &blame) {
  while (true) {
    if (int sig = gStopSignal) {
      // Interrupted (Ctrl-C, a scheduler's SIGTERM): stop and reap every
      // worker before going, so none is left behind.
      stopWorkers(workers);
      return sig;
    }
    readHeartbeats(workers);
    bool allDone = reapWorkers(workers, timeoutS, blame);
    bool graceOver =
        !blame.byProgress ||
        std::chrono::steady_clock::now() - blame.at > std::chrono::seconds(1);
    if (blame.culprit >= 0 && (graceOver || allDone)) {
      stopWorkers(workers);
      return 0;
    }
    if (allDone)
      return 0;
  }
}

int runLauncher(const Args &args, const PlanFile &file, char *self) {
  int expected = planWorld(file);
  if (args.nproc != expected)
    fail(file.path() + ": the plan is for " + std::to_string(expected) +
         " ranks, --nproc is " + std::to_string(args.nproc));
  if (!args.train.logPath.empty())
    createLog(args.train.logPath);
  // With --master-port the workers reach a TCPStore on 127.0.0.1 instead.
  std::string storeDir = args.masterPort ? "" : makeStoreDir();
  installStopHandlers();
  std::vector<Worker> workers = startWorkers(args, self, storeDir);
  Blame blame;
  int sig = superviseWorkers(workers, args.timeoutS, blame);
  for (Worker &w : workers)
    ::close(w.heartbeat);
  removeStoreDir(storeDir);
  if (sig) {
    std::cerr << "parc-run: error: interrupted by signal " << sig << " ("
              << strsignal(sig) << "); stopped " << args.nproc << " rank(s)"
              << std::endl;
    return 128 + sig;
  }
  if (blame.culprit >= 0) {
    // The ranks that only saw a peer fail are evidence when no rank failed
    // on its own; otherwise the culprit's own message is the root cause.
    if (blame.byProgress)
      for (const Worker &w : workers)
        if (!w.peerError.empty())
          std::cerr << w.peerError << std::endl;
    std::cerr << "parc-run: error: rank " << blame.culprit
              << " failed: " << blame.reason << "; stopped the other "
              << args.nproc - 1 << " rank(s)" << std::endl;
    return 1;
  }
  if (!args.train.tracePath.empty())
    mergeTraces(args.train.tracePath, args.nproc);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Args args = parseArgs(argc, argv);
  std::string error;
  // A truncated, corrupted or foreign plan is refused here, before any
  // process or process group exists.
  auto file = PlanFile::load(args.planPath, error);
  if (!file)
    fail(error);
  if (args.describe) {
    describePlan(file->plan(), std::cout);
    return 0;
  }
  if (args.nproc > 0)
    return runLauncher(args, *file, argv[0]);
  installTrackingAllocator();
  return runWorker(args, *file);
}
