#include "core/options.h"

#include <arpa/inet.h>

#include <cctype>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "chunkstore/storage_backend_registry.h"

namespace dedupv1 {
namespace {

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

const std::set<std::string>& KnownFilters() {
  static const std::set<std::string> k = {"zero-chunk", "block-index", "container-cache", "bloom",
                                          "chunk-index", "byte-compare"};
  return k;
}

// An iSCSI name (RFC 3720 3.2.6): iqn.YYYY-MM.reversed.domain[:anything],
// eui.<16 hex> or naa.<16 or 32 hex>. Lower case only: names are compared
// after normalisation to lower case, and tgt compares them byte for byte.
Status CheckIscsiName(const std::string& key, const std::string& v) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(key + " '" + v + "' is not an iSCSI name: " + why +
                                   " (e.g. iqn.2026-11.org.example:storage)");
  };
  if (v.size() > 223) return bad("longer than 223 bytes");
  auto is_hex = [](const std::string& s) {
    for (char c : s) if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    return true;
  };
  if (v.rfind("eui.", 0) == 0) {
    return v.size() == 20 && is_hex(v.substr(4)) ? Status::OK() : bad("eui. takes 16 hex digits");
  }
  if (v.rfind("naa.", 0) == 0) {
    const std::string h = v.substr(4);
    return (h.size() == 16 || h.size() == 32) && is_hex(h) ? Status::OK() : bad("naa. takes 16 or 32 hex digits");
  }
  if (v.rfind("iqn.", 0) != 0) return bad("it must start with iqn., eui. or naa.");
  auto digits = [&](size_t at, size_t n) {
    if (v.size() < at + n) return false;
    for (size_t i = at; i < at + n; i++) if (!std::isdigit(static_cast<unsigned char>(v[i]))) return false;
    return true;
  };
  if (!digits(4, 4) || v.size() < 9 || v[8] != '-' || !digits(9, 2) || v.size() < 12 || v[11] != '.') {
    return bad("a date YYYY-MM. must follow iqn.");
  }
  const int month = (v[9] - '0') * 10 + (v[10] - '0');
  if (month < 1 || month > 12) return bad("month must be 01..12");
  const size_t colon = v.find(':', 12);
  const std::string authority = v.substr(12, colon == std::string::npos ? std::string::npos : colon - 12);
  if (authority.empty() || authority.front() == '.' || authority.back() == '.' ||
      authority.find("..") != std::string::npos) {
    return bad("a reversed domain name must follow the date");
  }
  for (char c : v) {
    if (std::isupper(static_cast<unsigned char>(c))) return bad("upper case is not allowed");
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != ':') {
      return bad(std::string("character '") + c + "' is not allowed (letters, digits, '.', '-', ':')");
    }
  }
  return Status::OK();
}

bool IsIpv4(const std::string& s) {
  in_addr a;
  return inet_pton(AF_INET, s.c_str(), &a) == 1;
}
bool IsIpv6(const std::string& s) {
  in6_addr a;
  return inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

// ADDR:PORT with a numeric IPv4 address or [IPv6]:PORT; tgtd's portal syntax.
Status CheckPortal(const std::string& key, const std::string& v) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(key + " '" + v + "': " + why +
                                   " (expected ADDR:PORT, e.g. 0.0.0.0:3260 or [::]:3260)");
  };
  const size_t colon = v.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  std::string host = v.substr(0, colon);
  const std::string port = v.substr(colon + 1);
  uint64_t p = 0;
  if (port.empty() || !ParseUint(port, &p).ok() || p < 1 || p > 65535) return bad("port must be 1..65535");
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    if (!IsIpv6(host.substr(1, host.size() - 2))) return bad("not an IPv6 address in [ ]");
    return Status::OK();
  }
  if (!IsIpv4(host)) return bad("not a numeric IPv4 address (write IPv6 as [ADDR]:PORT)");
  return Status::OK();
}

// ALL, an IP address or a CIDR network (IPv6 optionally in [ ]): tgt's ACL syntax.
Status CheckInitiatorAddress(const std::string& v) {
  auto bad = [&]() {
    return Status::InvalidArgument("target.initiator-address '" + v +
                                   "' must be ALL, an IP address or a network (10.0.0.0/24, [fd00::]/64)");
  };
  if (v == "ALL") return Status::OK();
  std::string addr = v, prefix;
  const size_t slash = v.find('/');
  if (slash != std::string::npos) {
    addr = v.substr(0, slash);
    prefix = v.substr(slash + 1);
  }
  if (addr.size() >= 2 && addr.front() == '[' && addr.back() == ']') addr = addr.substr(1, addr.size() - 2);
  const bool v4 = IsIpv4(addr), v6 = IsIpv6(addr);
  if (!v4 && !v6) return bad();
  if (slash != std::string::npos) {
    uint64_t n = 0;
    if (prefix.empty() || !ParseUint(prefix, &n).ok() || n > (v4 ? 32u : 128u)) return bad();
  }
  return Status::OK();
}

using Setter = std::function<Status(const std::string& value, Options* o)>;

template <typename T>
Status SizeInto(const std::string& v, T* out) {
  uint64_t x;
  DEDUPV1_RETURN_IF_ERROR(ParseSize(v, &x));
  *out = static_cast<T>(x);
  return Status::OK();
}

template <typename T>
Setter SizeField(T Options::*field) {
  return [field](const std::string& v, Options* o) {
    return SizeInto(v, &(o->*field));
  };
}

}  // namespace

Options::Options() {
  chunk_store.writer_threads = 4;  // a 4 MiB container commit waits ~30 ms for fdatasync
  chunk_index.table.size_bytes = 1ULL << 30;
  chunk_store.fp_type = fingerprint;
  block_index.block_size = block_size;
}

// The table of keys. Each setter parses one value into the options.
static const std::map<std::string, Setter>& Setters() {
  static const std::map<std::string, Setter> table = {
      {"data-dir", [](const std::string& v, Options* o) {
         if (v.empty()) return Status::InvalidArgument("data-dir must not be empty");
         o->data_dir = v;
         return Status::OK();
       }},
      {"block-size", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseSize(v, &x));
         if (x < 4096 || x > (16 << 20) || !IsPowerOfTwo(x)) {
           return Status::InvalidArgument("block-size must be a power of two from 4K to 16M, got " + v);
         }
         o->block_size = static_cast<uint32_t>(x);
         return Status::OK();
       }},
      {"fingerprint", [](const std::string& v, Options* o) { return ParseFingerprintType(v, &o->fingerprint); }},
      {"chunking", [](const std::string& v, Options* o) {
         if (v == "rabin") o->chunking.kind = ChunkerOptions::Kind::kRabin;
         else if (v == "static") o->chunking.kind = ChunkerOptions::Kind::kStatic;
         else return Status::InvalidArgument("chunking must be rabin or static, got '" + v + "'");
         return Status::OK();
       }},
      {"chunking.min-size", [](const std::string& v, Options* o) { return SizeInto(v, &o->chunking.min_size); }},
      {"chunking.avg-size", [](const std::string& v, Options* o) { return SizeInto(v, &o->chunking.avg_size); }},
      {"chunking.max-size", [](const std::string& v, Options* o) { return SizeInto(v, &o->chunking.max_size); }},
      {"filter-chain", [](const std::string& v, Options* o) {
         auto names = SplitList(v);
         std::set<std::string> seen;
         for (const auto& n : names) {
           if (KnownFilters().count(n) == 0) {
             return Status::InvalidArgument("unknown filter '" + n +
                                            "' (known: zero-chunk, block-index, container-cache, bloom, "
                                            "chunk-index, byte-compare)");
           }
           if (!seen.insert(n).second) return Status::InvalidArgument("filter '" + n + "' listed twice");
         }
         o->filter_chain = names;
         return Status::OK();
       }},
      {"bloom.expected-chunks", SizeField(&Options::bloom_expected_chunks)},
      {"bloom.false-positive-rate", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseDouble(v, &o->bloom_false_positive_rate));
         if (o->bloom_false_positive_rate <= 0 || o->bloom_false_positive_rate >= 0.5) {
           return Status::InvalidArgument("bloom.false-positive-rate must be between 0 and 0.5, got " + v);
         }
         return Status::OK();
       }},
      {"container-cache.containers", SizeField(&Options::container_cache_containers)},
      {"container.size", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseSize(v, &x));
         if (x < (64 << 10) || x > (256 << 20)) {
           return Status::InvalidArgument("container.size must be from 64K to 256M, got " + v);
         }
         o->chunk_store.container_size = x;
         return Status::OK();
       }},
      {"container.compression", [](const std::string& v, Options* o) {
         return ParseCompression(v, &o->chunk_store.compression);
       }},
      {"container.open-count", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         if (x < 1 || x > 64) return Status::InvalidArgument("container.open-count must be 1..64, got " + v);
         o->chunk_store.open_containers = static_cast<int>(x);
         return Status::OK();
       }},
      {"container.writer-threads", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         if (x < 1 || x > 32) return Status::InvalidArgument("container.writer-threads must be 1..32, got " + v);
         o->chunk_store.writer_threads = static_cast<int>(x);
         return Status::OK();
       }},
      {"container.commit-timeout", [](const std::string& v, Options* o) {
         return ParseDurationMs(v, &o->chunk_store.commit_timeout_ms);
       }},
      {"container.read-cache", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         o->chunk_store.read_cache_containers = x;
         return Status::OK();
       }},
      {"container.backend", [](const std::string& v, Options* o) {
         if (!IsStorageBackend(v)) {
           return Status::InvalidArgument("unknown backend '" + v + "' (known: " + StorageBackendNameList() + ")");
         }
         o->chunk_store.backend = v;
         return Status::OK();
       }},
      {"container.dir", [](const std::string& v, Options* o) {
         o->chunk_store.dir = v;
         o->chunk_store_dir_set_ = true;
         return Status::OK();
       }},
      {"chunk-index.path", [](const std::string& v, Options* o) {
         o->chunk_index.table.path = v;
         o->chunk_index_path_set_ = true;
         return Status::OK();
       }},
      {"chunk-index.size", [](const std::string& v, Options* o) { return ParseSize(v, &o->chunk_index.table.size_bytes); }},
      {"chunk-index.page-size", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseSize(v, &x));
         if (x < 512 || x > (64 << 10) || !IsPowerOfTwo(x)) {
           return Status::InvalidArgument("chunk-index.page-size must be a power of two from 512 to 64K, got " + v);
         }
         o->chunk_index.table.page_size = x;
         return Status::OK();
       }},
      {"chunk-index.max-fill", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseDouble(v, &o->chunk_index.table.max_fill));
         if (o->chunk_index.table.max_fill <= 0 || o->chunk_index.table.max_fill > 0.95) {
           return Status::InvalidArgument("chunk-index.max-fill must be in (0, 0.95], got " + v);
         }
         return Status::OK();
       }},
      {"chunk-index.aux-soft-limit", [](const std::string& v, Options* o) { return ParseSize(v, &o->chunk_index.aux_soft_limit); }},
      {"chunk-index.aux-hard-limit", [](const std::string& v, Options* o) { return ParseSize(v, &o->chunk_index.aux_hard_limit); }},
      {"block-index.backend", [](const std::string& v, Options* o) { return ParseKvBackend(v, &o->block_index.backend); }},
      {"block-index.path", [](const std::string& v, Options* o) {
         o->block_index.path = v;
         o->block_index_path_set_ = true;
         return Status::OK();
       }},
      {"block-index.aux-soft-limit", [](const std::string& v, Options* o) { return ParseSize(v, &o->block_index.aux_soft_limit); }},
      {"block-index.aux-hard-limit", [](const std::string& v, Options* o) { return ParseSize(v, &o->block_index.aux_hard_limit); }},
      {"write-buffer.size", [](const std::string& v, Options* o) { return ParseSize(v, &o->write_buffer_size); }},
      {"write-buffer.flush-delay", [](const std::string& v, Options* o) { return ParseDurationMs(v, &o->write_buffer_flush_delay_ms); }},
      {"dedup.threads", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         if (x < 1 || x > 64) return Status::InvalidArgument("dedup.threads must be 1..64, got " + v);
         o->dedup_threads = static_cast<int>(x);
         return Status::OK();
       }},
      {"monitor.enabled", [](const std::string& v, Options* o) { return ParseBool(v, &o->monitor_enabled); }},
      {"monitor.host", [](const std::string& v, Options* o) {
         if (v.empty()) return Status::InvalidArgument("monitor.host must not be empty");
         o->monitor_host = v;
         return Status::OK();
       }},
      {"monitor.port", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         if (x < 1 || x > 65535) return Status::InvalidArgument("monitor.port must be 1..65535, got " + v);
         o->monitor_port = static_cast<uint16_t>(x);
         return Status::OK();
       }},
      {"monitor.token", [](const std::string& v, Options* o) {
         o->monitor_token = v;
         return Status::OK();
       }},
      {"target.iqn", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(CheckIscsiName("target.iqn", v));
         o->target_iqn = v;
         return Status::OK();
       }},
      {"target.portal", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(CheckPortal("target.portal", v));
         o->target_portal = v;
         return Status::OK();
       }},
      {"target.control-port", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         // tgtd keeps it in a short.
         if (x > 32767) return Status::InvalidArgument("target.control-port must be 0..32767, got " + v);
         o->target_control_port = static_cast<uint32_t>(x);
         return Status::OK();
       }},
      {"target.initiator-address", [](const std::string& v, Options* o) {
         auto list = SplitList(v);  // empty: the default (ALL unless names are given)
         for (const auto& a : list) DEDUPV1_RETURN_IF_ERROR(CheckInitiatorAddress(a));
         o->target_initiator_addresses = list;
         return Status::OK();
       }},
      {"target.initiator-name", [](const std::string& v, Options* o) {
         auto list = SplitList(v);  // empty: none
         for (const auto& n : list) DEDUPV1_RETURN_IF_ERROR(CheckIscsiName("target.initiator-name", n));
         o->target_initiator_names = list;
         return Status::OK();
       }},
      {"target.chap-user", [](const std::string& v, Options* o) {
         // tgtadm passes the account as "user=U,password=P": no ',' or blanks.
         // Empty: no CHAP.
         if (v.size() > 255 || v.find_first_of(", \t=") != std::string::npos) {
           return Status::InvalidArgument("target.chap-user must be up to 255 characters without ',', '=' or blanks");
         }
         o->target_chap_user = v;
         return Status::OK();
       }},
      {"target.chap-password", [](const std::string& v, Options* o) {
         if ((!v.empty() && v.size() < 12) || v.size() > 255 || v.find_first_of(", \t") != std::string::npos) {
           return Status::InvalidArgument(
               "target.chap-password must be 12..255 characters without ',' or blanks "
               "(RFC 3720 asks for at least 96 bits; many initiators refuse shorter secrets)");
         }
         o->target_chap_password = v;
         return Status::OK();
       }},
      {"target.discovery-auth", [](const std::string& v, Options* o) {
         return ParseBool(v, &o->target_discovery_auth);
       }},
      {"idle.throughput-threshold", [](const std::string& v, Options* o) { return ParseSize(v, &o->idle.throughput_threshold); }},
      {"idle.period", [](const std::string& v, Options* o) { return ParseDurationMs(v, &o->idle.period_ms); }},
      {"idle.latency-threshold", [](const std::string& v, Options* o) { return ParseDurationMs(v, &o->idle.latency_threshold_ms); }},
      {"idle.window", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseDurationMs(v, &o->idle.window_ms));
         if (o->idle.window_ms == 0) return Status::InvalidArgument("idle.window must be above 0, got " + v);
         return Status::OK();
       }},
      {"log.path", [](const std::string& v, Options* o) {
         o->log.path = v;
         o->log_path_set_ = true;
         return Status::OK();
       }},
      {"log.size", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseSize(v, &o->log.size_bytes));
         if (o->log.size_bytes < (1 << 20)) return Status::InvalidArgument("log.size must be at least 1M, got " + v);
         return Status::OK();
       }},
      {"log.soft-limit", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseDouble(v, &o->log.soft_limit));
         if (o->log.soft_limit <= 0 || o->log.soft_limit >= 1) return Status::InvalidArgument("log.soft-limit must be in (0, 1), got " + v);
         return Status::OK();
       }},
      {"log.hard-limit", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseDouble(v, &o->log.hard_limit));
         if (o->log.hard_limit <= 0 || o->log.hard_limit >= 1) return Status::InvalidArgument("log.hard-limit must be in (0, 1), got " + v);
         return Status::OK();
       }},
      {"volume", [](const std::string& v, Options* o) {
         auto parts = SplitList(v);
         if (parts.size() != 2) {
           return Status::InvalidArgument("volume must be 'NAME SIZE' (e.g. 'volume = backup1 100G'), got '" + v + "'");
         }
         for (char c : parts[0]) {
           if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
             return Status::InvalidArgument("volume name '" + parts[0] + "' may only use letters, digits, '-', '_' and '.'");
           }
         }
         VolumeOptions vol;
         vol.name = parts[0];
         DEDUPV1_RETURN_IF_ERROR(ParseSize(parts[1], &vol.size));
         if (vol.size == 0 || vol.size % 512 != 0) {
           return Status::InvalidArgument("volume " + vol.name + ": size must be a non-zero multiple of 512 bytes, got " + parts[1]);
         }
         for (const auto& other : o->volumes) {
           if (other.name == vol.name) return Status::InvalidArgument("volume " + vol.name + " is declared twice");
         }
         o->volumes.push_back(vol);
         return Status::OK();
       }},
  };
  return table;
}

std::vector<std::string> Options::Keys() {
  std::vector<std::string> keys;
  for (const auto& [k, _] : Setters()) keys.push_back(k);
  return keys;
}

Status Options::FromConfig(const Config& config, Options* options) {
  Options o;
  for (const auto& e : config.entries()) {
    std::string where = e.line > 0 ? config.source() + ":" + std::to_string(e.line) : "override";
    auto it = Setters().find(e.key);
    if (it == Setters().end()) {
      return Status::InvalidArgument(where + ": unknown key '" + e.key + "'");
    }
    // data-dir is the one path key read relative to the config file; the
    // other paths are relative to data-dir (Finish).
    Status s = it->second(e.key == "data-dir" ? config.PathValue(e) : e.value, &o);
    if (!s.ok()) return Status::InvalidArgument(where + ": " + e.key + ": " + s.message());
  }
  Status s = o.Finish();
  if (!s.ok()) return Status::InvalidArgument(config.source() + ": " + s.message());
  *options = o;
  return Status::OK();
}

Status Options::Finish() {
  std::unique_ptr<Chunker> probe;
  Status s = Chunker::Create(chunking, &probe);
  if (!s.ok()) {
    // The chunker names its fields (min_size); the user knows the config keys.
    std::string msg = s.message();
    const std::pair<const char*, const char*> names[] = {{"min_size", "chunking.min-size"},
                                                         {"avg_size", "chunking.avg-size"},
                                                         {"max_size", "chunking.max-size"}};
    for (const auto& [field, key] : names) {
      for (size_t at = msg.find(field); at != std::string::npos; at = msg.find(field, at + 1)) {
        msg.replace(at, std::strlen(field), key);
      }
    }
    return Status::InvalidArgument(msg);
  }
  if (chunking.max_size * 2 > chunk_store.container_size) {
    return Status::InvalidArgument("chunking.max-size (" + std::to_string(chunking.max_size) +
                                   ") must be at most half of container.size (" +
                                   std::to_string(chunk_store.container_size) + ")");
  }
  bool has_chunk_index = false;
  for (const auto& f : filter_chain) has_chunk_index |= (f == "chunk-index");
  if (!has_chunk_index) {
    return Status::InvalidArgument("filter-chain must include chunk-index (it records every stored chunk)");
  }
  if (chunk_index.aux_soft_limit > chunk_index.aux_hard_limit) {
    return Status::InvalidArgument("chunk-index.aux-soft-limit is above chunk-index.aux-hard-limit");
  }
  if (log.soft_limit >= log.hard_limit) {
    return Status::InvalidArgument("log.soft-limit must be below log.hard-limit");
  }
  if (block_index.aux_soft_limit > block_index.aux_hard_limit) {
    return Status::InvalidArgument("block-index.aux-soft-limit is above block-index.aux-hard-limit");
  }
  if (write_buffer_size < 4ULL * block_size) {
    return Status::InvalidArgument("write-buffer.size must hold at least 4 blocks (" +
                                   std::to_string(4ULL * block_size) + " bytes)");
  }
  const bool loopback = monitor_host == "127.0.0.1" || monitor_host == "localhost" || monitor_host == "::1";
  if (monitor_enabled && !loopback && monitor_token.empty()) {
    return Status::InvalidArgument("monitor.host " + monitor_host +
                                   " is not a loopback address: set monitor.token to protect the control endpoints");
  }
  if (target_chap_user.empty() != target_chap_password.empty()) {
    return Status::InvalidArgument("target.chap-user and target.chap-password go together: set both or neither");
  }
  for (const auto& a : target_initiator_addresses) {
    if (a == "ALL" && !target_initiator_names.empty()) {
      return Status::InvalidArgument(
          "target.initiator-address ALL admits every initiator, so target.initiator-name would have no "
          "effect: remove one of them");
    }
  }
  uint64_t pages = chunk_index.table.size_bytes / chunk_index.table.page_size;
  if (pages < 2) return Status::InvalidArgument("chunk-index.size must hold at least two pages");
  chunk_store.fp_type = fingerprint;
  chunk_index.table.key_size = FingerprintSize(fingerprint);
  block_index.block_size = block_size;
  auto resolve = [this](const std::string& p, bool set, const char* def) {
    if (!set) return JoinPath(data_dir, def);
    return JoinPath(data_dir, p);  // absolute paths are kept as they are
  };
  chunk_store.dir = resolve(chunk_store.dir, chunk_store_dir_set_, "containers");
  chunk_index.table.path = resolve(chunk_index.table.path, chunk_index_path_set_, "chunk-index");
  block_index.path = resolve(block_index.path, block_index_path_set_,
                             block_index.backend == KvBackend::kLevelDb ? "block-index.leveldb"
                                                                        : "block-index.tcb");
  log.path = resolve(log.path, log_path_set_, "log");
  chunk_store_dir_set_ = chunk_index_path_set_ = block_index_path_set_ = log_path_set_ = true;
  return Status::OK();
}

std::string Options::ToString() const {
  std::ostringstream o;
  o << "data-dir = " << data_dir << "\n"
    << "block-size = " << block_size << "\n"
    << "fingerprint = " << FingerprintTypeName(fingerprint) << "\n"
    << "chunking = " << (chunking.kind == ChunkerOptions::Kind::kRabin ? "rabin" : "static") << "\n"
    << "chunking.min-size = " << chunking.min_size << "\n"
    << "chunking.avg-size = " << chunking.avg_size << "\n"
    << "chunking.max-size = " << chunking.max_size << "\n";
  o << "filter-chain = ";
  for (size_t i = 0; i < filter_chain.size(); i++) o << (i ? "," : "") << filter_chain[i];
  o << "\n"
    << "bloom.expected-chunks = " << bloom_expected_chunks << "\n"
    << "bloom.false-positive-rate = " << bloom_false_positive_rate << "\n"
    << "container-cache.containers = " << container_cache_containers << "\n"
    << "container.size = " << chunk_store.container_size << "\n"
    << "container.compression = " << CompressionName(chunk_store.compression) << "\n"
    << "container.open-count = " << chunk_store.open_containers << "\n"
    << "container.writer-threads = " << chunk_store.writer_threads << "\n"
    << "container.commit-timeout = " << chunk_store.commit_timeout_ms << "ms\n"
    << "container.read-cache = " << chunk_store.read_cache_containers << "\n"
    << "container.backend = " << chunk_store.backend << "\n"
    << "container.dir = " << chunk_store.dir << "\n"
    << "chunk-index.path = " << chunk_index.table.path << "\n"
    << "chunk-index.size = " << chunk_index.table.size_bytes << "\n"
    << "chunk-index.page-size = " << chunk_index.table.page_size << "\n"
    << "chunk-index.max-fill = " << chunk_index.table.max_fill << "\n"
    << "chunk-index.aux-soft-limit = " << chunk_index.aux_soft_limit << "\n"
    << "chunk-index.aux-hard-limit = " << chunk_index.aux_hard_limit << "\n"
    << "block-index.backend = " << (block_index.backend == KvBackend::kLevelDb ? "leveldb" : "tokyocabinet") << "\n"
    << "block-index.path = " << block_index.path << "\n"
    << "block-index.aux-soft-limit = " << block_index.aux_soft_limit << "\n"
    << "block-index.aux-hard-limit = " << block_index.aux_hard_limit << "\n"
    << "write-buffer.size = " << write_buffer_size << "\n"
    << "write-buffer.flush-delay = " << write_buffer_flush_delay_ms << "ms\n"
    << "dedup.threads = " << dedup_threads << "\n"
    << "idle.throughput-threshold = " << idle.throughput_threshold << "\n"
    << "idle.period = " << idle.period_ms << "ms\n"
    << "idle.window = " << idle.window_ms << "ms\n"
    << "idle.latency-threshold = " << idle.latency_threshold_ms << "ms\n"
    << "log.path = " << log.path << "\n"
    << "log.size = " << log.size_bytes << "\n"
    << "log.soft-limit = " << log.soft_limit << "\n"
    << "log.hard-limit = " << log.hard_limit << "\n"
    << "monitor.enabled = " << (monitor_enabled ? "true" : "false") << "\n"
    << "monitor.host = " << monitor_host << "\n"
    << "monitor.port = " << monitor_port << "\n"
    << "monitor.token = " << (monitor_token.empty() ? "" : "(set)") << "\n"
    << "target.iqn = " << target_iqn << "\n"
    << "target.portal = " << target_portal << "\n"
    << "target.control-port = " << target_control_port << "\n";
  o << "target.initiator-address = ";
  if (target_initiator_addresses.empty()) o << (target_initiator_names.empty() ? "ALL" : "");
  for (size_t i = 0; i < target_initiator_addresses.size(); i++) o << (i ? "," : "") << target_initiator_addresses[i];
  o << "\ntarget.initiator-name = ";
  for (size_t i = 0; i < target_initiator_names.size(); i++) o << (i ? "," : "") << target_initiator_names[i];
  o << "\n"
    << "target.chap-user = " << target_chap_user << "\n"
    << "target.chap-password = " << (target_chap_password.empty() ? "" : "(set)") << "\n"
    << "target.discovery-auth = " << (target_discovery_auth ? "true" : "false") << "\n";
  for (const auto& v : volumes) o << "volume = " << v.name << " " << v.size << "\n";
  return o.str();
}

}  // namespace dedupv1
