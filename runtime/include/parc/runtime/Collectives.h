//===- Collectives.h - the runtime's one seam to c10d -----------*- C++ -*-===//
//
// Everything parc-run asks of a process group, in the shapes FSDP needs. The
// c10d headers stay in Collectives.cpp, so the differences between LibTorch
// 1.13 (Gloo only, no reduce_scatter) and 2.x (NCCL) live in one file.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_RUNTIME_COLLECTIVES_H
#define PARC_RUNTIME_COLLECTIVES_H

#include <ATen/Tensor.h>

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace parc::runtime {

/// Where this rank sits and how to reach the others (torchrun's variables).
struct WorldConfig {
  int rank = 0;
  int size = 1;
  int localRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  /// Bound on every collective: a dead or hung peer ends the run after this.
  std::chrono::milliseconds timeout{60000};
  /// "gloo" or "nccl".
  std::string backend = "gloo";
  /// Rendezvous through a c10d::FileStore at this path (a launcher's private
  /// directory) instead of a TCPStore at masterAddr:masterPort: a run on one
  /// host then opens no listening port for the store at all.
  std::string storePath;
};

/// A collective that failed because a peer died, hung or left: the worker
/// exits with kPeerFailureExit so that a launcher looks for the rank at fault.
class CollectiveError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};
constexpr int kPeerFailureExit = 3;

/// A collective started and not yet waited for (parc.wait in a program).
class PendingCollective {
public:
  virtual ~PendingCollective() = default;
  /// Blocks until it has completed; throws CollectiveError when it failed.
  virtual void wait() = 0;
};

class Collectives {
public:
  virtual ~Collectives() = default;
  /// This rank's index in the group and the group's size (the world for the
  /// group connectWorld returns).
  int rank() const { return world.rank; }
  int size() const { return world.size; }
  /// "world", or the subgroup's name ("tp[0,1]"), for error messages.
  const std::string &name() const { return groupName; }

  /// Writes every rank's `shard` into `full` in rank order along dim 0;
  /// `full` is contiguous with size() times the rows of `shard`.
  void allGather(const at::Tensor &shard, at::Tensor &full) {
    full.chunk(size(), 0)[rank()].copy_(shard);
    startAllGather(full)->wait();
  }
  /// Starts an all-gather in place and returns at once: this rank's dim-0
  /// slice of `full` (contiguous, dim 0 divisible by size()) already holds
  /// its shard, as FSDP2 writes its all-gather input into the output; the
  /// other slices are filled by the time wait() returns. `full` must live
  /// until then. Nothing is staged: the bytes of a gather in flight are
  /// `full`'s, so what a rank holds while compute overlaps a gather does not
  /// depend on when the gather happens to run.
  virtual std::unique_ptr<PendingCollective>
  startAllGather(const at::Tensor &full) = 0;
  /// Sums `full` (contiguous, dim 0 divisible by size()) over the ranks and
  /// returns this rank's dim-0 slice of the sum.
  at::Tensor reduceScatterSum(const at::Tensor &full) {
    at::Tensor mine;
    startReduceScatterSum(full, mine)->wait();
    return mine;
  }
  /// Starts the same reduce-scatter: once wait() has returned, `mine` holds
  /// this rank's dim-0 slice of the sum, and `full` is kept alive until
  /// then. NCCL returns at once (the collective runs on its stream); Gloo
  /// completes it before returning (CPU ranks would only contend for the
  /// host's cores), with a transient receive buffer of `full`'s size.
  virtual std::unique_ptr<PendingCollective>
  startReduceScatterSum(const at::Tensor &full, at::Tensor &mine) = 0;
  virtual void allReduceSum(at::Tensor &tensor) = 0;
  virtual void allReduceMax(at::Tensor &tensor) = 0;
  virtual void barrier() = 0;

  /// Starts sending `tensor` (contiguous) to group rank `peer` under `tag`
  /// and returns at once: Gloo completes a send only when the peer has
  /// posted the matching receive, and a pipeline schedule sends ahead of
  /// what its peer receives. The tensor is kept alive until flushSends().
  virtual void send(const at::Tensor &tensor, int peer, int tag) = 0;
  /// Receives into `tensor` (contiguous, of the sent size) from `peer`.
  virtual void recv(at::Tensor &tensor, int peer, int tag) = 0;
  /// Waits for every send started since the last flush.
  virtual void flushSends() = 0;

  /// A process group over `ranks` (ranks of this group, in order; this rank
  /// among them), as torch.distributed.new_group makes one: its own Gloo
  /// context over a PrefixStore of the world's TCPStore keyed by `name`.
  /// Only the members construct it. Its collectives count in this group's
  /// sequence (the launcher's progress report). Throws CollectiveError when
  /// the group cannot be formed.
  virtual std::unique_ptr<Collectives> subgroup(const std::vector<int> &ranks,
                                                const std::string &name) = 0;

  /// Called before each collective with its sequence number, so a launcher
  /// can tell the rank that stopped from the ranks waiting for it.
  std::function<void(uint64_t)> onCollective;

protected:
  explicit Collectives(WorldConfig world, std::string groupName = "world",
                       Collectives *parent = nullptr)
      : world(std::move(world)), groupName(std::move(groupName)),
        parent(parent) {}
  /// Counts a collective in the world's sequence (subgroups forward to the
  /// group they were made from).
  void entering() {
    if (parent)
      return parent->entering();
    ++sequence;
    if (onCollective)
      onCollective(sequence);
  }
  uint64_t currentSequence() const {
    return parent ? parent->currentSequence() : sequence;
  }
  WorldConfig world;
  std::string groupName;
  Collectives *parent = nullptr;
  uint64_t sequence = 0;
};

/// Connects this rank to the others (TCPStore on masterAddr:masterPort, then
/// a process group); world size 1 needs neither. On failure returns null and
/// says why, naming the rank and address.
std::unique_ptr<Collectives> connectWorld(const WorldConfig &world,
                                          std::string &error);

} // namespace parc::runtime

#endif // PARC_RUNTIME_COLLECTIVES_H
