#include "bench/shard_balance.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "index/rados_chunk_table.h"

namespace dedupv1 {
namespace bench {

namespace {

int Log2(uint32_t n) {
  int k = 0;
  while ((uint32_t{1} << k) < n) k++;
  return k;
}

// Feeds one file through |chunker| in pieces, keeping the unfinished tail.
Status FingerprintFile(const std::string& path, const Chunker& chunker, FingerprintType type, uint64_t budget,
                       const std::function<void(const Fingerprint&)>& visit, FingerprintFilesStats* stats) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot open " + path);
  constexpr size_t kPiece = 4 << 20;
  std::vector<uint8_t> buf;
  std::vector<size_t> ends;
  uint64_t read_total = 0;
  bool eof = false;
  while (!eof) {
    const size_t tail = buf.size();
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kPiece, budget - read_total));
    buf.resize(tail + want);
    in.read(reinterpret_cast<char*>(buf.data() + tail), static_cast<std::streamsize>(want));
    const auto got = static_cast<size_t>(in.gcount());
    if (in.bad()) return Status::IOError("read error in " + path);
    buf.resize(tail + got);
    read_total += got;
    eof = got < want || read_total >= budget;
    ends.clear();
    chunker.Split(buf.data(), buf.size(), eof, &ends);
    size_t start = 0;
    for (size_t end : ends) {
      const uint8_t* p = buf.data() + start;
      const size_t n = end - start;
      start = end;
      stats->chunks++;
      if (IsAllZero(p, n)) {
        stats->zero_chunks++;
        continue;
      }
      Fingerprint fp;
      ComputeFingerprint(type, p, n, &fp);
      visit(fp);
    }
    buf.erase(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(start));
  }
  stats->files++;
  stats->bytes += read_total;
  return Status::OK();
}

}  // namespace

ShardBalance::ShardBalance(std::vector<uint32_t> shard_counts) : shard_counts_(std::move(shard_counts)) {
  for (uint32_t s : shard_counts_) counts_.emplace_back(s, 0);
}

bool ShardBalance::Add(const Fingerprint& fp) {
  if (!seen_.insert(fp).second) return false;
  for (size_t i = 0; i < shard_counts_.size(); i++) {
    counts_[i][RadosChunkTable::ShardOf(fp, Log2(shard_counts_[i]))]++;
  }
  return true;
}

double ShardBalance::RandomMaxOverMean(uint64_t keys, uint32_t shards, int trials) {
  if (keys == 0) return 0;
  std::mt19937_64 rng(0x5eedULL + shards);
  std::vector<uint64_t> count(shards);
  double sum = 0;
  for (int t = 0; t < trials; t++) {
    std::fill(count.begin(), count.end(), 0);
    for (uint64_t k = 0; k < keys; k++) count[rng() % shards]++;
    sum += static_cast<double>(*std::max_element(count.begin(), count.end()));
  }
  return sum / trials / (static_cast<double>(keys) / shards);
}

std::vector<ShardBalanceRow> ShardBalance::Rows(int random_trials) const {
  std::vector<ShardBalanceRow> rows;
  for (size_t i = 0; i < shard_counts_.size(); i++) {
    ShardBalanceRow r;
    r.shards = shard_counts_[i];
    r.keys = seen_.size();
    r.min = *std::min_element(counts_[i].begin(), counts_[i].end());
    r.max = *std::max_element(counts_[i].begin(), counts_[i].end());
    r.mean = static_cast<double>(r.keys) / r.shards;
    r.max_over_mean = r.keys == 0 ? 0 : r.max / r.mean;
    r.random_max_over_mean = RandomMaxOverMean(r.keys, r.shards, random_trials);
    rows.push_back(r);
  }
  return rows;
}

Status FingerprintFiles(const std::vector<std::string>& paths, const Chunker& chunker, FingerprintType type,
                        uint64_t max_bytes, const std::function<void(const Fingerprint&)>& visit,
                        FingerprintFilesStats* stats) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(path, ec);
    if (ec) return Status::IOError("cannot stat " + path + ": " + ec.message());
    if (fs::is_regular_file(st)) {
      files.push_back(path);
    } else if (fs::is_directory(st)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && !it->is_symlink(ec)) found.push_back(it->path().string());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      return Status::InvalidArgument(path + " is neither a regular file nor a directory");
    }
  }
  for (const std::string& file : files) {
    if (stats->bytes >= max_bytes) break;
    Status s = FingerprintFile(file, chunker, type, max_bytes - stats->bytes, visit, stats);
    if (!s.ok() && files.size() == 1) return s;  // a lone named file must be readable; walked ones may not be
  }
  return Status::OK();
}

}  // namespace bench
}  // namespace dedupv1
