// TrafficTarget is where dedupv1_traffic writes backup generations to and
// reads them back from: an iSCSI LUN (libiscsi), a file or block device, the
// standard streams, or nothing at all ("null:", to measure the generator).
//
// A target hands out TrafficStreams, one per parallel writer (for iSCSI each
// stream is its own session, like one backup client). A stream keeps up to
// depth() requests in flight: Start* queues a request whose buffer stays
// owned by the caller and untouched until Reap returns its tag; Reap waits
// for at least one completion. Offsets are bytes from the start of the
// target; for the standard streams they must come in order (sequential()).
// A stream is used by one thread; different streams may run in parallel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace dedupv1 {
namespace bench {

class TrafficStream {
 public:
  virtual ~TrafficStream() = default;
  // Requests this stream keeps in flight at most.
  virtual int depth() const = 0;
  virtual Status StartWrite(uint64_t offset, const uint8_t* data, size_t len, void* tag) = 0;
  virtual Status StartRead(uint64_t offset, uint8_t* data, size_t len, void* tag) = 0;
  // Waits until at least one started request completed and appends the tags
  // of all completed ones to |done|. An error of any request fails Reap.
  virtual Status Reap(std::vector<void*>* done) = 0;
};

struct TargetOptions {
  bool for_write = true;
  int queue_depth = 4;       // per stream (iSCSI; the others complete at once)
  int timeout_seconds = 120; // per iSCSI command
  bool truncate = true;      // regular files are cut to the generation size on write
};

class TrafficTarget {
 public:
  virtual ~TrafficTarget() = default;
  // Bytes the target can hold; 0 when unbounded (files, streams, null).
  virtual uint64_t capacity() const = 0;
  // Offsets and lengths must be multiples of this (the LUN's block size).
  virtual uint32_t block_size() const = 0;
  // Standard streams: one stream, offsets in order.
  virtual bool sequential() const { return false; }
  // Called once before writing |size| bytes (files are sized to it).
  virtual Status Prepare(uint64_t size) { return Status::OK(); }
  // Opens parallel stream |index| (0 is opened first).
  virtual Status OpenStream(int index, std::unique_ptr<TrafficStream>* stream) = 0;
  // Makes everything written durable: SYNCHRONIZE CACHE, fdatasync, flush.
  virtual Status Sync() = 0;
  virtual const std::string& name() const = 0;
};

// Opens |name|:
//   iscsi://HOST[:PORT]/IQN/LUN   a LUN (READ CAPACITY gives capacity and block size)
//   -                             standard output (write) / standard input (verify)
//   null:                         discards writes; reads are refused
//   anything else                 a file or block device
Status OpenTrafficTarget(const std::string& name, const TargetOptions& options,
                         std::unique_ptr<TrafficTarget>* target);

// Whether this build has libiscsi (iscsi:// targets).
bool HaveIscsi();

}  // namespace bench
}  // namespace dedupv1
