// dedupv1_fiu_replay: replays a block trace in the FIU format
// (bench/fiu_trace.h) against a LUN or file, one request at a time (queue
// depth 1, as fast as each completes: latency, not the trace's timing), and
// reports the requests' latencies. Written bytes come from each record's
// MD5, so the trace's duplicates are duplicates on the target; a read is
// checked against what this replay last wrote there (blocks it never wrote
// are not checked), so wrong data is found, not timed.
//
//   dedupv1_fiu_replay [--rounds N] [--no-sync] TRACE TARGET
//
// TARGET as dedupv1_traffic's (iscsi://HOST[:PORT]/IQN/LUN or a file). The
// trace runs N times (default 1); a SYNCHRONIZE CACHE ends the replay
// unless --no-sync. One JSON object on stdout. Exit: 0 ok, 1 a read
// differed, 2 usage or a bad trace, 3 I/O error.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/fiu_trace.h"
#include "bench/json_string.h"
#include "bench/traffic_target.h"

namespace dedupv1 {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

int Usage(const std::string& why) {
  std::fprintf(stderr, "dedupv1_fiu_replay: %s\nusage: dedupv1_fiu_replay [--rounds N] [--no-sync] TRACE TARGET\n",
               why.c_str());
  return 2;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size())));
  return v[i];
}

// Runs one request on |stream| and waits for it.
Status RunOne(TrafficStream* stream, const FiuRequest& r, uint8_t* buf) {
  int tag = 0;
  Status s = r.write ? stream->StartWrite(r.offset, buf, r.length, &tag) : stream->StartRead(r.offset, buf, r.length, &tag);
  if (!s.ok()) return s;
  std::vector<void*> done;
  while (done.empty()) {
    s = stream->Reap(&done);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

int Main(int argc, char** argv) {
  int rounds = 1;
  bool sync = true;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
      if (rounds < 1 || rounds > 1000) return Usage("--rounds must be 1..1000");
    } else if (a == "--no-sync") {
      sync = false;
    } else if (a.rfind("--", 0) == 0) {
      return Usage("unknown option " + a);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 2) return Usage("want TRACE and TARGET");
  std::ifstream in(positional[0]);
  if (!in) return Usage("cannot read " + positional[0]);
  std::vector<FiuRequest> requests;
  Status s = ReadFiuTrace(in, &requests);
  if (!s.ok()) return Usage(positional[0] + ": " + s.message());
  TargetOptions options;
  options.queue_depth = 1;
  options.truncate = false;
  std::unique_ptr<TrafficTarget> target;
  s = OpenTrafficTarget(positional[1], options, &target);
  std::unique_ptr<TrafficStream> stream;
  if (s.ok()) s = target->OpenStream(0, &stream);
  if (!s.ok()) {
    std::fprintf(stderr, "dedupv1_fiu_replay: %s: %s\n", positional[1].c_str(), s.ToString().c_str());
    return 3;
  }
  const uint64_t capacity = target->capacity();
  uint64_t largest = 0;
  for (const auto& r : requests) {
    if (capacity > 0 && r.offset + r.length > capacity) {
      return Usage("the trace reaches byte " + std::to_string(r.offset + r.length) + ", beyond the target's " +
                   std::to_string(capacity));
    }
    largest = std::max(largest, r.length);
  }
  std::vector<uint8_t> buf(largest), record;  // record: a written record's bytes again, for a read's check
  // 4 KiB block -> the record that last wrote it and where the block lies in it.
  struct Written {
    std::string md5;
    uint32_t record_bytes;
    uint32_t at;
  };
  std::map<uint64_t, Written> written;
  std::vector<double> write_us, read_us;
  uint64_t write_bytes = 0, read_bytes = 0, checked_bytes = 0;
  const auto start = Clock::now();
  for (int round = 0; round < rounds; round++) {
    for (const FiuRequest& r : requests) {
      if (r.write) {
        uint64_t at = 0;
        for (size_t k = 0; k < r.md5s.size(); k++) {
          FillFromMd5(r.md5s[k], buf.data() + at, r.record_bytes[k]);
          for (uint32_t b = 0; b < r.record_bytes[k]; b += 4096) {
            written[(r.offset + at + b) / 4096] = Written{r.md5s[k], r.record_bytes[k], b};
          }
          at += r.record_bytes[k];
        }
      }
      const auto t0 = Clock::now();
      s = RunOne(stream.get(), r, buf.data());
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      if (!s.ok()) {
        std::fprintf(stderr, "dedupv1_fiu_replay: %s of %llu bytes at %llu: %s\n", r.write ? "write" : "read",
                     (unsigned long long)r.length, (unsigned long long)r.offset, s.ToString().c_str());
        return 3;
      }
      (r.write ? write_us : read_us).push_back(us);
      (r.write ? write_bytes : read_bytes) += r.length;
      if (r.write) continue;
      for (uint64_t b = 0; b < r.length; b += 4096) {
        auto w = written.find((r.offset + b) / 4096);
        if (w == written.end()) continue;
        record.resize(w->second.record_bytes);
        FillFromMd5(w->second.md5, record.data(), record.size());
        if (std::memcmp(buf.data() + b, record.data() + w->second.at, 4096) != 0) {
          std::fprintf(stderr, "dedupv1_fiu_replay: the read at %llu differs from what was written there\n",
                       (unsigned long long)(r.offset + b));
          return 1;
        }
        checked_bytes += 4096;
      }
    }
  }
  if (sync) {
    s = target->Sync();
    if (!s.ok()) {
      std::fprintf(stderr, "dedupv1_fiu_replay: sync: %s\n", s.ToString().c_str());
      return 3;
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf(
      "{\"trace\": %s, \"target\": %s, \"rounds\": %d, \"requests\": %zu, \"writes\": %zu, \"reads\": %zu, "
      "\"write_bytes\": %llu, \"read_bytes\": %llu, \"checked_bytes\": %llu, \"seconds\": %.3f, \"iops\": %.1f, "
      "\"write_p50_us\": %.1f, \"write_p99_us\": %.1f, \"read_p50_us\": %.1f, \"read_p99_us\": %.1f}\n",
      JsonString(positional[0]).c_str(), JsonString(positional[1]).c_str(), rounds, write_us.size() + read_us.size(),
      write_us.size(), read_us.size(), (unsigned long long)write_bytes, (unsigned long long)read_bytes,
      (unsigned long long)checked_bytes, seconds, static_cast<double>(write_us.size() + read_us.size()) / seconds,
      Percentile(write_us, 50), Percentile(write_us, 99), Percentile(read_us, 50), Percentile(read_us, 99));
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace dedupv1

int main(int argc, char** argv) { return dedupv1::bench::Main(argc, argv); }
